//! Shared test harnesses.
#![allow(dead_code)]

pub mod app;
pub mod embedders;
pub mod load;
pub mod mock_http;
pub mod models;
pub mod postgres;
pub mod process;
pub mod registry;

/// Prints a banner for a check that could not run (written to the stderr handle directly:
/// the harness captures `eprintln!` of passing tests, and a skip must be seen).
pub fn skip(what: &str, why: &str) {
    use std::io::Write;
    let banner = format!(
        "\n==================== SKIPPED: {what} ====================\n{why}\n\
         This check did NOT run.\n\
         ==========================================================\n"
    );
    let _ = std::io::stderr().write_all(banner.as_bytes());
}

/// Writes `text` to `root/rel`, creating folders.
pub fn write(root: &std::path::Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A SQLite metadata store and a LanceDB chunk store (`dims`-wide) in `dir`.
pub async fn stores(
    dir: &std::path::Path,
    dims: usize,
) -> (
    std::sync::Arc<sextant::store::SqlMetaStore>,
    std::sync::Arc<sextant::store::LanceStore>,
) {
    use sextant::store::{LanceStore, LanceStoreOptions, SqlMetaStore};
    let meta = SqlMetaStore::open(&dir.join("db.sqlite").to_string_lossy())
        .await
        .unwrap();
    let vectors = LanceStore::open(LanceStoreOptions::new(
        dir.join("lance").to_string_lossy(),
        dims,
    ))
    .await
    .unwrap();
    (std::sync::Arc::new(meta), std::sync::Arc::new(vectors))
}

/// Stores in `dir` and an indexer over them with the bag-of-words embedder and default
/// options: the deterministic world of the search and server tests.
pub async fn bow_indexer(
    dir: &std::path::Path,
) -> (
    std::sync::Arc<sextant::store::SqlMetaStore>,
    std::sync::Arc<sextant::store::LanceStore>,
    std::sync::Arc<sextant::index::Indexer>,
) {
    bow_indexer_on(dir, &dir.join("db.sqlite").to_string_lossy()).await
}

/// [`bow_indexer`] with the metadata store at `meta_url`.
pub async fn bow_indexer_on(
    dir: &std::path::Path,
    meta_url: &str,
) -> (
    std::sync::Arc<sextant::store::SqlMetaStore>,
    std::sync::Arc<sextant::store::LanceStore>,
    std::sync::Arc<sextant::index::Indexer>,
) {
    use embedders::{BOW_DIMS, BagOfWords};
    let meta = std::sync::Arc::new(sextant::store::SqlMetaStore::open(meta_url).await.unwrap());
    let vectors = std::sync::Arc::new(
        sextant::store::LanceStore::open(sextant::store::LanceStoreOptions::new(
            dir.join("lance").to_string_lossy(),
            BOW_DIMS,
        ))
        .await
        .unwrap(),
    );
    let indexer = sextant::index::Indexer::new(
        meta.clone(),
        vectors.clone(),
        std::sync::Arc::new(BagOfWords),
        sextant::index::IndexOptions::default(),
    )
    .unwrap();
    (meta, vectors, std::sync::Arc::new(indexer))
}
