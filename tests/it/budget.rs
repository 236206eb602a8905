//! The token budget is a ceiling on the whole answer (issue 39; seed 003: `maxTokenBudget`
//! is the maximum tokens in the combined result output): the connection graph, snapshot
//! headers, imports and notes count, on every surface. Measured with Sextant's documented
//! count (`text::estimate_tokens`) over the parser fixtures, a repository whose answers
//! run long.

use crate::support;

use std::path::Path;

use serde_json::{Value, json};
use sextant::text::estimate_tokens;
use support::process::json_of;

const QUESTIONS: &[&str] = &[
    "where are generic classes with decorators declared",
    "how are arrow functions exported",
    "interface with optional members",
];

const BUDGETS: &[usize] = &[150, 400, 1000, 2500];

/// Estimated tokens of the content items of an answer.
fn content_tokens(content: &Value) -> usize {
    content
        .as_array()
        .expect("a content array")
        .iter()
        .map(|i| estimate_tokens(i["text"].as_str().unwrap_or_default()))
        .sum()
}

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/parser")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_never_exceed_the_budget_over_rest_and_mcp() {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;

    let server = support::app::start(false).await;
    server.index(&fixtures(), "fx").await;
    let http = reqwest::Client::new();
    let mcp = ()
        .serve(StreamableHttpClientTransport::from_uri(format!(
            "{}/mcp",
            server.base
        )))
        .await
        .unwrap();
    let mut over_before = 0;
    for question in QUESTIONS {
        for &budget in BUDGETS {
            let body = json!({"query": question, "maxTokenBudget": budget,
                              "minimumRelevanceThreshold": 0.0});
            let answer = json_of(
                http.post(format!("{}/api/v1/search", server.base))
                    .json(&body),
            )
            .await;
            let counted = content_tokens(&answer["content"]);
            assert!(
                counted <= budget,
                "REST `{question}` at {budget}: {counted}"
            );
            let used = answer["response"]["tokensUsed"].as_u64().unwrap() as usize;
            assert!(
                used <= budget && used >= counted,
                "{used} / {counted} / {budget}"
            );
            let results = answer["response"]["results"].as_array().unwrap();
            assert!(!results.is_empty(), "`{question}` found nothing");
            // What the search stage picked alone (sources only) would have run over.
            let sources: usize = results
                .iter()
                .map(|r| r["tokens"].as_u64().unwrap() as usize)
                .sum();
            if sources + 200 > budget {
                over_before += 1;
            }

            let Value::Object(args) = body else {
                unreachable!("a JSON object")
            };
            let called = mcp
                .call_tool(
                    rmcp::model::CallToolRequestParams::new("codebase_search").with_arguments(args),
                )
                .await
                .unwrap();
            let texts: usize = called
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| estimate_tokens(&t.text)))
                .sum();
            assert!(texts <= budget, "MCP `{question}` at {budget}: {texts}");
        }
    }
    assert!(
        over_before > 0,
        "no answer came near its budget: the test tests nothing"
    );
}

#[test]
fn the_cli_prints_no_more_than_the_budget() {
    let model = match support::models::static_model() {
        Ok(m) => m,
        Err(why) => return support::skip("the CLI's budget (needs the static model)", why),
    };
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let run = |args: &[&str]| {
        support::process::sextant_static(&data, &model)
            .args(args)
            .output()
            .unwrap()
    };
    let indexed = run(&["index", fixtures().to_str().unwrap(), "--name", "fx"]);
    assert!(
        indexed.status.success(),
        "{}",
        String::from_utf8_lossy(&indexed.stderr)
    );
    for &budget in BUDGETS {
        let budget_arg = budget.to_string();
        let printed = run(&[
            "search",
            QUESTIONS[0],
            "--budget",
            &budget_arg,
            "--min-relevance",
            "0",
        ]);
        assert!(
            printed.status.success(),
            "{}",
            String::from_utf8_lossy(&printed.stderr)
        );
        let text = String::from_utf8_lossy(&printed.stdout);
        assert!(
            estimate_tokens(&text) <= budget,
            "at {budget}: {} tokens\n{text}",
            estimate_tokens(&text)
        );
        assert!(text.starts_with("Search: "), "{text}");
    }
}
