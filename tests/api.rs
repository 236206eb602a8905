//! The REST API over real HTTP on a loopback port: the router served by axum in-process,
//! real stores in a temp dir, the deterministic bag-of-words embedder. Registration queues
//! a sync that the job runner performs; progress arrives over SSE; searches come back as
//! the structured response plus the MCP content; bad input gets the one error shape.

use std::time::{Duration, Instant};

mod support;

use serde_json::{Value, json};

struct Server {
    _server: support::app::TestServer,
    root: std::path::PathBuf,
    base: String,
    http: reqwest::Client,
}

/// A server; `run_jobs` starts the sync queue (without it, queued jobs stay queued).
async fn server(run_jobs: bool) -> Server {
    let started = support::app::start(run_jobs).await;
    Server {
        root: started.root.clone(),
        base: started.base.clone(),
        _server: started,
        http: reqwest::Client::new(),
    }
}

impl Server {
    async fn get(&self, path: &str) -> (u16, Value) {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let r = self
            .http
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
    }

    async fn wait_for_job(&self, id: &str) -> Value {
        let started = Instant::now();
        loop {
            let (status, body) = self.get(&format!("/api/v1/jobs/{id}")).await;
            assert_eq!(status, 200, "{body}");
            let state = body["job"]["state"].as_str().unwrap_or("").to_lowercase();
            if state != "queued" && state != "running" {
                return body["job"].clone();
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "job {id} never finished"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn error_code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn register_sync_and_search_over_http() {
    let s = server(true).await;
    assert_eq!(s.get("/healthz").await.0, 200);
    assert_eq!(s.get("/readyz").await.0, 200);

    // Progress arrives over SSE while the first sync runs.
    let mut sse = s
        .http
        .get(format!("{}/api/v1/events", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(sse.status().as_u16(), 200);

    let (status, body) = s
        .post(
            "/api/v1/repositories",
            json!({ "path": s.root.to_string_lossy(), "name": "ws" }),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["repository"]["name"], "ws");
    let job = s.wait_for_job(body["job"]["id"].as_str().unwrap()).await;
    assert_eq!(
        job["state"].as_str().unwrap().to_lowercase(),
        "succeeded",
        "{job}"
    );

    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !seen.contains("event: progress") && Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_secs(5), sse.chunk()).await {
            Ok(Ok(Some(bytes))) => seen.push_str(&String::from_utf8_lossy(&bytes)),
            _ => break,
        }
    }
    assert!(seen.contains("event: progress"), "{seen}");
    assert!(seen.contains("\"phase\""), "{seen}");

    let (status, body) = s.get("/api/v1/repositories/ws").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["files"]["indexed"], 2);

    let (status, body) = s
        .get("/api/v1/repositories/ws/symbols?path=src/auth.ts")
        .await;
    assert_eq!(status, 200, "{body}");
    let names: Vec<&str> = body["symbols"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert!(names.contains(&"validateToken"), "{names:?}");

    // A lookup: the structured response with graph metadata, and the MCP content.
    let (status, body) = s
        .post(
            "/api/v1/search",
            json!({ "query": "symbol = decode", "repos": ["ws"] }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["response"]["results"][0]["breadcrumb"], "decode");
    assert_eq!(
        body["response"]["metadata"][0]["callers"][0]["name"],
        "validateToken"
    );
    let graph = body["content"][0]["text"].as_str().unwrap();
    assert!(
        graph.starts_with("Search: \"symbol = decode\" | 1 result |"),
        "{graph}"
    );
    assert!(
        graph.contains("Called by: validateToken (src/auth.ts)"),
        "{graph}"
    );
    assert_eq!(
        body["content"][0]["annotations"]["audience"][0],
        "assistant"
    );

    // A question.
    let (status, body) = s
        .post(
            "/api/v1/search",
            json!({ "query": "validate token", "minimumRelevanceThreshold": 0.0 }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(!body["response"]["results"].as_array().unwrap().is_empty());

    // Removal.
    let (status, _) = s
        .http
        .delete(format!("{}/api/v1/repositories/ws", s.base))
        .send()
        .await
        .map(|r| (r.status().as_u16(), ()))
        .unwrap();
    assert_eq!(status, 200);
    assert_eq!(s.get("/api/v1/repositories/ws").await.0, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_one_error_shape() {
    let s = server(false).await;
    let (status, body) = s.get("/nowhere").await;
    assert_eq!((status, error_code(&body)), (404, "not_found"), "{body}");

    let (status, body) = s.get("/api/v1/repositories/nope").await;
    assert_eq!((status, error_code(&body)), (404, "not_found"), "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("nope"));

    let (status, body) = s
        .post(
            "/api/v1/repositories",
            json!({ "path": "/x", "git": "https://h/r.git" }),
        )
        .await;
    assert_eq!((status, error_code(&body)), (400, "bad_request"), "{body}");

    let (status, body) = s
        .post(
            "/api/v1/repositories",
            json!({ "path": "/definitely/not/here" }),
        )
        .await;
    assert_eq!((status, error_code(&body)), (400, "bad_request"), "{body}");

    let (status, body) = s
        .post("/api/v1/repositories", json!({ "paht": "/typo" }))
        .await;
    assert_eq!((status, error_code(&body)), (400, "bad_request"), "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("paht"),
        "{body}"
    );

    let (status, body) = s
        .post(
            "/api/v1/search",
            json!({ "query": "x", "minimumRelevanceThreshold": 2.0 }),
        )
        .await;
    assert_eq!((status, error_code(&body)), (400, "bad_request"), "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("minimumRelevanceThreshold"),
        "{body}"
    );
    let (status, body) = s.post("/api/v1/search", json!({ "query": "  " })).await;
    assert_eq!((status, error_code(&body)), (400, "bad_request"), "{body}");

    let r = s
        .http
        .post(format!("{}/api/v1/search", s.base))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);

    // With no runner, the registration's sync stays queued: another one is a conflict.
    let (status, body) = s
        .post(
            "/api/v1/repositories",
            json!({ "path": s.root.to_string_lossy(), "name": "ws" }),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = s.post("/api/v1/repositories/ws/sync", json!({})).await;
    assert_eq!((status, error_code(&body)), (409, "conflict"), "{body}");
}
