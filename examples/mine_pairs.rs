//! Prints the (description, code) training pairs of every source file under a directory
//! as JSON lines, using Sextant's own parser and chunker (`sextant::dev::pairs` and
//! `sextant::dev::registers`). `tools/train/mine.py` and `sources.py` run it on each
//! unpacked package.
//!
//! Usage: `cargo run --example mine_pairs -- DIR` — one JSON object per pair on stdout
//! (`path`, `breadcrumb`, `kind`, `description`, `code`, `register`), a summary on stderr.
//! Three registers: `doc` (a symbol's doc comment), `module` (a file's own doc with its
//! outline) and `test` (what a test says it checks, with the function it exercises).
//! Declaration files (`.d.ts`) and `node_modules/` are not read; test files
//! (`*.test.*`, `*_test.go`, `test_*.py`, `*Test.java`, anything under a test folder)
//! give `test` pairs only.

use std::path::Path;

use sextant::dev::pairs::{DocPair, doc_pairs};
use sextant::dev::registers::{PackageFile, is_test_path, module_pair, test_pairs};
use sextant::parse::Language;

fn main() {
    let Some(root) = std::env::args().nth(1) else {
        eprintln!("usage: mine_pairs DIR");
        std::process::exit(2);
    };
    let root = Path::new(&root);
    let (mut files, mut skipped, mut failed) = (0usize, 0usize, 0usize);
    let mut counts = [0usize; 3];
    let mut package = Vec::new();
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
            || is_declaration(&rel)
        {
            continue;
        }
        let Ok(source) = std::fs::read_to_string(path) else {
            failed += 1;
            continue;
        };
        if !is_test_path(&rel) {
            files += 1;
            match doc_pairs(&rel, &source) {
                Ok(Ok(found)) => {
                    found.iter().for_each(print);
                    counts[0] += found.len();
                    if let Some(pair) = module_pair(&rel, &source) {
                        print(&pair);
                        counts[1] += 1;
                    }
                }
                Ok(Err(_)) => {
                    skipped += 1;
                    continue;
                }
                Err(_) => {
                    failed += 1;
                    continue;
                }
            }
        }
        package.push(PackageFile { path: rel, source });
    }
    let tests = test_pairs(&package);
    tests.iter().for_each(print);
    counts[2] = tests.len();
    eprintln!(
        "mine_pairs: {files} files, {} doc pairs, {} module pairs, {} test pairs, {skipped} \
         skipped (generated or minified), {failed} unreadable or unparsable",
        counts[0], counts[1], counts[2]
    );
}

fn print(pair: &DocPair) {
    match serde_json::to_string(pair) {
        Ok(line) => println!("{line}"),
        Err(e) => eprintln!("mine_pairs: {}: {e}", pair.path),
    }
}

fn is_declaration(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel).to_ascii_lowercase();
    name.contains(".d.ts") || name.contains(".d.mts") || name.contains(".d.cts")
}
