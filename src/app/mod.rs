//! The application's wiring: from the [`Config`] to the opened stores, the indexer and
//! one [`Service`]. `serve`, `mcp` (stdio) and the CLI's local commands build what they
//! need here, so each adapter only translates its protocol into service calls.
//!
//! # Design notes: replicas without a shared disk
//!
//! Replicas that share no disk put the chunk store on object storage (`--lance-uri
//! s3://bucket/prefix`, the standard `AWS_*` settings, `AWS_ENDPOINT` for an
//! S3-compatible store; LanceDB's `aws` feature is the one object-store feature built).
//! The grep index is then mirrored beside it under `<lance-uri>/grep/`
//! (`store::grep::mirror`): each replica's directory is a cache; the lease holder pulls
//! the published copy before it writes and publishes each commit (segments, then the
//! manifest, then what merges removed) before its own manifest changes; readers look at
//! the remote manifest's tag at most once a second. LanceDB's reads of data and index
//! files (immutable: every write and compaction makes new ones) go through
//! `store::block_cache`, a bounded in-memory cache of 256 KB blocks wrapped around its
//! object store (`--lance-cache-mb`, 256 by default), so a search reads S3 only for
//! blocks no earlier search read; manifests and listings always go to the store.
//! Object-store failures are "unavailable" (`StoreError::is_unavailable`: a 503 that
//! names the store and the `AWS_*` settings to check, a sync re-queued with back-off).
//! MCP is served without sessions (`--mcp-stateless`, rmcp's stateless mode) so any
//! replica answers any request; clients of MCP 2026-07-28 and later are served so
//! anyway. The Helm chart sets all of this when it runs more than one pod;
//! docker/compose.replicas.yaml is the same on one machine.

pub mod cache;
pub mod checkup;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::broadcast;

use crate::config::Config;
use crate::embed::{CachedEmbedder, EmbedError, Embedder, Reranker};
use crate::index::{FormatChange, IndexOptions, Indexer, JobRunner, ModelChange};
use crate::search::Searcher;
use crate::service::Service;
use crate::store::grep::{GrepIndex, GrepMirror};
use crate::store::{Enqueued, LanceStore, LanceStoreOptions, SqlMetaStore};

/// Why the application could not be put together; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// A store, the runtime or a startup step failed.
    #[error("{0}")]
    Failed(String),
    /// The embedding model, reranker or Scout's model could not be built.
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

fn failed(e: impl std::fmt::Display) -> AppError {
    AppError::Failed(e.to_string())
}

/// glibc malloc arenas a process keeps at the most, unless `MALLOC_ARENA_MAX` says.
pub const MALLOC_ARENAS: i32 = 2;

/// Caps glibc's malloc arenas at [`MALLOC_ARENAS`] (unless the `MALLOC_ARENA_MAX`
/// environment variable sets them). glibc gives a thread that contends for the allocator
/// an arena of its own, up to eight per core, and each arena keeps what was freed in it:
/// with tokio's, the blocking pool's and LanceDB's threads, a 1M-line index peaked at
/// 1.33 GB of RSS, and at 0.82 GB with four arenas (8% slower; docs/BENCHMARKS.md); two
/// took another ~60 MB off its peak and ~100 MB off what it held after, in the same time.
/// Call first thing in `main`, before any thread starts.
pub fn cap_allocator_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: sets one allocator tunable, before any other thread exists.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, MALLOC_ARENAS);
        }
    }
}

/// The multi-threaded async runtime every command runs on.
pub fn runtime() -> Result<tokio::runtime::Runtime, AppError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| AppError::Failed(format!("cannot start the async runtime: {e}")))
}

/// Opens the metadata database the configuration names.
pub async fn open_meta(config: &Config) -> Result<Arc<SqlMetaStore>, AppError> {
    let url = config.database_url();
    Ok(Arc::new(SqlMetaStore::open(&url).await.map_err(|e| {
        AppError::Failed(format!(
            "the metadata database at {url} cannot be used: {e}\n\
             It holds the registered repositories, jobs and tokens. If the file is damaged, \
             restore it from a backup, or move it aside and register the repositories again \
             (`sextant index PATH`); `sextant doctor --repair` then re-checks the chunk store."
        ))
    })?))
}

/// Opens the configured chunk store for `dims`-wide vectors; the error names the store
/// and what to do.
pub async fn open_vectors(config: &Config, dims: usize) -> Result<LanceStore, AppError> {
    let uri = &config.lance_uri();
    LanceStore::open(lance_options(config, dims))
        .await
        .map_err(|e| {
            let what_to_do = if e.is_unavailable() {
                // Nothing to rebuild: the store is fine, it is out of reach.
                "Nothing was changed; start again once it answers."
            } else if uri.contains("://") {
                "A store on object storage is not moved aside by `sextant doctor --repair`: \
                 remove its prefix (or name another with SEXTANT_LANCE_URI) and every file is \
                 indexed again by the next sync (the registry, tokens and embedding cache are kept)."
            } else {
                "`sextant doctor --repair` moves it aside and has every file indexed again by \
                 the next sync (the registry, tokens and embedding cache are kept)."
            };
            AppError::Failed(format!(
                "the chunk store at {uri} cannot be opened: {e}\n{what_to_do}"
            ))
        })
}

/// The chunk store's options under `config`.
pub fn lance_options(config: &Config, dims: usize) -> LanceStoreOptions {
    LanceStoreOptions {
        block_cache_bytes: config.lance_cache_mb.saturating_mul(1 << 20),
        index_cache_bytes: usize::try_from(config.lance_index_cache_mb.saturating_mul(1 << 20))
            .unwrap_or(usize::MAX),
        held_bytes: usize::try_from(config.search_memory_mb.saturating_mul(1 << 20))
            .unwrap_or(usize::MAX),
        ..LanceStoreOptions::new(config.lance_uri(), dims)
    }
}

/// Opens the grep index (under `<data-dir>/grep` by default).
pub fn open_grep(config: &Config) -> Result<GrepIndex, AppError> {
    let dir = config.grep_dir();
    let index = GrepIndex::open(&dir).map_err(|e| {
        AppError::Failed(format!(
            "the grep index at {} cannot be used: {e}\nIt is rebuilt from the indexed files: \
             move it aside and the next sync of each repository writes it again.",
            dir.display()
        ))
    })?;
    match config.grep_mirror() {
        Some(uri) => {
            let mirror = GrepMirror::open(&uri, crate::store::DEFAULT_READ_CONSISTENCY)
                .map_err(|e| AppError::Failed(e.to_string()))?;
            Ok(index.with_mirror(mirror))
        }
        None => Ok(index),
    }
}

/// Removes the chunk store when it holds vectors of another width than the configured
/// model makes (a change of model): its rows are written again by the next syncs, which
/// [`Indexer::adopt_model`] arranges.
pub async fn rebuild_if_width_changed(uri: &str, dims: usize) -> Result<(), AppError> {
    let options = LanceStoreOptions::new(uri, dims);
    match LanceStore::width(&options).await.map_err(failed)? {
        Some(width) if width != dims => {
            crate::telemetry::notice(&format!(
                "the chunk store holds {width}-dimensional vectors and the configured model \
                 makes {dims}-dimensional ones: rebuilding it (every repository is indexed \
                 again; the registry, tokens and embedding cache are kept)"
            ));
            LanceStore::destroy(&options).await.map_err(failed)
        }
        _ => Ok(()),
    }
}

/// The indexer with what queries need beside it.
pub struct Opened {
    /// The indexer over the metadata store, the chunk store and the cached embedder.
    pub indexer: Indexer,
    /// The bare embedder, for queries.
    pub embedder: Arc<dyn Embedder>,
    /// The embedding cache in front of the embedder, for its counters.
    pub cache: Arc<CachedEmbedder>,
}

/// Opens the indexer over `meta`, the configured embedder (behind the SQL embedding cache)
/// and the LanceDB store.
pub async fn open_indexer(config: &Config, meta: Arc<SqlMetaStore>) -> Result<Opened, AppError> {
    let (embedder, cache) = open_embedder(config, meta.clone()).await?;
    rebuild_if_width_changed(&config.lance_uri(), embedder.dims()).await?;
    let vectors = open_vectors(config, embedder.dims()).await?;
    let indexer = indexer_over(config, meta, vectors, cache.clone()).await?;
    Ok(Opened {
        indexer,
        embedder,
        cache,
    })
}

/// The configured embedder, bare and behind the SQL embedding cache.
pub async fn open_embedder(
    config: &Config,
    meta: Arc<SqlMetaStore>,
) -> Result<(Arc<dyn Embedder>, Arc<CachedEmbedder>), AppError> {
    let embedder = config
        .embed
        .build(&config.data_dir, |line| eprintln!("sextant: {line}"))
        .await?;
    let cached = Arc::new(CachedEmbedder::new(embedder.clone(), meta));
    Ok((embedder, cached))
}

/// The configured reranker (`None` when off); a local cross-encoder is loaded (and
/// fetched on first use) off the async threads.
pub async fn build_reranker(config: &Config) -> Result<Option<Arc<dyn Reranker>>, AppError> {
    let (rerank, home, fetch) = (
        config.rerank.clone(),
        config.embed.home(&config.data_dir).to_path_buf(),
        config.embed.auto_fetch,
    );
    Ok(
        tokio::task::spawn_blocking(move || rerank.build(&home, fetch))
            .await
            .map_err(failed)??,
    )
}

/// The indexer over opened stores and the grep index, after moving credentials out of
/// old stored URLs and checking that the chunk store's vectors come from the configured
/// model. The chunk store reads rows' code from the grep index, which holds the files.
pub async fn indexer_over(
    config: &Config,
    meta: Arc<SqlMetaStore>,
    vectors: LanceStore,
    embedder: Arc<CachedEmbedder>,
) -> Result<Indexer, AppError> {
    let grep = Arc::new(open_grep(config)?);
    let vectors = Arc::new(vectors.with_sources(grep.clone()));
    let indexer = Indexer::new(
        meta,
        vectors,
        embedder,
        IndexOptions {
            parse: config.parse.clone(),
            chunk: config.chunk.clone(),
            batch_files: config.batch_files,
            allowed_roots: config.allowed_roots.clone(),
            checkout_dir: config.data_dir.join("repos"),
            git: config.git.clone(),
            ..IndexOptions::default()
        },
    )
    .map_err(failed)?
    .with_grep(grep);
    let moved = indexer.move_stored_credentials().await.map_err(failed)?;
    if moved > 0 {
        crate::telemetry::notice(&format!(
            "moved the credentials of {moved} git source(s) out of their stored URL (they are \
             kept apart and offered only to the fetch)"
        ));
    }
    if let FormatChange::Changed { files, .. } = indexer.adopt_format().await.map_err(failed)? {
        crate::telemetry::notice(&format!(
            "this version of Sextant parses and chunks files differently from the one that \
             built the index: the next sync of each repository reads its files again \
             ({files} in all; search works meanwhile, on the older chunks)"
        ));
    }
    match indexer.adopt_model().await.map_err(failed)? {
        ModelChange::Changed { from } => crate::telemetry::notice(&format!(
            "the index was built with the embedding model `{from}`; `{}` is configured now: \
             every repository is re-embedded by its next sync (text search works meanwhile; \
             vectors of a model used before come from the embedding cache)",
            config.embed.describe()
        )),
        ModelChange::First | ModelChange::Unchanged => {}
    }
    Ok(indexer)
}

/// What runs beside a service [`start`] builds.
#[derive(Debug, Clone, Copy)]
pub enum Background {
    /// Nothing: a one-shot local command reads the index and never syncs (beyond the
    /// freshness check before a search).
    None,
    /// No syncs in the background, but change journals of working trees, as a server
    /// keeps them: a command that answers many searches (`eval`) and should answer them
    /// as a server would.
    Queries,
    /// The sync queue (`max_syncs` at once, each abandoned after `deadline`), resumed
    /// and unfinished syncs, and watched working trees (`serve`, `mcp`).
    Syncs {
        /// Syncs run at once.
        max_syncs: usize,
        /// A sync's deadline.
        deadline: Duration,
        /// How long a claim on a job lasts without a renewal (processes sharing a
        /// PostgreSQL database take over each other's jobs after it).
        lease: Duration,
    },
}

/// A started service.
pub struct Started {
    /// The service.
    pub service: Arc<Service>,
}

/// Opens the stores and the models and builds the one [`Service`] of this process;
/// with [`Background::Syncs`], resumes interrupted jobs, queues syncs for rows still
/// without vectors, watches working trees with `settings.watch` and runs the queue.
/// `configure` adds what only one adapter needs (the server's metrics).
pub async fn start(
    config: &Config,
    background: Background,
    configure: impl FnOnce(Service) -> Service,
) -> Result<Started, AppError> {
    let meta = open_meta(config).await?;
    let opened = open_indexer(config, meta.clone()).await?;
    // A process that lives on keeps change journals of its working trees: searches
    // after which nothing changed skip the walk of the freshness check.
    let indexer = Arc::new(match background {
        Background::None => opened.indexer,
        Background::Queries | Background::Syncs { .. } => opened.indexer.with_journals(),
    });
    let reranker = build_reranker(config).await?;
    let searcher = Searcher::new(
        meta.clone(),
        indexer.vectors().clone(),
        opened.embedder,
        reranker,
    )
    .with_freshness(indexer.clone(), Duration::from_secs(2));
    let (events, _) = broadcast::channel(1024);
    let (max_syncs, deadline, lease) = match background {
        Background::None | Background::Queries => (
            1,
            crate::index::jobs::DEFAULT_JOB_DEADLINE,
            crate::index::jobs::DEFAULT_LEASE,
        ),
        Background::Syncs {
            max_syncs,
            deadline,
            lease,
        } => (max_syncs, deadline, lease),
    };
    let jobs = Arc::new(
        JobRunner::new(indexer.clone(), max_syncs, events.clone())
            .with_deadline(deadline)
            .with_lease(crate::index::jobs::process_name(), lease),
    );
    if let Background::Syncs { .. } = background {
        let resumed = jobs.resume().await.map_err(failed)?;
        if resumed > 0 {
            crate::telemetry::notice(&format!("resuming {resumed} interrupted sync(s)"));
        }
        // Rows still without vectors (an interrupted embedding stage, a change of model):
        // a sync of their repository embeds them, with progress, while text search answers.
        for repo in indexer.repos_to_complete().await.map_err(failed)? {
            let queued = jobs
                .enqueue_sync_unless_active(&repo.id)
                .await
                .map_err(failed)?;
            if let Enqueued::Queued(_) = queued {
                crate::telemetry::notice(&format!(
                    "embedding the rest of `{}` (sync queued)",
                    repo.name
                ));
            }
        }
        indexer.resync_queued().await.map_err(failed)?;
        // The queue also watches the working trees whose settings ask for it.
        tokio::spawn(jobs.clone().run_forever(Duration::from_secs(30)));
        // Syncs that other processes on the same database run show in this one's events
        // (a SQLite database has one process running jobs: nothing to relay).
        if crate::store::MetaStore::shared(meta.as_ref()) {
            tokio::spawn(crate::index::jobs::relay_progress(
                meta.clone(),
                jobs.owner().to_string(),
                events.clone(),
                Duration::from_secs(1),
            ));
        }
    }
    let mut service = Service::new(indexer, Arc::new(searcher), jobs, events)
        .with_embed_cache(opened.cache)
        .with_scout_rule(config.scout_rule);
    if let Some(chat) = config.scout_model.build()? {
        service = service.with_scout_model(chat);
    }
    Ok(Started {
        service: Arc::new(configure(service)),
    })
}
