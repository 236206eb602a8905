//! The token budget is a ceiling on the whole answer (issue 39; seed 003: `maxTokenBudget`
//! is the maximum tokens in the combined result output): the connection graph, snapshot
//! headers, imports and notes count, on every surface, in the agent's own tokens. Every
//! answer is counted by the reference implementations, not by Sextant: `tiktoken`
//! 1.0.22's `encode_ordinary` for `o200k` and `cl100k`, and Claude's encoding from
//! `@anthropic-ai/tokenizer` 0.0.4 (NFKC first, as its `countTokens` does), run with node
//! from the npm packages. The repository is the parser fixtures, whose answers run long.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use support::need::Unavailable;
use support::process::json_of;

const QUESTIONS: &[&str] = &[
    "where are generic classes with decorators declared",
    "how are arrow functions exported",
    "interface with optional members",
];

const BUDGETS: &[usize] = &[150, 400, 1000, 2500];

/// The encodings, by their wire names, in the order [`reference_counts`] returns them.
const TOKENIZERS: [&str; 3] = ["claude", "o200k", "cl100k"];

/// Counts `texts` in every encoding (in [`TOKENIZERS`] order) with the reference
/// implementations.
fn reference_counts(texts: &[String]) -> Result<Vec<[usize; 3]>, Unavailable> {
    let tiktoken = crate::corpora::npm_package("tiktoken@1.0.22", "npm-tiktoken-1.0.22")?;
    let claude = crate::corpora::npm_package(
        "@anthropic-ai/tokenizer@0.0.4",
        "npm-anthropic-ai-tokenizer-0.0.4",
    )?;
    // The same counter `tools/budget/measure.py` uses for the figures in BENCHMARKS.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/budget/count.cjs");
    let mut node = Command::new("node")
        .arg(&script)
        .env("TIKTOKEN", &tiktoken)
        .env("CLAUDE", &claude)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node starts (checked with the packages)");
    {
        use std::io::Write;
        let mut stdin = node.stdin.take().expect("node's stdin");
        stdin
            .write_all(&serde_json::to_vec(texts).unwrap())
            .expect("node reads the texts");
    }
    let out = node.wait_with_output().expect("node's counts");
    assert!(out.status.success(), "the reference count failed");
    Ok(serde_json::from_slice(&out.stdout).expect("node prints the counts as JSON"))
}

/// An answer as the agent reads it: the texts of its content items.
fn texts(content: &[Value]) -> Vec<String> {
    content
        .iter()
        .map(|i| i["text"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// One answer to check: where it came from, its budget, its encoding, its items.
struct Answer {
    label: String,
    budget: usize,
    tokenizer: usize,
    items: Vec<String>,
}

/// Asserts every answer is within its budget in its encoding's reference count, and
/// that at least one came near it (else the test tests nothing).
fn assert_within_budgets(answers: &[Answer]) -> Result<(), Unavailable> {
    let all: Vec<String> = answers.iter().flat_map(|a| a.items.clone()).collect();
    let counts = reference_counts(&all)?;
    let mut counts = counts.into_iter();
    let mut near = 0;
    for answer in answers {
        let counted: usize = counts
            .by_ref()
            .take(answer.items.len())
            .map(|c| c[answer.tokenizer])
            .sum();
        assert!(
            counted <= answer.budget,
            "{}: {counted} {} tokens over a budget of {}:\n{}",
            answer.label,
            TOKENIZERS[answer.tokenizer],
            answer.budget,
            answer.items.join("\n\n")
        );
        if counted * 10 >= answer.budget * 8 {
            near += 1;
        }
    }
    assert!(
        near > 0,
        "no answer came within 80% of its budget: the test tests nothing"
    );
    Ok(())
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
    let mut answers = Vec::new();
    let mut over_before = 0;
    for question in QUESTIONS {
        for &budget in BUDGETS {
            for (t, tokenizer) in TOKENIZERS.iter().enumerate() {
                let body = json!({"query": question, "maxTokenBudget": budget,
                                  "tokenizer": tokenizer, "minimumRelevanceThreshold": 0.0});
                let answer = json_of(
                    http.post(format!("{}/api/v1/search", server.base))
                        .json(&body),
                )
                .await;
                let response = &answer["response"];
                assert_eq!(response["tokenizer"], *tokenizer, "{answer}");
                let used = response["tokensUsed"].as_u64().unwrap() as usize;
                assert!(used <= budget, "{used} / {budget}");
                let results = response["results"].as_array().unwrap();
                assert!(!results.is_empty(), "`{question}` found nothing");
                // What the search stage picked alone (sources only) would have run over.
                let sources: usize = results
                    .iter()
                    .map(|r| r["tokens"].as_u64().unwrap() as usize)
                    .sum();
                if sources + 200 > budget {
                    over_before += 1;
                }
                answers.push(Answer {
                    label: format!("REST `{question}`"),
                    budget,
                    tokenizer: t,
                    items: texts(answer["content"].as_array().expect("a content array")),
                });
                let Value::Object(args) = body else {
                    unreachable!("a JSON object")
                };
                let called = mcp
                    .call_tool(
                        rmcp::model::CallToolRequestParams::new("codebase_search")
                            .with_arguments(args),
                    )
                    .await
                    .unwrap();
                answers.push(Answer {
                    label: format!("MCP `{question}`"),
                    budget,
                    tokenizer: t,
                    items: called
                        .content
                        .iter()
                        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                        .collect(),
                });
            }
        }
    }
    assert!(
        over_before > 0,
        "no answer came near its budget: the test tests nothing"
    );
    if let Err(why) = assert_within_budgets(&answers) {
        support::skip("answers counted by the reference tokenizers", why);
    }
}

#[test]
fn the_cli_prints_no_more_than_the_budget() {
    let Some(model) = support::available(
        support::models::static_model(),
        "the CLI's budget (needs the static model)",
    ) else {
        return;
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
    let mut answers = Vec::new();
    for &budget in BUDGETS {
        for (t, tokenizer) in TOKENIZERS.iter().enumerate() {
            let budget_arg = budget.to_string();
            let printed = run(&[
                "search",
                QUESTIONS[0],
                "--budget",
                &budget_arg,
                "--tokenizer",
                tokenizer,
                "--min-relevance",
                "0",
            ]);
            assert!(
                printed.status.success(),
                "{}",
                String::from_utf8_lossy(&printed.stderr)
            );
            let text = String::from_utf8_lossy(&printed.stdout).into_owned();
            assert!(text.starts_with("Search: "), "{text}");
            answers.push(Answer {
                label: format!("the CLI with --tokenizer {tokenizer}"),
                budget,
                tokenizer: t,
                items: vec![text],
            });
        }
    }
    if let Err(why) = assert_within_budgets(&answers) {
        support::skip("the CLI's answers counted by the reference tokenizers", why);
    }
}

/// Sextant's own counts equal the reference implementations' on real code: every file of
/// the parser fixtures, in the three encodings.
#[test]
fn sextant_counts_what_the_reference_tokenizers_count() {
    let files: Vec<PathBuf> = walkdir::WalkDir::new(fixtures())
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .collect();
    let texts: Vec<String> = files
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect();
    assert!(texts.len() > 50, "{} fixture files", texts.len());
    let Some(reference) = support::available(reference_counts(&texts), "the reference tokenizers")
    else {
        return;
    };
    let ours = [
        sextant::text::Tokenizer::Claude,
        sextant::text::Tokenizer::O200k,
        sextant::text::Tokenizer::Cl100k,
    ];
    for (text, want) in texts.iter().zip(reference) {
        let got = ours.map(|t| t.count(text));
        assert_eq!(got, want, "{}", &text[..text.len().min(200)]);
    }
}
