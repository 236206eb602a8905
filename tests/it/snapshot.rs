//! Smart structural snapshots on the blueprint's phase-4 fixtures (`fixtures/snapshot/`),
//! six in TypeScript, and wrappers in other shapes: an indented class (Python), a group
//! (Go's `const (`), a Rust `impl … where` with a `use` over several lines. Each
//! `NAME.EXT` has `NAME.targets` (breadcrumbs, one per line) and the exact expected
//! snapshot in `NAME.expected.txt`. Every snapshot starts with the file's `// path`
//! line, its code after that line re-parses without errors, and it repeats no line of
//! code. A missing sidecar is written from the current output and the test fails, so it
//! gets reviewed.

use std::path::{Path, PathBuf};

use sextant::chunk::{ChunkOptions, chunk_file};
use sextant::parse::{ParseLimits, parse_bytes};
use sextant::render::snapshot;

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/snapshot");
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("fixtures/snapshot")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.extension()
                .is_some_and(|e| ["ts", "py", "go", "rs"].iter().any(|x| e == *x))
        })
        .collect();
    out.sort();
    out
}

#[test]
fn phase_four_snapshots_show_exactly_what_targets_use() {
    let files = fixtures();
    assert_eq!(
        files.len(),
        9,
        "the six fixtures of phase 4, and Python's, Go's and Rust's"
    );
    for path in files {
        let name = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let extension = path.extension().unwrap_or_default().to_string_lossy();
        let rel = format!("src/{name}.{extension}");
        let source = std::fs::read_to_string(&path).expect("readable fixture");
        let parsed = parse_bytes(Path::new(&rel), source.as_bytes(), &ParseLimits::default())
            .expect("fixture parses");
        let chunks = chunk_file(&rel, &source, &parsed, &ChunkOptions::default());
        let targets: Vec<String> = std::fs::read_to_string(path.with_extension("targets"))
            .expect("targets file")
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|crumb| {
                chunks
                    .iter()
                    .find(|c| c.breadcrumb == crumb)
                    .unwrap_or_else(|| panic!("{name}: no chunk `{crumb}`"))
                    .id
                    .clone()
            })
            .collect();
        let ids: Vec<&str> = targets.iter().map(String::as_str).collect();
        let text = snapshot(&rel, &ids, &chunks);

        assert!(
            text.starts_with(&format!("// {rel}\n")),
            "{name}: header\n{text}"
        );
        // The code after the `// path` line (a marker in every language) parses.
        let code = text.split_once('\n').map_or("", |(_, code)| code);
        let reparsed = parse_bytes(Path::new(&rel), code.as_bytes(), &ParseLimits::default())
            .expect("snapshot parses");
        assert!(
            reparsed.diagnostics.is_empty(),
            "{name}: {:?}\n{text}",
            reparsed.diagnostics
        );
        let mut seen = std::collections::HashSet::new();
        for line in text.lines().map(str::trim) {
            let structural = line.is_empty() || line.chars().all(|c| "{}();".contains(c));
            let repeatable = line.starts_with("return") || line.starts_with("this.");
            assert!(
                structural || repeatable || seen.insert(line.to_string()),
                "{name}: `{line}` appears twice\n{text}"
            );
        }
        let sidecar = path.with_extension("expected.txt");
        match std::fs::read_to_string(&sidecar) {
            Ok(expected) => assert_eq!(text, expected, "{name}"),
            Err(_) => {
                std::fs::write(&sidecar, &text).expect("write sidecar");
                panic!("wrote {}: review it", sidecar.display());
            }
        }
    }
}

/// Regression (security review, finding 3): a chain of constants each using the previous
/// one made snapshot assembly quadratic (`symbol = a4000` took 8.6 s and held a worker).
/// 10,000 links must come back complete and at once; the quadratic builder needed about
/// a minute for this file.
#[test]
fn a_long_chain_of_constants_is_assembled_in_linear_time() {
    const N: usize = 10_000;
    let mut source = String::from("const a0 = 1;\n");
    for i in 1..N {
        source.push_str(&format!("const a{i} = a{} + 1;\n", i - 1));
    }
    source.push_str(&format!(
        "export function target() {{\n  return a{};\n}}\n",
        N - 1
    ));
    let rel = "src/chain.ts";
    let parsed = parse_bytes(Path::new(rel), source.as_bytes(), &ParseLimits::default())
        .expect("chain parses");
    let chunks = chunk_file(rel, &source, &parsed, &ChunkOptions::default());
    let target = chunks
        .iter()
        .find(|c| c.name == "target")
        .expect("target chunk")
        .id
        .clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(snapshot(rel, &[target.as_str()], &chunks));
    });
    let text = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("the snapshot of a 10,000-constant chain is built within 20 s");
    assert!(text.contains("const a0 = 1;"));
    assert!(text.contains(&format!("const a{} = a{} + 1;", N - 1, N - 2)));
    assert_eq!(text.matches("const a").count(), N, "every link, once");
}
