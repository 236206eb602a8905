//! `/metrics` in the Prometheus text format (version 0.0.4): request counts and latency
//! per route, MCP tool calls, and gauges read at scrape time (repositories by status,
//! files, chunk rows, jobs by state, texts embedded vs answered from the cache).
//!
//! Written by hand: a few counters and one histogram do not warrant a metrics framework,
//! and the format is a stable line protocol.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;

use crate::service::ServerStats;

/// Upper bounds (seconds) of the latency histogram's buckets.
const BUCKETS: [f64; 10] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

#[derive(Debug, Default)]
struct Latency {
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

/// Counters updated as requests are answered.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(String, String, u16), u64>>,
    latency: Mutex<BTreeMap<(String, String), Latency>>,
    tools: Mutex<BTreeMap<(String, bool), u64>>,
}

impl Metrics {
    /// Records one answered request.
    pub fn observe(&self, method: &str, route: &str, status: u16, seconds: f64) {
        let key = (method.to_string(), route.to_string());
        {
            let mut requests = self.requests.lock().unwrap_or_else(|p| p.into_inner());
            *requests
                .entry((key.0.clone(), key.1.clone(), status))
                .or_default() += 1;
        }
        let mut latency = self.latency.lock().unwrap_or_else(|p| p.into_inner());
        let l = latency.entry(key).or_default();
        for (bound, n) in BUCKETS.iter().zip(l.buckets.iter_mut()) {
            if seconds <= *bound {
                *n += 1;
            }
        }
        l.count += 1;
        l.sum += seconds;
    }
}

impl crate::mcp::ToolCalls for Metrics {
    fn tool_call(&self, tool: &str, failed: bool) {
        let mut tools = self.tools.lock().unwrap_or_else(|p| p.into_inner());
        *tools.entry((tool.to_string(), failed)).or_default() += 1;
    }
}

impl Metrics {
    /// The counters in the text format.
    fn render(&self, out: &mut String) {
        header(
            out,
            "sextant_http_requests_total",
            "counter",
            "HTTP requests answered, by method, route and status.",
        );
        let requests = self.requests.lock().unwrap_or_else(|p| p.into_inner());
        for ((method, route, status), n) in requests.iter() {
            let _ = writeln!(
                out,
                "sextant_http_requests_total{{method=\"{}\",route=\"{}\",status=\"{status}\"}} {n}",
                escape(method),
                escape(route)
            );
        }
        drop(requests);
        header(
            out,
            "sextant_http_request_duration_seconds",
            "histogram",
            "Time to answer (to the first byte for streams), by method and route.",
        );
        let latency = self.latency.lock().unwrap_or_else(|p| p.into_inner());
        for ((method, route), l) in latency.iter() {
            let labels = format!("method=\"{}\",route=\"{}\"", escape(method), escape(route));
            for (bound, n) in BUCKETS.iter().zip(l.buckets.iter()) {
                let _ = writeln!(
                    out,
                    "sextant_http_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {n}"
                );
            }
            let _ = writeln!(
                out,
                "sextant_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
                l.count
            );
            let _ = writeln!(
                out,
                "sextant_http_request_duration_seconds_sum{{{labels}}} {}",
                l.sum
            );
            let _ = writeln!(
                out,
                "sextant_http_request_duration_seconds_count{{{labels}}} {}",
                l.count
            );
        }
        drop(latency);
        header(
            out,
            "sextant_mcp_tool_calls_total",
            "counter",
            "MCP tool calls, by tool and outcome.",
        );
        let tools = self.tools.lock().unwrap_or_else(|p| p.into_inner());
        for ((tool, failed), n) in tools.iter() {
            let outcome = if *failed { "error" } else { "ok" };
            let _ = writeln!(
                out,
                "sextant_mcp_tool_calls_total{{tool=\"{}\",outcome=\"{outcome}\"}} {n}",
                escape(tool)
            );
        }
    }
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn gauge(out: &mut String, name: &str, help: &str, samples: &[(String, f64)]) {
    header(out, name, "gauge", help);
    for (labels, value) in samples {
        if labels.is_empty() {
            let _ = writeln!(out, "{name} {value}");
        } else {
            let _ = writeln!(out, "{name}{{{labels}}} {value}");
        }
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The `method` label: the standard methods by name, anything else `other` (a client may
/// send any token as a method; each would otherwise be a new series, kept for ever).
fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "other",
    }
}

/// The middleware: times each request and counts it under its route template (not the
/// raw path) and a known method name, so label sets stay bounded.
pub(super) async fn track(
    State(metrics): State<std::sync::Arc<Metrics>>,
    request: Request,
    next: Next,
) -> Response {
    let method = method_label(request.method());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| {
            if request.uri().path().starts_with("/mcp") {
                "/mcp".to_string()
            } else {
                "unmatched".to_string()
            }
        });
    let start = Instant::now();
    let response = next.run(request).await;
    metrics.observe(
        method,
        &route,
        response.status().as_u16(),
        start.elapsed().as_secs_f64(),
    );
    response
}

/// The chunk store's gauges: its bytes, versions, deleted rows and what searches hold.
fn chunk_store_gauges(out: &mut String, storage: &crate::store::StoreStorage) {
    let mut bytes = vec![("state=\"live\"".to_string(), storage.live_bytes as f64)];
    if let Some(disk) = storage.disk_bytes {
        bytes.push(("state=\"on_disk\"".into(), disk as f64));
    }
    gauge(
        out,
        "sextant_chunk_store_bytes",
        "Bytes of the chunk store: the current version's files (live) and the table's \
         directory (on_disk, old versions and deleted rows included, which maintenance \
         reclaims).",
        &bytes,
    );
    gauge(
        out,
        "sextant_chunk_store_versions",
        "Table versions the chunk store keeps.",
        &[(String::new(), storage.versions as f64)],
    );
    gauge(
        out,
        "sextant_chunk_store_deleted_rows",
        "Rows deleted or replaced but kept in data files until compaction.",
        &[(String::new(), storage.deleted_rows as f64)],
    );
    gauge(
        out,
        "sextant_search_memory_bytes",
        "The chunk store held in memory for searches (held: its vectors, rows and BM25 \
         index, 0 while none is; limit: --search-memory-mb, which a store over it \
         exceeds and is searched through its indexes instead).",
        &[
            ("state=\"held\"".into(), storage.held_bytes as f64),
            ("state=\"limit\"".into(), storage.held_limit_bytes as f64),
        ],
    );
}

/// The whole exposition: counters plus the gauges of `stats`.
pub(super) fn render(metrics: &Metrics, stats: &ServerStats) -> String {
    let mut out = String::new();
    metrics.render(&mut out);
    if let (Some(repos), Some((indexed, skipped))) = (&stats.repositories, stats.files) {
        let samples: Vec<(String, f64)> = repos
            .iter()
            .map(|(s, n)| (format!("status=\"{s}\""), *n as f64))
            .collect();
        gauge(
            &mut out,
            "sextant_repositories",
            "Registered repositories, by status.",
            &samples,
        );
        gauge(
            &mut out,
            "sextant_files",
            "Files seen, by whether they were indexed.",
            &[
                ("state=\"indexed\"".into(), indexed as f64),
                ("state=\"skipped\"".into(), skipped as f64),
            ],
        );
    }
    if let Some(rows) = stats.chunks {
        gauge(
            &mut out,
            "sextant_chunks",
            "Chunk rows in the vector store.",
            &[(String::new(), rows as f64)],
        );
    }
    if let Some(storage) = &stats.chunk_storage {
        chunk_store_gauges(&mut out, storage);
    }
    if let Some(jobs) = &stats.jobs {
        let samples: Vec<(String, f64)> = jobs
            .iter()
            .map(|(s, n)| (format!("state=\"{s}\""), *n as f64))
            .collect();
        gauge(
            &mut out,
            "sextant_jobs",
            "Jobs among the 10,000 most recent, by state.",
            &samples,
        );
    }
    if let Some(cache) = stats.embed_cache {
        header(
            &mut out,
            "sextant_embed_texts_total",
            "counter",
            "Texts embedded by the model (miss) or answered from the embedding cache (hit).",
        );
        let _ = writeln!(
            out,
            "sextant_embed_texts_total{{source=\"model\"}} {}\nsextant_embed_texts_total{{source=\"cache\"}} {}",
            cache.misses, cache.hits
        );
    }
    let spans = crate::telemetry::export_stats();
    header(
        &mut out,
        "sextant_trace_spans_total",
        "counter",
        "Trace spans exported over OTLP, dropped because the export queue was full, or lost in failed exports.",
    );
    let _ = writeln!(
        out,
        "sextant_trace_spans_total{{outcome=\"exported\"}} {}\nsextant_trace_spans_total{{outcome=\"dropped\"}} {}\nsextant_trace_spans_total{{outcome=\"failed\"}} {}",
        spans.exported, spans.dropped, spans.failed
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::ToolCalls;

    #[test]
    fn counters_render_in_the_text_format() {
        let m = Metrics::default();
        m.observe("GET", "/api/v1/repositories/{repo}", 200, 0.02);
        m.observe("GET", "/api/v1/repositories/{repo}", 200, 3.0);
        m.observe("GET", "/api/v1/repositories/{repo}", 404, 0.001);
        m.tool_call("codebase_search", false);
        let mut out = String::new();
        m.render(&mut out);
        assert!(out.contains(
            "sextant_http_requests_total{method=\"GET\",route=\"/api/v1/repositories/{repo}\",status=\"200\"} 2\n"
        ));
        assert!(out.contains("status=\"404\"} 1\n"));
        let labels = "method=\"GET\",route=\"/api/v1/repositories/{repo}\"";
        assert!(out.contains(&format!(
            "sextant_http_request_duration_seconds_bucket{{{labels},le=\"0.005\"}} 1\n"
        )));
        assert!(out.contains(&format!(
            "sextant_http_request_duration_seconds_bucket{{{labels},le=\"0.025\"}} 2\n"
        )));
        assert!(out.contains(&format!(
            "sextant_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} 3\n"
        )));
        assert!(out.contains(&format!(
            "sextant_http_request_duration_seconds_count{{{labels}}} 3\n"
        )));
        assert!(
            out.contains(
                "sextant_mcp_tool_calls_total{tool=\"codebase_search\",outcome=\"ok\"} 1\n"
            )
        );
        assert!(out.contains("# TYPE sextant_http_request_duration_seconds histogram\n"));
    }

    #[test]
    fn invented_methods_share_one_label() {
        use axum::http::Method;
        assert_eq!(method_label(&Method::GET), "GET");
        assert_eq!(method_label(&Method::PATCH), "PATCH");
        for invented in ["FOO", "X1", "PROPFIND"] {
            assert_eq!(
                method_label(&Method::from_bytes(invented.as_bytes()).unwrap()),
                "other"
            );
        }
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
