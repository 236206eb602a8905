//! Prints a deterministic sample of functions from a source tree with the call edges the
//! symbol graph found for each, for checking graph precision and recall by hand
//! (docs/BENCHMARKS.md, "Graph accuracy per language").
//!
//! `cargo run --example graph_sample -- DIR EXT [N]`: N (default 12) functions and
//! methods of at least three lines in `*.EXT` files outside tests and test data
//! (`roles::PathRole`), in the order of
//! the SHA-256 of their chunk id; each with its source, its resolved calls (name and
//! file) and the calls it left uncertain.

use sextant::graph::MemoryGraph;
use sextant::parse::SymbolKind;
use sextant::roles::PathRole;
use sha2::{Digest, Sha256};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: graph_sample DIR EXT [N]";
    let dir = args.next().ok_or(usage)?;
    let ext = args.next().ok_or(usage)?;
    let n: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(12);
    let (files, configs) = sextant::index::read_sources(std::path::Path::new(&dir))?;
    let graph = MemoryGraph::build(&files, &configs);
    let mut picked = Vec::new();
    for (path, chunks) in &graph.chunks {
        let role = PathRole::of(path);
        if !path.ends_with(&format!(".{ext}")) || matches!(role, PathRole::Test | PathRole::Fixture)
        {
            continue;
        }
        for chunk in chunks {
            if !matches!(
                chunk.node_kind,
                SymbolKind::Function | SymbolKind::Method | SymbolKind::Constructor
            ) {
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
