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
