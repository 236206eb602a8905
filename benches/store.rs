//! Chunk-store benchmark: bulk-insert synthetic chunks into LanceDB, then measure vector
//! and full-text query latency (p50/p95) with and without filters, before and after the
//! ANN index. Prints a table; figures go to docs/BENCHMARKS.md.
//!
//! Then the whole natural-language search pipeline (`Searcher`: query embedding, vector
//! ∥ BM25 recall, answer units, fusion, folding, gate and budget) on the same store, p50/p95
//! per stage and end to end, with 1 and 16 concurrent queries. The query embedder here is
//! a hash → random unit vector stand-in, so the figures exclude the model's own time
//! (measured by `benches/embed.rs`).
//!
//! `cargo bench --bench store` (SEXTANT_BENCH_ROWS overrides the 100,000 rows; dims 384,
//! the default local model's width; SEXTANT_BENCH_REINDEX_ROWS overrides the store's
//! row-based upkeep during the insert, 0 turning it off; SEXTANT_BENCH_DIR keeps the
//! store for a second run that measures queries only).

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use sextant::embed::{BatchLimits, EmbedError, Embedder, InputKind};
use sextant::search::{SearchOptions, SearchResponse, Searcher};
use sextant::store::SqlMetaStore;

use sextant::chunk::CodeChunk;
use sextant::parse::{ByteRange, Language, SymbolKind};
use sextant::store::{ChunkFilter, ChunkRow, LanceStore, LanceStoreOptions, VectorStore};

const DIMS: usize = 384;
const REPOS: usize = 10;
const CHUNKS_PER_FILE: usize = 20;
const FILES_PER_COMMIT: usize = 100;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> f32 {
        (self.next() % 2_000_001) as f32 / 1_000_000.0 - 1.0
    }
}

fn word(rng: &mut Rng) -> String {
    // Zipf-like vocabulary of 5,000 pseudo-words.
    let r = (rng.next() % 1_000_000) as f64 / 1_000_000.0;
    let rank = (5000f64.powf(r)) as u64;
    format!("w{rank}")
}

fn vector(rng: &mut Rng) -> Vec<f32> {
    let v: Vec<f32> = (0..DIMS).map(|_| rng.unit()).collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

fn row(rng: &mut Rng, repo: usize, file: usize, i: usize) -> ChunkRow {
    let words: Vec<String> = (0..40).map(|_| word(rng)).collect();
    let text = words.join(" ");
    let kind = [
        SymbolKind::Function,
        SymbolKind::Method,
        SymbolKind::Class,
        SymbolKind::Const,
    ][i % 4];
    let path = format!("src/m{}/file{file}.ts", file % 50);
    // Shaped like an indexed repository: methods sit in classes (parent ids, children),
    // a third of the symbols have JSDoc, half use imports. (Columns that are null or
    // empty in every row are stored as constant pages, whose random access costs more.)
    let id = |i: usize| format!("{file:06}-{i:03}");
    let method = kind == SymbolKind::Method;
    ChunkRow {
        repo_id: format!("repo{repo}"),
        file_path: format!("/repos/{repo}/{path}"),
        chunk: CodeChunk {
            id: id(i),
            relative_path: path,
            language: Language::TYPESCRIPT,
            node_kind: kind,
            native_kind: None,
            name: format!("symbol{i}"),
            parent_name: method.then(|| format!("symbol{}", i + 1)),
            parent_chunk_id: method.then(|| id(i + 1)),
            child_chunk_ids: if kind == SymbolKind::Class {
                vec![id(i - 1)]
            } else {
                Vec::new()
            },
            depth: u32::from(method),
            breadcrumb: if method {
                format!("symbol{} > symbol{i}", i + 1)
            } else {
                format!("symbol{i}")
            },
            signature: format!("function symbol{i}()"),
            modifiers: Vec::new(),
            exported: !method,
            jsdoc: i.is_multiple_of(3).then(|| format!("Does thing {i}.")),
            start_line: (i * 10 + 1) as u32,
            end_line: (i * 10 + 9) as u32,
            bytes: ByteRange {
                start: i * 300,
                end: i * 300 + 290,
            },
            full_source: text.clone(),
            content: text.clone(),
            has_collapsed_children: false,
            collapsed: Vec::new(),
            relevant_imports: if i.is_multiple_of(2) {
                vec![format!("import {{ dep{i} }} from './dep{i}';")]
            } else {
                Vec::new()
            },
            embedding_text: text.clone(),
            embedding_tokens: text.len() / 4,
            truncated: false,
            search_text: text,
        },
        content_hash: "h".into(),
        last_modified: 0,
        vector: vector(rng),
        code_in_file: false,
    }
}

fn percentiles(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let at =
        |q: f64| samples[((samples.len() as f64 - 1.0) * q).round() as usize].as_secs_f64() * 1e3;
    (at(0.50), at(0.95))
}

async fn measure<F, Fut>(label: &str, runs: usize, mut f: F)
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = usize>,
{
    let mut samples = Vec::with_capacity(runs);
    let mut hits = 0;
    for i in 0..runs {
        let t = Instant::now();
        hits += f(i).await;
        samples.push(t.elapsed());
    }
    let (p50, p95) = percentiles(samples);
    println!(
        "| {label} | {p50:.1} ms | {p95:.1} ms | {:.1} |",
        hits as f64 / runs as f64
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return; // cargo test/bench harness probes
    }
    let rows: usize = std::env::var("SEXTANT_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    // SEXTANT_BENCH_DIR keeps the store between runs: a second run over a populated
    // directory skips the insert and maintenance and measures queries only.
    let kept = std::env::var_os("SEXTANT_BENCH_DIR").map(std::path::PathBuf::from);
    let temp = tempfile::tempdir().expect("tempdir");
    let root = kept.clone().unwrap_or_else(|| temp.path().to_path_buf());
    let reuse = kept.is_some() && root.join("lance").exists();
    let store = Arc::new(
        LanceStore::open(LanceStoreOptions {
            maintain_every_writes: usize::MAX,
            // SEXTANT_BENCH_REINDEX_ROWS=0: no upkeep during the insert, so the ANN index
            // is trained once, over every row, by the explicit maintenance below.
            reindex_after_rows: match std::env::var("SEXTANT_BENCH_REINDEX_ROWS").ok() {
                Some(v) if v.trim() == "0" => usize::MAX,
                Some(v) => v
                    .parse()
                    .expect("SEXTANT_BENCH_REINDEX_ROWS: a number of rows"),
                None => LanceStoreOptions::new("", DIMS).reindex_after_rows,
            },
            ..LanceStoreOptions::new(root.join("lance").to_string_lossy(), DIMS)
        })
        .await
        .expect("open"),
    );
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let files = if reuse { 0 } else { rows / CHUNKS_PER_FILE };
    if reuse {
        // The same generator state as an inserting run, so the queries are the same.
        for f in 0..rows / CHUNKS_PER_FILE {
            for i in 0..CHUNKS_PER_FILE {
                row(&mut rng, 0, f, i);
            }
        }
    }
    let started = Instant::now();
    // One commit per batch of FILES_PER_COMMIT files, all of one repository (as an
    // indexing run of one repo commits); repositories take turns.
    for (commit, first) in (0..files).step_by(FILES_PER_COMMIT).enumerate() {
        let repo = commit % REPOS;
        let batch: Vec<(String, Vec<ChunkRow>)> = (first..(first + FILES_PER_COMMIT).min(files))
            .map(|f| {
                let rows: Vec<ChunkRow> = (0..CHUNKS_PER_FILE)
                    .map(|i| row(&mut rng, repo, f, i))
                    .collect();
                (rows[0].chunk.relative_path.clone(), rows)
            })
            .collect();
        store
            .replace_files(&format!("repo{repo}"), batch)
            .await
            .expect("insert");
    }
    let insert = started.elapsed();
    let count = store.count(&ChunkFilter::default()).await.expect("count");
    println!("rows: {count}, dims {DIMS}");
    println!(
        "insert: {:.1} s ({:.0} chunks/s, {} chunks per commit)",
        insert.as_secs_f64(),
        count as f64 / insert.as_secs_f64(),
        FILES_PER_COMMIT * CHUNKS_PER_FILE
    );
    let queries: Vec<Vec<f32>> = (0..50).map(|_| vector(&mut rng)).collect();
    let texts: Vec<String> = (0..50)
        .map(|_| format!("{} {}", word(&mut rng), word(&mut rng)))
        .collect();
    let none = ChunkFilter::default();
    let filtered = ChunkFilter {
        repositories: vec!["repo3".into()],
        kinds: vec!["method".into()],
        paths: vec!["src/m3/".into()],
        ..Default::default()
    };
    for phase in [
        "before maintenance (exact vector scan)",
        "after maintenance",
    ] {
        if phase.starts_with("before") && reuse {
            continue;
        }
        if phase.starts_with("after") && !reuse {
            let t = Instant::now();
            let stats = store.maintain().await.expect("maintain");
            println!(
                "\nmaintain (compaction, index refresh{}): {:.1} s",
                if stats.vector_index {
                    ", IVF-PQ build"
                } else {
                    ""
                },
                t.elapsed().as_secs_f64()
            );
        }
        let stats = store.stats().await.expect("stats");
        println!(
            "\n{phase}: vector index {}, text index {}",
            stats.vector_index, stats.text_index
        );
        println!("| query (top 10) | p50 | p95 | mean hits |\n|---|---|---|---|");
        for (label, filter) in [("no filter", &none), ("repo+kind+path filter", &filtered)] {
            measure(&format!("vector, {label}"), 50, |i| {
                let (q, s) = (&queries[i], store.as_ref());
                async move { s.vector_search(q, 10, filter).await.expect("search").len() }
            })
            .await;
            measure(&format!("full-text BM25, {label}"), 50, |i| {
                let (q, s) = (&texts[i], store.as_ref());
                async move { s.text_search(q, 10, filter).await.expect("search").len() }
            })
            .await;
        }
    }
    let meta = Arc::new(
        SqlMetaStore::open(&root.join("meta.db").to_string_lossy())
            .await
            .expect("meta"),
    );
    let searcher = Arc::new(Searcher::new(
        meta,
        store.clone(),
        Arc::new(HashEmbedder),
        None,
    ));
    println!("\nend-to-end search (default options: 40+40 candidates, blend, gate 0.5, 8k budget)");
    println!("| concurrency | stage | p50 | p95 |\n|---|---|---|---|");
    for concurrency in [1usize, 16] {
        let per_task = if concurrency == 1 { 100 } else { 20 };
        let mut tasks = Vec::new();
        for t in 0..concurrency {
            let (searcher, texts) = (searcher.clone(), texts.clone());
            tasks.push(tokio::spawn(async move {
                let mut out: Vec<SearchResponse> = Vec::new();
                for i in 0..per_task {
                    let q = &texts[(t * per_task + i) % texts.len()];
                    out.push(
                        searcher
                            .search(q, &SearchOptions::default())
                            .await
                            .expect("search"),
                    );
                }
                out
            }));
        }
        let mut responses = Vec::new();
        for task in tasks {
            responses.extend(task.await.expect("task"));
        }
        let stage = |f: fn(&SearchResponse) -> f64| {
            percentiles(
                responses
                    .iter()
                    .map(|r| Duration::from_secs_f64(f(r) / 1e3))
                    .collect(),
            )
        };
        for (label, f) in [
            (
                "retrieve (vector ∥ BM25)",
                (|r: &SearchResponse| r.timings.retrieve_ms) as fn(&SearchResponse) -> f64,
            ),
            ("end to end", |r: &SearchResponse| r.timings.total_ms),
        ] {
            let (p50, p95) = stage(f);
            println!("| {concurrency} | {label} | {p50:.1} ms | {p95:.1} ms |");
        }
    }
}

/// Query embedder stand-in: a deterministic random unit vector per text.
struct HashEmbedder;

#[async_trait]
impl Embedder for HashEmbedder {
    fn model_id(&self) -> &str {
        "hash"
    }
    fn dims(&self) -> usize {
        DIMS
    }
    fn limits(&self) -> BatchLimits {
        BatchLimits::texts_of(64, 100_000)
    }
    async fn embed(&self, texts: &[String], _: InputKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let seed = t.bytes().fold(0x9e37_79b9u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
                });
                vector(&mut Rng(seed | 1))
            })
            .collect())
    }
}
