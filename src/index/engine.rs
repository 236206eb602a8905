//! The sync engine: registers repositories and brings their stored chunks, symbols,
//! vectors and file records in line with their files, doing only the work that changed
//! content requires.
//!
//! Order of writes per batch of files: chunk rows (with vectors) first, in one LanceDB
//! commit; then each file's symbols and file record (with the new content hash) in one SQL
//! transaction. A crash between the two leaves the old hash in SQL, so the next sync
//! redoes that file and converges to what a clean build produces.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use sha2::{Digest, Sha256};
use tracing::Instrument;

use super::IndexError;
use super::fetch_proxy::DeadlineProxy;
use super::progress::{Phase, Progress};
use super::scan::{FileFilter, ScannedFile, read_scanned, scan_tree};
use super::source::{GitLocation, GitTransport, restricted_address};
use crate::chunk::{ChunkOptions, CodeChunk, chunk_file, outline_chunk};
use crate::embed::{Embedder, InputKind};
use crate::graph::FileFacts;
use crate::parse::{ParseLimits, SymbolKind, parse_bytes};
use crate::store::{
    ChunkRow, FileRecord, MetaStore, NewRepository, RepoSettings, RepoSource, RepoStatus,
    Repository, SymbolRecord, VectorStore, now_ms,
};

/// Files a sync writes per commit unless configured (`--batch-files`).
pub const DEFAULT_BATCH_FILES: usize = 256;

/// Engine settings.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexOptions {
    /// Files per write batch (one LanceDB commit each).
    pub batch_files: usize,
    /// Texts per embedding call between progress reports.
    pub embed_slice: usize,
    /// Files changed by one sync at or above which the sync ends with store maintenance
    /// (index refresh), default 32.
    pub maintain_after_files: usize,
    /// Parser limits.
    pub parse: ParseLimits,
    /// Chunker settings.
    pub chunk: ChunkOptions,
    /// Local paths may be registered only under these roots (empty: anywhere).
    pub allowed_roots: Vec<PathBuf>,
    /// Where bare mirrors of git repositories are kept (`<data-dir>/repos`).
    pub checkout_dir: PathBuf,
    /// Which git sources may be registered and fetched.
    pub git: GitPolicy,
}

/// Which git sources a server accepts. The defaults suit a shared server: encrypted
/// transports only, and no host on the server's own network (a registration must not
/// become a way to probe it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct GitPolicy {
    /// Accept `http://` and `git://` sources (unencrypted; `git://` also unauthenticated).
    pub allow_insecure: bool,
    /// Accept hosts that are, or resolve to, loopback, private, link-local or other
    /// non-public addresses.
    pub allow_private_hosts: bool,
    /// Longest one fetch may take; the transfer is abandoned after.
    pub fetch_deadline: Duration,
}

impl Default for GitPolicy {
    fn default() -> Self {
        Self {
            allow_insecure: false,
            allow_private_hosts: false,
            fetch_deadline: Duration::from_secs(600),
        }
    }
}

impl Default for IndexOptions {
    fn default() -> Self {
        Self {
            batch_files: DEFAULT_BATCH_FILES,
            embed_slice: 256,
            maintain_after_files: 32,
            parse: ParseLimits::default(),
            chunk: ChunkOptions::default(),
            allowed_roots: Vec::new(),
            checkout_dir: PathBuf::from(".sextant/repos"),
            git: GitPolicy::default(),
        }
    }
}

/// The fail point after a sync's batch is committed in both stores.
const SYNC_AFTER_BATCH: &str = "sync-after-batch";

/// Whether the environment variable `SEXTANT_FAILPOINT` names the fail point `name`
/// (read once per process). The crash tests set `SEXTANT_FAILPOINT=sync-after-batch` to
/// park a sync, on an await that never ends (no runtime worker is blocked), once its
/// first batch is committed, so their kill always lands mid-sync. Written here rather
/// than taken from the `fail` crate: its `rand 0.8` turns on `getrandom 0.2`'s `std`
/// feature, which rebuilds LanceDB's whole dependency tree.
fn fail_point(name: &str) -> bool {
    static NAMED: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    NAMED
        .get_or_init(|| std::env::var("SEXTANT_FAILPOINT").ok())
        .as_deref()
        == Some(name)
}

/// `path` made absolute and its `.` and `..` folded without touching the file system
/// (for a path that does not exist, so that it can still be judged against the roots).
fn lexically_absolute(path: &Path) -> PathBuf {
    use std::path::Component;
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for part in absolute.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The setting that records which model the stored vectors come from.
const MODEL_KEY: &str = "embedding_model";
/// Set (durably) by a change of model until every repository has a sync queued.
const RESYNC_KEY: &str = "resync_after_model_change";

/// What [`Indexer::adopt_model`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelChange {
    /// The index was built with the configured model.
    Unchanged,
    /// No model was recorded yet (a new data directory): recorded now.
    First,
    /// The index was built with `from`: its vectors are no longer searched, and every
    /// repository is re-embedded by its next sync.
    Changed {
        /// The model the index was built with.
        from: String,
    },
}

/// What [`Indexer::audit`] found in one repository.
#[derive(Debug, Clone)]
pub struct RepoAudit {
    /// The repository.
    pub repo: Repository,
    /// Indexed files (with symbols) whose chunks are missing from the chunk store.
    pub missing_chunks: Vec<String>,
    /// Files with chunks that the metadata store does not list as indexed.
    pub orphan_chunks: Vec<String>,
}

impl RepoAudit {
    /// Whether both stores agree.
    pub fn is_consistent(&self) -> bool {
        self.missing_chunks.is_empty() && self.orphan_chunks.is_empty()
    }
}

/// What a sync did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncReport {
    /// Candidate files found by the scan.
    pub scanned: usize,
    /// Files whose mtime and size matched: not even read.
    pub unchanged: usize,
    /// Files whose mtime changed but whose content did not: mtime updated, nothing else.
    pub touched: usize,
    /// Files parsed, chunked and written (new or changed content).
    pub indexed: usize,
    /// Of `indexed`, files not seen before.
    pub added: usize,
    /// Files removed from the index (deleted, or now excluded).
    pub removed: usize,
    /// Files newly recorded as skipped, or skipped for a new reason (with their reason).
    pub skipped: usize,
    /// Files that failed to parse: path and reason (recorded, never fatal).
    pub failed: Vec<(String, String)>,
    /// Chunks written.
    pub chunks: usize,
    /// Lines of code in the indexed files.
    pub lines: u64,
    /// Symbol-graph edges written (for the changed files and the files importing them).
    pub graph_edges: usize,
    /// Rows given their vectors by the embedding stage (new or changed chunks whose text
    /// was not in the embedding cache, and rows left by an interrupted run).
    pub embedded: usize,
    /// Wall time.
    #[serde(with = "secs")]
    pub duration: Duration,
}

mod secs {
    pub fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
}

impl SyncReport {
    /// Whether the sync wrote anything beyond mtimes: files indexed, removed or newly
    /// skipped, or files that failed.
    pub fn changed_anything(&self) -> bool {
        self.indexed + self.removed + self.skipped > 0 || !self.failed.is_empty()
    }
}

/// The indexing engine over a metadata store, a chunk store and an embedder.
pub struct Indexer {
    meta: Arc<dyn MetaStore>,
    vectors: Arc<dyn VectorStore>,
    embedder: Arc<dyn Embedder>,
    options: IndexOptions,
    repo_locks: RepoLocks,
    /// One embedding stage per repository at a time.
    embed_locks: RepoLocks,
}

/// Per-repository locks, created on first use.
type RepoLocks = std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>;

/// The lock in `locks` for `repo_id`.
fn keyed_lock(locks: &RepoLocks, repo_id: &str) -> Arc<tokio::sync::Mutex<()>> {
    let mut locks = locks
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    locks.entry(repo_id.to_string()).or_default().clone()
}

/// A file whose content must be (re)indexed.
struct Pending {
    file: ScannedFile,
    hash: String,
    bytes: Vec<u8>,
    is_new: bool,
}

/// The work a sync must do, from either source.
struct Plan {
    pending: Vec<Pending>,
    removals: Vec<String>,
    skipped: Vec<(ScannedFile, String)>,
    commit: Option<String>,
    configs: Vec<(String, String)>,
}

/// A parsed and chunked file, ready to embed and write.
struct Prepared {
    file: ScannedFile,
    hash: String,
    /// The metadata store has no record of the file.
    is_new: bool,
    /// Chunks, line count and the file's symbol-graph facts (JSON).
    outcome: Result<(Vec<CodeChunk>, u32, String), String>,
}

fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

impl Indexer {
    /// An engine; fails when the chunk store's vector width differs from the embedder's.
    pub fn new(
        meta: Arc<dyn MetaStore>,
        vectors: Arc<dyn VectorStore>,
        embedder: Arc<dyn Embedder>,
        options: IndexOptions,
    ) -> Result<Self, IndexError> {
        if vectors.dims() != embedder.dims() {
            return Err(IndexError::DimensionMismatch {
                store: vectors.dims(),
                model: embedder.model_id().to_string(),
                model_dims: embedder.dims(),
            });
        }
        Ok(Self {
            meta,
            vectors,
            embedder,
            options,
            repo_locks: std::sync::Mutex::new(HashMap::new()),
            embed_locks: std::sync::Mutex::new(HashMap::new()),
        })
    }

    /// Makes the index follow the configured embedding model. On first use the model is
    /// recorded; when the index was built with another one, its vectors are forgotten
    /// (never compared with the new model's), files whose rows went with a chunk store of
    /// another width are marked for indexing again, and the new model is recorded: the
    /// next sync of each repository re-embeds it (vectors of a model used before come
    /// from the embedding cache). Text search works throughout.
    pub async fn adopt_model(&self) -> Result<ModelChange, IndexError> {
        let configured = self.embedder.model_id().to_string();
        let change = match self.meta.setting(MODEL_KEY).await? {
            Some(indexed) if indexed == configured => return Ok(ModelChange::Unchanged),
            None => ModelChange::First,
            Some(from) => {
                self.meta.set_setting(RESYNC_KEY, "1").await?;
                self.vectors.forget_vectors().await?;
                self.audit(true).await?;
                ModelChange::Changed { from }
            }
        };
        self.meta.set_setting(MODEL_KEY, &configured).await?;
        Ok(change)
    }

    /// Repositories a server should sync when it starts: every one after a change of
    /// model (until [`Indexer::resync_queued`]), else those with rows still without
    /// vectors (an interrupted embedding stage).
    pub async fn repos_to_complete(&self) -> Result<Vec<Repository>, IndexError> {
        if self
            .meta
            .setting(RESYNC_KEY)
            .await?
            .is_some_and(|v| v == "1")
        {
            return Ok(self.meta.list_repositories().await?);
        }
        self.repos_missing_vectors().await
    }

    /// Records that the syncs a change of model needs are queued (durable jobs).
    pub async fn resync_queued(&self) -> Result<(), IndexError> {
        if self
            .meta
            .setting(RESYNC_KEY)
            .await?
            .is_some_and(|v| v == "1")
        {
            self.meta.set_setting(RESYNC_KEY, "0").await?;
        }
        Ok(())
    }

    /// Repositories with rows that have no vector yet (after a crash, a change of model,
    /// or a freshness sync), to be synced.
    pub async fn repos_missing_vectors(&self) -> Result<Vec<Repository>, IndexError> {
        let mut out = Vec::new();
        for repo in self.meta.list_repositories().await? {
            if self.vectors.embedding_state(Some(&repo.id)).await?.pending > 0 {
                out.push(repo);
            }
        }
        Ok(out)
    }

    /// The metadata store.
    pub fn meta(&self) -> &Arc<dyn MetaStore> {
        &self.meta
    }

    /// The chunk store.
    pub fn vectors(&self) -> &Arc<dyn VectorStore> {
        &self.vectors
    }

    /// Registers a local directory (or returns it when already registered at the same
    /// path). `name` defaults to the folder's name.
    pub async fn register_path(
        &self,
        path: &Path,
        name: Option<&str>,
        settings: RepoSettings,
    ) -> Result<Repository, IndexError> {
        let refused = |reason: String| IndexError::PathRefused {
            path: path.to_path_buf(),
            reason,
        };
        let root = match path.canonicalize() {
            Ok(root) => root,
            Err(e) => {
                // Outside the roots a missing path gets the answer an existing one gets:
                // the error must not tell whether something exists there.
                self.check_allowed(&lexically_absolute(path))
                    .map_err(refused)?;
                return Err(refused(format!(
                    "{e} (the path must be an existing directory)"
                )));
            }
        };
        self.check_allowed(&root).map_err(refused)?;
        if !root.is_dir() {
            return Err(refused("not a directory".into()));
        }
        FileFilter::new(&settings)?;
        let location = root.to_string_lossy().into_owned();
        let name = name.map(str::to_string).unwrap_or_else(|| {
            root.file_name()
                .map_or_else(|| "root".to_string(), |n| n.to_string_lossy().into_owned())
        });
        self.create_unless_registered(name, RepoSource::Path(location), None, settings, path)
            .await
    }

    /// Registers a git repository by URL (`https://…`, `ssh://…` or `user@host:path`,
    /// and with [`GitPolicy::allow_insecure`] `http://…` and `git://…`) or by a local path
    /// or `file://` URL (under the allowed roots), tracking `tracked_ref` (a branch, tag
    /// or commit; default: the remote's default branch). Credentials in the URL are
    /// stored apart and never shown. Nothing is fetched until the first sync.
    pub async fn register_git(
        &self,
        url: &str,
        name: Option<&str>,
        tracked_ref: Option<&str>,
        settings: RepoSettings,
    ) -> Result<Repository, IndexError> {
        let location = GitLocation::parse(url);
        // The refusal names the location without its credentials.
        let shown = location
            .as_ref()
            .map_or_else(|_| "the git source".to_string(), |l| l.url.clone());
        let refused = |reason: String| IndexError::PathRefused {
            path: PathBuf::from(&shown),
            reason,
        };
        let location = location.map_err(&refused)?;
        self.check_git_location(&location).await.map_err(&refused)?;
        FileFilter::new(&settings)?;
        let name = name.map(str::to_string).unwrap_or_else(|| {
            location
                .url
                .trim_end_matches('/')
                .rsplit(['/', ':'])
                .next()
                .unwrap_or(&location.url)
                .trim_end_matches(".git")
                .to_string()
        });
        let repo = self
            .create_unless_registered(
                name,
                RepoSource::Git(location.url.clone()),
                tracked_ref.map(str::to_string),
                settings,
                Path::new(&location.url),
            )
            .await?;
        if location.credentials.is_some() {
            self.meta
                .set_credentials(&repo.id, location.credentials.as_ref())
                .await?;
        }
        Ok(repo)
    }

    /// `Err(reason)` when the policy refuses `location`: a local repository outside the
    /// allowed roots, an unencrypted transport, or a host on a non-public address (every
    /// address the name resolves to is checked, at registration and before each fetch).
    async fn check_git_location(&self, location: &GitLocation) -> Result<(), String> {
        let policy = &self.options.git;
        let (host, port) = match &location.transport {
            GitTransport::Local(path) => {
                let Ok(real) = path.canonicalize() else {
                    // As for local paths: outside the roots, existence is not told.
                    self.check_allowed(&lexically_absolute(path))?;
                    return Err("not a URL and not an existing path".into());
                };
                self.check_allowed(&real)?;
                if self.options.allowed_roots.is_empty() {
                    return Ok(());
                }
                // A `.git` file or an alternates file inside a root must not lead the
                // fetch to a repository outside it.
                for dir in super::git::local_repository_dirs(&real)? {
                    self.check_allowed(&dir).map_err(|why| {
                        format!(
                            "the repository's data at {} (named by a .git file or \
                             objects/info/alternates) is not allowed: {why}",
                            dir.display()
                        )
                    })?;
                }
                return Ok(());
            }
            GitTransport::Http | GitTransport::Git if !policy.allow_insecure => {
                return Err(
                    "http:// and git:// transfer code unencrypted: use https:// or ssh, or \
                     start the server with --allow-insecure-git"
                        .into(),
                );
            }
            _ => (
                location.host.clone().unwrap_or_default(),
                location.port.unwrap_or(443),
            ),
        };
        if policy.allow_private_hosts {
            return Ok(());
        }
        let addresses: Vec<std::net::IpAddr> = match host.parse::<std::net::IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => tokio::net::lookup_host((host.as_str(), port))
                .await
                .map_err(|e| format!("cannot resolve `{host}`: {e}"))?
                .map(|a| a.ip())
                .collect(),
        };
        if let Some(why) = addresses.into_iter().find_map(restricted_address) {
            return Err(format!(
                "`{host}` is a {why} address: git sources may not reach the server's own \
                 network unless it is started with --allow-private-git-hosts"
            ));
        }
        Ok(())
    }

    /// Creates the repository, or returns the one already registered under `name` with
    /// the same source; a name taken by another source is refused.
    async fn create_unless_registered(
        &self,
        name: String,
        source: RepoSource,
        tracked_ref: Option<String>,
        settings: RepoSettings,
        given: &Path,
    ) -> Result<Repository, IndexError> {
        if let Some(existing) = self.meta.get_repository_by_name(&name).await? {
            if existing.source == source {
                return Ok(existing);
            }
            return Err(IndexError::PathRefused {
                path: given.to_path_buf(),
                reason: format!(
                    "the name `{name}` is taken by {:?}; pass another --name",
                    existing.source
                ),
            });
        }
        Ok(self
            .meta
            .create_repository(NewRepository {
                name,
                source,
                tracked_ref,
                settings,
            })
            .await?)
    }

    /// Moves the credentials that git sources registered before they were kept apart
    /// still carry in their stored URL (`https://user:token@host/…`) into the
    /// credentials table, leaving the URL without them, as a registration today does.
    /// Run at every start; returns how many sources were rewritten.
    pub async fn move_stored_credentials(&self) -> Result<usize, IndexError> {
        let mut moved = 0;
        for repo in self.meta.list_repositories().await? {
            let RepoSource::Git(url) = &repo.source else {
                continue;
            };
            let Ok(location) = GitLocation::parse(url) else {
                continue;
            };
            if let Some(credentials) = &location.credentials {
                self.meta
                    .move_source_credentials(&repo.id, &location.url, credentials)
                    .await?;
                moved += 1;
            }
        }
        Ok(moved)
    }

    /// `Err(reason)` when `path` (canonical, or [`lexically_absolute`]) is outside the
    /// allowed roots.
    fn check_allowed(&self, path: &Path) -> Result<(), String> {
        let roots = &self.options.allowed_roots;
        if roots.is_empty()
            || roots
                .iter()
                .any(|r| r.canonicalize().is_ok_and(|r| path.starts_with(&r)))
        {
            return Ok(());
        }
        Err(format!(
            "it is outside the allowed roots ({}); add its parent to SEXTANT_ALLOWED_ROOTS",
            roots
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }

    /// The repository with this name or id.
    pub async fn find_repo(&self, name_or_id: &str) -> Result<Repository, IndexError> {
        if let Some(r) = self.meta.get_repository_by_name(name_or_id).await? {
            return Ok(r);
        }
        self.meta
            .get_repository(name_or_id)
            .await?
            .ok_or_else(|| IndexError::UnknownRepo(name_or_id.to_string()))
    }

    /// Changes a repository's settings (and, for git sources, its tracked ref) after
    /// checking them; the next sync applies them (files newly excluded are removed, newly
    /// included ones indexed).
    pub async fn update_settings(
        &self,
        name_or_id: &str,
        tracked_ref: Option<String>,
        settings: RepoSettings,
    ) -> Result<Repository, IndexError> {
        let repo = self.find_repo(name_or_id).await?;
        FileFilter::new(&settings)?;
        if tracked_ref.is_some() && !matches!(repo.source, RepoSource::Git(_)) {
            return Err(IndexError::Settings(format!(
                "`{}` is a local directory: only git repositories track a ref",
                repo.name
            )));
        }
        let tracked_ref = tracked_ref.or(repo.tracked_ref.clone());
        Ok(self
            .meta
            .update_repository_settings(&repo.id, tracked_ref, &settings)
            .await?)
    }

    /// Compares what the two stores hold for every repository: indexed files (with
    /// symbols) that have no chunks, and chunks of files the metadata store does not list
    /// as indexed. With `repair`, the first lose their file record (so the next sync
    /// indexes them again) and the second are deleted. Each repository is checked under
    /// its sync lock.
    pub async fn audit(&self, repair: bool) -> Result<Vec<RepoAudit>, IndexError> {
        let mut out = Vec::new();
        for repo in self.meta.list_repositories().await? {
            let lock = self.repo_lock(&repo.id);
            let _held = lock.lock().await;
            let files = self.meta.list_files(&repo.id).await?;
            let indexed: std::collections::BTreeSet<&str> = files
                .iter()
                .filter(|f| f.skip_reason.is_none())
                .map(|f| f.path.as_str())
                .collect();
            let chunked = self.vectors.file_paths(&repo.id).await?;
            let missing_chunks: Vec<String> = files
                .iter()
                .filter(|f| f.skip_reason.is_none() && f.symbol_count > 0)
                .filter(|f| !chunked.contains(&f.path))
                .map(|f| f.path.clone())
                .collect();
            let orphan_chunks: Vec<String> = chunked
                .iter()
                .filter(|p| !indexed.contains(p.as_str()))
                .cloned()
                .collect();
            if repair {
                for path in &missing_chunks {
                    self.meta.delete_file(&repo.id, path).await?;
                }
                for path in &orphan_chunks {
                    self.vectors.delete_file(&repo.id, path).await?;
                }
            }
            out.push(RepoAudit {
                repo,
                missing_chunks,
                orphan_chunks,
            });
        }
        Ok(out)
    }

    /// Removes a repository and everything stored for it.
    pub async fn remove_repo(&self, name_or_id: &str) -> Result<Repository, IndexError> {
        let repo = self.find_repo(name_or_id).await?;
        let lock = self.repo_lock(&repo.id);
        let _held = lock.lock().await;
        // Chunks first: if this is interrupted, the repository row still exists and the
        // removal can be repeated.
        self.vectors.delete_repo(&repo.id).await?;
        self.meta.delete_repository(&repo.id).await?;
        let mirror = self.checkout_dir(&repo.id);
        if matches!(repo.source, RepoSource::Git(_)) && mirror.exists() {
            // Best effort: a left-over mirror is re-used or overwritten by nothing.
            let _ = std::fs::remove_dir_all(&mirror);
        }
        Ok(repo)
    }

    fn embed_lock(&self, repo_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        keyed_lock(&self.embed_locks, repo_id)
    }

    fn repo_lock(&self, repo_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        keyed_lock(&self.repo_locks, repo_id)
    }

    /// Brings the index of `repo` in line with its files, then embeds what has no vector
    /// yet (see [`Indexer::embed_pending`]). At most one sync per repository runs at a
    /// time; a second call waits for the first. Changed files are searchable by text as
    /// soon as their rows are written, before their vectors land.
    pub async fn sync(
        &self,
        repo: &Repository,
        progress: &mut Progress,
    ) -> Result<SyncReport, IndexError> {
        self.sync_and_embed(repo, progress)
            .instrument(sync_span(repo))
            .await
    }

    async fn sync_and_embed(
        &self,
        repo: &Repository,
        progress: &mut Progress,
    ) -> Result<SyncReport, IndexError> {
        let mut report = {
            let lock = self.repo_lock(&repo.id);
            let _held = lock.lock().await;
            self.sync_held(repo, progress).await?
        };
        let started = Instant::now();
        match self.embed_pending(repo, progress).await {
            Ok(embedded) => report.embedded = embedded,
            Err(e) => {
                let e = e.explained();
                let message = format!(
                    "embedding failed ({e}); text search works, and the next sync embeds \
                     what is missing"
                );
                if let Err(record) = self
                    .meta
                    .set_repository_status(&repo.id, RepoStatus::Error, Some(&message), None)
                    .await
                {
                    tracing::warn!(repo = %repo.name, error = %record, "cannot record the failed embedding");
                }
                return Err(e);
            }
        }
        report.duration += started.elapsed();
        report_done(&report, progress);
        Ok(report)
    }

    /// [`Indexer::sync`] without its embedding stage, unless a sync of `repo` is running
    /// already: then `None` at once (that sync brings the index up to date; callers that
    /// only want freshness, such as the check before a search, need not queue behind
    /// it). Rows it writes are searchable by text; call [`Indexer::embed_pending`] after.
    pub async fn sync_unless_running(
        &self,
        repo: &Repository,
        progress: &mut Progress,
    ) -> Option<Result<SyncReport, IndexError>> {
        let lock = self.repo_lock(&repo.id);
        let _held = lock.try_lock().ok()?;
        let outcome = self
            .sync_held(repo, progress)
            .instrument(sync_span(repo))
            .await;
        if let Ok(report) = &outcome {
            report_done(report, progress);
        }
        Some(outcome)
    }

    /// Embeds the rows of `repo` that have no vector yet (written by a sync before their
    /// vectors, or forgotten after a change of model), a slice at a time, storing each
    /// slice as it lands: searches use the vectors of a slice as soon as it is stored,
    /// and a crash loses at most one slice. One stage per repository runs at a time: a
    /// second call waits for the first (then embeds whatever is still missing), so a sync
    /// that returns has every vector in. Returns the rows given vectors by this call.
    pub async fn embed_pending(
        &self,
        repo: &Repository,
        progress: &mut Progress,
    ) -> Result<usize, IndexError> {
        let lock = self.embed_lock(&repo.id);
        let _turn = lock.lock().await;
        self.embed_pending_held(repo, progress).await
    }

    /// [`Indexer::embed_pending`], unless a stage for `repo` is running: then `None` at
    /// once (that stage takes the new rows too).
    pub async fn embed_pending_unless_running(
        &self,
        repo: &Repository,
        progress: &mut Progress,
    ) -> Option<Result<usize, IndexError>> {
        let lock = self.embed_lock(&repo.id);
        let _turn = lock.try_lock().ok()?;
        Some(self.embed_pending_held(repo, progress).await)
    }

    async fn embed_pending_held(
        &self,
        repo: &Repository,
        progress: &mut Progress,
    ) -> Result<usize, IndexError> {
        let slice = self.options.embed_slice.max(1);
        let mut total = self.vectors.embedding_state(Some(&repo.id)).await?.pending;
        let (mut done, mut idle_turns) = (0usize, 0u32);
        if total == 0 {
            return Ok(0);
        }
        let span =
            tracing::info_span!("sync.embed", sextant.repository = %repo.name, texts = total);
        async {
            progress.report(Phase::Embed, 0, total as u64, None);
            loop {
                let pending = self.vectors.unembedded(&repo.id, slice).await?;
                if pending.is_empty() {
                    break;
                }
                let texts: Vec<String> = pending.iter().map(|p| p.text.clone()).collect();
                let vectors =
                    crate::embed::embed_all(self.embedder.as_ref(), &texts, InputKind::Document)
                        .await?;
                let stored = self
                    .vectors
                    .set_vectors(&repo.id, pending.into_iter().zip(vectors).collect())
                    .await?;
                done += stored;
                // Rows written meanwhile by another sync join this run.
                total = total.max(done);
                progress.report(Phase::Embed, done as u64, total as u64, None);
                if stored == 0 {
                    // Every row of the slice changed under us; their new versions are
                    // read again (with their new text) on the next turn. Rows that never
                    // take a vector would loop for ever: stop after a few turns.
                    idle_turns += 1;
                    if idle_turns >= 3 {
                        return Err(IndexError::Task(format!(
                            "vectors for {} rows of `{}` could not be stored; \
                             `sextant doctor --repair` rebuilds what is inconsistent",
                            texts.len(),
                            repo.name
                        )));
                    }
                    tokio::task::yield_now().await;
                } else {
                    idle_turns = 0;
                }
            }
            // Vectors land as rewritten rows: after a bulk of them, fold those rows into
            // the text and vector indexes now (as a bulk sync does) rather than leaving
            // searches to scan them until the store's periodic maintenance.
            if done >= slice {
                progress.report(
                    Phase::Embed,
                    done as u64,
                    total as u64,
                    Some("updating search indexes".into()),
                );
                self.vectors
                    .maintain()
                    .instrument(tracing::info_span!("sync.maintain"))
                    .await?;
            }
            Ok::<_, IndexError>(())
        }
        .instrument(span)
        .await?;
        Ok(done)
    }

    /// A sync, with the repository's lock held by the caller.
    async fn sync_held(
        &self,
        repo: &Repository,
        progress: &mut Progress,
    ) -> Result<SyncReport, IndexError> {
        let outcome = self
            .sync_locked(repo, progress)
            .await
            .map_err(IndexError::explained);
        let (status, error, commit) = match &outcome {
            Ok((_, commit)) => (RepoStatus::Ready, None, commit.clone()),
            Err(e) => (RepoStatus::Error, Some(e.to_string()), None),
        };
        // A sync that found nothing to do on a ready repository (the freshness check
        // before most searches) writes nothing: no status flip, no write lock taken.
        let idle = matches!(&outcome, Ok((report, c)) if !report.changed_anything()
            && *c == repo.indexed_commit)
            && repo.status == RepoStatus::Ready
            && repo.last_error.is_none();
        let recorded = if idle {
            Ok(())
        } else {
            self.meta
                .set_repository_status(&repo.id, status, error.as_deref(), commit.as_deref())
                .await
        };
        match (recorded, &outcome) {
            (Err(e), Ok(_)) => return Err(IndexError::from(e).explained()),
            // The sync's own error says more than the failure to record it (on a full
            // disk, the second follows from the first).
            (Err(e), Err(first)) => {
                tracing::warn!(repo = %repo.name, error = %e, sync_error = %first, "cannot record the failed sync");
            }
            (Ok(()), _) => {}
        }
        if let Ok((report, _)) = &outcome {
            tracing::Span::current().record("sextant.files_indexed", report.indexed);
        }
        outcome.map(|(report, _)| report)
    }

    /// Where the bare mirror of a git repository lives.
    pub fn checkout_dir(&self, repo_id: &str) -> PathBuf {
        self.options.checkout_dir.join(repo_id)
    }

    /// Scans a working tree and applies the two-phase change check.
    async fn plan_worktree(
        &self,
        root: &Path,
        filter: &FileFilter,
        mut stored: HashMap<String, FileRecord>,
        report: &mut SyncReport,
        progress: &mut Progress,
    ) -> Result<Plan, IndexError> {
        progress.report(
            Phase::Scan,
            0,
            0,
            Some(format!("scanning {}", root.display())),
        );
        let scan = {
            let (root, filter) = (root.to_path_buf(), filter.clone());
            tokio::task::spawn_blocking(move || scan_tree(&root, &filter))
                .await
                .map_err(|e| IndexError::Task(e.to_string()))??
        };
        report.scanned = scan.files.len();
        let mut pending = Vec::new();
        let total = scan.files.len() as u64;
        // Files are opened only where the scan found them: under the real root.
        let real_root = std::fs::canonicalize(root).map_err(|source| IndexError::Io {
            path: root.to_path_buf(),
            source,
        })?;
        for (i, mut file) in scan.files.into_iter().enumerate() {
            let previous = stored.remove(&file.rel);
            if let Some(prev) = &previous
                && prev.skip_reason.is_none()
                && prev.mtime_ms == Some(file.mtime_ms)
                && prev.size_bytes == file.size as i64
            {
                report.unchanged += 1;
                continue;
            }
            let bytes = match read_scanned(&real_root, &mut file, filter.max_file_bytes()) {
                Ok(b) => b,
                Err(reason) => {
                    // Vanished, swapped or still changing since the scan: recorded, the
                    // sync goes on (an indexed copy stays until a sync reads it again).
                    report.failed.push((file.rel.clone(), reason));
                    continue;
                }
            };
            let hash = sha256_hex(&bytes);
            match previous {
                Some(mut prev)
                    if prev.skip_reason.is_none()
                        && prev.content_hash.as_deref() == Some(&hash) =>
                {
                    prev.mtime_ms = Some(file.mtime_ms);
                    self.meta.upsert_file(&prev).await?;
                    report.touched += 1;
                }
                previous => pending.push(Pending {
                    file,
                    hash,
                    bytes,
                    is_new: previous.is_none(),
                }),
            }
            if i % 256 == 0 {
                progress.report(Phase::Scan, i as u64 + 1, total, None);
            }
        }
        let skipped_paths: std::collections::HashSet<&str> =
            scan.skipped.iter().map(|(f, _)| f.rel.as_str()).collect();
        let removals = stored
            .keys()
            .filter(|p| !skipped_paths.contains(p.as_str()))
            .cloned()
            .collect();
        // Files skipped for the same reason as last time are already recorded as such.
        let skipped = scan
            .skipped
            .into_iter()
            .filter(|(f, reason)| {
                stored
                    .get(&f.rel)
                    .is_none_or(|r| r.skip_reason.as_deref() != Some(reason.as_str()))
            })
            .collect();
        Ok(Plan {
            pending,
            removals,
            skipped,
            commit: None,
            configs: scan.configs,
        })
    }

    /// Fetches a git source and diffs the indexed commit against the tracked ref.
    async fn plan_git(
        &self,
        repo: &Repository,
        url: &str,
        filter: &FileFilter,
        stored: HashMap<String, FileRecord>,
        report: &mut SyncReport,
        progress: &mut Progress,
    ) -> Result<Plan, IndexError> {
        progress.report(Phase::Scan, 0, 0, Some(format!("fetching {url}")));
        // Checked again before every fetch: a name may resolve elsewhere than it did.
        let location = GitLocation::parse(url).map_err(IndexError::Git)?;
        self.check_git_location(&location)
            .await
            .map_err(|reason| IndexError::Git(format!("refusing to fetch {url}: {reason}")))?;
        let deadline = Instant::now() + self.options.git.fetch_deadline;
        // Network fetches go through a proxy that closes them at the deadline, whatever
        // phase libgit2 is in; it lives until the fetch returns or this is dropped.
        let proxy = DeadlineProxy::for_fetch(
            url,
            &location.transport,
            deadline.into(),
            self.options.git.allow_private_hosts,
        )
        .await
        .map_err(|e| IndexError::Git(format!("cannot start the fetch proxy: {e}")))?;
        let access = super::git::FetchAccess {
            credentials: self.meta.credentials(&repo.id).await?,
            deadline: Some(deadline),
            route: proxy.as_ref().map(|p| p.route().clone()),
        };
        let shown = url.to_string();
        let (url, dir, tracked, old, filter) = (
            url.to_string(),
            self.checkout_dir(&repo.id),
            repo.tracked_ref.clone(),
            repo.indexed_commit.clone(),
            filter.clone(),
        );
        let (plan, stored) = tokio::task::spawn_blocking(move || {
            super::git::plan(
                &url,
                &access,
                &dir,
                tracked.as_deref(),
                old.as_deref(),
                &filter,
                &stored,
            )
            .map(|p| (p, stored))
        })
        .await
        .map_err(|e| IndexError::Task(e.to_string()))?
        .map_err(|e| match proxy.as_ref().and_then(DeadlineProxy::refusal) {
            // libgit2 says only that the proxy answered 403 or closed; say why.
            Some(why) => IndexError::Git(format!("cannot fetch {shown}: {why}")),
            None => e,
        })?;
        drop(proxy);
        report.unchanged = plan.unchanged;
        report.scanned = plan.changed.len() + plan.unchanged;
        let mut pending: Vec<Pending> = plan
            .changed
            .into_iter()
            .map(|g| Pending {
                is_new: !stored.contains_key(&g.file.rel),
                file: g.file,
                hash: g.blob,
                bytes: g.bytes,
            })
            .collect();
        let mut skipped = plan.skipped;
        // The file limit: files already indexed keep their place; new ones beyond the
        // limit (in path order) are recorded as skipped, as a working-tree scan does.
        let limit = usize::try_from(repo.settings.max_files).unwrap_or(usize::MAX);
        let kept = stored
            .values()
            .filter(|f| f.skip_reason.is_none() && !plan.removed.contains(&f.path))
            .count();
        let indexed = |rel: &str| stored.get(rel).is_some_and(|f| f.skip_reason.is_none());
        let new = pending.iter().filter(|p| !indexed(&p.file.rel)).count();
        if kept + new > limit {
            let mut room = limit.saturating_sub(kept);
            pending.sort_by(|a, b| a.file.rel.cmp(&b.file.rel));
            pending.retain(|p| {
                if indexed(&p.file.rel) {
                    return true;
                }
                if room > 0 {
                    room -= 1;
                    return true;
                }
                skipped.push((
                    p.file.clone(),
                    format!("over the repository's limit of {limit} files"),
                ));
                false
            });
        }
        Ok(Plan {
            pending,
            removals: plan
                .removed
                .into_iter()
                .filter(|p| stored.contains_key(p))
                .collect(),
            skipped,
            commit: Some(plan.commit),
            configs: plan.configs,
        })
    }

    async fn sync_locked(
        &self,
        repo: &Repository,
        progress: &mut Progress,
    ) -> Result<(SyncReport, Option<String>), IndexError> {
        let started = Instant::now();
        let filter = FileFilter::new(&repo.settings)?;
        let stored: HashMap<String, FileRecord> = self
            .meta
            .list_files(&repo.id)
            .await?
            .into_iter()
            .map(|f| (f.path.clone(), f))
            .collect();
        let mut report = SyncReport::default();
        let (root, plan) = match &repo.source {
            RepoSource::Path(p) => {
                let root = PathBuf::from(p);
                let plan = self
                    .plan_worktree(&root, &filter, stored, &mut report, progress)
                    .instrument(tracing::info_span!("sync.scan"))
                    .await?;
                (root, plan)
            }
            RepoSource::Git(url) => {
                let plan = self
                    .plan_git(repo, url, &filter, stored, &mut report, progress)
                    .instrument(tracing::info_span!("sync.scan", git = true))
                    .await?;
                (PathBuf::new(), plan)
            }
        };
        let Plan {
            pending,
            removals,
            skipped,
            commit,
            configs,
        } = plan;
        // The repository shows `indexing` only while there is something to write.
        if !(pending.is_empty() && removals.is_empty() && skipped.is_empty()) {
            self.meta
                .set_repository_status(&repo.id, RepoStatus::Indexing, None, None)
                .await?;
        }
        // Paths whose symbols changed: the graph re-resolves them and their importers.
        let mut changed: Vec<String> = removals.clone();
        changed.extend(skipped.iter().map(|(f, _)| f.rel.clone()));
        changed.extend(pending.iter().map(|p| p.file.rel.clone()));
        progress.report(
            Phase::Scan,
            report.scanned as u64,
            report.scanned as u64,
            Some(format!(
                "{} files: {} unchanged, {} touched, {} to index, {} to remove",
                report.scanned,
                report.unchanged,
                report.touched,
                pending.len(),
                removals.len()
            )),
        );

        // Files that are gone: their chunks, symbols and records go.
        if !removals.is_empty() {
            let batch = removals.iter().map(|p| (p.clone(), Vec::new())).collect();
            self.vectors.replace_files(&repo.id, batch).await?;
            for path in &removals {
                self.meta.delete_file(&repo.id, path).await?;
            }
            report.removed = removals.len();
        }
        // Files now skipped: chunks go, a record with the reason stays.
        if !skipped.is_empty() {
            let batch = skipped
                .iter()
                .map(|(f, _)| (f.rel.clone(), Vec::new()))
                .collect();
            self.vectors.replace_files(&repo.id, batch).await?;
            for (file, reason) in &skipped {
                self.meta
                    .upsert_file(&skipped_record(&repo.id, file, reason))
                    .await?;
            }
            report.skipped = skipped.len();
        }

        // Phase 2: parse, chunk, embed and write, a batch of files at a time.
        let total = pending.len() as u64;
        let mut done = 0u64;
        let mut pending = pending.into_iter().peekable();
        while pending.peek().is_some() {
            let batch: Vec<Pending> = pending
                .by_ref()
                .take(self.options.batch_files.max(1))
                .collect();
            let added = batch.iter().filter(|p| p.is_new).count();
            let batch_len = batch.len();
            let prepared = self
                .prepare(batch)
                .instrument(tracing::info_span!("sync.parse", files = batch_len))
                .await?;
            done += prepared.len() as u64;
            progress.report(Phase::Parse, done, total, None);
            self.write_batch(repo, &root, prepared, progress, &mut report)
                .await?;
            report.added += added;
            // A batch is committed in both stores: where the crash tests hold a sync.
            if fail_point(SYNC_AFTER_BATCH) {
                tracing::warn!("fail point {SYNC_AFTER_BATCH}: holding this sync");
                std::future::pending::<()>().await;
            }
        }
        if !changed.is_empty() {
            let graph = super::graph::update_graph(
                self.meta.as_ref(),
                &repo.id,
                changed,
                &configs,
                progress,
            )
            .instrument(tracing::info_span!("sync.graph"))
            .await?;
            report.graph_edges = graph.edges;
        }
        // After a bulk change, fold the new rows into the store's text and vector indexes
        // now rather than leaving searches to scan them; small changes wait for the
        // store's periodic maintenance (they are searchable either way).
        if report.indexed + report.removed >= self.options.maintain_after_files {
            progress.report(Phase::Write, 0, 0, Some("updating search indexes".into()));
            self.vectors
                .maintain()
                .instrument(tracing::info_span!("sync.maintain"))
                .await?;
        }
        report.duration = started.elapsed();
        Ok((report, commit))
    }

    /// Parses and chunks a batch on the blocking pool.
    async fn prepare(&self, batch: Vec<Pending>) -> Result<Vec<Prepared>, IndexError> {
        let (limits, chunk_options) = (self.options.parse.clone(), self.options.chunk.clone());
        tokio::task::spawn_blocking(move || {
            batch
                .into_iter()
                .map(|p| {
                    let outcome = parse_bytes(&p.file.path, &p.bytes, &limits)
                        .map(|parsed| {
                            let source = String::from_utf8_lossy(&p.bytes);
                            let mut chunks =
                                chunk_file(&p.file.rel, &source, &parsed, &chunk_options);
                            let facts = FileFacts::attribute(&parsed.refs, &chunks);
                            // The file's outline is a retrievable unit, not a symbol: it
                            // is stored with the chunks and kept out of the graph.
                            chunks.extend(outline_chunk(&p.file.rel, &source, &parsed, &chunks));
                            let facts = serde_json::to_string(&facts).unwrap_or_default();
                            (chunks, parsed.line_count, facts)
                        })
                        .map_err(|e| e.to_string());
                    Prepared {
                        file: p.file,
                        hash: p.hash,
                        is_new: p.is_new,
                        outcome,
                    }
                })
                .collect()
        })
        .await
        .map_err(|e| IndexError::Task(e.to_string()))
    }

    /// Writes one prepared batch: chunk rows first (with the vectors the cache has), then
    /// SQL records.
    async fn write_batch(
        &self,
        repo: &Repository,
        root: &Path,
        prepared: Vec<Prepared>,
        progress: &mut Progress,
        report: &mut SyncReport,
    ) -> Result<(), IndexError> {
        let texts: Vec<String> = prepared
            .iter()
            .filter_map(|p| p.outcome.as_ref().ok())
            .flat_map(|(chunks, _, _)| chunks.iter().map(|c| c.embedding_text.clone()))
            .collect();
        // Rows are written at once, with the vectors the cache already has; the rest are
        // found by text search until `embed_pending` stores their vectors.
        let vectors = self
            .embedder
            .lookup(&texts, InputKind::Document)
            .instrument(tracing::info_span!("sync.cache", texts = texts.len()))
            .await?;
        let mut vectors = vectors.into_iter();
        let prepared_new: Vec<String> = prepared
            .iter()
            .filter(|p| p.is_new)
            .map(|p| p.file.rel.clone())
            .collect();
        let mut files = Vec::with_capacity(prepared.len());
        let mut records = Vec::with_capacity(prepared.len());
        let mut facts = Vec::with_capacity(prepared.len());
        for p in prepared {
            let rel = p.file.rel.clone();
            match p.outcome {
                Ok((chunks, lines, file_facts)) => {
                    facts.push((rel.clone(), Some(file_facts)));
                    let symbols: Vec<SymbolRecord> = chunks
                        .iter()
                        .filter(|c| c.node_kind != SymbolKind::File)
                        .map(SymbolRecord::from_chunk)
                        .collect();
                    let record = FileRecord {
                        repo_id: repo.id.clone(),
                        path: rel.clone(),
                        language: Some(p.file.language.id().to_string()),
                        content_hash: Some(p.hash.clone()),
                        mtime_ms: Some(p.file.mtime_ms),
                        size_bytes: p.file.size as i64,
                        line_count: i64::from(lines),
                        symbol_count: symbols.len() as i64,
                        indexed_at: Some(now_ms()),
                        skip_reason: None,
                    };
                    let file_path = root.join(&rel).to_string_lossy().into_owned();
                    let rows: Vec<ChunkRow> = chunks
                        .into_iter()
                        .map(|chunk| ChunkRow {
                            repo_id: repo.id.clone(),
                            file_path: file_path.clone(),
                            chunk,
                            content_hash: p.hash.clone(),
                            last_modified: p.file.mtime_ms,
                            vector: vectors.next().flatten().unwrap_or_default(),
                        })
                        .collect();
                    report.indexed += 1;
                    report.chunks += rows.len();
                    report.lines += u64::from(lines);
                    files.push((rel, rows));
                    records.push((record, symbols));
                }
                Err(reason) => {
                    facts.push((rel.clone(), None));
                    report.failed.push((rel.clone(), reason.clone()));
                    files.push((rel, Vec::new()));
                    records.push((skipped_record(&repo.id, &p.file, &reason), Vec::new()));
                }
            }
        }
        progress.report(Phase::Write, 0, records.len() as u64, None);
        let added: Vec<String> = prepared_new
            .into_iter()
            .filter(|rel| files.iter().any(|(f, rows)| f == rel && !rows.is_empty()))
            .collect();
        let write = tracing::info_span!("sync.write", files = records.len());
        self.vectors
            .replace_files(&repo.id, files)
            .instrument(write.clone())
            .await?;
        let written = async {
            self.meta.replace_files_symbols(&records).await?;
            self.meta.replace_files_facts(&repo.id, &facts).await
        }
        .instrument(write);
        if let Err(e) = written.await {
            // The chunk rows are written but their records are not (a full disk, a lost
            // database). Chunks of files the metadata store has never seen are taken back
            // (best effort) so searches do not show files it does not know; changed files
            // keep their new rows, and their old hash makes the next sync write them again.
            for rel in &added {
                if let Err(undo) = self.vectors.delete_file(&repo.id, rel).await {
                    tracing::warn!(file = %rel, error = %undo, "cannot take back chunks of a file whose records were not written; `sextant doctor --repair` will");
                }
            }
            return Err(e.into());
        }
        progress.report(
            Phase::Write,
            records.len() as u64,
            records.len() as u64,
            None,
        );
        Ok(())
    }
}

/// The span of one sync (its phases are children).
fn sync_span(repo: &Repository) -> tracing::Span {
    tracing::info_span!(
        "sync",
        sextant.repository = %repo.name,
        sextant.files_indexed = tracing::field::Empty
    )
}

/// Reports the end of a sync. `done` comes only once the repository reads as ready: a
/// client that follows progress and then asks for the repository sees the new state.
fn report_done(report: &SyncReport, progress: &mut Progress) {
    progress.report(
        Phase::Done,
        report.indexed as u64,
        report.indexed as u64,
        Some(format!(
            "{} indexed ({} new), {} touched, {} unchanged, {} removed, {} skipped, {} failed, {} chunks, {} embedded in {:.1} s",
            report.indexed,
            report.added,
            report.touched,
            report.unchanged,
            report.removed,
            report.skipped,
            report.failed.len(),
            report.chunks,
            report.embedded,
            report.duration.as_secs_f64()
        )),
    );
}

fn skipped_record(repo_id: &str, file: &ScannedFile, reason: &str) -> FileRecord {
    FileRecord {
        repo_id: repo_id.to_string(),
        path: file.rel.clone(),
        language: Some(file.language.id().to_string()),
        content_hash: None,
        mtime_ms: Some(file.mtime_ms),
        size_bytes: file.size as i64,
        line_count: 0,
        symbol_count: 0,
        indexed_at: None,
        skip_reason: Some(reason.to_string()),
    }
}
