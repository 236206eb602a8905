//! Scout on the fixture project (`fixtures/scout/`): the issue's five scenarios with the
//! exact pointers a person would list, through the service, REST and MCP.

use std::path::Path;

use sextant::auth::Principal;
use sextant::scout::{Risk, ScoutResponse};
use sextant::service::ScoutRequest;

use crate::support;

/// The fixture project.
fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/scout")
}

/// A server (no job runner) with the fixture project indexed as `scout`.
async fn indexed() -> support::app::TestServer {
    let server = support::app::start(false).await;
    server.index(&fixture(), "scout").await;
    server
}

async fn scout(server: &support::app::TestServer, query: &str) -> ScoutResponse {
    let request = ScoutRequest {
        query: query.into(),
        ..ScoutRequest::default()
    };
    server
        .state
        .service
        .scout(&Principal::local(), request, |_, _| {})
        .await
        .unwrap()
}

/// The issue's five scenarios: each pointer a person would list, with its risk and first
/// tag, in Scout's order (most risky, nearest, then by place); and what was ignored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scout_names_what_must_change_in_each_scenario() {
    let server = indexed().await;
    use Risk::{High, Medium};
    // (query, interpretation, [(location, risk, first tag)], ignored: "n × tag" lines)
    type Case = (
        &'static str,
        &'static str,
        Vec<(&'static str, Risk, &'static str)>,
        Vec<&'static str>,
    );
    let cases: Vec<Case> = vec![
        (
            "what breaks if I add a variant to ShapeKind",
            "Matched type `ShapeKind` at src/shapes/kinds.ts:1.",
            vec![
                ("src/shapes/area.ts:3", High, "pattern-match"),
                ("src/shapes/labels.ts:3", High, "exhaustive"),
                ("src/shapes/renderers.ts:3", High, "exhaustive"),
                ("src/shapes/describe.ts:3", Medium, "type-only"),
            ],
            vec!["5 × import", "1 × re-export"],
        ),
        (
            "Color: adding a variant",
            "Matched enum `Color` at src/shapes/kinds.ts:3.",
            vec![("src/shapes/paint.ts:3", High, "pattern-match")],
            vec!["1 × import", "1 × re-export"],
        ),
        (
            "add a parameter to parseConfig",
            "Matched function `parseConfig` at src/config/parse.ts:5.",
            vec![
                ("src/config/cli.ts:4", High, "call-site"),
                ("src/config/server.ts:4", High, "call-site"),
                ("src/config/worker.ts:4", High, "call-site"),
            ],
            // Three callers' imports and `unused.ts`'s; the barrel's re-export.
            vec!["4 × import", "1 × re-export"],
        ),
        (
            "add a member to the Store interface",
            "Matched interface `Store` at src/storage/store.ts:1.",
            vec![
                ("src/storage/disk.ts:3", High, "implements"),
                ("src/storage/memory.ts:3", High, "implements"),
            ],
            vec!["2 × import"],
        ),
        (
            "symbol = Solid > volume",
            "Matched method `Solid > volume` at src/geometry/solid.ts:2.",
            vec![
                ("src/geometry/ball.ts:8", High, "overrides"),
                ("src/geometry/cube.ts:8", High, "overrides"),
                ("src/geometry/total.ts:4", High, "call-site"),
            ],
            vec![],
        ),
        (
            "checkToken gets a second parameter",
            "Matched function `checkToken` at src/auth/lib/token.ts:1.",
            vec![("src/auth/app.ts:4", High, "call-site")],
            // Both barrels, and the import through the outer one.
            vec!["1 × import", "2 × re-export"],
        ),
    ];
    for (query, interpretation, expected, ignored) in cases {
        let r = scout(&server, query).await;
        let got: Vec<(String, Risk, String)> = r
            .pointers
            .iter()
            .map(|p| (p.location.clone(), p.risk, p.tags[0].clone()))
            .collect();
        let want: Vec<(String, Risk, String)> = expected
            .iter()
            .map(|(l, r, t)| (l.to_string(), *r, t.to_string()))
            .collect();
        assert_eq!(got, want, "{query}\n{}", r.summary);
        assert_eq!(r.meta.interpretation, interpretation, "{query}");
        for line in &ignored {
            assert!(
                r.summary.contains(line),
                "{query}: `{line}` in\n{}",
                r.summary
            );
        }
        let ignored_total: usize = ignored
            .iter()
            .map(|l| l.split(' ').next().unwrap().parse::<usize>().unwrap())
            .sum();
        assert_eq!(
            r.meta.links_rated as usize,
            expected.len() + ignored_total,
            "{query}: every rated link is a pointer or ignored\n{}",
            r.summary
        );
        // Every high-risk pointer says what to do; the summary lists it.
        for p in r.pointers.iter().filter(|p| p.risk == High) {
            assert!(p.action.is_some(), "{query}: {p:?}");
            assert!(r.summary.contains(&p.location), "{query}: {}", p.location);
        }
        assert!(r.meta.nodes_visited <= 20 && r.meta.budget_remaining <= 20);
    }
}

/// A name several symbols share is not guessed: the candidates come back, each in the
/// `symbol =` form that picks it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ambiguous_name_lists_the_candidates() {
    let server = indexed().await;
    let r = scout(&server, "rename volume").await;
    assert!(r.pointers.is_empty(), "{:?}", r.pointers);
    assert_eq!(r.meta.nodes_visited, 0);
    for candidate in [
        "`symbol = src/geometry/ball.ts > Ball > volume` (method)",
        "`symbol = src/geometry/cube.ts > Cube > volume` (method)",
        "`symbol = src/geometry/solid.ts > Solid > volume` (method)",
    ] {
        assert!(
            r.meta.interpretation.contains(candidate),
            "{candidate} in {}",
            r.meta.interpretation
        );
    }
    assert!(r.meta.interpretation.contains("ambiguous"));
    // A name nobody has, in `symbol =` form, says so.
    let r = scout(&server, "symbol = NoSuchThing").await;
    assert!(r.pointers.is_empty());
    assert!(
        r.meta.interpretation.contains("NoSuchThing"),
        "{}",
        r.meta.interpretation
    );
}

/// The budget is the most nodes explored; requests out of range name the field; a token
/// that may not see the repository finds nothing in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_and_the_callers_scope_bound_a_scout() {
    let server = indexed().await;
    let service = &server.state.service;
    let ask = |query: &str, budget: Option<u32>, tags: Vec<String>| ScoutRequest {
        query: query.into(),
        tags,
        budget,
        ..ScoutRequest::default()
    };
    let one = service
        .scout(
            &Principal::local(),
            ask("ShapeKind", Some(1), vec![]),
            |_, _| {},
        )
        .await
        .unwrap();
    assert_eq!((one.meta.nodes_visited, one.meta.budget_remaining), (1, 0));
    assert!(
        one.pointers.len() >= 3,
        "the seed's own links are still rated"
    );
    let mut seen = 0;
    let full = service
        .scout(
            &Principal::local(),
            ask("ShapeKind", None, vec![]),
            |_, explored| {
                seen += 1;
                assert!(explored >= 1);
            },
        )
        .await
        .unwrap();
    assert_eq!(seen, full.meta.links_rated, "every rated link is reported");
    for (request, field) in [
        (ask("ShapeKind", Some(0), vec![]), "budget"),
        (ask("ShapeKind", Some(201), vec![]), "budget"),
        (ask("  ", None, vec![]), "query"),
        (ask("ShapeKind", None, vec!["t".into(); 21]), "tags"),
    ] {
        let err = service
            .scout(&Principal::local(), request, |_, _| {})
            .await
            .unwrap_err();
        assert!(
            matches!(&err, sextant::service::ServiceError::Invalid { field: Some(f), .. } if *f == field),
            "{err:?}"
        );
    }
    // A token that sees only another repository (the server's own workspace).
    let other = server
        .indexer
        .register_path(&server.root, Some("other"), Default::default())
        .await
        .unwrap();
    let stranger = Principal::token("t", sextant::auth::Scope::Read, &[other.id]);
    let r = service
        .scout(&stranger, ask("ShapeKind", None, vec![]), |_, _| {})
        .await
        .unwrap();
    assert!(r.pointers.is_empty());
    assert!(
        r.meta.interpretation.contains("No indexed symbol"),
        "{}",
        r.meta.interpretation
    );
}

/// The same scout over REST (camelCase, in the OpenAPI document) and as the MCP tool
/// `scout`, whose progress is reported while it explores.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scout_over_rest_and_mcp() {
    use serde_json::{Value, json};
    let server = indexed().await;
    let http = reqwest::Client::new();
    let answer: Value = http
        .post(format!("{}/api/v1/scout", server.base))
        .json(&json!({ "query": "Store interface", "tags": ["implements"], "budget": 5 }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["meta"]["nodesVisited"], 3, "{answer}");
    assert_eq!(answer["pointers"][0]["location"], "src/storage/disk.ts:3");
    assert_eq!(answer["pointers"][0]["risk"], "high");
    let bad = http
        .post(format!("{}/api/v1/scout", server.base))
        .json(&json!({ "query": "Store", "budget": 0 }))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status().as_u16(), 400);

    // Streamed: a `progress` event per rated link, then the `result`; a bad request is
    // still an HTTP error before any stream starts.
    let streamed = http
        .post(format!("{}/api/v1/scout", server.base))
        .header("accept", "text/event-stream")
        .json(&json!({ "query": "Store interface", "budget": 5 }))
        .send()
        .await
        .unwrap();
    assert_eq!(streamed.status().as_u16(), 200);
    let text = streamed.text().await.unwrap();
    let events: Vec<(&str, Value)> = text
        .split("\n\n")
        .filter_map(|block| {
            let name = block.lines().find_map(|l| l.strip_prefix("event:"))?.trim();
            let data = block.lines().find_map(|l| l.strip_prefix("data:"))?.trim();
            Some((name, serde_json::from_str(data).ok()?))
        })
        .collect();
    let progress: Vec<&Value> = events
        .iter()
        .filter(|(n, _)| *n == "progress")
        .map(|(_, v)| v)
        .collect();
    assert_eq!(progress.len(), 4, "{text}");
    assert_eq!(progress[0]["location"], "src/storage/disk.ts:3");
    assert_eq!(progress[0]["risk"], "high");
    let (last, result) = events.last().unwrap();
    assert_eq!(*last, "result", "{text}");
    assert_eq!(result["meta"]["nodesVisited"], 3);
    let bad = http
        .post(format!("{}/api/v1/scout", server.base))
        .header("accept", "text/event-stream")
        .json(&json!({ "query": " " }))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status().as_u16(), 400);

    // MCP: initialize, then call `scout` with a progress token; the answer is an SSE
    // stream with progress notifications before the result.
    let url = format!("{}/mcp", server.base);
    let init = http
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2025-03-26",
                "capabilities": {},
                "clientInfo": { "name": "scout-test", "version": "1" }
            }
        }))
        .send()
        .await
        .unwrap();
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let _ = init.text().await;
    let post = |body: Value| {
        http.post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .json(&body)
            .send()
    };
    let _ = post(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await
        .unwrap();
    let stream = post(json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {
            "name": "scout",
            "arguments": { "query": "what breaks if I add a variant to ShapeKind" },
            "_meta": { "progressToken": "scout-1" }
        }
    }))
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    let messages: Vec<Value> = stream
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect();
    let progress: Vec<&Value> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 10, "one per rated link: {stream}");
    assert_eq!(progress[0]["params"]["progressToken"], "scout-1");
    let result = messages.iter().find(|m| m["id"] == 2).expect("the result");
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("src/shapes/area.ts:3"), "{text}");
    assert!(text.contains("Matched type `ShapeKind`"), "{text}");
    assert_ne!(result["result"]["isError"], true);
}

/// `sextant index` then `sextant scout` through the real binary (static model), in text
/// and as JSON.
#[test]
fn the_cli_scouts_a_local_index() {
    use std::process::Command;
    let (teacher, model) = match (support::models::minilm(), support::models::static_model()) {
        (Ok(t), Ok(s)) => (t, s),
        (Err(why), _) | (_, Err(why)) => return support::skip("sextant scout (CLI)", why),
    };
    let tmp = tempfile::tempdir().unwrap();
    let root = fixture();
    let sextant = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_sextant"))
            .arg("--data-dir")
            .arg(tmp.path().join("data"))
            .args(["--embed-provider", "static", "--model-dir"])
            .arg(&teacher)
            .arg("--static-model-dir")
            .arg(&model)
            .args(args)
            .output()
            .expect("run sextant");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?}: {stderr}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    sextant(&["index", root.to_str().unwrap()]);
    let text = sextant(&["scout", "add a parameter to parseConfig"]);
    assert!(text.contains("3 places must change"), "{text}");
    assert!(text.contains("src/config/worker.ts:4"), "{text}");
    let json: serde_json::Value =
        serde_json::from_str(&sextant(&["scout", "symbol = Solid > volume", "--json"])).unwrap();
    assert_eq!(json["pointers"].as_array().unwrap().len(), 3, "{json}");
    assert_eq!(
        json["meta"]["interpretation"],
        "Matched method `Solid > volume` at src/geometry/solid.ts:2."
    );
}

/// With a chat model configured (a local mock of an OpenAI-compatible endpoint): the
/// model's ratings are used, an invalid answer is asked once more, two invalid answers
/// fall back to the structural rating with confidence 1, and the summary is the model's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_model_rates_and_summarises_with_a_fallback() {
    use std::sync::{Arc, Mutex};

    use support::mock_http::{Behaviour, MockServer};
    let mock = MockServer::start().await;
    let chat = sextant::embed::OpenAiChat::new(
        &format!("{}/v1", mock.url),
        "mock-model",
        Some("k".into()),
        std::time::Duration::from_secs(5),
    )
    .unwrap();
    let setup = support::app::Setup::service(move |s| s.with_scout_model(Arc::new(chat)));
    let server = support::app::start_with(false, Default::default(), setup).await;
    server.index(&fixture(), "scout").await;
    let run = |query: &'static str| {
        let service = server.state.service.clone();
        async move {
            let rubrics = Arc::new(Mutex::new(Vec::new()));
            let seen = rubrics.clone();
            let request = ScoutRequest {
                query: query.into(),
                tags: vec!["call-site".into()],
                ..ScoutRequest::default()
            };
            let answer = service
                .scout(&Principal::local(), request, move |v, _| {
                    seen.lock().unwrap().push(v.rubric.clone())
                })
                .await
                .unwrap();
            let rubrics = rubrics.lock().unwrap().clone();
            (answer, rubrics)
        }
    };

    // The model's ratings (the mock gives risk 2, confidence 4): nothing must change, and
    // the summary is the model's.
    let (answer, rubrics) = run("checkToken gets a second parameter").await;
    assert_eq!(answer.summary, "mock summary");
    assert!(
        rubrics.iter().all(|r| r.risk == 2 && r.confidence == 4),
        "{rubrics:?}"
    );
    assert!(answer.pointers.is_empty(), "{:?}", answer.pointers);
    let calls = mock.requests();
    let rate = &calls[0].body["messages"][0]["content"];
    assert!(
        rate.as_str()
            .unwrap()
            .contains("Query: \"checkToken gets a second parameter\"")
    );
    assert!(
        rate.as_str()
            .unwrap()
            .contains("Interest tags: [\"call-site\"]")
    );
    assert_eq!(calls.last().unwrap().auth.as_deref(), Some("Bearer k"));

    // An invalid answer, then a valid one that names a tag from the list and one that is
    // not: the second is used, the foreign tag dropped.
    let before = mock.requests().len();
    mock.plan([
        Behaviour::Reply("I think these are fine".into()),
        Behaviour::Reply(
            r#"[{"relevance":5,"risk":5,"complexity":1,"confidence":5,"tags":["call-site","made-up"]},
                {"relevance":1,"risk":1,"complexity":1,"confidence":5,"tags":[]},
                {"relevance":1,"risk":1,"complexity":1,"confidence":5,"tags":[]},
                {"relevance":1,"risk":1,"complexity":1,"confidence":5,"tags":[]}]"#
                .into(),
        ),
    ]);
    let (answer, rubrics) = run("checkToken gets a second parameter").await;
    assert_eq!(
        mock.requests().len() - before,
        3,
        "two rating tries and the summary"
    );
    assert_eq!(rubrics[0].risk, 5);
    assert!(!rubrics[0].tags.contains(&"made-up".to_string()));
    assert_eq!(answer.pointers.len(), 1, "{:?}", answer.pointers);
    assert_eq!(answer.pointers[0].location, "src/auth/app.ts:4");

    // Two invalid answers: the structural rating, with confidence 1.
    mock.plan([
        Behaviour::Reply("[]".into()),
        Behaviour::Reply("no".into()),
        Behaviour::Fail(400, None),
    ]);
    let (answer, rubrics) = run("checkToken gets a second parameter").await;
    assert!(rubrics.iter().all(|r| r.confidence == 1), "{rubrics:?}");
    assert_eq!(
        answer.pointers[0].location, "src/auth/app.ts:4",
        "structural: the call"
    );
    // The summary request failed: the deterministic summary stands.
    assert!(answer.summary.contains("must change"), "{}", answer.summary);
}

/// The expansion rule is configuration: with a threshold no link reaches, only the seed
/// is explored (its links are still rated and reported).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_expansion_rule_is_configured() {
    let strict = sextant::scout::ExpandRule::from_json(r#"{"threshold": 100}"#).unwrap();
    let setup = support::app::Setup::service(move |s| s.with_scout_rule(strict));
    let server = support::app::start_with(false, Default::default(), setup).await;
    server.index(&fixture(), "scout").await;
    let r = scout(&server, "what breaks if I add a variant to ShapeKind").await;
    assert_eq!(r.meta.nodes_visited, 1);
    assert_eq!(r.pointers.len(), 4, "{:?}", r.pointers);
}
