//! Parse + chunk throughput per language, with tree-sitter's own parse time alongside as
//! the floor. TypeScript: the large real file `typescript.js` (9.1 MB, from the
//! `typescript` 5.9.3 npm package). Python, Go, Rust and Java: the largest file of the
//! real corpus the corpora test fetches for each (attrs 24.2.0, BurntSushi/toml, the
//! regex-syntax crate cargo unpacked, junit4).
//!
//! `cargo bench --bench parse_chunk`. The input is `SEXTANT_BENCH_FILE` alone if set;
//! otherwise each language's real file when cached, else its large fixture (run the
//! corpora test once to fetch the real files: `cargo test --test it -- corpora`).

use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sextant::chunk::{ChunkOptions, chunk_file};
use sextant::parse::{Language, ParseLimits, parse_bytes};

fn cache() -> PathBuf {
    std::env::var_os("SEXTANT_CORPUS_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/sextant/corpora")
        })
}

/// The largest file with extension `ext` under `dir`.
fn largest(dir: &Path, ext: &str) -> Option<PathBuf> {
    sextant::cli::source_files(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
}

#[path = "../tests/it/support/registry.rs"]
mod registry;

fn inputs() -> Vec<PathBuf> {
    if let Some(path) = std::env::var_os("SEXTANT_BENCH_FILE") {
        return vec![PathBuf::from(path)];
    }
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/parser");
    let cache = cache();
    let typescript = cache.join("typescript-5.9.3/package/lib/typescript.js");
    let candidates = [
        (typescript.is_file().then_some(typescript), "large-class.ts"),
        (
            largest(&cache.join("pypi-attrs-24.2.0"), "py"),
            "python/large_module.py",
        ),
        (
            largest(&cache.join("debian-src-golang-toml"), "go"),
            "go/large_file.go",
        ),
        (
            registry::unpacked_crate("regex-syntax-")
                .ok()
                .and_then(|d| largest(&d, "rs")),
            "rust/large_file.rs",
        ),
        (
            largest(&cache.join("debian-src-junit4"), "java"),
            "java/LargeFile.java",
        ),
    ];
    candidates
        .into_iter()
        .map(|(real, fixture)| {
            real.unwrap_or_else(|| {
                eprintln!("bench: no cached real file; using the fixture {fixture}");
                fixtures.join(fixture)
            })
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    for path in inputs() {
        bench_file(c, &path);
    }
}

fn bench_file(c: &mut Criterion, path: &Path) {
    let source = std::fs::read_to_string(path).expect("bench input is readable UTF-8");
    let language = Language::from_path(path).expect("bench input has a supported extension");
    let limits = ParseLimits {
        max_file_bytes: usize::MAX,
    };
    let mut group = c.benchmark_group(format!(
        "{language:?}: {} ({:.2} MB)",
        path.file_name().unwrap_or_default().to_string_lossy(),
        source.len() as f64 / 1e6
    ));
    group.sample_size(10);
    group.throughput(Throughput::Bytes(source.len() as u64));

    if let Some(grammar) = sextant::parse::grammar(language) {
        group.bench_function("tree-sitter parse only", |b| {
            let mut parser = tree_sitter::Parser::new();
            parser.set_language(&grammar).expect("grammar loads");
            b.iter(|| parser.parse(&source, None).expect("parses"))
        });
    }
    group.bench_function("parse (symbols)", |b| {
        b.iter(|| parse_bytes(path, source.as_bytes(), &limits).expect("parses"))
    });
    let mut chunks = 0;
    group.bench_function("parse + chunk", |b| {
        b.iter(|| {
            let parsed = parse_bytes(path, source.as_bytes(), &limits).expect("parses");
            let out = chunk_file("bench", &source, &parsed, &ChunkOptions::default());
            chunks = out.len();
            out
        })
    });
    group.finish();
    eprintln!("bench: {chunks} chunks per run of {}", path.display());
}

criterion_group!(benches, bench);
criterion_main!(benches);
