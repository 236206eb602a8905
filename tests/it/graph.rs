//! The symbol graph on the blueprint's phase-3 scenarios (`fixtures/graph/*/`): each
//! directory holds a small multi-file project and `expected.json`, which maps
//! `path > breadcrumb` to the exact metadata expected for that symbol (only the fields
//! named are checked; lists of symbols are compared as sorted sets, `members` in order).

use std::path::{Path, PathBuf};

use serde_json::Value;
use sextant::graph::{MemoryGraph, SymbolMetadata, SymbolRef};

fn scenario_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/graph");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("fixtures/graph exists")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("expected.json").is_file())
        .collect();
    dirs.sort();
    dirs
}

fn refs(list: &[SymbolRef]) -> Vec<String> {
    let mut out: Vec<String> = list
        .iter()
        .map(|r| match &r.path {
            Some(p) => format!("{} ({p})", r.name),
            None => r.name.clone(),
        })
        .collect();
    out.sort();
    out
}

fn field(meta: &SymbolMetadata, name: &str) -> Value {
    let strings = |v: Vec<String>| Value::from(v);
    match name {
        "calls" => strings(refs(&meta.calls)),
        "callers" => strings(refs(&meta.callers)),
        "usedBy" => strings(refs(&meta.used_by)),
        "extends" => strings(refs(&meta.extends)),
        "implements" => strings(refs(&meta.implements)),
        "subtypes" => strings(refs(&meta.subtypes)),
        "typesIn" => strings(refs(&meta.types_in)),
        "typesOut" => strings(refs(&meta.types_out)),
        "members" => strings(meta.members.clone()),
        "uncertainCalls" => strings(meta.uncertain_calls.clone()),
        "referenceFiles" => strings(meta.reference_files.clone()),
        "referenceCount" => Value::from(meta.reference_count()),
        other => panic!("unknown expectation field `{other}`"),
    }
}

#[test]
fn phase_three_scenarios_resolve_exactly() {
    let dirs = scenario_dirs();
    assert_eq!(
        dirs.len(),
        7,
        "the six scenarios of phase 3 and the polyglot one"
    );
    let mut failures = Vec::new();
    for dir in dirs {
        let scenario = dir
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let (files, configs) = sextant::index::read_sources(&dir).expect("readable scenario");
        let graph = MemoryGraph::build(&files, &configs);
        assert!(graph.failed.is_empty(), "{scenario}: {:?}", graph.failed);
        let text = std::fs::read_to_string(dir.join("expected.json")).expect("expected.json");
        let expected: serde_json::Map<String, Value> =
            serde_json::from_str(&text).expect("expected.json is a JSON object");
        for (key, fields) in expected {
            let (path, breadcrumb) = key.split_once(" > ").expect("`path > breadcrumb` key");
            let Some(chunk) = graph.find(path, breadcrumb) else {
                failures.push(format!("{scenario}: no symbol `{key}`"));
                continue;
            };
            let meta = graph
                .slice
                .metadata(&chunk.id)
                .expect("metadata of a known chunk");
            for (name, want) in fields.as_object().expect("fields object") {
                let got = field(&meta, name);
                if &got != want {
                    failures.push(format!(
                        "{scenario}: {key}: {name}: expected {want}, got {got}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// The four connection-graph fixtures of phase 5: `fixtures/graph/*.json` (a
/// [`GraphInput`]) against the exact text in the `.expected.txt` beside it. A missing
/// sidecar is written from the current output and the test fails, so it gets reviewed.
#[test]
fn phase_five_connection_graphs_match_exactly() {
    use sextant::render::graph::{GraphInput, render, render_counted};
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/graph");
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("fixtures/graph")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    inputs.sort();
    assert_eq!(inputs.len(), 4, "the four fixtures of phase 5");
    for path in inputs {
        let input: GraphInput =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("readable"))
                .expect("a GraphInput");
        let text = render(&input);
        // The graph's own count, which answers add up, is its text's.
        let (same, own) = render_counted(&input);
        assert_eq!(same, text);
        assert_eq!(own, input.tokenizer.count(&text), "{}", path.display());
        // The summary counts the whole response: this graph plus the snapshots (never
        // less; a token or two more where the digits' own tokens make the count swing).
        let summary = text.lines().next().unwrap_or("");
        let counted = input.tokenizer.count(&text) + input.snapshot_tokens;
        let stated: usize = summary
            .rsplit("| ")
            .next()
            .and_then(|t| t.split('/').next())
            .map(|n| n.replace(',', ""))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no token count in {summary}"));
        assert!(
            counted <= stated && stated <= counted + 2,
            "{summary} vs {counted} counted"
        );
        assert!(
            summary.ends_with(&format!(
                "/{} tokens",
                sextant::render::thousands(input.token_budget)
            )),
            "{summary}"
        );
        // ★ only on result names, never on an entry's own title line.
        for line in text
            .lines()
            .filter(|l| l.contains('★') && !l.starts_with("★ ="))
        {
            assert!(line.starts_with(' '), "{line}");
        }
        let sidecar = path.with_extension("expected.txt");
        match std::fs::read_to_string(&sidecar) {
            Ok(expected) => assert_eq!(text, expected, "{}", path.display()),
            Err(_) => {
                std::fs::write(&sidecar, &text).expect("write sidecar");
                panic!("wrote {}: review it", sidecar.display());
            }
        }
    }
}

/// A class whose base is a member of itself, or of a class that extends it back, is a
/// cycle that resolution must leave (a 1M-line corpus overflowed the stack on one):
/// resolving members through those bases gives up after a bounded number of steps.
#[test]
fn cycles_through_member_bases_end() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        (
            "a.py",
            "import b\n\nclass Outer(Outer.Inner):\n    def run(self):\n        return self.missing()\n\n\
             class A(b.B):\n    def go(self):\n        return self.nothing() + super().gone()\n",
        ),
        (
            "b.py",
            "import a\n\nclass B(a.A):\n    def back(self):\n        return self.go()\n",
        ),
        (
            "c.ts",
            "export class C extends C.D {\n  run() {\n    return this.missing();\n  }\n}\n",
        ),
    ];
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let (files, configs) = sextant::index::read_sources(dir.path()).expect("readable sources");
    let graph = MemoryGraph::build(&files, &configs);
    assert!(graph.failed.is_empty(), "{:?}", graph.failed);
    // What does resolve still does: `B.back` calls `A.go`, found through the cycle.
    let back = graph.find("b.py", "B > back").expect("B.back");
    let calls = refs(&graph.slice.metadata(&back.id).expect("metadata").calls);
    assert_eq!(calls, ["A.go (a.py)"]);
}
