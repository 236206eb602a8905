//! Prints the (description, code) training pairs of every source file under a directory
//! as JSON lines, using Sextant's own parser and chunker (`sextant::dev::pairs`).
//! `tools/train/mine.py` runs it on each unpacked npm package.
//!
//! Usage: `cargo run --example mine_pairs -- DIR` — one JSON object per pair on stdout
//! (`path`, `breadcrumb`, `kind`, `description`, `code`), a summary on stderr.
//! Declaration files (`.d.ts`), `node_modules/` and test files (`*.test.*`, `*_test.go`,
//! `test_*.py`, `*Test.java`, and anything under a test folder) are not read.

use std::path::Path;

use sextant::dev::pairs::doc_pairs;
use sextant::parse::Language;

fn main() {
    let Some(root) = std::env::args().nth(1) else {
        eprintln!("usage: mine_pairs DIR");
        std::process::exit(2);
    };
    let root = Path::new(&root);
    let (mut files, mut pairs, mut skipped, mut failed) = (0usize, 0usize, 0usize, 0usize);
    let walker = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .filter_entry(|e| e.file_name() != "node_modules")
        .sort_by_file_path(Ord::cmp)
        .build();
    for entry in walker.flatten() {
        let path = entry.path();
        let Ok(rel) = path.strip_prefix(root) else {
            continue;
        };
        let rel = rel.to_string_lossy().replace('\\', "/");
        if !entry.file_type().is_some_and(|t| t.is_file())
            || Language::from_path(path).is_none()
            || is_declaration_or_test(&rel)
        {
            continue;
        }
        let Ok(source) = std::fs::read_to_string(path) else {
            failed += 1;
            continue;
        };
        files += 1;
        match doc_pairs(&rel, &source) {
            Ok(Ok(found)) => {
                for pair in &found {
                    match serde_json::to_string(pair) {
                        Ok(line) => println!("{line}"),
                        Err(e) => eprintln!("mine_pairs: {rel}: {e}"),
                    }
                }
                pairs += found.len();
            }
            Ok(Err(_)) => skipped += 1,
            Err(_) => failed += 1,
        }
    }
    eprintln!(
        "mine_pairs: {files} files, {pairs} pairs, {skipped} skipped (generated or minified), \
         {failed} unreadable or unparsable"
    );
}

fn is_declaration_or_test(rel: &str) -> bool {
    let lower = rel.to_ascii_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    name.contains(".d.ts")
        || name.contains(".d.mts")
        || name.contains(".d.cts")
        || name.contains(".test.")
        || name.contains(".spec.")
        || name.ends_with("_test.go")
        || name.ends_with("_test.py")
        || (name.starts_with("test_") && name.ends_with(".py"))
        || name == "conftest.py"
        || name.ends_with("test.java")
        || name.ends_with("tests.java")
        || lower.split('/').any(|dir| {
            matches!(
                dir,
                "test" | "tests" | "__tests__" | "spec" | "__mocks__" | "testdata" | "testing"
            )
        })
}
