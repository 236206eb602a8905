//! End to end with the real binary and the real local model: `sextant token create`,
//! `sextant serve` on a loopback port, a repository registered over REST and followed to
//! the end of its sync over SSE, search over REST, over MCP with rmcp's client, and from
//! the CLI in remote mode, and `sextant --server … mcp` (a stdio relay) with rmcp's client;
//! auth refusals; then `sextant mcp` over stdio with rmcp's client on the same data
//! directory. Also: a non-loopback bind without tokens refuses
//! to start.

use crate::support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::available;
use support::models::minilm;
use support::process::{Served, json_of, register_job, wait_job};

const BIN: &str = env!("CARGO_BIN_EXE_sextant");

fn sextant(data: &std::path::Path, model: &std::path::Path) -> Command {
    // `SEXTANT_E2E_BIN`: a copy of the binary for long recorded runs (the load run), so a
    // rebuild meanwhile does not change what is measured.
    let mut c = Command::new(std::env::var("SEXTANT_E2E_BIN").unwrap_or_else(|_| BIN.into()));
    c.arg("--data-dir").arg(data).arg("--model-dir").arg(model);
    c.env_remove("SEXTANT_SERVER")
        .env_remove("SEXTANT_TOKEN")
        .env_remove("SEXTANT_FAILPOINT");
    c
}

/// Starts `sextant serve` on a free loopback port.
fn serve(data: &std::path::Path, model: &std::path::Path) -> Served {
    let mut command = sextant(data, model);
    command.args(["serve", "--bind", "127.0.0.1:0"]);
    Served::start(command)
}

/// `sextant token create ARGS…` on the data directory; returns the printed secret.
fn create_token(data: &std::path::Path, model: &std::path::Path, args: &[&str]) -> String {
    let created = sextant(data, model)
        .args(["token", "create"])
        .args(args)
        .output()
        .unwrap();
    assert!(created.status.success(), "{created:?}");
    String::from_utf8(created.stdout)
        .unwrap()
        .trim()
        .to_string()
}

/// An MCP client of the server an MCP configuration entry (`command`, `args`) starts.
async fn configured_client(entry: &Value) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    use rmcp::ServiceExt;
    let command = entry["command"].as_str().expect("a command");
    assert!(std::path::Path::new(command).is_absolute(), "{entry}");
    let args: Vec<&str> = entry["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string arguments"))
        .collect();
    let mut cmd = tokio::process::Command::new(command);
    cmd.args(&args).env_remove("SEXTANT_TOKEN");
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    ().serve(transport).await.unwrap()
}

/// Calls `tool` with `args` (a JSON object).
async fn call_tool(
    client: &rmcp::service::RunningService<rmcp::RoleClient, ()>,
    tool: &'static str,
    args: Value,
) -> rmcp::model::CallToolResult {
    let Value::Object(args) = args else {
        panic!("tool arguments must be an object")
    };
    client
        .call_tool(rmcp::model::CallToolRequestParams::new(tool).with_arguments(args))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_rest_sse_and_mcp_with_tokens() {
    let Some(model) = available(minilm(), "end-to-end test of the binary") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let ws = tmp.path().join("ws");
    support::token_workspace(&ws);

    // A non-loopback bind without tokens refuses to start, saying what to do.
    let refused = sextant(&data, &model)
        .args(["serve", "--bind", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(why.contains("sextant token create"), "{why}");

    let admin = create_token(&data, &model, &["--scope", "admin", "--name", "e2e"]);
    assert!(admin.starts_with("sxt_"), "{admin}");

    let server = serve(&data, &model);
    let base = server.url.clone();
    let http = reqwest::Client::new();

    // Refusals: no token, a wrong one.
    for token in [None, Some("sxt_nope")] {
        let mut r = http.get(format!("{base}/api/v1/repositories"));
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        assert_eq!(r.send().await.unwrap().status().as_u16(), 401);
    }
    assert_eq!(
        http.get(format!("{base}/healthz"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        200
    );
    let spec: Value = http
        .get(format!("{base}/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(spec["paths"]["/api/v1/search"].is_object());
    let docs = http.get(format!("{base}/docs/")).send().await.unwrap();
    assert_eq!(docs.status().as_u16(), 200);
    assert!(docs.text().await.unwrap().contains("swagger"));

    // Register, and follow the sync over SSE to its end.
    let mut sse = http
        .get(format!("{base}/api/v1/events"))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap();
    assert_eq!(sse.status().as_u16(), 200);
    let created: Value = http
        .post(format!("{base}/api/v1/repositories"))
        .bearer_auth(&admin)
        .json(&json!({ "path": ws.to_string_lossy(), "name": "ws" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let repo_id = created["repository"]["id"].as_str().unwrap().to_string();
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !seen.contains("\"phase\":\"done\"") {
        assert!(Instant::now() < deadline, "no `done` event: {seen}");
        match tokio::time::timeout(Duration::from_secs(60), sse.chunk()).await {
            Ok(Ok(Some(bytes))) => seen.push_str(&String::from_utf8_lossy(&bytes)),
            other => panic!("SSE ended: {other:?}; so far {seen}"),
        }
    }
    assert!(seen.contains(&repo_id), "{seen}");
    drop(sse);
    let repo = json_of(
        http.get(format!("{base}/api/v1/repositories/ws"))
            .bearer_auth(&admin),
    )
    .await;
    assert_eq!(repo["repository"]["status"], "ready", "{repo}");
    assert_eq!(repo["files"]["indexed"], 2, "{repo}");

    // Search over REST.
    let found = json_of(
        http.post(format!("{base}/api/v1/search"))
            .bearer_auth(&admin)
            .json(&json!({ "query": "where is the bearer token checked?", "minimumRelevanceThreshold": 0.0 })),
    )
    .await;
    let top = found["response"]["results"][0]["breadcrumb"].as_str();
    assert_eq!(top, Some("validateToken"), "{found}");

    // A read token, created while the server runs, takes effect at once; it may not sync.
    let reader = create_token(&data, &model, &["--scope", "read", "--repo", "ws"]);
    let sync = http
        .post(format!("{base}/api/v1/repositories/ws/sync"))
        .bearer_auth(&reader)
        .send()
        .await
        .unwrap();
    assert_eq!(sync.status().as_u16(), 403);

    // MCP over streamable HTTP with rmcp's client.
    {
        use rmcp::ServiceExt;
        use rmcp::transport::StreamableHttpClientTransport;
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        let config = StreamableHttpClientTransportConfig::with_uri(format!("{base}/mcp"))
            .auth_header(reader.clone());
        let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
        let tools = client.list_all_tools().await.unwrap();
        assert!(tools.iter().any(|t| t.name == "codebase_search"));
        let result = call_tool(
            &client,
            "codebase_search",
            json!({ "query": "symbol = decode" }),
        )
        .await;
        let graph = result.content[0].as_text().unwrap().text.clone();
        assert!(graph.contains("Called by: validateToken"), "{graph}");
        client.cancel().await.unwrap();
    }

    // The CLI in remote mode.
    let remote = Command::new(BIN)
        .args([
            "--server",
            &base,
            "--token",
            &reader,
            "search",
            "symbol = validateToken",
        ])
        .output()
        .unwrap();
    assert!(remote.status.success(), "{remote:?}");
    let out = String::from_utf8_lossy(&remote.stdout);
    assert!(out.contains("// src/auth.ts"), "{out}");
    // The local command goes through the same service: it prints the same answer.
    for format in ["text", "mcp"] {
        let on_server = Command::new(BIN)
            .args(["--server", &base, "--token", &reader, "search"])
            .args(["symbol = validateToken", "--format", format])
            .output()
            .unwrap();
        let local = sextant(&data, &model)
            .args(["search", "symbol = validateToken", "--format", format])
            .output()
            .unwrap();
        assert!(local.status.success(), "{local:?}");
        assert_eq!(
            String::from_utf8_lossy(&local.stdout),
            String::from_utf8_lossy(&on_server.stdout),
            "--format {format}"
        );
    }
    // So do the repository commands: one printer for both, fed from the REST documents.
    for args in [
        &["repo", "list"][..],
        &["repo", "show", "ws"],
        &["repo", "files", "ws"],
    ] {
        let on_server = Command::new(BIN)
            .args(["--server", &base, "--token", &reader])
            .args(args)
            .output()
            .unwrap();
        let local = sextant(&data, &model).args(args).output().unwrap();
        assert!(on_server.status.success(), "{args:?}: {on_server:?}");
        assert!(local.status.success(), "{args:?}: {local:?}");
        assert_eq!(
            String::from_utf8_lossy(&local.stdout),
            String::from_utf8_lossy(&on_server.stdout),
            "{args:?}"
        );
    }
    let listed = Command::new(BIN)
        .args(["--server", &base, "--token", &reader, "repo", "list"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&listed.stdout).starts_with("ws\tready"),
        "{listed:?}"
    );
    let refused = Command::new(BIN)
        .args(["--server", &base, "--token", &reader, "repo", "sync", "ws"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("admin"),
        "{refused:?}"
    );

    // `sextant --server … mcp`: a stdio relay to the server's /mcp, with the token, as
    // `sextant setup` configures it for a client: the token in a file, never in the
    // client's configuration.
    let token_file = tmp.path().join("token");
    std::fs::write(&token_file, format!("{reader}\n")).unwrap();
    let printed = Command::new(BIN)
        .args(["--server", &base, "--token-file"])
        .arg(&token_file)
        .args(["setup", "json", "--print"])
        .env_remove("SEXTANT_TOKEN")
        .output()
        .unwrap();
    assert!(printed.status.success(), "{printed:?}");
    let text = String::from_utf8(printed.stdout).unwrap();
    assert!(
        !text.contains(&reader),
        "the token stays out of the configuration: {text}"
    );
    let config: Value = serde_json::from_str(&text).unwrap();
    let client = configured_client(&config["mcpServers"]["sextant"]).await;
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "sextant");
    let result = call_tool(&client, "index_status", json!({ "repository": "ws" })).await;
    let status = result.content[0].as_text().unwrap().text.clone();
    assert!(status.starts_with("ws: ready"), "{status}");
    client.cancel().await.unwrap();
    drop(server);

    // `sextant mcp` over stdio on the same data directory, with rmcp's client, started
    // as the configuration `sextant setup claude-code` writes says (read the way Claude
    // Code reads `.mcp.json`).
    let project = tmp.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let setup = sextant(&data, &model)
        .args(["setup", "claude-code", "--dir"])
        .arg(&project)
        .output()
        .unwrap();
    assert!(setup.status.success(), "{setup:?}");
    let written = std::fs::read_to_string(project.join(".mcp.json")).unwrap();
    let again = sextant(&data, &model)
        .args(["setup", "claude-code", "--dir"])
        .arg(&project)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("already set up"),
        "{again:?}"
    );
    assert_eq!(
        std::fs::read_to_string(project.join(".mcp.json")).unwrap(),
        written
    );
    let config: Value = serde_json::from_str(&written).unwrap();
    let entry = &config["mcpServers"]["sextant"];
    assert_eq!(entry["type"], "stdio", "{written}");
    let client = configured_client(entry).await;
    let result = call_tool(&client, "get_symbol", json!({ "name": "validateToken" })).await;
    assert_eq!(result.content.len(), 2);
    let snapshot = result.content[1].as_text().unwrap().text.clone();
    assert!(
        snapshot.contains("export function validateToken"),
        "{snapshot}"
    );
    client.cancel().await.unwrap();
}

#[cfg(unix)]
#[tokio::test]
async fn sigterm_stops_the_server_even_with_a_progress_stream_open() {
    let Some(model) = available(minilm(), "stopping the binary") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let mut server = serve(&tmp.path().join("data"), &model);
    let base = server.url.clone();
    // An SSE stream never ends by itself: graceful shutdown alone would wait forever.
    let stream = reqwest::get(format!("{base}/api/v1/events")).await.unwrap();
    assert_eq!(stream.status(), 200);
    let killed = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = server.try_wait() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the server still runs a minute after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(status.success(), "{status:?}");
    drop(stream);
}

/// Issue "Hardening" (faults): a chunk store that lost its data files gives a clear error
/// that names the repair; `sextant doctor` reports it (exit 1), `--repair` moves it aside
/// and marks the files for re-indexing, and the next `sextant index` converges.
#[test]
fn doctor_reports_and_repairs_a_damaged_chunk_store() {
    let Some(model) = available(minilm(), "sextant doctor on a damaged chunk store") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (data, ws) = (tmp.path().join("data"), tmp.path().join("ws"));
    support::write(
        &ws,
        "src/tokens.ts",
        "/** Checks a bearer token. */\nexport function validateToken(token: string) {\n  return token.startsWith('sxt_');\n}\n",
    );
    let run = |args: &[&str]| {
        let out = sextant(&data, &model)
            .env("RUST_BACKTRACE", "0")
            .args(args)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let ws_arg = ws.to_string_lossy().into_owned();
    assert!(run(&["index", &ws_arg]).0);
    let (ok, text) = run(&["doctor"]);
    assert!(ok && text.contains("ws: ok"), "{text}");
    // It says what each store takes on disk and what maintenance would give back.
    assert!(
        text.contains(" MB on disk, ") && text.contains("would reclaim"),
        "{text}"
    );
    assert!(text.contains("version(s) kept"), "{text}");
    // And where the metadata database's bytes go.
    assert!(
        text.contains("largest tables with their indexes: ") && text.contains("symbols "),
        "{text}"
    );
    std::fs::remove_dir_all(data.join("lance/chunks.lance/data")).unwrap();
    let (ok, text) = run(&["search", "validate the token"]);
    assert!(!ok && text.contains("sextant doctor"), "{text}");
    let (ok, text) = run(&["doctor"]);
    assert!(!ok && text.contains("doctor --repair"), "{text}");
    let (ok, text) = run(&["doctor", "--repair"]);
    assert!(ok && text.contains("moved aside"), "{text}");
    let (ok, text) = run(&["index", &ws_arg]);
    assert!(ok && text.contains("1 indexed"), "{text}");
    let (ok, text) = run(&["doctor"]);
    assert!(ok && text.contains("ws: ok"), "{text}");
    let (ok, text) = run(&["search", "symbol = validateToken"]);
    assert!(ok && text.contains("validateToken"), "{text}");
}

/// What a repository's index holds, independent of ids: every file with its hash and
/// symbol count, and every symbol with its chunk id (ids derive from paths and names, so
/// two builds of the same files agree).
async fn index_snapshot(http: &reqwest::Client, base: &str, repo: &str) -> Vec<String> {
    let files = json_of(http.get(format!("{base}/api/v1/repositories/{repo}/files"))).await;
    let mut out = Vec::new();
    assert!(
        files["files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["contentHash"].is_string() && f["symbolCount"].as_i64() > Some(0)),
        "files carry their hash and symbol count: {files}"
    );
    for f in files["files"].as_array().unwrap() {
        let path = f["path"].as_str().unwrap();
        out.push(format!(
            "{path} {} {} {:?}",
            f["contentHash"], f["symbolCount"], f["skipReason"]
        ));
        let symbols = json_of(
            http.get(format!("{base}/api/v1/repositories/{repo}/symbols"))
                .query(&[("path", path)]),
        )
        .await;
        for s in symbols["symbols"].as_array().unwrap() {
            out.push(format!(
                "  {} {} {}",
                s["breadcrumb"], s["chunkId"], s["kind"]
            ));
        }
    }
    out.sort();
    out
}

/// Issue "Hardening" (faults): `kill -9` of `sextant serve` in the middle of a sync
/// started over REST. After a restart the job resumes by itself, and the index equals a
/// clean build of the same files; the two stores agree (`sextant doctor`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_sync_resumes_and_matches_a_clean_build() {
    let Some(model) = available(minilm(), "kill -9 of the server mid-sync") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let (data, clean, ws) = (
        tmp.path().join("data"),
        tmp.path().join("clean"),
        tmp.path().join("ws"),
    );
    // Enough chunks that embedding them with the real model takes several seconds.
    for i in 0..40 {
        let mut text = format!("import {{ shared }} from './f{}';\n\n", (i + 1) % 40);
        for j in 0..4 {
            text.push_str(&format!(
                "/** Step {j} of stage {i}: folds the input into the running total. */\n\
                 export function stage{i}step{j}(input: number[], total: number): number {{\n  \
                 return input.reduce((a, b) => a + b * {j}, total) + shared({i});\n}}\n\n"
            ));
        }
        text.push_str(&format!(
            "export function shared(x: number) {{\n  return x * {i};\n}}\n"
        ));
        support::write(&ws, &format!("src/f{i}.ts"), &text);
    }
    let http = reqwest::Client::new();
    let register = json!({ "path": ws.to_string_lossy(), "name": "ws" });
    // The sync holds after its first commit of 8 files (a fail point), so the kill lands
    // mid-sync whatever the machine's speed.
    let mut first = sextant(&data, &model);
    first
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env("SEXTANT_BATCH_FILES", "8")
        .env("SEXTANT_FAILPOINT", "sync-after-batch");
    let server = Served::start(first);
    let base = server.url.clone();
    let job = register_job(&http, &base, &register).await;
    let held = Instant::now();
    loop {
        let repo = json_of(http.get(format!("{base}/api/v1/repositories/ws"))).await;
        if repo["files"]["indexed"].as_u64().unwrap_or(0) > 0 {
            break;
        }
        assert!(
            held.elapsed() < Duration::from_secs(300),
            "no batch committed: {repo}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let state = wait_job(&http, &base, &job, |_| true).await;
    assert_eq!(
        state["state"].as_str().unwrap().to_lowercase(),
        "running",
        "killed mid-sync"
    );
    drop(server); // SIGKILL

    let server = serve(&data, &model);
    let base = server.url.clone();
    let finished = wait_job(&http, &base, &job, |s| s != "queued" && s != "running").await;
    assert_eq!(
        finished["state"].as_str().unwrap().to_lowercase(),
        "succeeded",
        "{finished}"
    );
    let resumed = index_snapshot(&http, &base, "ws").await;
    drop(server);

    let reference = serve(&clean, &model);
    let base = reference.url.clone();
    let id = register_job(&http, &base, &register).await;
    wait_job(&http, &base, &id, |s| s == "succeeded").await;
    let expected = index_snapshot(&http, &base, "ws").await;
    drop(reference);
    assert!(expected.len() > 200, "{} lines", expected.len());
    assert_eq!(resumed, expected);

    let doctor = sextant(&data, &model).arg("doctor").output().unwrap();
    let text = String::from_utf8_lossy(&doctor.stdout);
    assert!(doctor.status.success() && text.contains("ws: ok"), "{text}");
}

/// Writes `files` TypeScript files of documented functions under `root` (`tag` keeps two
/// repositories' names apart).
fn generated_repository(root: &std::path::Path, tag: &str, files: usize) {
    for i in 0..files {
        let mut text = format!(
            "import {{ helper{tag} }} from './{tag}{}';\n\n",
            (i + 1) % files
        );
        for j in 0..5 {
            text.push_str(&format!(
                "/** Retries step {j} of stage {i} with a backoff, merging the results. */\n\
                 export function {tag}{i}step{j}(input: number[], total: number): number {{\n  \
                 return input.reduce((a, b) => a + b * {j}, total) + helper{tag}({i});\n}}\n\n"
            ));
        }
        text.push_str(&format!(
            "export function helper{tag}(x: number) {{\n  return x * {i};\n}}\n"
        ));
        support::write(root, &format!("src/{tag}{i}.ts"), &text);
    }
}

/// Issue "Hardening" (load): concurrent clients mixing REST searches, symbol lookups, MCP
/// tool calls, SSE subscribers and `/healthz` probes against the real binary, while a
/// second repository syncs and hostile clients send the worst inputs known (issue 37).
/// No normal request may end in a 5xx or a broken connection (429s are back-pressure and
/// counted apart), and no worst input may get a 5xx. The short version runs here (8
/// clients and 2 hostile ones, 10 s, generated repositories); the recorded runs set
/// `SEXTANT_LOAD_CLIENTS`, `SEXTANT_LOAD_HOSTILE`, `SEXTANT_LOAD_SECS`,
/// `SEXTANT_LOAD_CORPUS` / `SEXTANT_LOAD_SECOND` (directories) and `SEXTANT_LOAD_REPORT`
/// (a file for the Markdown summary): see docs/RELIABILITY.md.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mixed_load_gets_no_server_errors() {
    let Some(model) = available(minilm(), "the load run") else {
        return;
    };
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let clients = var("SEXTANT_LOAD_CLIENTS").map_or(8, |v| v.parse().unwrap());
    let secs = var("SEXTANT_LOAD_SECS").map_or(10, |v| v.parse().unwrap());
    let hostile = var("SEXTANT_LOAD_HOSTILE").map_or(2, |v| v.parse().unwrap());
    let tmp = tempfile::tempdir().unwrap();
    let corpus = var("SEXTANT_LOAD_CORPUS").map_or_else(
        || {
            let dir = tmp.path().join("main");
            generated_repository(&dir, "main", 30);
            dir
        },
        std::path::PathBuf::from,
    );
    let second = var("SEXTANT_LOAD_SECOND").map_or_else(
        || {
            let dir = tmp.path().join("second");
            generated_repository(&dir, "second", 80);
            dir
        },
        std::path::PathBuf::from,
    );
    let server = serve(&tmp.path().join("data"), &model);
    let base = server.url.clone();
    let http = reqwest::Client::new();
    let indexed = Instant::now();
    let job = register_job(
        &http,
        &base,
        &json!({ "path": corpus.to_string_lossy(), "name": "main" }),
    )
    .await;
    loop {
        let state = json_of(http.get(format!("{base}/api/v1/jobs/{job}"))).await;
        match state["job"]["state"]
            .as_str()
            .unwrap_or("")
            .to_lowercase()
            .as_str()
        {
            "succeeded" => break,
            "failed" => panic!("{state}"),
            _ if indexed.elapsed() > Duration::from_secs(3600) => panic!("never indexed: {state}"),
            _ => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
    let indexed = indexed.elapsed();
    let syncing = register_job(
        &http,
        &base,
        &json!({ "path": second.to_string_lossy(), "name": "second" }),
    )
    .await;
    let report = support::load::run(support::load::LoadConfig {
        base: base.clone(),
        clients,
        duration: Duration::from_secs(secs),
        queries: support::load::QUESTIONS
            .iter()
            .map(|q| q.to_string())
            .collect(),
        symbols: support::load::SYMBOLS
            .iter()
            .map(|s| s.to_string())
            .collect(),
        hostile,
        server_pid: server.id(),
    })
    .await;
    let second_job = json_of(http.get(format!("{base}/api/v1/jobs/{syncing}"))).await;
    let summary = format!(
        "{}\nFirst repository indexed in {:.1} s before the run; the second repository's \
         sync was `{}` at the end ({}).\n",
        report.markdown(clients),
        indexed.as_secs_f64(),
        second_job["job"]["state"].as_str().unwrap_or("?"),
        second_job["job"]["message"].as_str().unwrap_or(""),
    );
    {
        use std::io::Write;
        let _ = std::io::stderr().write_all(summary.as_bytes());
    }
    if let Some(path) = var("SEXTANT_LOAD_REPORT") {
        std::fs::write(path, &summary).unwrap();
    }
    let examples: Vec<_> = report
        .ops
        .iter()
        .filter_map(|(op, o)| o.example.as_ref().map(|e| format!("{op}: {e}")))
        .collect();
    assert_eq!(report.failures(), 0, "{summary}\n{examples:#?}");
    assert_eq!(report.sse_failures, 0, "{summary}");
    let hostile_errors: usize = report.hostile.values().map(|o| o.server_errors).sum();
    assert_eq!(hostile_errors, 0, "a worst input got a 5xx: {summary}");
    for op in ["search", "symbol", "mcp", "healthz"] {
        assert!(
            report.ops.get(op).is_some_and(|o| !o.ok_ms.is_empty()),
            "no {op} answered: {summary}"
        );
    }
    assert!(report.rss.len() >= secs as usize / 2, "RSS not sampled");
}
