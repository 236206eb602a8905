//! The API's records as they travel: camelCase field names (the blueprint's casing,
//! used by every body, event and MCP argument), documented for OpenAPI. The store's
//! records stay plain; these are built from them at the edge.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::service::records::{self, JobState, RepoSource, RepoStatus};

/// A registered repository.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
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
    /// Lifecycle state.
    pub status: RepoStatus,
    /// Last sync error.
    pub last_error: Option<String>,
    /// Indexing settings.
    pub settings: Settings,
    /// Created (ms since epoch).
    pub created_at: i64,
    /// Last changed (ms since epoch).
    pub updated_at: i64,
}

impl From<records::Repository> for Repository {
    fn from(r: records::Repository) -> Self {
        Self {
            id: r.id,
            name: r.name,
            source: r.source,
            tracked_ref: r.tracked_ref,
            indexed_commit: r.indexed_commit,
            status: r.status,
            last_error: r.last_error,
            settings: r.settings.into(),
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// Per-repository indexing settings; a field left out takes its default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Settings {
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
}

impl Default for Settings {
    fn default() -> Self {
        records::RepoSettings::default().into()
    }
}

impl From<records::RepoSettings> for Settings {
    fn from(s: records::RepoSettings) -> Self {
        Self {
            include: s.include,
            exclude: s.exclude,
            max_file_bytes: s.max_file_bytes,
            max_files: s.max_files,
            languages: s.languages,
            watch: s.watch,
            fetch_interval_secs: s.fetch_interval_secs,
            path_roles: s.path_roles,
        }
    }
}

impl From<Settings> for records::RepoSettings {
    fn from(s: Settings) -> Self {
        Self {
            include: s.include,
            exclude: s.exclude,
            max_file_bytes: s.max_file_bytes,
            max_files: s.max_files,
            languages: s.languages,
            watch: s.watch,
            fetch_interval_secs: s.fetch_interval_secs,
            path_roles: s.path_roles,
        }
    }
}

/// A durable job (a sync).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    /// Id.
    pub id: String,
    /// The repository it works on.
    pub repo_id: Option<String>,
    /// Kind (`sync`).
    pub kind: String,
    /// State.
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
}

impl From<records::Job> for Job {
    fn from(j: records::Job) -> Self {
        Self {
            id: j.id,
            repo_id: j.repo_id,
            kind: j.kind,
            state: j.state,
            progress_done: j.progress_done,
            progress_total: j.progress_total,
            message: j.message,
            error: j.error,
            attempts: j.attempts,
            created_at: j.created_at,
            started_at: j.started_at,
            finished_at: j.finished_at,
            updated_at: j.updated_at,
        }
    }
}

/// One file of a repository, indexed or skipped.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct File {
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

impl From<records::FileRecord> for File {
    fn from(f: records::FileRecord) -> Self {
        Self {
            path: f.path,
            language: f.language,
            content_hash: f.content_hash,
            mtime_ms: f.mtime_ms,
            size_bytes: f.size_bytes,
            line_count: f.line_count,
            symbol_count: f.symbol_count,
            indexed_at: f.indexed_at,
            skip_reason: f.skip_reason,
        }
    }
}

/// One symbol of a file.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Symbol {
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

impl From<records::SymbolRecord> for Symbol {
    fn from(s: records::SymbolRecord) -> Self {
        Self {
            chunk_id: s.chunk_id,
            name: s.name,
            kind: s.kind,
            parent_chunk_id: s.parent_chunk_id,
            parent_name: s.parent_name,
            breadcrumb: s.breadcrumb,
            signature: s.signature,
            modifiers: s.modifiers,
            exported: s.exported,
            depth: s.depth,
            start_line: s.start_line,
            end_line: s.end_line,
        }
    }
}

/// Converts each element (store records to wire records).
pub(crate) fn all<T, W: From<T>>(items: Vec<T>) -> Vec<W> {
    items.into_iter().map(W::from).collect()
}
