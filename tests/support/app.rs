//! A running HTTP server (REST, SSE, MCP) over real stores in a temp dir, with the
//! bag-of-words embedder and a two-file workspace (`src/jwt.ts` defines `decode`,
//! `src/auth.ts` calls it from `validateToken`).

use std::sync::Arc;
use std::time::Duration;

use sextant::api::{AppState, router};
use sextant::index::{IndexOptions, Indexer, JobRunner};
use sextant::search::Searcher;

use super::embedders::{BOW_DIMS, BagOfWords};
use super::write;

/// A server on a loopback port.
pub struct TestServer {
    /// Keeps the stores and the workspace alive.
    pub tmp: tempfile::TempDir,
    /// The workspace (not registered yet).
    pub root: std::path::PathBuf,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The indexer behind the server.
    pub indexer: Arc<Indexer>,
}

/// Starts a server; `run_jobs` starts the sync queue (without it, queued jobs stay queued).
pub async fn start(run_jobs: bool) -> TestServer {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("ws");
    write(
        &root,
        "src/jwt.ts",
        "export function decode(token: string) {\n  return token.length;\n}\n",
    );
    write(
        &root,
        "src/auth.ts",
        "import { decode } from './jwt';\n\nexport function validateToken(token: string): boolean {\n  return decode(token) > 10;\n}\n",
    );
    let (meta, vectors) = super::stores(tmp.path(), BOW_DIMS).await;
    let indexer = Arc::new(
        Indexer::new(
            meta.clone(),
            vectors.clone(),
            Arc::new(BagOfWords),
            IndexOptions::default(),
        )
        .unwrap(),
    );
    let searcher = Searcher::new(meta, vectors, Arc::new(BagOfWords), None);
    let (events, _) = tokio::sync::broadcast::channel(256);
    let jobs = Arc::new(JobRunner::new(indexer.clone(), 1, events.clone()));
    if run_jobs {
        tokio::spawn(jobs.clone().run_forever(Duration::from_millis(50)));
    }
    let app = router(Arc::new(AppState {
        indexer: indexer.clone(),
        searcher: Arc::new(searcher),
        jobs,
        events,
    }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    TestServer {
        tmp,
        root,
        base,
        indexer,
    }
}
