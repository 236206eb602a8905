//! Parse + chunk throughput on the large real file (`typescript.js`, 9.1 MB, from the
//! `typescript` 5.9.3 npm package that the corpora test caches), with tree-sitter's own
//! parse time alongside as the floor.
//!
//! `cargo bench --bench parse_chunk`. The input is `SEXTANT_BENCH_FILE` if set, else the
//! cached `typescript.js`, else `fixtures/parser/large-class.ts` (run the corpora test once
//! to fetch the real file: `cargo test --test corpora`).

use std::path::{Path, PathBuf};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use sextant::chunk::{ChunkOptions, chunk_file};
use sextant::parse::{Language, ParseLimits, parse_bytes};

fn input() -> PathBuf {
    if let Some(path) = std::env::var_os("SEXTANT_BENCH_FILE") {
        return PathBuf::from(path);
    }
    let cache = std::env::var_os("SEXTANT_CORPUS_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/sextant/corpora")
        });
    let real = cache.join("typescript-5.9.3/package/lib/typescript.js");
    if real.is_file() {
        return real;
    }
    eprintln!(
        "bench: {} not cached; falling back to the large-class fixture",
        real.display()
    );
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/parser/large-class.ts")
}

fn bench(c: &mut Criterion) {
    let path = input();
    let source = std::fs::read_to_string(&path).expect("bench input is readable UTF-8");
    let language = Language::from_path(&path).expect("bench input has a supported extension");
    let limits = ParseLimits {
        max_file_bytes: usize::MAX,
    };
    let mut group = c.benchmark_group(format!(
        "{} ({:.1} MB)",
        path.file_name().unwrap_or_default().to_string_lossy(),
        source.len() as f64 / 1e6
    ));
    group.sample_size(10);
    group.throughput(Throughput::Bytes(source.len() as u64));

    let grammar = sextant::parse::grammar(language);
    group.bench_function("tree-sitter parse only", |b| {
        let mut parser = tree_sitter::Parser::new();
        parser.set_language(&grammar).expect("grammar loads");
        b.iter(|| parser.parse(&source, None).expect("parses"))
    });
    group.bench_function("parse (symbols)", |b| {
        b.iter(|| parse_bytes(&path, source.as_bytes(), &limits).expect("parses"))
    });
    let mut chunks = 0;
    group.bench_function("parse + chunk", |b| {
        b.iter(|| {
            let parsed = parse_bytes(&path, source.as_bytes(), &limits).expect("parses");
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
