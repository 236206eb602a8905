//! A bounded load generator against a running `sextant serve`: `clients` concurrent
//! clients, each mixing REST searches, symbol lookups and MCP tool calls (over its own
//! MCP session) until the deadline, every eighth also holding an SSE progress stream
//! open; beside them `hostile` clients sending the worst inputs known (an 8 KiB
//! identifier, the longest query of distinct words, JSON nested 100,000 deep, a trickled
//! `/mcp` body, trickled headers), and one prober asking `/healthz` ten times a second;
//! the server's RSS is sampled every second from `/proc`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::json;

/// What to run.
pub struct LoadConfig {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Concurrent clients.
    pub clients: usize,
    /// How long they run.
    pub duration: Duration,
    /// Questions the searches ask (round-robin with an offset per client).
    pub queries: Vec<String>,
    /// Names the symbol lookups ask for.
    pub symbols: Vec<String>,
    /// Clients sending the worst inputs, beside the normal ones.
    pub hostile: usize,
    /// The server's process id (for RSS).
    pub server_pid: u32,
}

/// Latencies and outcomes of one kind of request.
#[derive(Debug, Default, Clone)]
pub struct OpStats {
    /// Latencies of answered requests (2xx), ms.
    pub ok_ms: Vec<f64>,
    /// 429 answers (too many searches at once): back-pressure, not failures.
    pub rejected: usize,
    /// 5xx answers.
    pub server_errors: usize,
    /// Other answers that are not 2xx, or transport errors, with one example.
    pub other_errors: usize,
    /// An example of a failure, for the report.
    pub example: Option<String>,
}

impl OpStats {
    /// The `q` quantile of answered latencies, ms.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.ok_ms.is_empty() {
            return 0.0;
        }
        let mut v = self.ok_ms.clone();
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * q).round() as usize]
    }
}

/// The outcome of a run.
#[derive(Debug, Default)]
pub struct LoadReport {
    /// Per request kind of the normal clients (`search`, `symbol`, `mcp`, `healthz`).
    pub ops: BTreeMap<&'static str, OpStats>,
    /// Per kind of worst input: how the server answered them (a 4xx is the expected
    /// answer; `ok_ms` holds every answer's time, whatever its status).
    pub hostile: BTreeMap<&'static str, OpStats>,
    /// Progress events the SSE subscribers received.
    pub sse_events: usize,
    /// SSE streams that ended with an error before the deadline.
    pub sse_failures: usize,
    /// `(seconds since start, RSS in KiB)` every second.
    pub rss: Vec<(f64, u64)>,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl LoadReport {
    /// Answered requests per second, all kinds.
    pub fn throughput(&self) -> f64 {
        let ok: usize = self.ops.values().map(|o| o.ok_ms.len()).sum();
        ok as f64 / self.elapsed.as_secs_f64()
    }

    /// 5xx answers and transport errors, all kinds.
    pub fn failures(&self) -> usize {
        self.ops
            .values()
            .map(|o| o.server_errors + o.other_errors)
            .sum()
    }

    /// Largest RSS (MiB) among samples taken in `[from, to)` seconds.
    pub fn peak_rss_mib(&self, from: f64, to: f64) -> f64 {
        self.rss
            .iter()
            .filter(|(t, _)| *t >= from && *t < to)
            .map(|(_, kb)| *kb as f64 / 1024.0)
            .fold(0.0, f64::max)
    }

    /// A Markdown summary.
    pub fn markdown(&self, clients: usize) -> String {
        let secs = self.elapsed.as_secs_f64();
        let mut s = format!(
            "{clients} clients, {secs:.0} s: {:.1} answered requests/s, {} failures (5xx or \
             transport), {} SSE events received, {} SSE streams broken\n\n\
             | request | answered | p50 ms | p95 ms | p99 ms | 429 | 5xx | other |\n\
             |---|---|---|---|---|---|---|---|\n",
            self.throughput(),
            self.failures(),
            self.sse_events,
            self.sse_failures,
        );
        for (name, o) in &self.ops {
            s.push_str(&format!(
                "| {name} | {} | {:.1} | {:.1} | {:.1} | {} | {} | {} |\n",
                o.ok_ms.len(),
                o.quantile(0.5),
                o.quantile(0.95),
                o.quantile(0.99),
                o.rejected,
                o.server_errors,
                o.other_errors
            ));
        }
        if !self.hostile.is_empty() {
            s.push_str(
                "\n| worst input | answered | p50 ms | p99 ms | 5xx | closed without an answer |\n|---|---|---|---|---|---|\n",
            );
            for (name, o) in &self.hostile {
                s.push_str(&format!(
                    "| {name} | {} | {:.1} | {:.1} | {} | {} |\n",
                    o.ok_ms.len(),
                    o.quantile(0.5),
                    o.quantile(0.99),
                    o.server_errors,
                    o.other_errors
                ));
            }
        }
        let third = secs / 3.0;
        s.push_str(&format!(
            "\nRSS peak (MiB) by third of the run: {:.0} / {:.0} / {:.0}\n",
            self.peak_rss_mib(0.0, third),
            self.peak_rss_mib(third, 2.0 * third),
            self.peak_rss_mib(2.0 * third, f64::MAX),
        ));
        s
    }
}

/// The server's resident set size in KiB.
pub fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// One finished request.
struct Sample {
    op: &'static str,
    status: Option<u16>,
    ms: f64,
    detail: String,
}

/// Sends `request`; the sample it makes (status `None`: transport error).
async fn timed(
    op: &'static str,
    request: reqwest::RequestBuilder,
) -> (Sample, Option<reqwest::Response>) {
    let started = Instant::now();
    match request.send().await {
        Ok(resp) => {
            let status = resp.status().as_u16();
            let ms = started.elapsed().as_secs_f64() * 1000.0;
            (
                Sample {
                    op,
                    status: Some(status),
                    ms,
                    detail: String::new(),
                },
                Some(resp),
            )
        }
        Err(e) => (
            Sample {
                op,
                status: None,
                ms: 0.0,
                detail: e.to_string(),
            },
            None,
        ),
    }
}

/// Reads a whole answer (its time counts: the client waits for it) and keeps an
/// error's text.
async fn finish(mut sample: Sample, resp: Option<reqwest::Response>, started: Instant) -> Sample {
    if let Some(resp) = resp {
        let ok = resp.status().is_success();
        match resp.text().await {
            Ok(text) if !ok => sample.detail = text.chars().take(300).collect(),
            // MCP answers a tool's failure inside a 200: back-pressure (the server's
            // search slots are taken) counts as a 429, anything else as an error.
            Ok(text) if sample.op == "mcp" && text.contains("\"isError\":true") => {
                sample.status = if text.contains("retry shortly") {
                    Some(429)
                } else {
                    None
                };
                sample.detail = text.chars().take(300).collect();
            }
            Ok(_) => {}
            Err(e) => {
                sample.status = None;
                sample.detail = e.to_string();
            }
        }
        sample.ms = started.elapsed().as_secs_f64() * 1000.0;
    }
    sample
}

const MCP_ACCEPT: &str = "application/json, text/event-stream";

/// An MCP `initialize` request to `base`'s `/mcp` (a protocol version with sessions).
pub fn mcp_initialize(http: &reqwest::Client, base: &str) -> reqwest::RequestBuilder {
    http.post(format!("{base}/mcp"))
        .header("accept", MCP_ACCEPT)
        .json(&json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": { "name": "sextant-test", "version": "1" }
            }
        }))
}

/// Opens an MCP session; its id.
async fn mcp_session(http: &reqwest::Client, base: &str) -> Result<String, String> {
    let resp = mcp_initialize(http, base)
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let session = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .ok_or_else(|| format!("initialize answered {} without a session", resp.status()))?;
    let _ = resp.text().await;
    let _ = http
        .post(format!("{base}/mcp"))
        .header("accept", MCP_ACCEPT)
        .header("mcp-session-id", &session)
        .json(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .send()
        .await
        .map_err(|e| e.to_string())?
        .text()
        .await;
    Ok(session)
}

/// One client: requests until `deadline`.
async fn client(id: usize, config: std::sync::Arc<LoadConfig>, deadline: Instant) -> Vec<Sample> {
    let http = reqwest::Client::new();
    let base = &config.base;
    let mut samples = Vec::new();
    let session = match mcp_session(&http, base).await {
        Ok(s) => Some(s),
        Err(detail) => {
            samples.push(Sample {
                op: "mcp",
                status: None,
                ms: 0.0,
                detail,
            });
            None
        }
    };
    let mut n = id;
    while Instant::now() < deadline {
        n += 1;
        let query = &config.queries[n % config.queries.len()];
        let started = Instant::now();
        let (sample, resp) = match n % 4 {
            0 | 1 => {
                timed(
                    "search",
                    http.post(format!("{base}/api/v1/search"))
                        .json(&json!({ "query": query, "maxTokenBudget": 3000 })),
                )
                .await
            }
            2 => {
                let name = &config.symbols[n % config.symbols.len()];
                timed(
                    "symbol",
                    http.get(format!("{base}/api/v1/symbols"))
                        .query(&[("name", name.as_str())]),
                )
                .await
            }
            _ => {
                let Some(session) = &session else { continue };
                timed(
                    "mcp",
                    http.post(format!("{base}/mcp"))
                        .header("accept", MCP_ACCEPT)
                        .header("mcp-session-id", session)
                        .json(&json!({
                            "jsonrpc": "2.0", "id": n, "method": "tools/call",
                            "params": { "name": "codebase_search",
                                        "arguments": { "query": query, "maxTokenBudget": 3000 } }
                        })),
                )
                .await
            }
        };
        let sample = finish(sample, resp, started).await;
        if sample.status == Some(429) {
            // Back-pressure: wait as the server asks (Retry-After: 1) would be long for a
            // benchmark; a short pause keeps the pressure on.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        samples.push(sample);
    }
    samples
}

/// Asks `/healthz` every 100 ms until `deadline`.
async fn prober(base: String, deadline: Instant) -> Vec<Sample> {
    let http = reqwest::Client::new();
    let mut samples = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    while Instant::now() < deadline {
        tick.tick().await;
        let started = Instant::now();
        let (sample, resp) = timed("healthz", http.get(format!("{base}/healthz"))).await;
        samples.push(finish(sample, resp, started).await);
    }
    samples
}

/// Sends raw bytes: `head` at once, then `trickle` a byte a second until the server
/// answers or closes, or `deadline`; the status line's code, if any.
async fn trickled(base: &str, head: String, trickle: &[u8], deadline: Instant) -> Option<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(address).await.ok()?;
    stream.write_all(head.as_bytes()).await.ok()?;
    let (mut read, mut write) = stream.into_split();
    let trickle = trickle.to_vec();
    let writer = tokio::spawn(async move {
        for byte in trickle {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if write.write_all(&[byte]).await.is_err() {
                return;
            }
        }
    });
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    let left = deadline.saturating_duration_since(Instant::now());
    let _ = tokio::time::timeout(left, async {
        while let Ok(n) = read.read(&mut buf).await {
            if n == 0 {
                break;
            }
            answer.extend_from_slice(&buf[..n]);
            if answer.windows(2).any(|w| w == b"\r\n") {
                break;
            }
        }
    })
    .await;
    writer.abort();
    let line = String::from_utf8_lossy(&answer);
    line.split(' ').nth(1).and_then(|code| code.parse().ok())
}

/// Sends `request` and reads its answer: the sample.
async fn sent(op: &'static str, request: reqwest::RequestBuilder, started: Instant) -> Sample {
    let (sample, resp) = timed(op, request).await;
    finish(sample, resp, started).await
}

/// One client sending the worst inputs, in turn, until `deadline`.
async fn hostile(id: usize, base: String, deadline: Instant) -> Vec<Sample> {
    let http = reqwest::Client::new();
    let host = base.trim_start_matches("http://").to_string();
    let long_identifier = format!("x{}", "aB3".repeat(8 * 1024 / 3 - 1));
    let many_words: String = (0..1_400).map(|i| format!("w{i:x} ")).collect();
    let deep_json = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{}{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let mut samples = Vec::new();
    let mut n = id;
    while Instant::now() < deadline {
        n += 1;
        let started = Instant::now();
        let sample = match n % 5 {
            0 => {
                sent(
                    "8 KiB identifier",
                    http.post(format!("{base}/api/v1/search"))
                        .json(&json!({ "query": long_identifier })),
                    started,
                )
                .await
            }
            1 => {
                sent(
                    "8 KiB of distinct words",
                    http.post(format!("{base}/api/v1/search"))
                        .json(&json!({ "query": many_words.trim_end() })),
                    started,
                )
                .await
            }
            2 => {
                sent(
                    "JSON 100,000 deep on /mcp",
                    http.post(format!("{base}/mcp"))
                        .header("accept", MCP_ACCEPT)
                        .header("content-type", "application/json")
                        .body(deep_json.clone()),
                    started,
                )
                .await
            }
            3 => {
                let head = format!(
                    "POST /mcp HTTP/1.1\r\nhost: {host}\r\naccept: {MCP_ACCEPT}\r\n\
                     content-type: application/json\r\ncontent-length: 100000\r\n\r\n{{"
                );
                let status = trickled(&base, head, &[b' '; 120], deadline).await;
                Sample {
                    op: "/mcp body a byte a second",
                    status,
                    ms: started.elapsed().as_secs_f64() * 1000.0,
                    detail: "no answer".into(),
                }
            }
            _ => {
                let head = format!("GET /healthz HTTP/1.1\r\nhost: {host}\r\nx-slow: ");
                let status = trickled(&base, head, &[b'a'; 120], deadline).await;
                Sample {
                    op: "headers a byte a second",
                    // Closed without an answer: the header timeout's defence.
                    status,
                    ms: started.elapsed().as_secs_f64() * 1000.0,
                    detail: String::new(),
                }
            }
        };
        samples.push(sample);
    }
    samples
}

/// Holds an SSE progress stream open until `deadline`; events received, and whether it
/// broke before.
async fn subscriber(base: String, deadline: Instant) -> (usize, bool) {
    let http = reqwest::Client::new();
    let Ok(mut resp) = http.get(format!("{base}/api/v1/events")).send().await else {
        return (0, true);
    };
    if !resp.status().is_success() {
        return (0, true);
    }
    let mut events = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return (events, false);
        }
        match tokio::time::timeout(left, resp.chunk()).await {
            Err(_) => return (events, false),
            Ok(Ok(Some(bytes))) => {
                events += bytes
                    .windows(15)
                    .filter(|w| w == b"event: progress")
                    .count();
            }
            Ok(Ok(None)) | Ok(Err(_)) => return (events, true),
        }
    }
}

/// Runs the load; returns what happened.
pub async fn run(config: LoadConfig) -> LoadReport {
    let config = std::sync::Arc::new(config);
    let started = Instant::now();
    let deadline = started + config.duration;
    let pid = config.server_pid;
    let sampler = tokio::spawn(async move {
        let mut rss = Vec::new();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        while Instant::now() < deadline {
            tick.tick().await;
            if let Some(kb) = rss_kib(pid) {
                rss.push((started.elapsed().as_secs_f64(), kb));
            }
        }
        rss
    });
    let subscribers: Vec<_> = (0..config.clients.div_ceil(8))
        .map(|_| tokio::spawn(subscriber(config.base.clone(), deadline)))
        .collect();
    let clients: Vec<_> = (0..config.clients)
        .map(|id| tokio::spawn(client(id, config.clone(), deadline)))
        .chain(std::iter::once(tokio::spawn(prober(
            config.base.clone(),
            deadline,
        ))))
        .collect();
    let attackers: Vec<_> = (0..config.hostile)
        .map(|id| tokio::spawn(hostile(id, config.base.clone(), deadline)))
        .collect();
    let mut report = LoadReport::default();
    for a in attackers {
        for s in a.await.unwrap_or_default() {
            let o = report.hostile.entry(s.op).or_default();
            match s.status {
                Some(500..) => o.server_errors += 1,
                Some(_) => o.ok_ms.push(s.ms),
                None => o.other_errors += 1,
            }
        }
    }
    for c in clients {
        for s in c.await.unwrap_or_default() {
            let o = report.ops.entry(s.op).or_default();
            match s.status {
                Some(200..=299) => o.ok_ms.push(s.ms),
                Some(429) => o.rejected += 1,
                Some(500..) => {
                    o.server_errors += 1;
                    o.example.get_or_insert(s.detail);
                }
                _ => {
                    o.other_errors += 1;
                    o.example
                        .get_or_insert(format!("{:?}: {}", s.status, s.detail));
                }
            }
        }
    }
    for s in subscribers {
        let (events, broke) = s.await.unwrap_or((0, true));
        report.sse_events += events;
        report.sse_failures += usize::from(broke);
    }
    report.rss = sampler.await.unwrap_or_default();
    report.elapsed = started.elapsed();
    report
}

/// Questions for the searches: generic questions about a reactive-streams library.
pub const QUESTIONS: &[&str] = &[
    "how does retry resubscribe after an error",
    "where is the subscription torn down when unsubscribe is called",
    "merge several observables into one stream",
    "switch to a new inner observable and cancel the previous one",
    "debounce values until a quiet period passes",
    "share a single subscription among many subscribers",
    "convert a promise into an observable",
    "emit values on an interval timer",
    "buffer values until a notifier emits",
    "throw an error when no value arrives before a timeout",
    "combine the latest values of several sources",
    "replay the last values to late subscribers",
    "schedule work asynchronously",
    "catch an error and continue with another observable",
    "take values until another observable emits",
    "group values by a key",
];

/// Names for symbol lookups.
pub const SYMBOLS: &[&str] = &[
    "Observable",
    "Subscriber",
    "Subject",
    "mergeMap",
    "switchMap",
    "retry",
    "debounceTime",
    "shareReplay",
    "timeout",
    "combineLatest",
];
