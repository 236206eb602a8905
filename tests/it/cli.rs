//! The binary's commands, run as a user would.

use std::process::Command;

fn sextant() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sextant"));
    cmd.current_dir(env!("CARGO_MANIFEST_DIR"));
    cmd
}

#[test]
fn parse_stats_prints_the_dashboard_for_the_fixtures() {
    let out = sextant()
        .args(["parse", "--stats", "fixtures/parser"])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("Parser Validation Summary"));
    assert!(stdout.contains("Coverage: 100.00%"));
    assert!(stdout.contains("Global rules: all 10 hold"));
    assert!(stdout.contains("Determinism: ✓"));
}

#[test]
fn chunks_lists_breadcrumbs_and_json_has_every_field() {
    let out = sextant()
        .args(["chunks", "fixtures/parser/classes.ts"])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(
        stdout.contains("BaseService > dispose [method] lines 23-25"),
        "{stdout}"
    );

    let out = sextant()
        .args(["chunks", "--json", "fixtures/parser/classes.ts"])
        .output()
        .expect("runs");
    let chunks: serde_json::Value = serde_json::from_slice(&out.stdout).expect("valid JSON");
    let first = &chunks[0];
    for field in [
        "id",
        "relativePath",
        "nodeKind",
        "fullSource",
        "embeddingText",
        "relevantImports",
        "searchText",
        "childChunkIds",
    ] {
        assert!(first.get(field).is_some(), "missing {field}");
    }
}

#[test]
fn unreadable_and_unsupported_inputs_fail_with_a_reason() {
    let out = sextant()
        .args(["chunks", "no/such/file.ts"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read no/such/file.ts"));

    let out = sextant()
        .args(["chunks", "Cargo.toml"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unsupported file type"));
}

#[test]
fn remote_providers_explain_missing_settings() {
    let out = sextant()
        .args(["embed", "--embed-provider", "voyage", "hello"])
        .env_remove("VOYAGE_API_KEY")
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("VOYAGE_API_KEY"), "{stderr}");

    let out = sextant()
        .args(["embed", "--embed-provider", "openai", "hello"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--embed-url"), "{stderr}");

    let out = sextant()
        .args(["rerank", "q", "doc"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--rerank-provider"));
}

#[test]
fn model_dir_without_a_model_says_what_is_missing() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = sextant()
        .args(["embed", "hello"])
        .env("SEXTANT_MODEL_DIR", tmp.path())
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("config.json is missing") && stderr.contains("sextant model fetch"),
        "{stderr}"
    );
}
