//! The metadata store's records and trait.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use super::StoreError;

/// Where a repository's files come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "type", content = "location", rename_all = "lowercase")]
pub enum RepoSource {
    /// A local directory (working tree or plain directory).
    Path(String),
    /// A git URL, cloned into the data directory.
    Git(String),
}

impl RepoSource {
    fn kind(&self) -> &'static str {
        match self {
            Self::Path(_) => "path",
            Self::Git(_) => "git",
        }
    }

    fn location(&self) -> &str {
        match self {
            Self::Path(p) | Self::Git(p) => p,
        }
    }

    pub(crate) fn split(&self) -> (&'static str, &str) {
        (self.kind(), self.location())
    }

    pub(crate) fn join(kind: &str, location: String) -> Result<Self, StoreError> {
        match kind {
            "path" => Ok(Self::Path(location)),
            "git" => Ok(Self::Git(location)),
            other => Err(StoreError::Invalid(format!(
                "unknown repository source kind `{other}`"
            ))),
        }
    }
}

/// A repository's lifecycle state. Its name (`ready`) is the same in the store, on the
/// wire and in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[derive(
    strum::Display, strum::EnumString, strum::IntoStaticStr, strum::EnumIter, utoipa::ToSchema,
)]
#[strum(serialize_all = "lowercase")]
pub enum RepoStatus {
    /// Registered, never indexed.
    Registered,
    /// A sync is running.
    Indexing,
    /// Indexed and searchable.
    Ready,
    /// The last sync failed (see `last_error`).
    Error,
}

/// `as_str` (the stored name) and `TryFrom<String>` (reading it back, for `sqlx::FromRow`)
/// of enums whose names strum derives.
macro_rules! stored_name {
    ($($t:ty),*) => {$(
        impl $t {
            /// The name as stored and shown.
            pub fn as_str(self) -> &'static str {
                self.into()
            }
        }

        impl TryFrom<String> for $t {
            type Error = StoreError;

            fn try_from(s: String) -> Result<Self, StoreError> {
                s.parse().map_err(|_| {
                    StoreError::Invalid(format!(
                        "unknown {} `{s}` in the store",
                        stringify!($t)
                    ))
                })
            }
        }
    )*};
}

stored_name!(RepoStatus, JobState, EdgeKind);

impl TryFrom<String> for crate::auth::Scope {
    type Error = StoreError;

    fn try_from(s: String) -> Result<Self, StoreError> {
        s.parse().map_err(|_| {
            StoreError::Invalid(format!(
                "unknown token scope `{s}` in the store; revoke the token and create a new one"
            ))
        })
    }
}

/// Per-repository indexing settings; a field left out takes its default.
// The same record is stored (as JSON, read by `sql::stored_settings`) and travels on the
// wire; an unknown field is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[schema(as = Settings)]
pub struct RepoSettings {
    /// Globs of files to include (empty: every supported file).
    pub include: Vec<String>,
    /// Globs of files to exclude.
    pub exclude: Vec<String>,
    /// Largest file indexed, in bytes (default 1 MiB).
    pub max_file_bytes: u64,
    /// Most files indexed (default 100,000).
    pub max_files: u64,
    /// Language ids to index (empty: all).
    pub languages: Vec<String>,
    /// Watch the working tree for changes (directories only).
    pub watch: bool,
    /// Seconds between fetches of a git repository (0: never).
    pub fetch_interval_secs: u64,
    /// Ranking roles of paths: role name (`source`, `test`, `fixture`, `example`,
    /// `declaration`, `generated`) → globs, checked before the built-in rules (tests,
    /// fixtures, examples, `.d.ts` and generated files rank a little lower unless a
    /// question asks for them).
    pub path_roles: std::collections::BTreeMap<String, Vec<String>>,
    /// Git repositories: globs of branches and tags to track besides the default ref
    /// (`release/*`, `v2.*`). After each sync of the repository, matching branches and
    /// tags are tracked as refs, and refs whose branch or tag is gone are dropped.
    pub refs: Vec<String>,
}

impl Default for RepoSettings {
    fn default() -> Self {
        Self {
            include: Vec::new(),
            exclude: Vec::new(),
            max_file_bytes: 1024 * 1024,
            max_files: 100_000,
            languages: Vec::new(),
            watch: false,
            fetch_interval_secs: 0,
            path_roles: Default::default(),
            refs: Vec::new(),
        }
    }
}

/// What registering a repository needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRepository {
    /// Unique display name.
    pub name: String,
    /// Source.
    pub source: RepoSource,
    /// Tracked branch or ref (git).
    pub tracked_ref: Option<String>,
    /// Settings.
    pub settings: RepoSettings,
}

/// A registered repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Repository {
    /// Stable id.
    pub id: String,
    /// Unique display name.
    pub name: String,
    /// Where its files come from: `{"type": "path" | "git", "location": …}`.
    pub source: RepoSource,
    /// Tracked branch, tag or commit (git).
    pub tracked_ref: Option<String>,
    /// Commit the index reflects (git).
    pub indexed_commit: Option<String>,
    /// For a tracked ref beyond the default one: the repository it belongs to (the ref
    /// holds only the files that differ from that repository's indexed commit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    /// Lifecycle state.
    pub status: RepoStatus,
    /// Last sync error.
    pub last_error: Option<String>,
    /// Indexing settings.
    pub settings: RepoSettings,
    /// Created (ms since epoch).
    pub created_at: i64,
    /// Last changed (ms since epoch).
    pub updated_at: i64,
}

/// One file of a repository, indexed or skipped.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = File)]
pub struct FileRecord {
    /// Repository id.
    pub repo_id: String,
    /// Path relative to the repository root, `/`-separated.
    pub path: String,
    /// Language id, when supported.
    pub language: Option<String>,
    /// SHA-256 (working trees) or git blob id of the content.
    pub content_hash: Option<String>,
    /// Modification time (ms since epoch).
    pub mtime_ms: Option<i64>,
    /// Size in bytes.
    pub size_bytes: i64,
    /// Lines.
    pub line_count: i64,
    /// Symbols extracted.
    pub symbol_count: i64,
    /// When it was last indexed (ms since epoch).
    pub indexed_at: Option<i64>,
    /// Why it was not indexed, when it was not.
    pub skip_reason: Option<String>,
}

/// Where a symbol is and what it is called: what a graph shows of the symbol at the
/// other end of an edge ([`MetaStore::symbol_names`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolName {
    /// Its chunk id.
    pub chunk_id: String,
    /// Its file's path.
    pub path: String,
    /// `Parent > name`.
    pub breadcrumb: String,
}

/// One symbol (one chunk) of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Symbol)]
pub struct SymbolRecord {
    /// Chunk id (unique within the repository).
    pub chunk_id: String,
    /// Name or statement label.
    pub name: String,
    /// Node kind (`function`, `method`, `class`…).
    pub kind: String,
    /// The enclosing symbol's chunk id.
    pub parent_chunk_id: Option<String>,
    /// The enclosing symbol's name.
    pub parent_name: Option<String>,
    /// `Parent > name`.
    pub breadcrumb: String,
    /// Signature.
    pub signature: String,
    /// Modifiers, space-separated.
    pub modifiers: String,
    /// Exported from its module.
    pub exported: bool,
    /// Nesting depth.
    pub depth: i64,
    /// First line (1-based).
    pub start_line: i64,
    /// Last line.
    pub end_line: i64,
}

impl SymbolRecord {
    /// The record of one chunk.
    pub fn from_chunk(chunk: &crate::chunk::CodeChunk) -> Self {
        Self {
            chunk_id: chunk.id.clone(),
            name: chunk.name.clone(),
            kind: chunk.node_kind.as_str().to_string(),
            parent_chunk_id: chunk.parent_chunk_id.clone(),
            parent_name: chunk.parent_name.clone(),
            breadcrumb: chunk.breadcrumb.clone(),
            signature: chunk.signature.clone(),
            modifiers: chunk
                .modifiers
                .iter()
                .map(|m| m.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            exported: chunk.exported,
            depth: i64::from(chunk.depth),
            start_line: i64::from(chunk.start_line),
            end_line: i64::from(chunk.end_line),
        }
    }
}

/// Kind of a symbol-graph edge (`param-type` in the store and on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[derive(strum::Display, strum::EnumString, strum::IntoStaticStr, strum::EnumIter)]
#[strum(serialize_all = "kebab-case")]
pub enum EdgeKind {
    /// Calls.
    Calls,
    /// References.
    References,
    /// Extends.
    Extends,
    /// Implements.
    Implements,
    /// Uses a type (outside parameter and return annotations).
    Type,
    /// Names a type in a parameter annotation.
    ParamType,
    /// Names a type in the return annotation.
    ReturnType,
    /// Imports a file (`to_name` is the file's path, or `?specifier` when it did not
    /// resolve; `to_chunk` is empty).
    Imports,
}

/// One edge of the symbol graph, owned by the file of its source symbol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EdgeRecord {
    /// Source chunk id.
    pub from_chunk: String,
    /// Target chunk id when resolved.
    pub to_chunk: Option<String>,
    /// Target name as written.
    pub to_name: String,
    /// Kind.
    pub kind: EdgeKind,
    /// Whether the target was resolved with certainty.
    pub certain: bool,
    /// Line of the occurrence.
    pub line: Option<i64>,
}

/// State of a job (`running` in the store, on the wire and in messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[derive(
    strum::Display, strum::EnumString, strum::IntoStaticStr, strum::EnumIter, utoipa::ToSchema,
)]
#[strum(serialize_all = "lowercase")]
pub enum JobState {
    /// Waiting for a worker.
    Queued,
    /// Claimed by a worker.
    Running,
    /// Finished successfully.
    Succeeded,
    /// Finished with an error.
    Failed,
    /// Cancelled before finishing.
    Cancelled,
}

/// What asking for a job that must not run twice did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enqueued {
    /// Queued: no such job was queued or running.
    Queued(Job),
    /// Not queued: this job of the same kind and repository is queued or running.
    Active(Job),
}

/// What enqueueing a job needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewJob {
    /// Repository the job works on.
    pub repo_id: Option<String>,
    /// Job kind (`sync`, `full-reindex`, …).
    pub kind: String,
}

/// A durable job (a sync).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    /// Id.
    pub id: String,
    /// The repository it works on.
    pub repo_id: Option<String>,
    /// Kind (`sync`).
    pub kind: String,
    /// State.
    #[sqlx(try_from = "String")]
    pub state: JobState,
    /// Units done.
    pub progress_done: i64,
    /// Units in total (0: unknown).
    pub progress_total: i64,
    /// Latest progress message.
    pub message: Option<String>,
    /// Error of a failed job.
    pub error: Option<String>,
    /// Times it was claimed.
    pub attempts: i64,
    /// Created (ms since epoch).
    pub created_at: i64,
    /// Claimed.
    pub started_at: Option<i64>,
    /// Finished.
    pub finished_at: Option<i64>,
    /// Last change.
    pub updated_at: i64,
    /// The process (replica) that holds a running job.
    pub lease_owner: Option<String>,
    /// Until when it holds it (ms since epoch) unless it renews the lease: past this,
    /// the job goes back to the queue for another process.
    pub lease_until: Option<i64>,
    /// A queued job being retried after a store did not answer is not claimed before
    /// this time (ms since epoch): the retry's back-off.
    pub not_before: Option<i64>,
}

/// A claim on a job: who holds it, and for how long without a renewal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The holder's name (unique per process: see `JobRunner`).
    pub owner: String,
    /// How long the claim lasts without a renewal.
    pub ttl: std::time::Duration,
}

impl Lease {
    /// When a lease taken or renewed at `now` (ms since epoch) runs out.
    pub fn until(&self, now: i64) -> i64 {
        now.saturating_add(i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX))
    }
}

/// File and symbol counts of one repository.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileCounts {
    /// Files indexed.
    pub indexed: i64,
    /// Files seen but not indexed (too large, binary, over the limits…).
    pub skipped: i64,
    /// Symbols of the indexed files.
    pub symbols: i64,
}

/// An API token (only its hash is stored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiToken {
    /// Id.
    pub id: String,
    /// Label.
    pub name: String,
    /// SHA-256 of the secret, hex.
    pub token_hash: String,
    /// What it may do.
    pub scope: crate::auth::Scope,
    /// Repository ids it may see (empty: all).
    pub repositories: Vec<String>,
    /// Created.
    pub created_at: i64,
    /// Revoked, when revoked.
    pub revoked_at: Option<i64>,
}

/// A user name and password (or token) for fetching a git source, taken out of its URL
/// at registration. Its `Debug` hides both.
#[derive(Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Credentials {
    /// User name (for token-in-URL forms, often the token itself).
    pub username: String,
    /// Password or token.
    pub password: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &"<hidden>")
            .field("password", &self.password.as_ref().map(|_| "<hidden>"))
            .finish()
    }
}

/// Repository, file, symbol, edge, job and token metadata.
#[async_trait]
pub trait MetaStore: Send + Sync {
    /// Which backend (`sqlite` / `postgres`), for logs and `/readyz`.
    fn backend(&self) -> &'static str;
    /// Whether other processes may run jobs on this database (PostgreSQL); a SQLite
    /// file has one such process.
    fn shared(&self) -> bool {
        self.backend() != "sqlite"
    }
    /// Checks the database answers.
    async fn ping(&self) -> Result<(), StoreError>;

    /// Registers a repository; `Conflict` when the name is taken.
    async fn create_repository(&self, new: NewRepository) -> Result<Repository, StoreError>;
    /// A repository by id.
    async fn get_repository(&self, id: &str) -> Result<Option<Repository>, StoreError>;
    /// A repository by name.
    async fn get_repository_by_name(&self, name: &str) -> Result<Option<Repository>, StoreError>;
    /// All repositories by name.
    async fn list_repositories(&self) -> Result<Vec<Repository>, StoreError>;
    /// Replaces settings and tracked ref.
    async fn update_repository_settings(
        &self,
        id: &str,
        tracked_ref: Option<String>,
        settings: &RepoSettings,
    ) -> Result<Repository, StoreError>;
    /// Sets status, last error and (when `Some`) the indexed commit.
    async fn set_repository_status(
        &self,
        id: &str,
        status: RepoStatus,
        last_error: Option<&str>,
        indexed_commit: Option<&str>,
    ) -> Result<(), StoreError>;
    /// Registers `ref_name` as a tracked ref of `parent`: a repository row named
    /// `{parent}@{ref}`, with an id `{parent id}@{…}`, the parent's settings, `parent_id`
    /// set and `source` (the parent's for a git ref, the worktree's directory for a
    /// worktree of a local repository).
    /// `Conflict` when the parent tracks that ref already.
    async fn create_ref(
        &self,
        parent: &Repository,
        ref_name: &str,
        source: &RepoSource,
    ) -> Result<Repository, StoreError>;
    /// The tracked refs of a repository (beyond its default one), by name.
    async fn list_refs(&self, parent_id: &str) -> Result<Vec<Repository>, StoreError>;
    /// Removes a repository and everything of it (files, symbols, edges, jobs).
    async fn delete_repository(&self, id: &str) -> Result<bool, StoreError>;

    /// Inserts or replaces one file row (no symbol change).
    async fn upsert_file(&self, file: &FileRecord) -> Result<(), StoreError>;
    /// One file.
    async fn get_file(&self, repo_id: &str, path: &str) -> Result<Option<FileRecord>, StoreError>;
    /// Every file of a repository, by path.
    async fn list_files(&self, repo_id: &str) -> Result<Vec<FileRecord>, StoreError>;
    /// How many files of a repository are indexed and skipped, and their symbols
    /// (counted in the store, not by listing).
    async fn file_counts(&self, repo_id: &str) -> Result<FileCounts, StoreError>;
    /// Removes a file with its symbols and edges.
    async fn delete_file(&self, repo_id: &str, path: &str) -> Result<bool, StoreError>;
    /// Atomically writes a file row and replaces all its symbols.
    async fn replace_file_symbols(
        &self,
        file: &FileRecord,
        symbols: &[SymbolRecord],
    ) -> Result<(), StoreError>;
    /// [`MetaStore::replace_file_symbols`] for many files in one transaction (the
    /// indexer's batch path).
    async fn replace_files_symbols(
        &self,
        files: &[(FileRecord, Vec<SymbolRecord>)],
    ) -> Result<(), StoreError>;
    /// Symbols of one file, in source order.
    async fn file_symbols(
        &self,
        repo_id: &str,
        path: &str,
    ) -> Result<Vec<SymbolRecord>, StoreError>;
    /// Symbols of several files of one repository (one query per batch of paths), with
    /// their file path, in file and source order.
    async fn symbols_of_files(
        &self,
        repo_id: &str,
        paths: &[String],
    ) -> Result<Vec<(String, SymbolRecord)>, StoreError>;
    /// The symbols `ids` of one repository and their direct members (symbols whose parent
    /// is one of them), looked for in `paths` (the ids' files), with their file path, in
    /// file and source order: what a search's enrichment reads, without the rest of
    /// large files (a median of 313 symbols a search at c1m, for ~10 results).
    async fn symbols_and_members(
        &self,
        repo_id: &str,
        paths: &[String],
        ids: &[String],
    ) -> Result<Vec<(String, SymbolRecord)>, StoreError>;
    /// Symbols with this exact name in the given repositories (all when empty), with
    /// their repository id and file path.
    async fn symbols_named(
        &self,
        name: &str,
        repos: &[String],
    ) -> Result<Vec<(String, String, SymbolRecord)>, StoreError>;
    /// Distinct names of symbols that begin with `head`'s first character, compared
    /// without case, in the given repositories (all when empty): the names a misspelt or
    /// partial identifier may mean.
    async fn names_starting_like(
        &self,
        head: &str,
        repos: &[String],
    ) -> Result<Vec<String>, StoreError>;

    /// Atomically replaces the edges owned by one file.
    async fn replace_file_edges(
        &self,
        repo_id: &str,
        path: &str,
        edges: &[EdgeRecord],
    ) -> Result<(), StoreError>;
    /// Atomically replaces the edges owned by each of several files.
    async fn replace_files_edges(
        &self,
        repo_id: &str,
        files: &[(String, Vec<EdgeRecord>)],
    ) -> Result<(), StoreError>;
    /// Replaces the stored symbol-graph facts (JSON) of files; `None` removes them.
    async fn replace_files_facts(
        &self,
        repo_id: &str,
        facts: &[(String, Option<String>)],
    ) -> Result<(), StoreError>;
    /// Stored symbol-graph facts of the given files, `(path, json)`.
    async fn files_facts(
        &self,
        repo_id: &str,
        paths: &[String],
    ) -> Result<Vec<(String, String)>, StoreError>;
    /// Files with an `imports` edge to one of `targets` (paths, or `?base` for imports
    /// that did not resolve).
    async fn importers(&self, repo_id: &str, targets: &[String])
    -> Result<Vec<String>, StoreError>;
    /// The `imports` edges (import and re-export statements) that reach the file
    /// `target`, with the file each is in.
    async fn imports_of(
        &self,
        repo_id: &str,
        target: &str,
    ) -> Result<Vec<(String, EdgeRecord)>, StoreError>;
    /// Symbols by chunk id, with their file path.
    async fn symbols_by_id(
        &self,
        repo_id: &str,
        ids: &[String],
    ) -> Result<Vec<(String, SymbolRecord)>, StoreError>;
    /// The files and breadcrumbs of symbols by chunk id (what [`MetaStore::symbols_by_id`]
    /// reads, cut to what an edge's other end shows), in no set order.
    async fn symbol_names(
        &self,
        repo_id: &str,
        ids: &[String],
    ) -> Result<Vec<SymbolName>, StoreError>;
    /// Edges leaving any of these symbols (one query per batch of ids), ordered by
    /// source symbol, line and target name.
    async fn edges_from_any(
        &self,
        repo_id: &str,
        chunk_ids: &[String],
    ) -> Result<Vec<EdgeRecord>, StoreError>;
    /// Edges arriving at any of these symbols, ordered by target symbol, file and line.
    async fn edges_to_any(
        &self,
        repo_id: &str,
        chunk_ids: &[String],
    ) -> Result<Vec<EdgeRecord>, StoreError>;
    /// Edges leaving a symbol.
    async fn edges_from(
        &self,
        repo_id: &str,
        chunk_id: &str,
    ) -> Result<Vec<EdgeRecord>, StoreError> {
        self.edges_from_any(repo_id, &[chunk_id.to_string()]).await
    }
    /// Edges arriving at a symbol.
    async fn edges_to(&self, repo_id: &str, chunk_id: &str) -> Result<Vec<EdgeRecord>, StoreError> {
        self.edges_to_any(repo_id, &[chunk_id.to_string()]).await
    }

    /// Enqueues a job.
    async fn enqueue_job(&self, new: NewJob) -> Result<Job, StoreError>;
    /// Queues a job unless one of the same kind for the same repository is queued or
    /// running, as one atomic step: of concurrent callers exactly one queues, the others
    /// get the job that won.
    async fn enqueue_job_unless_active(&self, new: NewJob) -> Result<Enqueued, StoreError>;
    /// Claims the oldest queued job (optionally of one repository) under `lease`: it
    /// becomes running, held by the lease's owner, and its attempts grow by one. A job
    /// of a repository that already has a running job is passed over (one running job
    /// per repository, whichever process runs it). `None` when nothing is claimable.
    async fn claim_job(
        &self,
        repo_id: Option<&str>,
        lease: &Lease,
    ) -> Result<Option<Job>, StoreError>;
    /// Extends a running job's lease, if `lease.owner` still holds it; `false` when it
    /// does not (the job ended, or went back to the queue and another process took it).
    async fn renew_job_lease(&self, id: &str, lease: &Lease) -> Result<bool, StoreError>;
    /// Running jobs whose lease has run out (their process stopped renewing it) go back
    /// to the queue. Returns how many.
    async fn requeue_expired_jobs(&self) -> Result<u64, StoreError>;
    /// The running jobs `owner` holds go back to the queue at once, with `reason` (a
    /// process that stops hands its work to the others). Returns how many.
    async fn requeue_jobs_held_by(&self, owner: &str, reason: &str) -> Result<u64, StoreError>;
    /// Records progress of a running job.
    async fn update_job_progress(
        &self,
        id: &str,
        done: i64,
        total: i64,
        message: Option<&str>,
    ) -> Result<(), StoreError>;
    /// Finishes a job as succeeded, failed (with the error) or cancelled.
    async fn finish_job(
        &self,
        id: &str,
        state: JobState,
        error: Option<&str>,
    ) -> Result<(), StoreError>;
    /// One job.
    async fn get_job(&self, id: &str) -> Result<Option<Job>, StoreError>;
    /// The running jobs, whichever process runs them.
    async fn running_jobs(&self) -> Result<Vec<Job>, StoreError>;
    /// Jobs, newest first, optionally of one repository.
    async fn list_jobs(&self, repo_id: Option<&str>, limit: i64) -> Result<Vec<Job>, StoreError>;
    /// After a crash: running jobs go back to the queue. Returns how many. Only for a
    /// store no other process runs jobs on (one node); otherwise leases decide
    /// ([`MetaStore::requeue_expired_jobs`]).
    async fn requeue_running_jobs(&self) -> Result<u64, StoreError>;
    /// A running job goes back to the queue (to be tried again), with why; no process
    /// claims it before `not_before` (ms since epoch) when one is given.
    async fn requeue_job(
        &self,
        id: &str,
        reason: &str,
        not_before: Option<i64>,
    ) -> Result<(), StoreError>;

    /// Stores a token.
    async fn create_token(&self, token: &ApiToken) -> Result<(), StoreError>;
    /// A live (not revoked) token by the hash of its secret.
    async fn token_by_hash(&self, hash: &str) -> Result<Option<ApiToken>, StoreError>;
    /// All tokens.
    async fn list_tokens(&self) -> Result<Vec<ApiToken>, StoreError>;
    /// Revokes a token; false when unknown.
    async fn revoke_token(&self, id: &str) -> Result<bool, StoreError>;

    /// Stores (or with `None` removes) the credentials a git source's URL carried.
    async fn set_credentials(
        &self,
        repo_id: &str,
        credentials: Option<&Credentials>,
    ) -> Result<(), StoreError>;
    /// The credentials stored for a git source.
    async fn credentials(&self, repo_id: &str) -> Result<Option<Credentials>, StoreError>;
    /// Replaces a repository's git source with `url` (the same location without its
    /// credentials) and stores `credentials` for it, in one transaction: for sources
    /// registered before credentials were kept apart.
    async fn move_source_credentials(
        &self,
        repo_id: &str,
        url: &str,
        credentials: &Credentials,
    ) -> Result<(), StoreError>;

    /// Forgets the content hash and modification time of every file record, so that the
    /// next sync of each repository reads every file again (after a change of what
    /// parsing and chunking make of a file). Returns the records changed.
    async fn forget_file_contents(&self) -> Result<u64, StoreError>;

    /// A setting of the data directory (`None` when never set).
    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError>;
    /// Sets a setting of the data directory.
    async fn set_setting(&self, key: &str, value: &str) -> Result<(), StoreError>;
}
