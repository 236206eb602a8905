//! Data-driven parser/chunker fixtures (blueprint phases 1–2).
//!
//! Every source file in `fixtures/parser/` has a `.expected.json` sidecar with the expected
//! symbol tree, chunks, root items and stats. The runner parses and chunks each fixture,
//! compares, checks the ten global rules, and prints the metrics dashboard.
//!
//! To regenerate sidecars after an intended change: `SEXTANT_BLESS=1 cargo test --test
//! fixtures`, then review the diff line by line: the sidecars are the specification.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use sextant::chunk::{CodeChunk, chunk_file};
use sextant::config::Config;
use sextant::conformance::{Summary, validate_source};
use sextant::parse::{ParsedFile, ParsedSymbol, parse_bytes};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/parser")
}

/// TypeScript fixtures at the top, other languages in `fixtures/parser/<language>/`.
fn fixtures() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![fixture_dir()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("fixtures/parser exists") {
            let path = entry.expect("readable dir entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if !path.to_string_lossy().ends_with(".expected.json") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn symbol_json(s: &ParsedSymbol) -> Value {
    json!({
        "name": s.name,
        "kind": s.kind,
        "depth": s.depth,
        "parentName": s.parent_name,
        "hasChildren": !s.children.is_empty(),
        "exported": s.exported,
        "modifiers": s.modifiers,
        "lineRange": [s.range.start, s.range.end],
        "signature": s.signature,
        "overloads": s.overloads,
        "jsdoc": s.jsdoc,
    })
}

fn chunk_json(c: &CodeChunk) -> Value {
    let preamble = c.embedding_text.split("\n---\n").next().unwrap_or("");
    json!({
        "breadcrumb": c.breadcrumb,
        "nodeKind": c.node_kind,
        "hasCollapsedChildren": c.has_collapsed_children,
        "isLeaf": c.is_leaf(),
        "lineCount": c.content.lines().count(),
        "lineRange": [c.start_line, c.end_line],
        "relevantImports": c.relevant_imports,
        "embeddingTextPrefix": preamble,
    })
}

fn expectation(parsed: &ParsedFile, chunks: &[CodeChunk], source: &str) -> Value {
    let report_rules = sextant::conformance::check_rules(source, parsed, chunks);
    json!({
        "symbols": parsed.walk().map(symbol_json).collect::<Vec<_>>(),
        "chunks": chunks.iter().map(chunk_json).collect::<Vec<_>>(),
        "rootItems": parsed.symbols.iter().filter(|s| s.kind.is_statement()).map(|s| json!({
            "kind": s.kind, "name": s.name, "lineRange": [s.range.start, s.range.end],
        })).collect::<Vec<_>>(),
        "diagnostics": parsed.diagnostics.iter().map(|d| format!("{}:{} {}", d.line, d.column, d.message)).collect::<Vec<_>>(),
        "stats": {
            "totalSymbols": parsed.walk().count(),
            "totalChunks": chunks.len(),
            "totalRootItems": parsed.symbols.iter().filter(|s| s.kind.is_statement()).count(),
            "maxDepth": parsed.walk().map(|s| s.depth).max().unwrap_or(0),
            "fullCoverage": !report_rules.iter().any(|v| v.rule == 1),
            "allChunksUnder32K": chunks.iter().all(|c| c.embedding_tokens <= 32_000),
        },
    })
}

/// First difference between two JSON values, as a path and both sides.
fn first_diff(path: &str, expected: &Value, actual: &Value) -> Option<String> {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for key in e.keys().chain(a.keys()) {
                let (ev, av) = (
                    e.get(key).unwrap_or(&Value::Null),
                    a.get(key).unwrap_or(&Value::Null),
                );
                if let Some(d) = first_diff(&format!("{path}.{key}"), ev, av) {
                    return Some(d);
                }
            }
            None
        }
        (Value::Array(e), Value::Array(a)) => {
            for i in 0..e.len().max(a.len()) {
                let (ev, av) = (
                    e.get(i).unwrap_or(&Value::Null),
                    a.get(i).unwrap_or(&Value::Null),
                );
                if let Some(d) = first_diff(&format!("{path}[{i}]"), ev, av) {
                    return Some(d);
                }
            }
            None
        }
        _ if expected == actual => None,
        _ => Some(format!("{path}: expected {expected}, got {actual}")),
    }
}

#[test]
fn fixtures_match_expectations_and_global_rules() {
    let config = Config::default();
    let bless = std::env::var_os("SEXTANT_BLESS").is_some();
    let mut summary = Summary::new();
    let mut failures = Vec::new();
    let files = fixtures();
    assert!(
        files.len() >= 20,
        "expected the blueprint's 20 fixtures, found {}",
        files.len()
    );
    for path in files {
        let name = path
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let source = std::fs::read_to_string(&path).expect("fixture is UTF-8");
        let parsed = parse_bytes(&path, source.as_bytes(), &config.parse).expect("fixture parses");
        let chunks = chunk_file(&name, &source, &parsed, &config.chunk);
        let actual = expectation(&parsed, &chunks, &source);
        let sidecar = path.with_file_name(format!("{name}.expected.json"));
        if bless {
            let text = serde_json::to_string_pretty(&actual).expect("serialisable") + "\n";
            std::fs::write(&sidecar, text).expect("write sidecar");
        }
        let expected: Value = match std::fs::read_to_string(&sidecar) {
            Ok(text) => serde_json::from_str(&text).expect("sidecar is JSON"),
            Err(_) => {
                failures.push(format!(
                    "{name}: no {} (run with SEXTANT_BLESS=1)",
                    sidecar.display()
                ));
                continue;
            }
        };
        let mut file_ok = true;
        if let Some(diff) = first_diff("", &expected, &actual) {
            failures.push(format!("{name}: {diff}"));
            file_ok = false;
        }
        let report = validate_source(&path, &name, &source, &config).expect("fixture validates");
        for v in &report.violations {
            failures.push(format!("{name}: {v}"));
            file_ok = false;
        }
        let _ = file_ok;
        summary.add(report);
    }
    println!("{summary}");
    assert!(
        failures.is_empty(),
        "fixture failures:\n{}",
        failures.join("\n")
    );
}

/// The chunker output each [`sextant::chunk::FORMAT`] stands for: the SHA-256 over every
/// fixture's path, parse (symbols, imports, identifiers, graph facts) and chunks (every
/// field: content, embedding and search texts, ids). A change of either is a new format.
const FORMATS: &[(u32, &str)] = &[
    (
        1,
        "1b36585fb0dd5a202cb3a04cbc2b284a2e48c3a6c77a7ff2295f94f5d2e2748b",
    ),
    // Deprecated symbols carry the `deprecated` modifier.
    (
        2,
        "ec5bf76ac6544c48773dd1eeecb03785c6f567cc4dd9dd13084604b68d4acfed",
    ),
];

/// A change to what parsing or chunking makes of a file must come with a new
/// [`sextant::chunk::FORMAT`], or indexes built before it would keep the older chunks of
/// every file that does not change (the sync reads only changed files).
#[test]
fn the_index_format_names_its_output() {
    use sha2::{Digest, Sha256};
    let config = Config::default();
    let mut hash = Sha256::new();
    for path in fixtures() {
        let rel = path
            .strip_prefix(fixture_dir())
            .expect("under fixtures/parser");
        let source = std::fs::read_to_string(&path).expect("fixture is UTF-8");
        let parsed = parse_bytes(&path, source.as_bytes(), &config.parse).expect("parses");
        let chunks = chunk_file(&rel.to_string_lossy(), &source, &parsed, &config.chunk);
        hash.update(rel.to_string_lossy().as_bytes());
        hash.update(serde_json::to_vec(&parsed).expect("serializes"));
        hash.update(serde_json::to_vec(&chunks).expect("serializes"));
    }
    let fingerprint = format!("{:x}", hash.finalize());
    let format = sextant::chunk::FORMAT;
    let known = FORMATS.iter().find(|(f, _)| *f == format);
    if let Some((old, _)) = FORMATS.iter().find(|(_, fp)| *fp == fingerprint) {
        assert_eq!(
            *old, format,
            "the output of format {old} under format {format}"
        );
        return;
    }
    panic!(
        "parsing or chunking the fixtures gives new output (fingerprint {fingerprint}); \
         {} set sextant::chunk::FORMAT to {} and add ({}, \"{fingerprint}\") to FORMATS in \
         tests/it/fixtures.rs, so that existing indexes are chunked again",
        if known.is_some() {
            "an intended change?"
        } else {
            "this format has no fingerprint yet:"
        },
        if known.is_some() { format + 1 } else { format },
        if known.is_some() { format + 1 } else { format },
    );
}
