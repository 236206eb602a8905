//! Indexing throughput: a real corpus indexed cold, then one file changed and the time
//! until its new content is searchable. Prints LOC/s, chunks/s and peak RSS.
//!
//! `cargo bench --profile dev --bench index` (a release build of LanceDB takes ~45 min
//! here). Corpus: the rxjs eval corpus cached by the corpora test, copied to a temp dir;
//! `SEXTANT_BENCH_CORPUS` points elsewhere. Embedder: the static model (its own time is
//! reported by `benches/embed.rs`), wrapped in the SQL cache as `sextant index` does.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

const DEFAULT_MODEL_NAME: &str = "all-minilm-l6-v2";
use sextant::embed::{CachedEmbedder, EmbedConfig, EmbedProvider, Embedder, embed_query};
use sextant::index::{IndexOptions, Indexer, Progress};
use sextant::store::{
    ChunkFilter, LanceStore, LanceStoreOptions, RepoSettings, SqlMetaStore, VectorStore,
};

fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    for entry in std::fs::read_dir(from).expect("read corpus") {
        let entry = entry.expect("entry");
        let dest = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            std::fs::create_dir_all(&dest).expect("mkdir");
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), &dest).expect("copy");
        }
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return;
    }
    let home = std::env::var_os("HOME").map_or_else(std::env::temp_dir, PathBuf::from);
    let corpus = std::env::var_os("SEXTANT_BENCH_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| home.join(".cache/sextant/corpora/eval-corpus/rxjs"));
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("corpus");
    std::fs::create_dir_all(&root).expect("mkdir");
    copy_dir(&corpus, &root);

    let models = home.join(".cache/sextant/models");
    let config = EmbedConfig {
        provider: EmbedProvider::Static,
        model_dir: Some(models.join(DEFAULT_MODEL_NAME)),
        static_model_dir: Some(models.join(format!("{DEFAULT_MODEL_NAME}-static"))),
        ..EmbedConfig::default()
    };
    let embedder = config
        .build(tmp.path(), |l| eprintln!("{l}"))
        .await
        .expect("static model (run the local_models test first)");
    let meta = Arc::new(
        SqlMetaStore::open_in(&tmp.path().join("data"))
            .await
            .expect("meta"),
    );
    let dims = embedder.dims();
    let cached: Arc<dyn Embedder> = Arc::new(CachedEmbedder::new(embedder, meta.clone()));
    let vectors = Arc::new(
        LanceStore::open(LanceStoreOptions::new(
            tmp.path().join("data/lance").to_string_lossy(),
            dims,
        ))
        .await
        .expect("lance"),
    );
    let indexer = Indexer::new(
        meta,
        vectors.clone(),
        cached.clone(),
        IndexOptions::default(),
    )
    .expect("indexer");
    let repo = indexer
        .register_path(&root, Some("bench"), RepoSettings::default())
        .await
        .expect("register");

    let t = Instant::now();
    let cold = indexer
        .sync(&repo, &mut Progress::silent(&repo.id))
        .await
        .expect("cold sync");
    let secs = t.elapsed().as_secs_f64();
    println!("corpus: {} ({} files)", corpus.display(), cold.scanned);
    println!(
        "| run | files indexed | chunks | lines | wall | LOC/s | chunks/s |\n|---|---|---|---|---|---|---|"
    );
    println!(
        "| cold | {} | {} | {} | {:.2} s | {:.0} | {:.0} |",
        cold.indexed,
        cold.chunks,
        cold.lines,
        secs,
        cold.lines as f64 / secs,
        cold.chunks as f64 / secs
    );
    let t = Instant::now();
    let again = indexer
        .sync(&repo, &mut Progress::silent(&repo.id))
        .await
        .expect("no-op sync");
    println!(
        "| no change | {} | {} | {} | {:.3} s | | |",
        again.indexed,
        again.chunks,
        again.lines,
        t.elapsed().as_secs_f64()
    );

    // One-file change → searchable.
    let target = root.join(ignore_first_ts(&root).expect("a TypeScript file in the corpus"));
    let marker = "quantumEntangledFluxCapacitorCalibration";
    let mut text = std::fs::read_to_string(&target).expect("read");
    text.push_str(&format!(
        "\nexport function {marker}(level: number) {{ return level * 2; }}\n"
    ));
    let t = Instant::now();
    std::fs::write(&target, text).expect("write");
    let one = indexer
        .sync(&repo, &mut Progress::silent(&repo.id))
        .await
        .expect("one-file sync");
    let q = embed_query(
        cached.as_ref(),
        "quantum entangled flux capacitor calibration",
    )
    .await
    .expect("query");
    let hits = vectors
        .text_search(marker, 5, &ChunkFilter::default())
        .await
        .expect("search");
    let vhits = vectors
        .vector_search(&q, 5, &ChunkFilter::default())
        .await
        .expect("search");
    let found = hits
        .iter()
        .chain(&vhits)
        .any(|h| h.row.chunk.name == marker);
    println!(
        "| one file changed → searchable | {} | {} | {} | {:.3} s | | |",
        one.indexed,
        one.chunks,
        one.lines,
        t.elapsed().as_secs_f64()
    );
    assert!(found, "the new function is found by search");

    // A widely imported file changes: its importers' graph edges are re-resolved.
    let core = root.join("src/internal/Observable.ts");
    if let Ok(mut text) = std::fs::read_to_string(&core) {
        text.push_str("\nexport function coreMarker() { return 1; }\n");
        let t = Instant::now();
        std::fs::write(&core, text).expect("write");
        let hub = indexer
            .sync(&repo, &mut Progress::silent(&repo.id))
            .await
            .expect("hub-file sync");
        println!(
            "| widely imported file changed (graph edges re-resolved: {}) | {} | {} | {} | {:.3} s | | |",
            hub.graph_edges,
            hub.indexed,
            hub.chunks,
            hub.lines,
            t.elapsed().as_secs_f64()
        );
    }
    println!("peak RSS: {:.0} MiB", peak_rss_mib());
}

fn ignore_first_ts(root: &std::path::Path) -> Option<PathBuf> {
    sextant::cli::source_files(root)
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "ts"))
        .and_then(|p| p.strip_prefix(root).ok().map(PathBuf::from))
}
