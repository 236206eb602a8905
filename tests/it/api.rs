//! The REST API over real HTTP on a loopback port: the router served by axum in-process,
//! real stores in a temp dir, the deterministic bag-of-words embedder. Registration queues
//! a sync that the job runner performs; progress arrives over SSE; searches come back as
//! the structured response plus the MCP content; bad input gets the one error shape.

use std::time::{Duration, Instant};

use crate::support;

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
            json!({ "query": "symbol = decode", "repositories": ["ws"] }),
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
    // The timings count the answer's rendering, and the total covers every stage.
    let timings = &body["response"]["timings"];
    let stage = |name: &str| timings[name].as_f64().unwrap_or(-1.0);
    assert!(stage("renderMs") > 0.0, "{timings}");
    assert!(
        stage("totalMs") >= stage("renderMs") + stage("retrieveMs"),
        "{timings}"
    );

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
    let huge = json!({ "query": "x".repeat(sextant::api::MAX_BODY_BYTES + 10) }).to_string();
    let long = format!(
        "/api/v1/symbols?name={}",
        "a".repeat(sextant::server::MAX_URI_BYTES)
    );
    // (method, path, body, whether it is sent as JSON) → (status, code, a word the
    // message must contain).
    type Case = (
        &'static str,
        String,
        Option<String>,
        bool,
        u16,
        &'static str,
        &'static str,
    );
    let cases: Vec<Case> = vec![
        (
            "GET",
            "/nowhere".into(),
            None,
            false,
            404,
            "not_found",
            "/api/v1",
        ),
        (
            "GET",
            "/api/v1/repositories/nope".into(),
            None,
            false,
            404,
            "not_found",
            "nope",
        ),
        (
            "GET",
            "/api/v1/jobs/nope".into(),
            None,
            false,
            404,
            "not_found",
            "nope",
        ),
        (
            "POST",
            "/api/v1/repositories".into(),
            Some(json!({ "path": "/x", "git": "https://h/r.git" }).to_string()),
            true,
            400,
            "bad_request",
            "exactly one",
        ),
        (
            "POST",
            "/api/v1/repositories".into(),
            Some(json!({ "path": "/x", "ref": "main" }).to_string()),
            true,
            400,
            "bad_request",
            "ref",
        ),
        (
            "POST",
            "/api/v1/repositories".into(),
            Some(json!({ "path": "/definitely/not/here" }).to_string()),
            true,
            400,
            "bad_request",
            "/definitely/not/here",
        ),
        (
            "POST",
            "/api/v1/repositories".into(),
            Some(json!({ "paht": "/typo" }).to_string()),
            true,
            422,
            "unprocessable",
            "paht",
        ),
        (
            "POST",
            "/api/v1/repositories".into(),
            Some(json!({ "path": "/x", "settings": { "max_files": 3 } }).to_string()),
            true,
            422,
            "unprocessable",
            "max_files",
        ),
        (
            "PATCH",
            "/api/v1/repositories/nope".into(),
            Some(json!({ "settings": {} }).to_string()),
            true,
            404,
            "not_found",
            "nope",
        ),
        (
            "POST",
            "/api/v1/search".into(),
            Some(json!({ "query": "x", "minimumRelevanceThreshold": 2.0 }).to_string()),
            true,
            400,
            "bad_request",
            "minimumRelevanceThreshold",
        ),
        (
            "POST",
            "/api/v1/search".into(),
            Some(json!({ "query": "x", "repositories": ["nope"] }).to_string()),
            true,
            404,
            "not_found",
            "nope",
        ),
        (
            "POST",
            "/api/v1/search".into(),
            Some(json!({ "query": "  " }).to_string()),
            true,
            400,
            "bad_request",
            "query",
        ),
        (
            "POST",
            "/api/v1/search".into(),
            Some("{not json".into()),
            true,
            400,
            "bad_request",
            "invalid request body",
        ),
        (
            "POST",
            "/api/v1/search".into(),
            Some(huge),
            true,
            413,
            "payload_too_large",
            "bytes",
        ),
        (
            "POST",
            "/api/v1/search".into(),
            Some(json!({ "query": "x" }).to_string()),
            false,
            415,
            "unsupported_media_type",
            "JSON",
        ),
        ("GET", long, None, false, 414, "uri_too_long", "bytes"),
        (
            "GET",
            "/api/v1/jobs?limit=0".into(),
            None,
            false,
            400,
            "bad_request",
            "limit",
        ),
        (
            "GET",
            "/api/v1/jobs?limit=x".into(),
            None,
            false,
            400,
            "bad_request",
            "limit",
        ),
        (
            "GET",
            "/api/v1/symbols".into(),
            None,
            false,
            400,
            "bad_request",
            "name",
        ),
        (
            "GET",
            "/api/v1/symbols?name=%20".into(),
            None,
            false,
            400,
            "bad_request",
            "name",
        ),
        (
            "GET",
            "/api/v1/repositories/nope/symbols".into(),
            None,
            false,
            400,
            "bad_request",
            "path",
        ),
    ];
    for (method, path, body, as_json, status, code, mentions) in cases {
        let mut request = s
            .http
            .request(method.parse().unwrap(), format!("{}{path}", s.base));
        if let Some(body) = body {
            if as_json {
                request = request.header("content-type", "application/json");
            }
            request = request.body(body);
        }
        let response = request.send().await.unwrap();
        let got = response.status().as_u16();
        let answer: Value = response.json().await.unwrap_or(Value::Null);
        let what = format!("{method} {}", &path[..path.len().min(60)]);
        assert_eq!(
            (got, error_code(&answer)),
            (status, code),
            "{what}: {answer}"
        );
        let message = answer["error"]["message"].as_str().unwrap_or("");
        assert!(
            message.contains(mentions),
            "{what}: `{mentions}` not in {message}"
        );
    }

    // Every search slot taken: 429 with Retry-After, until one is free again.
    let held = s
        ._server
        .state
        .service
        .search_slots()
        .clone()
        .acquire_many_owned(sextant::service::DEFAULT_MAX_SEARCHES as u32)
        .await
        .unwrap();
    let r = s
        .http
        .post(format!("{}/api/v1/search", s.base))
        .json(&json!({ "query": "x" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 429);
    assert_eq!(r.headers()["retry-after"], "1");
    drop(held);
    assert_eq!(
        s.post("/api/v1/search", json!({ "query": "x" })).await.0,
        200
    );
    // A Host that is not ours (DNS rebinding) is refused.
    let r = s
        .http
        .get(format!("{}/api/v1/repositories", s.base))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);

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

/// Issue "One service layer": the "is a sync already queued or running?" check and the
/// enqueue are one store operation. Six clients asking at once get one 202 and five 409s
/// naming the job that won, and exactly one job is queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_syncs_queue_exactly_one_job() {
    let s = server(false).await;
    let (status, body) = s
        .post(
            "/api/v1/repositories",
            json!({ "path": s.root.to_string_lossy(), "name": "ws" }),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    // No runner: end the registration's job by hand, so that nothing is active.
    let meta = s._server.indexer.meta();
    let first = meta
        .claim_job(None, &crate::support::lease("test"))
        .await
        .unwrap()
        .unwrap();
    meta.finish_job(&first.id, sextant::store::JobState::Succeeded, None)
        .await
        .unwrap();
    let answers = futures::future::join_all(
        (0..6).map(|_| s.post("/api/v1/repositories/ws/sync", json!({}))),
    )
    .await;
    let accepted: Vec<&Value> = answers
        .iter()
        .filter(|(status, _)| *status == 202)
        .map(|(_, body)| body)
        .collect();
    assert_eq!(accepted.len(), 1, "{answers:?}");
    let winner = accepted[0]["job"]["id"].as_str().unwrap();
    for (status, body) in answers.iter().filter(|(status, _)| *status != 202) {
        assert_eq!((*status, error_code(body)), (409, "conflict"), "{body}");
        assert!(
            body["error"]["message"].as_str().unwrap().contains(winner),
            "{body}"
        );
    }
    let (_, jobs) = s.get("/api/v1/jobs?repository=ws").await;
    let queued = jobs["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|j| j["state"] == "queued")
        .count();
    assert_eq!(queued, 1, "{jobs}");
}

/// With tokens required: every documented route (taken from the OpenAPI document, so a
/// new route is covered the day it is added) refuses a request without a token, or with
/// an unknown or revoked one; a read token limited to one repository sees and searches
/// only that one and may change nothing; an admin token may.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_gate_every_route_and_bound_what_each_token_sees() {
    let server = support::app::start_with_tokens(true).await;
    let other = server.tmp.path().join("other");
    support::write(
        &other,
        "src/secret.ts",
        "export function secretThing(x: number) {\n  return x * 2;\n}\n",
    );
    let http = reqwest::Client::new();
    let base = server.base.clone();
    let send = |method: &str, path: &str, token: Option<&str>, body: Option<Value>| {
        let mut r = http.request(
            method.to_uppercase().parse().unwrap(),
            format!("{base}{path}"),
        );
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        if let Some(b) = body {
            r = r.json(&b);
        }
        let stream = path.ends_with("events") || path == "/metrics";
        async move {
            let resp = r.send().await.unwrap();
            let status = resp.status().as_u16();
            let challenge = resp.headers().get("www-authenticate").is_some();
            let body: Value = if stream {
                Value::Null
            } else {
                resp.json().await.unwrap_or(Value::Null)
            };
            (status, body, challenge)
        }
    };

    // Refusals on every route of the spec.
    let doc = serde_json::to_value(sextant::server::openapi()).unwrap();
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            let public = path == "/healthz" || path == "/readyz";
            let concrete = path.replace("{repo}", "ws").replace("{id}", "x");
            for token in [None, Some("sxt_not_a_token")] {
                let (status, body, challenge) = send(method, &concrete, token, None).await;
                if public {
                    assert_eq!(status, 200, "{method} {path}");
                } else {
                    assert_eq!(status, 401, "{method} {path} {token:?}: {body}");
                    assert!(challenge, "{method} {path}: WWW-Authenticate");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 26, "only {checked} refusals checked");
    let (status, _, _) = send("POST", "/mcp", None, Some(json!({}))).await;
    assert_eq!(status, 401, "MCP without a token");

    // An admin registers two repositories.
    let admin = server.token("admin", &[]).await;
    for (path, name) in [(&server.root, "ws"), (&other, "other")] {
        let (status, body, _) = send(
            "POST",
            "/api/v1/repositories",
            Some(&admin),
            Some(json!({ "path": path.to_string_lossy(), "name": name })),
        )
        .await;
        assert_eq!(status, 201, "{body}");
        let id = body["job"]["id"].as_str().unwrap().to_string();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (_, job, _) = send("GET", &format!("/api/v1/jobs/{id}"), Some(&admin), None).await;
            if job["job"]["state"] == "succeeded" {
                break;
            }
            assert!(Instant::now() < deadline, "{job}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    // A read token limited to `ws`.
    let reader = server.token("read", &["ws"]).await;
    let r = Some(reader.as_str());
    let (status, body, _) = send("GET", "/api/v1/repositories", r, None).await;
    assert_eq!(status, 200);
    let names: Vec<&str> = body["repositories"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x["name"].as_str())
        .collect();
    assert_eq!(names, ["ws"]);
    for path in [
        "/api/v1/repositories/other",
        "/api/v1/repositories/other/files",
        "/api/v1/repositories/other/symbols?path=src/secret.ts",
        "/api/v1/symbols?name=secretThing&repository=other",
    ] {
        let (status, body, _) = send("GET", path, r, None).await;
        assert_eq!(
            (status, error_code(&body)),
            (404, "not_found"),
            "{path}: {body}"
        );
    }
    let (status, body, _) = send("GET", "/api/v1/symbols?name=secretThing", r, None).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["response"]["results"], json!([]), "{body}");
    let (status, body, _) = send(
        "POST",
        "/api/v1/search",
        r,
        Some(json!({ "query": "secret thing number", "minimumRelevanceThreshold": 0.0 })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let paths: Vec<&str> = body["response"]["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h["path"].as_str())
        .collect();
    assert!(
        !paths.is_empty() && !paths.contains(&"src/secret.ts"),
        "{paths:?}"
    );
    let (status, body, _) = send("GET", "/api/v1/jobs", r, None).await;
    assert_eq!(status, 200);
    assert_eq!(body["jobs"].as_array().unwrap().len(), 1, "{body}");
    for (method, path, body) in [
        ("POST", "/api/v1/repositories/ws/sync", None),
        ("DELETE", "/api/v1/repositories/ws", None),
        (
            "PATCH",
            "/api/v1/repositories/ws",
            Some(json!({ "settings": {} })),
        ),
        (
            "POST",
            "/api/v1/repositories",
            Some(json!({ "path": other.to_string_lossy(), "name": "again" })),
        ),
    ] {
        let (status, answer, _) = send(method, path, r, body).await;
        assert_eq!(
            (status, error_code(&answer)),
            (403, "forbidden"),
            "{method} {path}: {answer}"
        );
    }
    assert_eq!(send("GET", "/metrics", r, None).await.0, 403);

    // The admin sees everything, including the metrics of what happened.
    let (status, body, _) = send(
        "GET",
        "/api/v1/symbols?name=secretThing",
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(body["response"]["results"][0]["path"], "src/secret.ts");
    let metrics = super::support::metrics_text(&http, &base, Some(&admin)).await;
    assert!(
        metrics.contains("sextant_http_requests_total{method=\"GET\",route=\"/api/v1/repositories/{repo}\",status=\"404\"}"),
        "{metrics}"
    );
    assert!(
        metrics.contains("sextant_repositories{status=\"ready\"} 2"),
        "{metrics}"
    );
    assert!(
        metrics.contains("sextant_jobs{state=\"succeeded\"} 2"),
        "{metrics}"
    );
    // The chunk store's size: live bytes and the directory on disk, versions kept.
    let gauge = |name: &str| -> f64 {
        metrics
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} missing: {metrics}"))
    };
    let live = gauge("sextant_chunk_store_bytes{state=\"live\"}");
    let on_disk = gauge("sextant_chunk_store_bytes{state=\"on_disk\"}");
    assert!(live > 0.0 && on_disk >= live, "{metrics}");
    assert!(gauge("sextant_chunk_store_versions") >= 1.0, "{metrics}");
    // What searches hold in memory, against its limit (the default, 256 MiB): held once
    // a search has had the table read.
    let limit = gauge("sextant_search_memory_bytes{state=\"limit\"}");
    assert_eq!(limit, f64::from(256u32 << 20), "{metrics}");
    let started = Instant::now();
    loop {
        let (status, _, _) = send(
            "POST",
            "/api/v1/search",
            Some(&admin),
            Some(json!({ "query": "secret thing" })),
        )
        .await;
        assert_eq!(status, 200);
        let metrics = super::support::metrics_text(&http, &base, Some(&admin)).await;
        let held = metrics
            .lines()
            .find_map(|l| l.strip_prefix("sextant_search_memory_bytes{state=\"held\"} "))
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("held missing: {metrics}"));
        if held > 0.0 {
            assert!(held < limit, "{metrics}");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "never held: {metrics}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Progress: the limited token's stream carries only its repository's events, and the
    // other repository's own stream does not exist for it.
    assert_eq!(
        send("GET", "/api/v1/repositories/other/events", r, None)
            .await
            .0,
        404
    );
    let mut sse = http
        .get(format!("{base}/api/v1/events"))
        .bearer_auth(&reader)
        .send()
        .await
        .unwrap();
    support::write(&other, "src/more.ts", "export const hiddenName = 1;\n");
    support::write(&server.root, "src/more.ts", "export const seenName = 1;\n");
    let other_id = server.indexer.find_repo("other").await.unwrap().id;
    let ws_id = server.indexer.find_repo("ws").await.unwrap().id;
    for repo in ["other", "ws"] {
        let path = format!("/api/v1/repositories/{repo}/sync");
        assert_eq!(send("POST", &path, Some(&admin), None).await.0, 202);
    }
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !(seen.contains(&ws_id) && seen.contains("\"phase\":\"done\"")) {
        assert!(Instant::now() < deadline, "{seen}");
        match tokio::time::timeout(Duration::from_secs(10), sse.chunk()).await {
            Ok(Ok(Some(bytes))) => seen.push_str(&String::from_utf8_lossy(&bytes)),
            other => panic!("stream ended: {other:?}; {seen}"),
        }
    }
    // The `other` sync was queued first and has finished by the time `ws` is done.
    assert!(!seen.contains(&other_id), "{seen}");
    assert!(
        !seen.contains("hiddenName") && !seen.contains("secret"),
        "{seen}"
    );

    // Revoked: refused from the next request on.
    let tokens = server.indexer.meta().list_tokens().await.unwrap();
    let id = &tokens
        .iter()
        .find(|t| t.scope == sextant::auth::Scope::Read)
        .unwrap()
        .id;
    assert!(server.indexer.meta().revoke_token(id).await.unwrap());
    assert_eq!(send("GET", "/api/v1/repositories", r, None).await.0, 401);
}

/// Behind a reverse proxy: every route under the base path, `X-Forwarded-Host` checked
/// against the allowed hosts, `X-Forwarded-Prefix` in the served document's `servers`,
/// the docs page under the base path; and the server's search defaults fill what a
/// request leaves out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn proxy_settings_and_server_search_defaults_apply() {
    let http_options = sextant::server::HttpOptions {
        base_path: "/sextant".into(),
        allowed_hosts: vec!["code.example.com".into()],
        trust_forwarded: true,
        ..Default::default()
    }
    .validated()
    .unwrap();
    let defaults = sextant::search::SearchOptions {
        max_token_budget: 7,
        minimum_relevance_threshold: 0.25,
        ..Default::default()
    };
    let server = support::app::start_with(
        false,
        http_options,
        support::app::Setup::service(move |s| s.with_search_defaults(defaults)),
    )
    .await;
    let http = reqwest::Client::new();
    let get = |path: &str, host: Option<&str>, prefix: Option<&str>| {
        let mut r = http.get(format!("{}{path}", server.base));
        if let Some(h) = host {
            r = r.header("x-forwarded-host", h);
        }
        if let Some(p) = prefix {
            r = r.header("x-forwarded-prefix", p);
        }
        r.send()
    };
    assert_eq!(
        get("/sextant/api/v1/repositories", None, None)
            .await
            .unwrap()
            .status(),
        403
    );
    // Probes reach the server by address.
    assert_eq!(
        get("/sextant/healthz", None, None).await.unwrap().status(),
        200
    );
    let proxied = Some("code.example.com");
    assert_eq!(
        get("/sextant/healthz", proxied, None)
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(get("/healthz", proxied, None).await.unwrap().status(), 404);
    let doc: Value = get("/sextant/openapi.json", proxied, Some("/tools"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        doc["servers"][0]["url"], "/tools/sextant",
        "{}",
        doc["servers"]
    );
    let doc: Value = http
        .get(format!("{}/sextant/openapi.json", server.base))
        .header("x-forwarded-host", "code.example.com")
        .header("x-forwarded-proto", "https")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        doc["servers"][0]["url"], "https://code.example.com/sextant",
        "{}",
        doc["servers"]
    );
    let page = get("/sextant/docs/", proxied, None).await.unwrap();
    assert_eq!(page.status(), 200);
    let config = get("/sextant/docs/swagger-initializer.js", proxied, None)
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(config.contains("/sextant/openapi.json"), "{config}");

    let search = |body: Value| {
        http.post(format!("{}/sextant/api/v1/search", server.base))
            .header("x-forwarded-host", "code.example.com")
            .json(&body)
            .send()
    };
    let answer: Value = search(json!({ "query": "anything" }))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["response"]["tokenBudget"], 7, "{answer}");
    let answer: Value = search(json!({ "query": "anything", "maxTokenBudget": 50 }))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["response"]["tokenBudget"], 50, "{answer}");
}

/// Regressions of the security review's findings that a read token could use to take the
/// server down or around its guards (issue "Hardening", findings 1–3, 8, 10, 11): each
/// request here crashed, stalled or slipped through before its fix.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_requests_are_refused_with_the_field_named() {
    let s = server(false).await;
    // 1. 60,000 paths overflowed a worker's stack (the process aborted).
    let paths: Vec<String> = (0..60_000).map(|i| format!("p{i}.ts")).collect();
    let (status, body) = s
        .post(
            "/api/v1/search",
            json!({ "query": "token", "paths": paths }),
        )
        .await;
    assert_eq!((status, error_code(&body)), (400, "bad_request"), "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`paths`")
    );
    let (status, body) = s
        .post(
            "/api/v1/search",
            json!({ "query": "token", "repositories": vec!["r"; 5_000] }),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`repositories`")
    );
    // Issue 37, finding 10: Scout's `repositories` had no bound (60,000 names: 3.7 s a
    // request, each looked up); now at most 100, refused before any lookup.
    let names: Vec<String> = (0..60_000).map(|i| format!("repo{i}")).collect();
    let (status, body) = s
        .post(
            "/api/v1/scout",
            json!({ "query": "validateToken", "repositories": names }),
        )
        .await;
    assert_eq!((status, error_code(&body)), (400, "bad_request"), "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`repositories` takes at most 100"),
        "{body}"
    );
    // 2. An 870 KB query was OOM-killed; 20k words asked for a 2.9 GB allocation.
    for query in ["validate ".repeat(100_000), "token decode ".repeat(2_000)] {
        let (status, body) = s.post("/api/v1/search", json!({ "query": query })).await;
        assert_eq!((status, error_code(&body)), (400, "bad_request"), "{body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("bytes"));
    }
    // 3. 300 brace globs were recompiled per row (17 s a search); now at most 100, compiled
    // once, and a broken one is named.
    let globs: Vec<String> = (0..300)
        .map(|i| format!("src/{{a{i},b}}/**/*.ts"))
        .collect();
    let (status, _) = s
        .post(
            "/api/v1/search",
            json!({ "query": "token", "paths": globs }),
        )
        .await;
    assert_eq!(status, 400);
    let (status, body) = s
        .post(
            "/api/v1/search",
            json!({ "query": "token", "paths": ["src/{jwt,auth"] }),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("src/{jwt,auth")
    );
    // 10. The Host guard skipped any path *ending* in /healthz.
    for path in ["/api/v1/repositories/healthz", "/x/readyz"] {
        let r = s
            .http
            .get(format!("{}{path}", s.base))
            .header("host", "evil.example")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 403, "{path}");
    }
    let r = s
        .http
        .get(format!("{}/healthz", s.base))
        .header("host", "10.0.0.7:7878")
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status().as_u16(),
        200,
        "probes reach the server by address"
    );
    // 8. Invented methods grew /metrics without bound.
    for method in ["FOO", "BAR1", "BAZ2"] {
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        s.http
            .request(m, format!("{}/api/v1/repositories", s.base))
            .send()
            .await
            .unwrap();
    }
    let metrics = s
        .http
        .get(format!("{}/metrics", s.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !metrics.contains("FOO") && !metrics.contains("BAZ2"),
        "{metrics}"
    );
    assert!(metrics.contains("method=\"other\""), "{metrics}");
}

/// Finding 11: on the auth-off loopback server, a page on another site could `POST
/// …/sync` (a "simple" request needs no CORS preflight). Browsers' requests from elsewhere
/// are refused; same-origin pages and clients that are not browsers pass.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_site_state_changes_are_refused() {
    let s = server(false).await;
    let (status, body) = s
        .post(
            "/api/v1/repositories",
            json!({ "path": s.root.to_string_lossy(), "name": "ws" }),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let sync = format!("{}/api/v1/repositories/ws/sync", s.base);
    let post = |headers: &[(&str, &str)]| {
        let mut r = s
            .http
            .post(&sync)
            .header("content-type", "text/plain")
            .body("x");
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        r.send()
    };
    for headers in [
        vec![("origin", "http://evil.example")],
        vec![("sec-fetch-site", "cross-site")],
        vec![("origin", "null"), ("sec-fetch-site", "cross-site")],
    ] {
        let r = post(&headers).await.unwrap();
        assert_eq!(r.status().as_u16(), 403, "{headers:?}");
        let body: Value = r.json().await.unwrap();
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("--allowed-origin"),
            "{body}"
        );
    }
    // MCP is refused the same way.
    let r = s
        .http
        .post(format!("{}/mcp", s.base))
        .header("origin", "http://evil.example")
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    // Same origin (a page the server itself served) and plain clients reach the handler:
    // the first sync is still queued, so the answer is the handler's 409.
    let own = s.base.clone();
    let r = post(&[("origin", own.as_str()), ("sec-fetch-site", "same-origin")])
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 409);
    assert_eq!(post(&[]).await.unwrap().status().as_u16(), 409);
    // Reads are not state changes.
    let r = s
        .http
        .get(format!("{}/api/v1/repositories", s.base))
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
}

/// Finding 9: a client that never finishes its request head is disconnected after the
/// header-read timeout (the harness sets 5 s) instead of holding a connection for ever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_header_clients_are_disconnected() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let s = server(false).await;
    let addr = s.base.trim_start_matches("http://").to_string();
    let mut slow = tokio::net::TcpStream::connect(&addr).await.unwrap();
    slow.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    let mut buf = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), slow.read_to_end(&mut buf)).await;
    assert!(read.is_ok(), "the connection was still open after 20 s");
    assert!(started.elapsed() >= Duration::from_secs(4));
    // A silent connection is closed the same way.
    let mut silent = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let read = tokio::time::timeout(Duration::from_secs(20), silent.read_to_end(&mut buf)).await;
    assert!(
        read.is_ok(),
        "a silent connection was still open after 20 s"
    );
}

/// Serves `app` through `api::serve` with `limits` on a loopback port; its address.
async fn serve_with_limits(
    app: axum::Router,
    limits: sextant::server::ConnectionLimits,
) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(sextant::server::serve(
        listener,
        app,
        limits,
        std::future::pending(),
    ));
    addr
}

/// Finding 9: beyond the connection cap a client is answered 503 at once (not left
/// hanging), and a slot frees when a connection closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_cap_get_503() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = axum::Router::new().route("/", axum::routing::get(|| async { "hi" }));
    let addr = serve_with_limits(
        app,
        sextant::server::ConnectionLimits {
            header_read_timeout: Duration::from_secs(30),
            max_connections: 2,
            ..Default::default()
        },
    )
    .await;
    let first = tokio::net::TcpStream::connect(addr).await.unwrap();
    let _second = tokio::net::TcpStream::connect(addr).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut third = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(5), third.read_to_string(&mut answer))
        .await
        .expect("answered at once")
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.to_lowercase().contains("retry-after: 1"), "{answer}");
    drop(first);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut fourth = tokio::net::TcpStream::connect(addr).await.unwrap();
    fourth
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(5), fourth.read_to_string(&mut answer))
        .await
        .unwrap()
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("hi"), "{answer}");
}

/// Issue 37, finding 2: one client address may hold only its share of the connection
/// cap, so ~1,100 slow sockets from one client no longer lock every other client out.
/// Clients here are loopback addresses of their own (127.0.0.2 is the attacker).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_holds_only_its_share_of_the_connections() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = axum::Router::new().route("/", axum::routing::get(|| async { "hi" }));
    let addr = serve_with_limits(
        app,
        sextant::server::ConnectionLimits {
            header_read_timeout: Duration::from_secs(30),
            max_connections: 4,
            max_per_client: 2,
            ..Default::default()
        },
    )
    .await;
    let from = |ip: [u8; 4]| async move {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(std::net::SocketAddr::from((ip, 0))).unwrap();
        socket.connect(addr).await.unwrap()
    };
    let _held = (from([127, 0, 0, 2]).await, from([127, 0, 0, 2]).await);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut third = from([127, 0, 0, 2]).await;
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(5), third.read_to_string(&mut answer))
        .await
        .expect("answered at once")
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    // Another client still gets in while the first holds its share.
    let mut other = from([127, 0, 0, 1]).await;
    other
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(5), other.read_to_string(&mut answer))
        .await
        .unwrap()
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// Issue 37, finding 2: a body trickled a byte at a time had no time limit on `/mcp`
/// (REST had the request timeout). One deadline for the whole body now covers every
/// route: 408 with what to do, and the connection is free again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickled_body_gets_408_on_every_route() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let started = support::app::start_with(
        false,
        sextant::server::HttpOptions {
            body_timeout: Duration::from_secs(2),
            ..Default::default()
        },
        support::app::Setup::default(),
    )
    .await;
    let addr = started.base.trim_start_matches("http://").to_string();
    for path in ["/mcp", "/api/v1/search"] {
        let slow = tokio::net::TcpStream::connect(&addr).await.unwrap();
        let (mut read, mut write) = slow.into_split();
        write
            .write_all(
                format!(
                    "POST {path} HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\n\
                     accept: application/json, text/event-stream\r\ncontent-length: 400\r\n\r\n{{"
                )
                .as_bytes(),
            )
            .await
            .unwrap();
        // A byte a second: each arrives well within any per-read timeout; only a deadline
        // for the whole body ends it.
        let trickle = tokio::spawn(async move {
            for _ in 0..30 {
                tokio::time::sleep(Duration::from_secs(1)).await;
                if write.write_all(b" ").await.is_err() {
                    break;
                }
            }
        });
        let t = Instant::now();
        let mut answer = vec![0u8; 4096];
        let n = tokio::time::timeout(Duration::from_secs(15), read.read(&mut answer))
            .await
            .expect("answered before the trickle ended")
            .unwrap();
        trickle.abort();
        let answer = String::from_utf8_lossy(&answer[..n]);
        assert!(answer.starts_with("HTTP/1.1 408"), "{path}: {answer}");
        assert!(answer.contains("request_timeout"), "{path}: {answer}");
        assert!(t.elapsed() < Duration::from_secs(15), "{path}");
    }
}

/// Issue "Hardening" (faults): Postgres stops under a running server. While it is down
/// `/readyz` answers 503 within seconds, searches and syncs fail fast with a 503 that
/// says the database does not answer (never a hang, never a crash), and once it is back
/// the same server searches and syncs again without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_outage_is_reported_and_survived() {
    let pg = match support::postgres::TestPostgres::start().await {
        Ok(pg) if pg.can_restart() => pg,
        Ok(_) => {
            return support::skip(
                "Postgres outage",
                support::Unavailable::missing(
                    "a private PostgreSQL cluster the test can stop",
                    "unset TEST_DATABASE_URL (the test starts its own cluster)",
                    "TEST_DATABASE_URL names a server the test cannot stop",
                ),
            );
        }
        Err(why) => return support::skip("Postgres outage", why),
    };
    let started = support::app::start_on(
        Some(&pg.url),
        true,
        sextant::server::HttpOptions::default(),
        support::app::Setup::default(),
    )
    .await;
    let s = Server {
        root: started.root.clone(),
        base: started.base.clone(),
        _server: started,
        http: reqwest::Client::new(),
    };
    let (status, body) = s
        .post(
            "/api/v1/repositories",
            json!({ "path": s.root.to_string_lossy(), "name": "ws" }),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    s.wait_for_job(body["job"]["id"].as_str().unwrap()).await;
    let search = json!({ "query": "symbol = validateToken" });
    assert_eq!(s.post("/api/v1/search", search.clone()).await.0, 200);

    pg.stop().unwrap();
    let t = Instant::now();
    let (status, body) = s.get("/readyz").await;
    assert_eq!(status, 503, "{body}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    for (path, body) in [
        ("/api/v1/search", search.clone()),
        ("/api/v1/repositories/ws/sync", json!({})),
    ] {
        let t = Instant::now();
        let (status, answer) = s.post(path, body).await;
        assert_eq!(
            (status, error_code(&answer)),
            (503, "unavailable"),
            "{path}: {answer}"
        );
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("metadata database does not answer"),
            "{answer}"
        );
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "{path}: {:?}",
            t.elapsed()
        );
    }

    pg.restart().unwrap();
    let t = Instant::now();
    while s.get("/readyz").await.0 != 200 {
        assert!(t.elapsed() < Duration::from_secs(60), "never ready again");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (status, body) = s.post("/api/v1/search", search).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["response"]["results"][0]["breadcrumb"],
        "validateToken"
    );
    support::write(
        &s.root,
        "src/extra.ts",
        "export function extra() {\n  return 1;\n}\n",
    );
    let (status, body) = s.post("/api/v1/repositories/ws/sync", json!({})).await;
    assert_eq!(status, 202, "{body}");
    let job = s.wait_for_job(body["job"]["id"].as_str().unwrap()).await;
    assert_eq!(
        job["state"].as_str().unwrap().to_lowercase(),
        "succeeded",
        "{job}"
    );

    // Down in the middle of a sync: the job is not left `running` (which would make
    // every later sync a 409); its outcome is written once the database is back, and as
    // the failure was the database's, it goes back to the queue and succeeds.
    for i in 0..3000 {
        support::write(
            &s.root,
            &format!("bulk/m{i}.ts"),
            &format!("export function bulk{i}(x: number) {{\n  return x + {i};\n}}\n"),
        );
    }
    let (status, body) = s.post("/api/v1/repositories/ws/sync", json!({})).await;
    assert_eq!(status, 202, "{body}");
    let id = body["job"]["id"].as_str().unwrap().to_string();
    loop {
        let (_, job) = s.get(&format!("/api/v1/jobs/{id}")).await;
        if job["job"]["state"]
            .as_str()
            .unwrap_or("")
            .eq_ignore_ascii_case("running")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Longer than the pool waits for a connection (10 s): a short outage is absorbed by
    // the pool, this one fails the sync's next write.
    pg.stop().unwrap();
    tokio::time::sleep(Duration::from_secs(14)).await;
    pg.restart().unwrap();
    let job = s.wait_for_job(&id).await;
    assert_eq!(
        job["state"].as_str().unwrap().to_lowercase(),
        "succeeded",
        "{job}"
    );
    assert!(
        job["attempts"].as_i64().unwrap() >= 2,
        "interrupted and tried again: {job}"
    );
    let (status, body) = s.get("/api/v1/repositories/ws").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["files"]["indexed"], 3003, "{body}");
    drop(s);
    pg.cleanup().await;
}

/// Issue "Hardening" (load): a client that stops reading does not hold the connection
/// (and what it pinned) forever: a write that makes no progress for the write timeout
/// ends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_disconnected() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const BIG: usize = 64 * 1024 * 1024;
    let app = axum::Router::new().route("/big", axum::routing::get(|| async { vec![b'x'; BIG] }));
    let addr = serve_with_limits(
        app,
        sextant::server::ConnectionLimits {
            write_timeout: Duration::from_secs(1),
            ..Default::default()
        },
    )
    .await;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut client = socket.connect(addr).await.unwrap();
    client
        .write_all(b"GET /big HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    // Not reading: the server's writes stall once the socket buffers are full.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut received = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    let read_all = async {
        loop {
            match client.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => received += n,
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read_all)
        .await
        .expect("the server closed the stalled connection");
    assert!(received < BIG, "the whole body arrived: {received} bytes");
}

/// An MCP `initialize` with `token`; the status and the session id the server gave.
async fn mcp_initialize(base: &str, token: &str) -> (u16, Option<String>) {
    let resp = support::load::mcp_initialize(&reqwest::Client::new(), base)
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    let session = resp
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_string());
    (resp.status().as_u16(), session)
}

/// Issue "Hardening" (load): SSE streams and MCP sessions are long-lived and hold memory;
/// one token may hold at most `per_token` of them (a 429 that names the limit beyond),
/// a stream's place frees when its client goes away, and an MCP session without a
/// request for the idle timeout is closed. Other tokens are not affected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_capped_per_token_and_idle_mcp_sessions_close() {
    let setup = support::app::Setup::server(|s| {
        s.with_auth(sextant::server::AuthPolicy::Tokens)
            .with_session_limits(sextant::server::SessionLimits {
                per_token: 2,
                // Far above what the steps before the idle wait take even on a loaded
                // machine (were a session idle this long early, the third would not be
                // refused), and below the wait.
                idle: Duration::from_secs(5),
            })
    });
    let server =
        support::app::start_with(true, sextant::server::HttpOptions::default(), setup).await;
    server
        .indexer
        .register_path(&server.root, Some("ws"), Default::default())
        .await
        .unwrap();
    let (watcher, other, agent) = (
        server.token("admin", &[]).await,
        server.token("read", &[]).await,
        server.token("read", &[]).await,
    );
    let http = reqwest::Client::new();
    let base = server.base.clone();
    let stream = |token: &str| {
        http.get(format!("{base}/api/v1/events"))
            .bearer_auth(token)
            .send()
    };
    let first = stream(&watcher).await.unwrap();
    let second = stream(&watcher).await.unwrap();
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (200, 200)
    );
    let refused = stream(&watcher).await.unwrap();
    assert_eq!(refused.status(), 429);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(error_code(&body), "too_many_requests", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-sessions-per-token 2"),
        "{body}"
    );
    let others = stream(&other).await.unwrap();
    assert_eq!(others.status(), 200);

    // A client that goes away frees its place (seen at the stream's next event).
    drop(first);
    let sync = http
        .post(format!("{base}/api/v1/repositories/ws/sync"))
        .bearer_auth(&watcher)
        .send()
        .await
        .unwrap();
    assert!(sync.status().is_success(), "{}", sync.status());
    let started = Instant::now();
    let _third = loop {
        let r = stream(&watcher).await.unwrap();
        if r.status() == 200 {
            break r;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "never freed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // MCP sessions share the count, and so do streamed Scout answers (issue 37, finding
    // 11); an answer that does not stream is not a session.
    assert_eq!(mcp_initialize(&base, &watcher).await.0, 429);
    let scout = |accept: &'static str| {
        http.post(format!("{base}/api/v1/scout"))
            .bearer_auth(&watcher)
            .header("accept", accept)
            .json(&json!({ "query": "validateToken" }))
            .send()
    };
    assert_eq!(scout("text/event-stream").await.unwrap().status(), 429);
    assert_ne!(scout("application/json").await.unwrap().status(), 429);

    // MCP: two sessions, a third refused; closing one frees its place.
    let (status, s1) = mcp_initialize(&base, &agent).await;
    assert_eq!(status, 200);
    // A session belongs to the token that started it: another token naming its id gets
    // the answer an unknown id gets (issue 37, finding 11), and cannot close it.
    let s1_id = s1.clone().unwrap();
    let borrowed = |method: reqwest::Method, token: &str| {
        http.request(method, format!("{base}/mcp"))
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &s1_id)
            .json(&json!({ "jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {} }))
            .send()
    };
    assert_eq!(
        borrowed(reqwest::Method::POST, &other)
            .await
            .unwrap()
            .status(),
        404
    );
    assert_eq!(
        borrowed(reqwest::Method::DELETE, &other)
            .await
            .unwrap()
            .status(),
        404
    );
    assert_eq!(
        borrowed(reqwest::Method::POST, &agent)
            .await
            .unwrap()
            .status(),
        200
    );
    let (_, s2) = mcp_initialize(&base, &agent).await;
    assert_eq!(mcp_initialize(&base, &agent).await.0, 429);
    let closed = http
        .delete(format!("{base}/mcp"))
        .bearer_auth(&agent)
        .header("mcp-session-id", s2.unwrap())
        .send()
        .await
        .unwrap();
    assert!(closed.status().is_success(), "{}", closed.status());
    assert_eq!(mcp_initialize(&base, &agent).await.0, 200);
    // Idle sessions are closed: the old session is gone, and places are free again.
    tokio::time::sleep(Duration::from_millis(6500)).await;
    // Idle sessions stop counting before any /mcp request sweeps them: the token's two
    // places are free for progress streams at once.
    let streams = (stream(&agent).await.unwrap(), stream(&agent).await.unwrap());
    assert_eq!(
        (streams.0.status().as_u16(), streams.1.status().as_u16()),
        (200, 200)
    );
    drop(streams);
    // Their places free at the streams' next event (a sync's progress; 409 when one is
    // still queued, whose progress serves as well).
    let sync = http
        .post(format!("{base}/api/v1/repositories/ws/sync"))
        .bearer_auth(&watcher)
        .send()
        .await
        .unwrap();
    assert!(
        sync.status().is_success() || sync.status() == 409,
        "{}",
        sync.status()
    );
    let stale = http
        .post(format!("{base}/mcp"))
        .bearer_auth(&agent)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", s1.unwrap())
        .json(&json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {} }))
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 404);
    let freed = Instant::now();
    while mcp_initialize(&base, &agent).await.0 != 200 {
        assert!(freed.elapsed() < Duration::from_secs(30), "never freed");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(mcp_initialize(&base, &agent).await.0, 200);
    drop((second, others));
}
