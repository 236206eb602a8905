//! MCP over streamable HTTP at `/mcp` with a plain JSON-RPC client (reqwest): initialize →
//! notifications/initialized → tools/list → tools/call against a running server with an
//! indexed repository.

use crate::support;

use serde_json::{Value, json};
use sextant::index::Progress;

/// The JSON-RPC message of a response that is either JSON or an SSE stream.
fn message(body: &str) -> Value {
    if let Ok(v) = serde_json::from_str(body) {
        return v;
    }
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|v| v.get("id").is_some())
        .unwrap_or(Value::Null)
}

struct Client {
    http: reqwest::Client,
    url: String,
    session: Option<String>,
}

impl Client {
    /// Calls the tool `name` with `arguments` (request id `id`).
    async fn tool(&mut self, id: u32, name: &str, arguments: Value) -> Value {
        let request = json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": name, "arguments": arguments }
        });
        self.call(request).await.1
    }

    async fn call(&mut self, body: Value) -> (u16, Value) {
        let mut req = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(s) = &self.session {
            req = req.header("mcp-session-id", s);
        }
        let resp = req.send().await.unwrap();
        if let Some(s) = resp.headers().get("mcp-session-id") {
            self.session = Some(s.to_str().unwrap().to_string());
        }
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (status, message(&text))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_list_and_call_the_tools_over_http() {
    let server = support::app::start(false).await;
    let repo = server
        .indexer
        .register_path(&server.root, Some("ws"), Default::default())
        .await
        .unwrap();
    server
        .indexer
        .sync(&repo, &mut Progress::silent(&repo.id))
        .await
        .unwrap();
    let url = format!("{}/mcp", server.base);

    let mut c = Client {
        http: reqwest::Client::new(),
        url,
        session: None,
    };
    let (status, init) = c
        .call(json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": { "name": "sextant-test", "version": "1" }
            }
        }))
        .await;
    assert_eq!(status, 200, "{init}");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    let (status, _) = c
        .call(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await;
    assert!(status == 202 || status == 200, "{status}");

    let (_, list) = c
        .call(json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {} }))
        .await;
    let tools: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{list}"))
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for expected in [
        "codebase_search",
        "scout",
        "list_repositories",
        "get_file_symbols",
        "index_status",
    ] {
        assert!(tools.contains(&expected), "{tools:?}");
    }
    // The tools that find code say when to use another one instead.
    let description = |name: &str| {
        list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .and_then(|t| t["description"].as_str())
            .unwrap_or_else(|| panic!("{name} has a description: {list}"))
            .to_string()
    };
    for (tool, names) in [
        ("codebase_search", &["get_symbol", "scout"][..]),
        ("get_symbol", &["codebase_search"]),
        ("scout", &["codebase_search", "get_symbol"]),
        ("get_file_symbols", &["get_symbol"]),
    ] {
        let text = description(tool);
        for other in names {
            assert!(
                text.contains(other),
                "{tool} does not point to {other}: {text}"
            );
        }
    }
    let search = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "codebase_search")
        .unwrap();
    assert_eq!(
        search["inputSchema"]["required"],
        json!(["query"]),
        "{search}"
    );

    let call = c
        .tool(3, "codebase_search", json!({ "query": "symbol = decode" }))
        .await;
    let content = call["result"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("{call}"));
    assert_eq!(content.len(), 2, "graph then one snapshot: {call}");
    let graph = content[0]["text"].as_str().unwrap();
    assert!(
        graph.contains("Called by: validateToken (src/auth.ts)"),
        "{graph}"
    );
    assert_eq!(content[0]["annotations"]["audience"], json!(["assistant"]));
    assert_eq!(content[0]["annotations"]["priority"], json!(1.0));
    assert!(
        content[1]["text"]
            .as_str()
            .unwrap()
            .starts_with("// src/jwt.ts")
    );

    // A tool failure is a result the agent reads, not a protocol error.
    let bad = c
        .tool(
            4,
            "get_file_symbols",
            json!({ "repository": "nope", "path": "a.ts" }),
        )
        .await;
    assert_eq!(bad["result"]["isError"], true, "{bad}");
    assert!(
        bad["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("nope")
    );

    let symbols = c
        .tool(
            5,
            "get_file_symbols",
            json!({ "repository": "ws", "path": "src/auth.ts" }),
        )
        .await;
    let text = symbols["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("function validateToken"), "{symbols}");
}

/// A real MCP client (rmcp's, over streamable HTTP) against a server that requires
/// tokens: without one it cannot connect; a read token limited to one repository sees
/// only that repository through every tool and cannot register; an admin token can.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_mcp_client_sees_only_what_its_token_allows() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    let server = support::app::start_with_tokens(false).await;
    let other = server.tmp.path().join("other");
    support::write(
        &other,
        "src/secret.ts",
        "export function secretThing(x: number) {\n  return x * 2;\n}\n",
    );
    for (root, name) in [(&server.root, "ws"), (&other, "other")] {
        let repo = server
            .indexer
            .register_path(root, Some(name), Default::default())
            .await
            .unwrap();
        server
            .indexer
            .sync(&repo, &mut Progress::silent(&repo.id))
            .await
            .unwrap();
    }
    let admin = server.token("admin", &[]).await;
    let reader = server.token("read", &["ws"]).await;
    let url = format!("{}/mcp", server.base);
    let connect = |token: Option<String>| {
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.clone());
        if let Some(t) = token {
            config = config.auth_header(t);
        }
        ().serve(StreamableHttpClientTransport::from_config(config))
    };
    let text = |r: &rmcp::model::CallToolResult| -> String {
        r.content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let call = |name: &'static str, args: Value| {
        let mut p = CallToolRequestParams::new(name);
        if let Value::Object(map) = args {
            p = p.with_arguments(map);
        }
        p
    };

    assert!(connect(None).await.is_err(), "no token must not connect");
    assert!(connect(Some("sxt_wrong".into())).await.is_err());

    let client = connect(Some(reader)).await.unwrap();
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "sextant");
    let tools: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    for expected in [
        "codebase_search",
        "get_symbol",
        "get_file_symbols",
        "list_repositories",
        "index_status",
        "add_repository",
        "grep",
    ] {
        assert!(tools.iter().any(|t| t == expected), "{tools:?}");
    }
    let repos = client
        .call_tool(call("list_repositories", json!({})))
        .await
        .unwrap();
    let listed = text(&repos);
    assert!(listed.contains("ws (ready)"), "{listed}");
    assert!(!listed.contains("other"), "{listed}");

    let hidden = client
        .call_tool(call("get_symbol", json!({ "name": "secretThing" })))
        .await
        .unwrap();
    assert_eq!(hidden.content.len(), 1, "graph only: {}", text(&hidden));
    assert!(!text(&hidden).contains("secret.ts"), "{}", text(&hidden));
    let seen = client
        .call_tool(call("get_symbol", json!({ "name": "decode" })))
        .await
        .unwrap();
    assert_eq!(seen.content.len(), 2, "{}", text(&seen));
    // grep: matching lines grouped by file, within the budget; hidden files never show.
    let grepped = client
        .call_tool(call("grep", json!({ "pattern": "decode(", "context": 1 })))
        .await
        .unwrap();
    let shown = text(&grepped);
    assert_ne!(grepped.is_error, Some(true), "{shown}");
    assert!(shown.starts_with("2 matches in 2 files"), "{shown}");
    assert!(
        shown.contains("ws: src/auth.ts (typescript, version "),
        "{shown}"
    );
    assert!(
        shown.contains("  4:   return decode(token) > 10;"),
        "{shown}"
    );
    assert!(
        shown.contains("  3- export function validateToken"),
        "{shown}"
    );
    let hidden = client
        .call_tool(call("grep", json!({ "pattern": "secretThing" })))
        .await
        .unwrap();
    assert!(text(&hidden).starts_with("0 matches"), "{}", text(&hidden));
    let tight = client
        .call_tool(call(
            "grep",
            json!({ "pattern": "token", "caseInsensitive": true, "maxTokens": 20 }),
        ))
        .await
        .unwrap();
    assert!(
        text(&tight).contains("call again with cursor"),
        "{}",
        text(&tight)
    );
    for (tool, args) in [
        (
            "grep",
            json!({ "pattern": "secret", "repositories": ["other"] }),
        ),
        (
            "codebase_search",
            json!({ "query": "secret", "repositories": ["other"] }),
        ),
        ("index_status", json!({ "repository": "other" })),
        (
            "get_file_symbols",
            json!({ "repository": "other", "path": "src/secret.ts" }),
        ),
    ] {
        let refused = client.call_tool(call(tool, args)).await.unwrap();
        assert_eq!(refused.is_error, Some(true), "{tool}: {}", text(&refused));
        assert!(
            text(&refused).contains("other"),
            "{tool}: {}",
            text(&refused)
        );
    }
    let third = server.tmp.path().join("third");
    support::write(&third, "a.ts", "export const a = 1;\n");
    let add = json!({ "path": third.to_string_lossy() });
    let refused = client
        .call_tool(call("add_repository", add.clone()))
        .await
        .unwrap();
    assert_eq!(refused.is_error, Some(true));
    assert!(text(&refused).contains("admin"), "{}", text(&refused));
    client.cancel().await.unwrap();

    let client = connect(Some(admin)).await.unwrap();
    let found = client
        .call_tool(call("get_symbol", json!({ "name": "secretThing" })))
        .await
        .unwrap();
    assert_eq!(found.content.len(), 2, "{}", text(&found));
    let added = client.call_tool(call("add_repository", add)).await.unwrap();
    assert_ne!(added.is_error, Some(true), "{}", text(&added));
    assert!(
        text(&added).contains("Registered `third`"),
        "{}",
        text(&added)
    );
    client.cancel().await.unwrap();
}

/// Every input the MCP envelope fuzzer kept (`fuzz/corpus/mcp_message`: the messages that
/// reached new code in rmcp's envelope and the tools' arguments) and every crasher it
/// found (`fuzz/regressions/mcp_message`) is posted to a real server's `/mcp`, in an
/// initialized session of a read token, the bytes as they are: no answer is a 5xx, each
/// comes within 10 s, and afterwards the session still searches and `/healthz` answers.
/// The pure checks on the same inputs run in `robustness.rs`; this sends them through
/// the tools themselves (search, scout, the store lookups).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_mcp_fuzz_inputs_never_fail_the_server() {
    use std::time::Duration;
    let server = support::app::start_with_tokens(false).await;
    server.index(&server.root, "ws").await;
    let token = server.token("read", &[]).await;
    let http = reqwest::Client::new();
    let url = format!("{}/mcp", server.base);
    let post = |body: Vec<u8>, session: Option<String>| {
        let mut request = http
            .post(&url)
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body);
        if let Some(s) = session {
            request = request.header("mcp-session-id", s);
        }
        async move {
            let answer = tokio::time::timeout(Duration::from_secs(10), async {
                let answer = request.send().await.unwrap();
                let status = answer.status().as_u16();
                let session = answer
                    .headers()
                    .get("mcp-session-id")
                    .map(|s| s.to_str().unwrap().to_string());
                (status, session, answer.text().await.unwrap_or_default())
            });
            answer.await
        }
    };
    let init = serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-03-26",
            "capabilities": {},
            "clientInfo": { "name": "sextant-fuzz-replay", "version": "1" }
        }
    }))
    .unwrap();
    let (status, session, body) = post(init, None).await.expect("initialize answers");
    assert_eq!(status, 200, "{body}");
    let session = session.expect("a session id");
    let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec();
    post(initialized, Some(session.clone())).await.unwrap();

    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut inputs = Vec::new();
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join("mcp_message")) else {
            continue;
        };
        for entry in entries {
            inputs.push(entry.unwrap().path());
        }
    }
    inputs.sort();
    assert!(inputs.len() >= 10, "only {} inputs kept", inputs.len());
    for path in &inputs {
        let data = std::fs::read(path).unwrap();
        let (status, _, body) = post(data, Some(session.clone()))
            .await
            .unwrap_or_else(|_| panic!("{}: no answer within 10 s", path.display()));
        assert!(status < 500, "{}: {status} {body}", path.display());
    }

    let search = serde_json::to_vec(&json!({
        "jsonrpc": "2.0", "id": 99, "method": "tools/call",
        "params": { "name": "codebase_search", "arguments": { "query": "symbol = decode" } }
    }))
    .unwrap();
    let (status, _, body) = post(search, Some(session)).await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(
        message(&body)["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("decode")),
        "{body}"
    );
    let health = http
        .get(format!("{}/healthz", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
}
