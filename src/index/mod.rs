//! Indexing: turns a registered repository into stored chunks, symbols, vectors and file
//! records, and keeps them in sync with the files.
//!
//! - [`scan`]: enumerate a working tree (ignore files, skipped folders, filters, limits).
//! - [`engine`]: [`Indexer`] registers and removes repositories and runs [`Indexer::sync`]:
//!   the blueprint's two-phase change check (mtime trigger, SHA-256 confirmation),
//!   re-parse/re-chunk/re-embed of changed files only, deletion of removed files, one
//!   sync per repository at a time, per-file errors recorded and never fatal.
//! - [`git`]: bare mirrors fetched with git2; tree-to-tree diffs, blob ids as hashes.
//! - [`source`]: what a git source string means (transport, host, credentials taken out
//!   of the URL) and which addresses a fetch may reach ([`GitPolicy`]).
//! - [`jobs`]: durable sync jobs in the jobs table, a runner with a concurrency limit,
//!   re-queueing of jobs a crash left running.
//! - [`watch`]: optional debounced file watching of working trees → sync jobs.
//! - [`progress`]: phase/count/rate/ETA events on a broadcast channel.
//!
//! Embedding goes through whatever [`crate::embed::Embedder`] the caller passes; pass a
//! [`crate::embed::CachedEmbedder`] so identical text is never embedded twice (the CLI
//! does, over the SQL store). Calls `parse` and `chunk`; writes through the `store`
//! traits. Must not depend on `search`, `render` or `api`.

pub mod engine;
mod error;
pub mod fetch_proxy;
pub mod git;
mod graph;
pub mod jobs;
pub mod progress;
pub mod scan;
pub mod source;
pub mod watch;

pub use engine::{
    DEFAULT_BATCH_FILES, GitPolicy, IndexOptions, Indexer, ModelChange, RepoAudit, SyncReport,
};
pub use error::IndexError;
pub use jobs::{JobOutcome, JobRunner};
pub use progress::{Phase, Progress, ProgressEvent};
pub use scan::{CONFIG_FILES, FileFilter, Scan, ScannedFile, read_sources, scan_tree};
