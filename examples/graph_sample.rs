//! Prints a deterministic sample of functions from a source tree with the call edges the
//! symbol graph found for each, for checking graph precision and recall by hand
//! (docs/BENCHMARKS.md, "Graph accuracy per language").
//!
//! `cargo run --example graph_sample -- DIR EXT [N]`: N (default 12) functions and
//! methods of at least three lines in `*.EXT` files outside test code, in the order of
//! the SHA-256 of their chunk id; each with its source, its resolved calls (name and
//! file) and the calls it left uncertain.

use sextant::graph::MemoryGraph;
use sha2::{Digest, Sha256};

fn is_test_path(path: &str) -> bool {
    let p = format!("/{path}");
    [
        "/test/",
        "/tests/",
        "/testing/",
        "/testdata/",
        "_test.go",
        "/test_",
        "Test.java",
    ]
    .iter()
    .any(|m| p.contains(m))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: graph_sample DIR EXT [N]";
    let dir = args.next().ok_or(usage)?;
    let ext = args.next().ok_or(usage)?;
    let n: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(12);
    let (files, configs) = sextant::index::read_sources(std::path::Path::new(&dir))?;
    let files: Vec<(String, String)> = files;
    let graph = MemoryGraph::build(&files, &configs);
    let mut picked = Vec::new();
    for (path, chunks) in &graph.chunks {
        if !path.ends_with(&format!(".{ext}")) || is_test_path(path) {
            continue;
        }
        for chunk in chunks {
            let kind = format!("{:?}", chunk.node_kind);
            if !matches!(kind.as_str(), "Function" | "Method" | "Constructor") {
                continue;
            }
            if chunk.end_line < chunk.start_line + 2 {
                continue;
            }
            let key = hex(&Sha256::digest(chunk.id.as_bytes()));
            picked.push((key, path.clone(), chunk.clone()));
        }
    }
    picked.sort_by(|a, b| a.0.cmp(&b.0));
    for (_, path, chunk) in picked.into_iter().take(n) {
        let meta = graph
            .slice
            .metadata(&chunk.id)
            .ok_or("chunk without metadata")?;
        println!(
            "=== {path}:{}-{} {}",
            chunk.start_line, chunk.end_line, chunk.breadcrumb
        );
        for (i, line) in chunk.content.lines().enumerate() {
            println!("{:5} {line}", chunk.start_line as usize + i);
        }
        for call in &meta.calls {
            println!(
                "  -> {} ({})",
                call.name,
                call.path.as_deref().unwrap_or("external")
            );
        }
        for name in &meta.uncertain_calls {
            println!("  ?? {name}");
        }
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
