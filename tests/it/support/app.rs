//! A running HTTP server (REST, SSE, MCP) over real stores in a temp dir, with the
//! bag-of-words embedder and a two-file workspace (`src/jwt.ts` defines `decode`,
//! `src/auth.ts` calls it from `validateToken`).

use std::sync::Arc;
use std::time::Duration;

use sextant::index::{Indexer, JobRunner};
use sextant::search::Searcher;
use sextant::server::{AuthPolicy, HttpOptions, ServerState, router};
use sextant::service::Service;
use sextant::store::ApiToken;

use super::embedders::BagOfWords;
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
    /// The server's state (the service with its search slots, metrics, …).
    pub state: Arc<ServerState>,
}

impl TestServer {
    /// Registers the directory `root` as `name` and indexes it now (without the job
    /// runner).
    pub async fn index(&self, root: &std::path::Path, name: &str) -> sextant::store::Repository {
        super::index_path(&self.indexer, root, name, Default::default()).await
    }

    /// Stores a live token and returns its secret.
    pub async fn token(&self, scope: &str, repos: &[&str]) -> String {
        let secret = sextant::auth::new_secret();
        let meta = self.indexer.meta();
        let mut ids = Vec::new();
        for r in repos {
            ids.push(self.indexer.find_repo(r).await.unwrap().id);
        }
        meta.create_token(&ApiToken {
            id: uuid_like(&secret),
            name: format!("{scope} test token"),
            token_hash: sextant::auth::hash_secret(&secret),
            scope: scope.parse().expect("`read` or `admin`"),
            repositories: ids,
            created_at: 0,
            revoked_at: None,
        })
        .await
        .unwrap();
        secret
    }
}

fn uuid_like(secret: &str) -> String {
    secret[secret.len() - 12..].to_string()
}

/// How a test server is set up beyond its HTTP options: the service's settings (search
/// defaults, slots) and the server's (authentication, session limits).
pub struct Setup {
    /// The indexer's model (default: the bag of words, which also embeds the queries).
    pub index_model: Option<Arc<dyn sextant::embed::Embedder>>,
    /// Applied to the service before it is shared.
    pub service: Box<dyn FnOnce(Service) -> Service + Send>,
    /// Applied to the server's state.
    pub server: Box<dyn FnOnce(ServerState) -> ServerState + Send>,
}

impl Default for Setup {
    fn default() -> Self {
        Self {
            index_model: None,
            service: Box::new(|s| s),
            server: Box::new(|s| s),
        }
    }
}

impl Setup {
    /// The service set up by `f`.
    pub fn service(f: impl FnOnce(Service) -> Service + Send + 'static) -> Self {
        Self {
            service: Box::new(f),
            ..Self::default()
        }
    }

    /// The server set up by `f`.
    pub fn server(f: impl FnOnce(ServerState) -> ServerState + Send + 'static) -> Self {
        Self {
            server: Box::new(f),
            ..Self::default()
        }
    }
}

/// Starts a server without authentication; `run_jobs` starts the sync queue (without it,
/// queued jobs stay queued).
pub async fn start(run_jobs: bool) -> TestServer {
    start_with(run_jobs, HttpOptions::default(), Setup::default()).await
}

/// Starts a server requiring tokens.
pub async fn start_with_tokens(run_jobs: bool) -> TestServer {
    start_with(
        run_jobs,
        HttpOptions::default(),
        Setup::server(|s| s.with_auth(AuthPolicy::Tokens)),
    )
    .await
}

/// Starts a server with these HTTP options and settings.
pub async fn start_with(run_jobs: bool, http: HttpOptions, setup: Setup) -> TestServer {
    start_on(None, run_jobs, http, setup).await
}

/// Starts a server whose metadata store is at `meta_url` (e.g. a Postgres database), or
/// SQLite in the temp dir when `None`.
pub async fn start_on(
    meta_url: Option<&str>,
    run_jobs: bool,
    http: HttpOptions,
    setup: Setup,
) -> TestServer {
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
    let sqlite = tmp.path().join("db.sqlite").to_string_lossy().into_owned();
    let model = setup
        .index_model
        .clone()
        .unwrap_or_else(|| Arc::new(BagOfWords));
    let (meta, vectors, indexer) =
        super::indexer_with(tmp.path(), meta_url.unwrap_or(&sqlite), model).await;
    let searcher = Searcher::new(meta, vectors, Arc::new(BagOfWords), None);
    let (events, _) = tokio::sync::broadcast::channel(256);
    let jobs = Arc::new(JobRunner::new(indexer.clone(), 1, events.clone()));
    if run_jobs {
        tokio::spawn(jobs.clone().run_forever(Duration::from_millis(50)));
    }
    let service = (setup.service)(Service::new(
        indexer.clone(),
        Arc::new(searcher),
        jobs,
        events,
    ));
    let state = Arc::new((setup.server)(ServerState::new(Arc::new(service))));
    let app = router(state.clone(), &http);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let limits = sextant::server::ConnectionLimits {
        header_read_timeout: Duration::from_secs(5),
        max_connections: 64,
        ..Default::default()
    };
    tokio::spawn(sextant::server::serve(
        listener,
        app,
        limits,
        std::future::pending(),
    ));
    TestServer {
        tmp,
        root,
        base,
        indexer,
        state,
    }
}
