//! A local mock of embedding and rerank HTTP APIs (OpenAI/Voyage `/embeddings`, Voyage
//! `/rerank`, TEI `/rerank`, Cohere `/v1/rerank`), on a random loopback port. It records
//! every request and can be told to fail or stall the next ones.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

/// What the server does with the next request.
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// Answer with this status, body and optional `Retry-After` seconds.
    Fail(u16, Option<u64>),
    /// Sleep before answering normally.
    Stall(Duration),
    /// Answer with one vector too few.
    DropOne,
    /// A chat completion answering exactly this text.
    Reply(String),
}

/// One recorded request.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// Path called.
    pub path: String,
    /// `Authorization` header.
    pub auth: Option<String>,
    /// JSON body.
    pub body: Value,
    /// W3C `traceparent` header, when the caller propagated a trace.
    pub traceparent: Option<String>,
}

#[derive(Default)]
struct Shared {
    plan: Mutex<VecDeque<Behaviour>>,
    log: Mutex<Vec<Recorded>>,
}

/// A running mock server.
pub struct MockServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl MockServer {
    /// Starts the server.
    pub async fn start() -> Self {
        let shared = Arc::new(Shared::default());
        let app = Router::new()
            .route("/v1/embeddings", post(embeddings))
            .route("/v1/chat/completions", post(chat))
            .route("/v1/rerank", post(voyage_rerank))
            .route("/tei/rerank", post(tei_rerank))
            .route("/cohere/v1/rerank", post(cohere_rerank))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { url, shared, task }
    }

    /// Queues behaviours for the next requests (then back to normal answers).
    pub fn plan(&self, behaviours: impl IntoIterator<Item = Behaviour>) {
        self.shared.plan.lock().expect("plan").extend(behaviours);
    }

    /// Requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.log.lock().expect("log").clone()
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The deterministic vector the mock gives a text: `dims` values derived from its bytes.
pub fn mock_vector(text: &str, dims: usize) -> Vec<f32> {
    let mut v = vec![0f32; dims];
    for (i, b) in text.bytes().enumerate() {
        v[(i + b as usize) % dims] += 1.0 + (b % 7) as f32;
    }
    v[0] += text.len() as f32;
    v
}

async fn prelude(
    shared: &Shared,
    path: &str,
    headers: &HeaderMap,
    body: &Value,
) -> Option<Behaviour> {
    shared.log.lock().expect("log").push(Recorded {
        path: path.to_string(),
        auth: headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        body: body.clone(),
        traceparent: headers
            .get("traceparent")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
    });
    let next = shared.plan.lock().expect("plan").pop_front();
    if let Some(Behaviour::Stall(d)) = next {
        tokio::time::sleep(d).await;
        return None;
    }
    next
}

fn failure(status: u16, retry_after: Option<u64>) -> Response {
    let status = StatusCode::from_u16(status).expect("status");
    let mut response = (status, Json(json!({"detail": "mock failure"}))).into_response();
    if let Some(secs) = retry_after {
        response
            .headers_mut()
            .insert("retry-after", secs.to_string().parse().expect("header"));
    }
    response
}

async fn embeddings(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let behaviour = prelude(&shared, "/v1/embeddings", &headers, &body).await;
    if let Some(Behaviour::Fail(status, retry)) = behaviour {
        return failure(status, retry);
    }
    let dims = body
        .get("output_dimension")
        .or_else(|| body.get("dimensions"))
        .and_then(Value::as_u64)
        .unwrap_or(8) as usize;
    let inputs: Vec<String> = body["input"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    // Answer in reverse order with explicit indexes, as servers may.
    let mut data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": mock_vector(t, dims)}))
        .rev()
        .collect();
    if matches!(behaviour, Some(Behaviour::DropOne)) {
        data.pop();
    }
    Json(json!({"object": "list", "data": data, "model": body["model"], "usage": {"total_tokens": 1}}))
        .into_response()
}

/// A chat model: the planned reply; else, for the seed's rating prompt, one valid rubric
/// per numbered link (relevance 3, risk 2, complexity 1, confidence 4, no tags), and for
/// anything else `mock summary`.
async fn chat(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let content = match prelude(&shared, "/v1/chat/completions", &headers, &body).await {
        Some(Behaviour::Fail(status, retry)) => return failure(status, retry),
        Some(Behaviour::Reply(text)) => text,
        _ => {
            let prompt = body["messages"][0]["content"].as_str().unwrap_or("");
            match prompt.split_once("Links to rate:") {
                Some((_, links)) => {
                    let n = links
                        .lines()
                        .filter(|l| {
                            l.split_once(". ")
                                .is_some_and(|(n, _)| n.parse::<usize>().is_ok())
                        })
                        .count();
                    let one = json!({"relevance": 3, "risk": 2, "complexity": 1, "confidence": 4, "tags": []});
                    Value::Array(vec![one; n]).to_string()
                }
                None => "mock summary".to_string(),
            }
        }
    };
    Json(json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}))
        .into_response()
}

/// Relevance of a document to a query in the mock: shared words.
pub fn mock_score(query: &str, doc: &str) -> f32 {
    let q: Vec<&str> = query.split_whitespace().collect();
    doc.split_whitespace().filter(|w| q.contains(w)).count() as f32
}

fn ranked(body: &Value, docs_field: &str) -> Vec<(usize, f32)> {
    let query = body["query"].as_str().unwrap_or_default();
    let mut scored: Vec<(usize, f32)> = body[docs_field]
        .as_array()
        .map(|a| {
            a.iter()
                .enumerate()
                .map(|(i, d)| (i, mock_score(query, d.as_str().unwrap_or_default())))
                .collect()
        })
        .unwrap_or_default();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored
}

async fn voyage_rerank(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if let Some(Behaviour::Fail(s, r)) = prelude(&shared, "/v1/rerank", &headers, &body).await {
        return failure(s, r);
    }
    let data: Vec<Value> = ranked(&body, "documents")
        .into_iter()
        .map(|(i, s)| json!({"index": i, "relevance_score": s}))
        .collect();
    Json(json!({"object": "list", "data": data})).into_response()
}

async fn tei_rerank(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if let Some(Behaviour::Fail(s, r)) = prelude(&shared, "/tei/rerank", &headers, &body).await {
        return failure(s, r);
    }
    let list: Vec<Value> = ranked(&body, "texts")
        .into_iter()
        .map(|(i, s)| json!({"index": i, "score": s}))
        .collect();
    Json(Value::Array(list)).into_response()
}

async fn cohere_rerank(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    if let Some(Behaviour::Fail(s, r)) =
        prelude(&shared, "/cohere/v1/rerank", &headers, &body).await
    {
        return failure(s, r);
    }
    let results: Vec<Value> = ranked(&body, "documents")
        .into_iter()
        .map(|(i, s)| json!({"index": i, "relevance_score": s}))
        .collect();
    Json(json!({"results": results})).into_response()
}
