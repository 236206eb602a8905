//! The sync engine: registers repositories and brings their stored chunks, symbols,
//! vectors and file records in line with their files, doing only the work that changed
//! content requires.
//!
//! Order of writes per batch of files: chunk rows (with vectors) first, in one LanceDB
//! commit; then each file's symbols and file record (with the new content hash) in one SQL
//! transaction. A crash between the two leaves the old hash in SQL, so the next sync
//! redoes that file and converges to what a clean build produces.
//!
//! By role: this file holds the [`Indexer`], its options and reports; `registry`
//! registers, changes and removes repositories; `plan` finds what a sync must do (a
//! working tree or a git tree diff); `sync` applies it in batches; `embedding` gives
//! stored rows their vectors; `model` adopts a change of embedding model and audits the
//! stores.
//!
//! # Design notes: a sync from its job to its last batch
//!
//! `Service::sync` queues a job (`index::jobs`); a worker of any process on the same
//! database claims it under a lease (`MetaStore::claim_job`: owner `host:pid`, expiry,
//! renewed every third of it while the job runs; one running job per repository,
//! checked under the repository's row lock) and calls `Indexer::sync`, which plans
//! (`engine::plan`: the working tree against the stored hashes, or the fetched commit's
//! tree against the indexed one), then writes in batches (`engine::sync`: parse and
//! chunk on the blocking pool, rows with the vectors `Embedder::lookup` knows (the
//! cache's hits; every vector of the static model, which is never cached), the files'
//! contents into the grep index, records and symbols, graph facts), resolves the graph
//! for the changed files and their importers (`index::graph`), and leaves vectors to
//! the embedding stage (`engine::embedding`, which stores what has landed while the
//! model runs), so new code is searchable by text at once and by meaning shortly after;
//! `SyncReport.phases` says where the time went. Every batch is committed in both
//! stores before the next; a crash loses at most the batch in flight and the next sync
//! continues. The local CLI runs the same sync in the foreground (`Service::sync_now`),
//! and ends with `Service::finish` (old chunk-store versions dropped at once: a server
//! keeps them a minute for searches in flight).

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
use crate::store::grep::{GrepIndex, NewDoc};
use crate::store::{
    ChunkRow, FileRecord, MetaStore, NewRepository, RepoSettings, RepoSource, RepoStatus,
    Repository, SymbolRecord, VectorStore, now_ms,
};

mod embedding;
mod fresh;
mod model;
mod plan;
mod registry;

pub use registry::MAX_REFS;
mod sync;

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
    /// How many of the model's vectors the embedding cache keeps per row of the chunk
    /// store, the most recently written (default 2: the index's own and as many again of
    /// texts since changed), and never fewer than `cached_vectors_floor`: a cache that
    /// grows with the source, not with its history. Trimmed when an embedding stage ends.
    pub cached_vectors_per_row: u64,
    /// Vectors the embedding cache may keep however small the index (default 10,000:
    /// ~10 MB of 384-dimensional vectors).
    pub cached_vectors_floor: u64,
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
            cached_vectors_per_row: 2,
            cached_vectors_floor: 10_000,
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
pub const MODEL_KEY: &str = "embedding_model";
/// Set (durably) by a change of model (or of index format) until every repository has
/// a sync queued.
const RESYNC_KEY: &str = "resync_after_model_change";
/// The setting that records the [`crate::chunk::FORMAT`] the stored files were indexed at.
const FORMAT_KEY: &str = "index_format";

/// What [`Indexer::adopt_format`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormatChange {
    /// The index was built at this format, or holds no files yet.
    Unchanged,
    /// The index was built at another format (`None`: before formats were recorded):
    /// every file is read again by its repository's next sync.
    Changed {
        /// The format recorded, if any.
        from: Option<String>,
        /// The file records forgotten.
        files: u64,
    },
}

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
    /// Indexed files whose content the grep index lacks at their hash (it was lost, or
    /// the file changed a moment ago): their chunks, which read their code from it, are
    /// left out of answers until a sync reads the files again (every sync does).
    pub missing_code: Vec<String>,
}

impl RepoAudit {
    /// Whether both stores agree, and the grep index holds every indexed file.
    pub fn is_consistent(&self) -> bool {
        self.missing_chunks.is_empty()
            && self.orphan_chunks.is_empty()
            && self.missing_code.is_empty()
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
    /// Rows written with their vectors, before the embedding stage: the embedding
    /// cache's hits, and every row of a model cheaper than the cache (the static one).
    pub written_with_vectors: usize,
    /// Wall time.
    #[serde(with = "secs")]
    pub duration: Duration,
    /// Where the wall time went.
    pub phases: PhaseTimes,
}

/// Where a sync's wall time went, phase by phase (phases run one after another, so they
/// add up to about the sync's duration). Serialised in seconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PhaseTimes {
    /// Listing files and reading the changed ones (or diffing a git tree).
    #[serde(with = "secs")]
    pub scan: Duration,
    /// Dropping removed and newly skipped files from both stores.
    #[serde(with = "secs")]
    pub drop: Duration,
    /// Parsing and chunking.
    #[serde(with = "secs")]
    pub parse: Duration,
    /// Looking chunk texts up in the embedding cache.
    #[serde(with = "secs")]
    pub cache: Duration,
    /// Writing chunk rows to the chunk store.
    #[serde(with = "secs")]
    pub chunk_rows: Duration,
    /// Writing file contents to the grep index.
    #[serde(with = "secs")]
    pub grep: Duration,
    /// Writing file, symbol and fact records to the metadata store.
    #[serde(with = "secs")]
    pub records: Duration,
    /// Resolving the symbol graph of the changed files and writing its edges.
    #[serde(with = "secs")]
    pub graph: Duration,
    /// Building search indexes and compacting after a bulk change.
    #[serde(with = "secs")]
    pub maintain: Duration,
    /// The embedding stage: the model, and storing the vectors.
    #[serde(with = "secs")]
    pub embed: Duration,
}

impl PhaseTimes {
    /// The phases by name, in the order they run.
    pub fn named(&self) -> [(&'static str, Duration); 10] {
        [
            ("scan", self.scan),
            ("drop", self.drop),
            ("parse", self.parse),
            ("cache", self.cache),
            ("chunk rows", self.chunk_rows),
            ("grep", self.grep),
            ("records", self.records),
            ("graph", self.graph),
            ("maintain", self.maintain),
            ("embed", self.embed),
        ]
    }
}

impl std::fmt::Display for PhaseTimes {
    /// `scan 1.2 s, parse 3.4 s, …` (phases that took under 0.05 s left out).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shown: Vec<String> = self
            .named()
            .iter()
            .filter(|(_, d)| d.as_secs_f64() >= 0.05)
            .map(|(name, d)| format!("{name} {:.1} s", d.as_secs_f64()))
            .collect();
        if shown.is_empty() {
            f.write_str("all phases under 0.1 s")
        } else {
            f.write_str(&shown.join(", "))
        }
    }
}

/// Runs `work`, adding its wall time to `slot`.
async fn timed<T>(slot: &mut Duration, work: impl std::future::Future<Output = T>) -> T {
    let started = Instant::now();
    let out = work.await;
    *slot += started.elapsed();
    out
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
    /// Rows that got their vectors in this sync: by the embedding stage, or with the row
    /// (the embedding cache's hits, the static model's vectors).
    pub fn vectors(&self) -> usize {
        self.embedded + self.written_with_vectors
    }

    /// The one-line summary a finished sync's job (and `sextant repo sync`) shows:
    /// `5 indexed, 0 removed, 120 embedded`.
    pub fn summary(&self) -> String {
        format!(
            "{} indexed, {} removed, {} embedded",
            self.indexed,
            self.removed,
            self.vectors()
        )
    }

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
    /// Change journals of working trees, when kept ([`Indexer::with_journals`]).
    journals: Option<fresh::Journals>,
    /// The grep index, when kept ([`Indexer::with_grep`]).
    grep: Option<Arc<GrepIndex>>,
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
/// The skip reason of the record a tracked ref keeps for a file it deletes.
pub const DELETED_ON_REF: &str = "deleted on this ref";

struct Plan {
    pending: Vec<Pending>,
    removals: Vec<String>,
    skipped: Vec<(ScannedFile, String)>,
    /// Paths a tracked ref deletes or renames away from its repository's indexed commit:
    /// recorded (no chunks) so that searches on the ref hide the repository's copy.
    deleted: Vec<String>,
    commit: Option<String>,
    configs: Vec<(String, String)>,
}

/// A parsed and chunked file, ready to embed and write.
struct Prepared {
    file: ScannedFile,
    hash: String,
    /// The metadata store has no record of the file.
    is_new: bool,
    /// The file's content (for the grep index).
    bytes: Vec<u8>,
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
            journals: None,
            grep: None,
        })
    }

    /// Keeps the content of every indexed file in `grep`, written with each batch before
    /// the batch's records (so a file the metadata store calls indexed is always there);
    /// files it lacks (an index made before it, or a lost one) are read again by the next
    /// sync.
    pub fn with_grep(mut self, grep: Arc<GrepIndex>) -> Self {
        self.grep = Some(grep);
        self
    }

    /// The grep index, when kept.
    pub fn grep(&self) -> Option<&Arc<GrepIndex>> {
        self.grep.as_ref()
    }

    /// Replaces `docs`' and `removed`'s versions in the grep index (when kept), off the
    /// async threads.
    async fn grep_replace(
        &self,
        repo_id: &str,
        docs: Vec<NewDoc>,
        removed: Vec<String>,
    ) -> Result<(), IndexError> {
        let Some(grep) = self.grep.clone() else {
            return Ok(());
        };
        if docs.is_empty() && removed.is_empty() {
            return Ok(());
        }
        let repo_id = repo_id.to_string();
        tokio::task::spawn_blocking(move || grep.replace(&repo_id, &docs, &removed))
            .await
            .map_err(|e| IndexError::Task(e.to_string()))??;
        Ok(())
    }

    /// The metadata store.
    pub fn meta(&self) -> &Arc<dyn MetaStore> {
        &self.meta
    }

    /// The chunk store.
    pub fn vectors(&self) -> &Arc<dyn VectorStore> {
        &self.vectors
    }

    fn embed_lock(&self, repo_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        keyed_lock(&self.embed_locks, repo_id)
    }

    fn repo_lock(&self, repo_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        keyed_lock(&self.repo_locks, repo_id)
    }

    /// Where the bare mirror of a git repository lives.
    pub fn checkout_dir(&self, repo_id: &str) -> PathBuf {
        self.options.checkout_dir.join(repo_id)
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
            report.vectors(),
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
