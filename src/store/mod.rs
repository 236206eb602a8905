//! Persistence: metadata in SQL, chunks with vectors and lexical text in LanceDB.
//!
//! Two traits keep the rest of Sextant independent of the databases:
//!
//! - [`MetaStore`]: repositories, files, symbols, graph edges, jobs and API tokens, in SQL
//!   through sqlx ([`SqlMetaStore`]: a SQLite file by default, Postgres when the URL says
//!   so; one implementation over sqlx's `Any` driver, migrations applied at open).
//! - [`VectorStore`]: chunk rows ([`ChunkRow`]) with vectors and `search_text`, upserted a
//!   file at a time, searched by vector or BM25 with filters pushed into the store
//!   ([`LanceStore`]: a LanceDB directory, `<data-dir>/lance` by default).
//!
//! The SQL store also serves as the persistent embedding cache (`embed::VectorCache`).
//!
//! This layer knows the data types of `parse` and `chunk` and nothing of how they are
//! produced or searched.

mod embed_cache;
mod error;
mod filter;
mod lance;
mod meta;
mod sql;
mod vector;

pub use embed_cache::{decode_vector, encode_vector};
pub use error::StoreError;
pub use filter::{
    ChunkFilter, MAX_FILTER_ENTRIES, MAX_FILTER_ENTRY_BYTES, PathMatcher, glob_to_like,
};
pub use lance::{LanceStore, LanceStoreOptions};
pub use meta::{
    ApiToken, Credentials, EdgeKind, EdgeRecord, Enqueued, FileCounts, FileRecord, Job, JobState,
    MetaStore, NewJob, NewRepository, RepoSettings, RepoSource, RepoStatus, Repository,
    SymbolRecord,
};
pub use sql::SqlMetaStore;
pub use vector::{ChunkRow, EmbeddingState, PendingVector, ScoredChunk, StoreStats, VectorStore};

/// Milliseconds since the Unix epoch, the one timestamp unit stored everywhere.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
