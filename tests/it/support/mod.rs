//! Shared test harnesses.
#![allow(dead_code)]

pub mod app;
pub mod embedders;
pub mod git_servers;
pub mod load;
pub mod mock_http;
pub mod models;
pub mod need;
pub mod postgres;
pub mod process;
pub mod registry;
pub mod s3;
pub mod webdriver;

pub use need::{Registry, Unavailable};

/// Whether the suite runs under CI (`CI` set to anything but empty, `0` or `false`):
/// then a check that lacks a tool fails instead of skipping.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"))
}

/// What `needed` gives, or `None` after [`skip`]ping `check` for what it lacks (a test
/// then returns: `let Some(model) = available(minilm(), "…") else { return };`).
pub fn available<T>(needed: Result<T, Unavailable>, check: &str) -> Option<T> {
    needed.map_err(|why| skip(check, why)).ok()
}

/// Reports a check that could not run. A package registry that cannot be reached is the
/// one reason a check may skip anywhere: it prints a banner (written to the stderr handle
/// directly: the harness captures `eprintln!` of passing tests, and a skip must be seen)
/// and appends a line to the file named by `SEXTANT_SKIP_LOG`, which `.ci/run` counts
/// and prints as its last lines. A missing tool or privilege is a failure under `CI=true`
/// (the panic names what to install) and a banner elsewhere.
pub fn skip(check: &str, why: Unavailable) {
    use std::io::Write;
    if in_ci() && !why.may_skip_in_ci() {
        panic!(
            "{check} cannot run: {why}\nUnder CI=true a check that lacks a tool fails \
             instead of skipping (.ci/run installs what the suite needs on Debian)."
        );
    }
    let banner = format!(
        "\n==================== SKIPPED: {check} ====================\n{why}\n\
         This check did NOT run.\n\
         ==========================================================\n"
    );
    let _ = std::io::stderr().write_all(banner.as_bytes());
    if let Some(log) = std::env::var_os("SEXTANT_SKIP_LOG") {
        let line = format!("{check}: {}\n", why.to_string().replace('\n', " "));
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = appended {
            panic!("cannot record the skip of {check} in SEXTANT_SKIP_LOG: {e}");
        }
    }
}

/// Registers the directory `root` as `name` and syncs it now.
pub async fn index_path(
    indexer: &sextant::index::Indexer,
    root: &std::path::Path,
    name: &str,
    settings: sextant::store::RepoSettings,
) -> sextant::store::Repository {
    let repo = indexer
        .register_path(root, Some(name), settings)
        .await
        .unwrap();
    indexer
        .sync(&repo, &mut sextant::index::Progress::silent(&repo.id))
        .await
        .unwrap();
    repo
}

/// `GET base/metrics` as text, with `token` when given.
pub async fn metrics_text(http: &reqwest::Client, base: &str, token: Option<&str>) -> String {
    let request = http.get(format!("{base}/metrics"));
    let request = match token {
        Some(token) => request.bearer_auth(token),
        None => request,
    };
    request.send().await.unwrap().text().await.unwrap()
}

/// Writes `text` to `root/rel`, creating folders.
pub fn write(root: &std::path::Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A small TypeScript workspace at `ws`: `decode` in `src/jwt.ts`, and `validateToken`
/// in `src/auth.ts`, which calls it (the end-to-end tests' repository).
pub fn token_workspace(ws: &std::path::Path) {
    write(
        ws,
        "src/jwt.ts",
        "export function decode(token: string) {\n  return token.split('.').length;\n}\n",
    );
    write(
        ws,
        "src/auth.ts",
        "import { decode } from './jwt';\n\n/** Checks a bearer token before a request is served. */\nexport function validateToken(token: string): boolean {\n  return decode(token) === 3;\n}\n",
    );
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
    indexer_with(dir, meta_url, std::sync::Arc::new(embedders::BagOfWords)).await
}

/// [`bow_indexer_on`] embedding with `model` (of the bag of words' width).
pub async fn indexer_with(
    dir: &std::path::Path,
    meta_url: &str,
    model: std::sync::Arc<dyn sextant::embed::Embedder>,
) -> (
    std::sync::Arc<sextant::store::SqlMetaStore>,
    std::sync::Arc<sextant::store::LanceStore>,
    std::sync::Arc<sextant::index::Indexer>,
) {
    use embedders::BOW_DIMS;
    let meta = std::sync::Arc::new(sextant::store::SqlMetaStore::open(meta_url).await.unwrap());
    // As the application wires them: the chunk store reads rows' code from the grep index.
    let grep =
        std::sync::Arc::new(sextant::store::grep::GrepIndex::open(dir.join("grep")).unwrap());
    let vectors = std::sync::Arc::new(
        sextant::store::LanceStore::open(sextant::store::LanceStoreOptions::new(
            dir.join("lance").to_string_lossy(),
            BOW_DIMS,
        ))
        .await
        .unwrap()
        .with_sources(grep.clone()),
    );
    let indexer = sextant::index::Indexer::new(
        meta.clone(),
        vectors.clone(),
        model,
        sextant::index::IndexOptions {
            checkout_dir: dir.join("repos"),
            ..sextant::index::IndexOptions::default()
        },
    )
    .unwrap()
    .with_grep(grep);
    (meta, vectors, std::sync::Arc::new(indexer))
}

/// The paths of a repository's indexed files, sorted.
pub async fn indexed_paths(meta: &dyn sextant::store::MetaStore, repo_id: &str) -> Vec<String> {
    let mut paths: Vec<String> = meta
        .list_files(repo_id)
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.path)
        .collect();
    paths.sort();
    paths
}

/// A minute's claim on a job for `owner`.
pub fn lease(owner: &str) -> sextant::store::Lease {
    sextant::store::Lease {
        owner: owner.to_string(),
        ttl: std::time::Duration::from_secs(60),
    }
}

/// The text columns `columns` of every row of the chunk table under `data` (its `lance`
/// directory), as stored (not as the store reads them back): one `Vec` per row.
pub async fn stored_texts(data: &std::path::Path, columns: &[&str]) -> Vec<Vec<String>> {
    use futures::TryStreamExt;
    use lancedb::query::{ExecutableQuery, QueryBase};
    let db = lancedb::connect(&data.join("lance").to_string_lossy())
        .execute()
        .await
        .expect("connect");
    let table = db.open_table("chunks").execute().await.expect("table");
    let batches: Vec<arrow_array::RecordBatch> = table
        .query()
        .select(lancedb::query::Select::columns(columns))
        .execute()
        .await
        .expect("query")
        .try_collect()
        .await
        .expect("rows");
    let mut rows = Vec::new();
    for batch in &batches {
        let texts: Vec<arrow_array::StringArray> = (0..columns.len())
            .map(|i| {
                batch
                    .column(i)
                    .as_any()
                    .downcast_ref::<arrow_array::StringArray>()
                    .expect("text")
                    .clone()
            })
            .collect();
        for row in 0..batch.num_rows() {
            rows.push(texts.iter().map(|t| t.value(row).to_string()).collect());
        }
    }
    rows
}

/// Registers the workspace at `root` as `ws` with [`bow_indexer`] over `dir` and syncs it.
pub async fn bow_synced(
    dir: &std::path::Path,
    root: &std::path::Path,
) -> (
    std::sync::Arc<sextant::store::SqlMetaStore>,
    std::sync::Arc<sextant::store::LanceStore>,
    std::sync::Arc<sextant::index::Indexer>,
    sextant::store::Repository,
) {
    let (meta, vectors, indexer) = bow_indexer(dir).await;
    let repo = indexer
        .register_path(root, Some("ws"), Default::default())
        .await
        .unwrap();
    let mut progress = sextant::index::Progress::silent(&repo.id);
    indexer.sync(&repo, &mut progress).await.unwrap();
    (meta, vectors, indexer, repo)
}
