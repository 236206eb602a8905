//! The indexing layer's error type.

use std::path::PathBuf;

use crate::embed::EmbedError;
use crate::store::StoreError;

/// Why an indexing operation failed. Per-file problems are not errors: they are recorded
/// as the file's skip reason and the sync goes on.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// A store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Embedding failed (the sync stops: files already written stay consistent).
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// A repository path is not acceptable.
    #[error("cannot register {path}: {reason}")]
    PathRefused {
        /// The path given.
        path: PathBuf,
        /// Why, and what to do.
        reason: String,
    },
    /// The repository does not exist.
    #[error("no repository named or with id `{0}`; `sextant repo list` shows them")]
    UnknownRepo(String),
    /// The repository does not track this ref.
    #[error(
        "`{repository}` does not track `{git_ref}`: add it with `sextant repo ref add \
         {repository} {git_ref}` (or POST /api/v1/repositories/{repository}/refs); \
         `sextant repo ref list {repository}` shows the refs it tracks"
    )]
    UnknownRef {
        /// The repository's name.
        repository: String,
        /// The ref asked for.
        git_ref: String,
    },
    /// The repository root cannot be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// Path concerned.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// A setting is invalid (e.g. a glob).
    #[error("invalid setting: {0}")]
    Settings(String),
    /// The store's vector width does not match the embedder's.
    #[error(
        "the chunk store holds {store}-dim vectors but the embedder `{model}` produces {model_dims}: \
         use the model the index was built with, or a new --lance-uri"
    )]
    DimensionMismatch {
        /// Store width.
        store: usize,
        /// Embedder id.
        model: String,
        /// Embedder width.
        model_dims: usize,
    },
    /// The index was built with another embedding model than the configured one (same
    /// The disk holding the data directory is full; nothing half-written stays (each file
    /// is replaced whole or not at all).
    #[error(
        "the disk holding the index is full ({0}). Free space on it (or move the data \
         directory) and sync again: files indexed before stay searchable, and the next sync \
         picks up where this one stopped"
    )]
    DiskFull(StoreError),
    /// A git operation failed (clone, fetch, ref resolution, diff).
    #[error("git: {0}")]
    Git(String),
    /// A background task failed.
    #[error("indexing task failed: {0}")]
    Task(String),
}

impl IndexError {
    /// The same error, said in terms a user can act on where a store's error has a known
    /// cause (a full disk).
    pub fn explained(self) -> Self {
        match self {
            IndexError::Store(e) if e.is_disk_full() => IndexError::DiskFull(e),
            other => other,
        }
    }
}
