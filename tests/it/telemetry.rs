//! OpenTelemetry traces from the real binary to a real OTLP receiver running in the test:
//! the span tree of one sync and one search, over OTLP/HTTP (protobuf) and OTLP/gRPC; the
//! caller's `traceparent` continued and passed on to the embedding server; JSON log lines
//! carrying trace ids; and a collector that is stalled or down costing requests nothing,
//! over either protocol.

use crate::support;

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use http_body_util::BodyExt;
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;
use serde_json::{Value, json};
use support::mock_http::MockServer;
use support::process::{Served, register_job, wait_job};

const BIN: &str = env!("CARGO_BIN_EXE_sextant");

/// The caller's trace, as a client would send it.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

/// One received span, flattened.
#[derive(Debug, Clone)]
struct SpanRec {
    name: String,
    trace_id: String,
    span_id: String,
    parent: String,
    kind: i32,
    attributes: HashMap<String, String>,
}

type Spans = Arc<Mutex<Vec<SpanRec>>>;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn record(spans: &Spans, request: ExportTraceServiceRequest) {
    let mut out = spans.lock().unwrap();
    for resource in request.resource_spans {
        let service = resource
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|a| a.key == "service.name")
            .map(|a| format!("{:?}", a.value))
            .unwrap_or_default();
        for scope in resource.scope_spans {
            for span in scope.spans {
                let mut attributes: HashMap<String, String> = span
                    .attributes
                    .iter()
                    .map(|a| {
                        use opentelemetry_proto::tonic::common::v1::any_value::Value as V;
                        let v = match a.value.as_ref().and_then(|v| v.value.as_ref()) {
                            Some(V::StringValue(s)) => s.clone(),
                            Some(V::IntValue(i)) => i.to_string(),
                            Some(V::BoolValue(b)) => b.to_string(),
                            Some(V::DoubleValue(d)) => d.to_string(),
                            other => format!("{other:?}"),
                        };
                        (a.key.clone(), v)
                    })
                    .collect();
                attributes.insert("service.name".into(), service.clone());
                out.push(SpanRec {
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent: hex(&span.parent_span_id),
                    kind: span.kind,
                    attributes,
                });
            }
        }
    }
}

/// An OTLP/HTTP receiver: `POST /v1/traces` with a protobuf body.
async fn http_receiver(spans: Spans) -> String {
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: Bytes| {
            let spans = spans.clone();
            async move {
                let request = ExportTraceServiceRequest::decode(body).expect("an OTLP request");
                record(&spans, request);
                (
                    [("content-type", "application/x-protobuf")],
                    ExportTraceServiceResponse::default().encode_to_vec(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    url
}

/// An OTLP/gRPC receiver: HTTP/2, `TraceService/Export`, length-prefixed protobuf, the
/// status in trailers.
async fn grpc_receiver(spans: Spans) -> String {
    use hyper::service::service_fn;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let spans = spans.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    let spans = spans.clone();
                    async move {
                        assert_eq!(
                            request.uri().path(),
                            "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
                        );
                        assert_eq!(request.headers()["content-type"], "application/grpc");
                        let mut body = request.into_body().collect().await.unwrap().to_bytes();
                        assert_eq!(body.get_u8(), 0, "uncompressed");
                        let len = body.get_u32() as usize;
                        assert_eq!(len, body.len());
                        record(&spans, ExportTraceServiceRequest::decode(body).unwrap());
                        let answer = ExportTraceServiceResponse::default().encode_to_vec();
                        let mut framed = vec![0u8];
                        framed.extend((answer.len() as u32).to_be_bytes());
                        framed.extend(answer);
                        let mut trailers = http::HeaderMap::new();
                        trailers.insert("grpc-status", "0".parse().unwrap());
                        let frames = futures::stream::iter([
                            Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(
                                Bytes::from(framed),
                            )),
                            Ok(hyper::body::Frame::trailers(trailers)),
                        ]);
                        Ok::<_, std::convert::Infallible>(
                            hyper::Response::builder()
                                .header("content-type", "application/grpc")
                                .body(http_body_util::StreamBody::new(frames))
                                .unwrap(),
                        )
                    }
                });
                let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    url
}

/// `sextant serve` with a remote embedder and reranker on `mock`, exporting to `endpoint`
/// over `protocol`, logging JSON.
fn serve(data: &std::path::Path, mock: &MockServer, endpoint: &str, protocol: &str) -> Served {
    let mut command = Command::new(BIN);
    command
        .arg("--data-dir")
        .arg(data)
        .args(["--log-format", "json"])
        .args(["--embed-provider", "openai", "--embed-model", "mock-embed"])
        .args(["--embed-dims", "8", "--embed-url"])
        .arg(format!("{}/v1", mock.url))
        .args(["--rerank-provider", "tei", "--rerank-url"])
        .arg(format!("{}/tei", mock.url))
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "2000")
        .env("RUST_LOG", "warn,sextant=debug")
        .env_remove("OTEL_SERVICE_NAME")
        .env_remove("OTEL_RESOURCE_ATTRIBUTES")
        .env_remove("SEXTANT_SERVER")
        .env_remove("SEXTANT_TOKEN");
    Served::start(command)
}

/// `/metrics` as text.
async fn metrics(http: &reqwest::Client, base: &str) -> String {
    super::support::metrics_text(http, base, None).await
}

/// Registers `ws` and waits for its first sync to end.
async fn register_and_sync(http: &reqwest::Client, base: &str, ws: &std::path::Path) {
    let body = json!({ "path": ws.to_string_lossy(), "name": "ws" });
    let job = register_job(http, base, &body).await;
    let done = wait_job(http, base, &job, |s| s != "queued" && s != "running").await;
    assert_eq!(done["state"], "succeeded", "{done}");
}

/// Waits until `done` holds over the received spans.
async fn spans_until(spans: &Spans, what: &str, done: impl Fn(&[SpanRec]) -> bool) -> Vec<SpanRec> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = spans.lock().unwrap().clone();
        if done(&now) {
            return now;
        }
        if Instant::now() > deadline {
            let names: Vec<_> = now.iter().map(|s| &s.name).collect();
            panic!("{what} never arrived; received: {names:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Names of the spans below `root`, at any depth.
fn descendants<'a>(all: &'a [SpanRec], root: &SpanRec) -> Vec<&'a SpanRec> {
    let mut out = Vec::new();
    let mut frontier = vec![root.span_id.clone()];
    while let Some(id) = frontier.pop() {
        for s in all
            .iter()
            .filter(|s| s.parent == id && s.trace_id == root.trace_id)
        {
            frontier.push(s.span_id.clone());
            out.push(s);
        }
    }
    out
}

fn child<'a>(all: &'a [SpanRec], parent: &SpanRec, name: &str) -> &'a SpanRec {
    all.iter()
        .find(|s| s.parent == parent.span_id && s.name == name)
        .unwrap_or_else(|| {
            let kids: Vec<_> = all
                .iter()
                .filter(|s| s.parent == parent.span_id)
                .map(|s| &s.name)
                .collect();
            panic!("`{}` has no child `{name}`; it has {kids:?}", parent.name)
        })
}

const SERVER: i32 = 2;
const CLIENT: i32 = 3;

async fn traces_of_a_sync_and_a_search(protocol: &str) {
    let spans: Spans = Arc::default();
    let endpoint = match protocol {
        "grpc" => grpc_receiver(spans.clone()).await,
        _ => http_receiver(spans.clone()).await,
    };
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    support::token_workspace(&ws);
    let server = serve(&tmp.path().join("data"), &mock, &endpoint, protocol);
    let base = server.url.clone();
    let http = reqwest::Client::new();
    register_and_sync(&http, &base, &ws).await;

    // The sync: a job's own trace, with every phase under `sync`. The job's span ends
    // last (after its outcome is recorded), so its arrival means the tree is complete.
    let all = spans_until(&spans, "the job's span", |s| {
        s.iter().any(|s| s.name == "job" && s.parent.is_empty())
    })
    .await;
    let job = all
        .iter()
        .find(|s| s.name == "job" && s.parent.is_empty())
        .expect("a root span for the job");
    assert_eq!(job.attributes["sextant.job.kind"], "sync");
    assert!(
        job.attributes["service.name"].contains("sextant"),
        "{job:?}"
    );
    let sync = child(&all, job, "sync");
    assert_eq!(sync.attributes["sextant.repository"], "ws");
    assert_eq!(sync.attributes["sextant.files_indexed"], "2");
    for phase in [
        "sync.scan",
        "sync.parse",
        "sync.embed",
        "sync.write",
        "sync.graph",
    ] {
        child(&all, sync, phase);
    }
    let embed_call = child(&all, child(&all, sync, "sync.embed"), "POST openai");
    assert_eq!(embed_call.kind, CLIENT);
    assert_eq!(embed_call.attributes["http.response.status_code"], "200");
    // The embedding server saw the job's trace.
    let documents = mock
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1/embeddings")
        .expect("documents were embedded");
    let traceparent = documents
        .traceparent
        .expect("traceparent on the embedding call");
    assert!(
        traceparent.contains(&job.trace_id),
        "{traceparent} vs {job:?}"
    );

    // The search: continues the caller's trace.
    let answer = http
        .post(format!("{base}/api/v1/search"))
        .header("traceparent", format!("00-{TRACE_ID}-{PARENT_ID}-01"))
        .json(&json!({ "query": "where is the bearer token validated?" }))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 200);
    let all = spans_until(&spans, "the search's spans", |s| {
        s.iter()
            .any(|s| s.trace_id == TRACE_ID && s.name == "POST /api/v1/search")
    })
    .await;
    let request = all
        .iter()
        .find(|s| s.trace_id == TRACE_ID && s.name == "POST /api/v1/search")
        .unwrap();
    assert_eq!(request.parent, PARENT_ID, "the caller's span is the parent");
    assert_eq!(request.kind, SERVER);
    assert_eq!(request.attributes["http.route"], "/api/v1/search");
    assert_eq!(request.attributes["http.response.status_code"], "200");
    assert_eq!(request.attributes["enduser.id"], "local");
    let service = child(&all, request, "service.search");
    for stage in ["search.freshness", "search.render"] {
        child(&all, service, stage);
    }
    let below: Vec<&str> = descendants(&all, service)
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    for stage in [
        "search.embed",
        "search.retrieve",
        "search.units",
        "search.rerank",
        "search.enrich",
    ] {
        assert!(
            below.contains(&stage),
            "no {stage} under the search: {below:?}"
        );
    }
    // Query embedding and rerank calls carried the caller's trace id.
    let propagated: Vec<_> = mock
        .requests()
        .into_iter()
        .filter(|r| {
            r.traceparent
                .as_deref()
                .is_some_and(|t| t.contains(TRACE_ID))
        })
        .map(|r| r.path)
        .collect();
    assert!(
        propagated.contains(&"/v1/embeddings".to_string()),
        "{propagated:?}"
    );
    assert!(
        propagated.contains(&"/tei/rerank".to_string()),
        "{propagated:?}"
    );

    // Every stderr line is JSON; the request's access line has the caller's trace id.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let lines = server.lines();
        let parsed: Vec<Value> = lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
            .collect();
        let access = parsed.iter().any(|l| {
            l["trace_id"] == TRACE_ID && l["message"] == "POST /api/v1/search" && l["status"] == 200
        });
        if access {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no access line with the trace id: {lines:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Nothing was dropped or lost.
    let metrics = metrics(&http, &base).await;
    assert!(
        metrics.contains("sextant_trace_spans_total{outcome=\"dropped\"} 0"),
        "{metrics}"
    );
    assert!(
        metrics.contains("sextant_trace_spans_total{outcome=\"failed\"} 0"),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_of_a_sync_and_a_search_reach_an_otlp_http_receiver() {
    traces_of_a_sync_and_a_search("http/protobuf").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_of_a_sync_and_a_search_reach_an_otlp_grpc_receiver() {
    traces_of_a_sync_and_a_search("grpc").await;
}

/// How the collector fails.
#[derive(Clone, Copy, Debug)]
enum Collector {
    /// Accepts connections, reads nothing, answers nothing.
    Stalled,
    /// Nothing listens on its port (connections are refused).
    Down,
}

/// A collector that fails as `how`, the exporter speaking `protocol` with a queue of 8
/// spans and a 2 s export timeout: twenty searches answer as fast as without tracing
/// (were a request to wait on the exporter, they would take at least 40 s; the bound is
/// 20 s, far from both), spans beyond the queue are dropped and counted (stalled), the
/// failed exports are counted, and nothing counts as exported.
async fn a_failing_collector_costs_requests_nothing(protocol: &str, how: Collector) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let held = Arc::new(Mutex::new(Vec::new()));
    match how {
        Collector::Stalled => {
            let keep = held.clone();
            tokio::spawn(async move {
                while let Ok((stream, _)) = listener.accept().await {
                    keep.lock().unwrap().push(stream);
                }
            });
        }
        Collector::Down => drop(listener),
    }
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().join("ws");
    support::token_workspace(&ws);
    let data = tmp.path().join("data");
    let mut command = Command::new(BIN);
    command
        .arg("--data-dir")
        .arg(&data)
        .args(["--embed-provider", "openai", "--embed-model", "mock-embed"])
        .args(["--embed-dims", "8", "--embed-url"])
        .arg(format!("{}/v1", mock.url))
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &endpoint)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .env("OTEL_BSP_MAX_QUEUE_SIZE", "8")
        .env("OTEL_EXPORTER_OTLP_TIMEOUT", "2000")
        .env_remove("RUST_LOG");
    let server = Served::start(command);
    let base = server.url.clone();
    let http = reqwest::Client::new();
    register_and_sync(&http, &base, &ws).await;
    let started = Instant::now();
    for _ in 0..20 {
        let answer = http
            .post(format!("{base}/api/v1/search"))
            .json(&json!({ "query": "bearer token" }))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 200);
    }
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(20),
        "{protocol}, {how:?}: 20 searches took {took:?}"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let metrics = metrics(&http, &base).await;
        let count = |outcome: &str| -> u64 {
            let key = format!("sextant_trace_spans_total{{outcome=\"{outcome}\"}} ");
            metrics
                .lines()
                .find_map(|l| l.strip_prefix(&key))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or_else(|| panic!("no {outcome} count: {metrics}"))
        };
        let dropped = matches!(how, Collector::Down) || count("dropped") > 0;
        if dropped && count("failed") > 0 {
            assert_eq!(count("exported"), 0, "{protocol}, {how:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{protocol}, {how:?}: drops and failures never counted: {metrics}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    if matches!(how, Collector::Stalled) {
        assert!(
            !held.lock().unwrap().is_empty(),
            "the exporter reached the stalled collector"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_http_collector_costs_requests_nothing() {
    a_failing_collector_costs_requests_nothing("http/protobuf", Collector::Stalled).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_grpc_collector_costs_requests_nothing() {
    a_failing_collector_costs_requests_nothing("grpc", Collector::Stalled).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_collector_that_is_down_costs_requests_nothing() {
    a_failing_collector_costs_requests_nothing("http/protobuf", Collector::Down).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_collector_that_is_down_costs_requests_nothing() {
    a_failing_collector_costs_requests_nothing("grpc", Collector::Down).await;
}
