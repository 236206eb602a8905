//! `sextant serve` (REST, SSE and MCP over HTTP) and `sextant mcp` (MCP over stdio) over
//! one data directory, with the sync queue running in the background and watched working
//! trees re-synced on change.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;

use super::CliError;
use super::index::{fail, open_indexer_with, open_meta, runtime};
use crate::api::{AppState, router};
use crate::config::Config;
use crate::index::JobRunner;
use crate::search::Searcher;
use crate::store::{MetaStore, RepoSource};

/// Options of `sextant serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on. Loopback only for now: API tokens are not enforced yet, so
    /// the server refuses to listen where other machines could reach it.
    #[arg(long, default_value = "127.0.0.1:7878", env = "SEXTANT_BIND")]
    pub bind: SocketAddr,
    /// Syncs run at once.
    #[arg(long, default_value_t = 2)]
    pub max_syncs: usize,
}

/// Opens the stores and the model, resumes interrupted jobs, watches working trees with
/// `settings.watch` and starts the sync queue: everything `serve` and `mcp` share.
async fn start(
    config: &Config,
    max_syncs: usize,
) -> Result<(Arc<AppState>, Vec<crate::index::watch::Watch>), CliError> {
    let meta = open_meta(config).await?;
    let (indexer, embedder) = open_indexer_with(config, meta.clone()).await?;
    let indexer = Arc::new(indexer);
    let reranker = config.rerank.build()?;
    let searcher = Searcher::new(meta.clone(), indexer.vectors().clone(), embedder, reranker)
        .with_freshness(indexer.clone(), Duration::from_secs(2));
    let (events, _) = broadcast::channel(1024);
    let jobs = Arc::new(JobRunner::new(indexer.clone(), max_syncs, events.clone()));
    let resumed = jobs.resume().await.map_err(fail)?;
    if resumed > 0 {
        eprintln!("sextant: resuming {resumed} interrupted sync(s)");
    }
    let mut watches = Vec::new();
    for repo in meta.list_repositories().await.map_err(fail)? {
        if repo.settings.watch && matches!(repo.source, RepoSource::Path(_)) {
            match jobs.watch(&repo, Duration::from_millis(500)) {
                Ok(w) => watches.push(w),
                Err(e) => eprintln!("sextant: not watching `{}`: {e}", repo.name),
            }
        }
    }
    tokio::spawn(jobs.clone().run_forever(Duration::from_secs(30)));
    let state = Arc::new(AppState {
        indexer,
        searcher: Arc::new(searcher),
        jobs,
        events,
    });
    Ok((state, watches))
}

/// `sextant mcp`: the MCP tools over stdio for a local agent, on the same data directory
/// (the sync queue runs in the background as under `serve`). Logs go to stderr.
pub fn mcp(config: &Config) -> Result<(), CliError> {
    use rmcp::ServiceExt;
    runtime()?.block_on(async {
        let (state, watches) = start(config, 1).await?;
        let service = crate::mcp::SextantMcp::new(state)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(fail)?;
        service.waiting().await.map_err(fail)?;
        drop(watches);
        Ok(())
    })
}

/// Runs the server until Ctrl-C.
pub fn serve(args: ServeArgs, config: &Config) -> Result<(), CliError> {
    if !args.bind.ip().is_loopback() {
        return Err(CliError::Failed(format!(
            "refusing to listen on {}: API tokens are not enforced yet, so only loopback \
             addresses (127.0.0.1, ::1) are allowed; put a reverse proxy with its own \
             authentication in front to share the server",
            args.bind
        )));
    }
    runtime()?.block_on(async {
        let (state, watches) = start(config, args.max_syncs).await?;
        let app = router(state);
        let listener = tokio::net::TcpListener::bind(args.bind)
            .await
            .map_err(|e| CliError::Failed(format!("cannot listen on {}: {e}", args.bind)))?;
        let local = listener.local_addr().map_err(fail)?;
        eprintln!(
            "sextant: serving on http://{local} (data in {}); try GET /api/v1/repositories",
            config.data_dir.display()
        );
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
            .map_err(fail)?;
        drop(watches);
        Ok(())
    })
}
