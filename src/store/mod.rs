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
//!
//! # Design notes
//!
//! - `MetaStore` (trait) / `SqlMetaStore` (one implementation over sqlx's `Any` driver):
//!   repositories, files, symbols, edges, jobs, API tokens. The backend comes from the URL:
//!   `postgres://…` → PostgreSQL, a path or `sqlite:` URL → SQLite (default
//!   `<data-dir>/sextant.db`, created on first start; `DATABASE_URL` overrides). Queries are
//!   runtime strings in the SQL subset both accept (`$N` placeholders, `ON CONFLICT … DO
//!   UPDATE`); migrations in `migrations/` are portable SQL (TEXT/BIGINT, booleans as 0/1,
//!   timestamps as ms since epoch, JSON as TEXT), embedded with `sqlx::migrate!` and applied
//!   at open. Multi-row changes run in transactions (`replace_file_symbols`,
//!   `replace_file_edges`, `delete_file`, `delete_repository`); cascades also exist as
//!   foreign keys (SQLite's are checked on at open). The job queue claims with a
//!   compare-and-set on `state`; ids are UUIDv7, so `ORDER BY id` is FIFO.
//! - `VectorStore` (trait) / `LanceStore`: one LanceDB table of chunk rows (every
//!   `CodeChunk` field + repo id, file path, content hash, mtime, `vector` as a fixed-size
//!   list whose width is the configured model's, and `embedded`), keyed by (`repo_id`,
//!   `id`). Vectors are half-precision floats in tables created since 2026-11-27 (half
//!   the bytes of the largest column; tables created before keep `f32`, read and written
//!   as such); a row's `full_source` is stored as "lines `start_line..=end_line` of the
//!   file's version `content_hash`" where the store reads files from the grep index
//!   ([`FileSource`], `LanceStore::with_sources`), and its `content` and `embedding_text`
//!   relative to its `full_source` (`texts`: a leaf's code once, a member's or container's content as
//!   offsets into its code, an embedding text as its preamble, and only until the row has
//!   its vector). Columns added since the first release (`embedded`, `native_kind`) are appended
//!   to stores written before them when they are opened. A row may be written before its vector (`ChunkRow::vector` empty: a zero vector
//!   with `embedded = false`); vector search only reads embedded rows, text search all.
//!   The `embedded = true` filter is added only while some row lacks its vector
//!   (`all_embedded`, counted once per table version): under the ANN index a filtered
//!   query costs a column scan.
//!   `unembedded` lists a repository's rows without vectors, `set_vectors` stores vectors
//!   for them (one `merge_insert` that updates a row only while its `content_hash` is the
//!   one that was embedded), `embedding_state` counts, `forget_vectors` marks every row
//!   unembedded (a change of model; `unembedded` leaves out rows whose text went with their
//!   vector, which wait for their files to be chunked again). Tables written before the column get it (`true`) on
//!   open; `LanceStore::width` / `destroy` serve a change of model to another width.
//!   `replace_files` is one `merge_insert` (update matched, insert new, delete the files'
//!   rows not in the new set): one commit, so readers see a file's old chunks or its new
//!   ones, never a mix. Filters (`ChunkFilter`: repositories, paths, languages, kinds; at most
//!   `MAX_FILTER_ENTRIES` (100) per list, checked by `ChunkFilter::validate` before any work)
//!   become one bounded SQL predicate pushed into LanceDB (pre-filtering: value lists as one
//!   `IN`, paths as one flat `OR`); path globs are pushed down as `LIKE` supersets and
//!   re-checked exactly by a `PathMatcher` (one `GlobSet`) compiled once per query. Reads (searches, `get`,
//!   `files_chunks`: every result file of an answer in one read) project every column but
//!   `search_text`, which only the FTS index uses.
//! - Compact forms in SQL: a file's graph facts are zstd-compressed JSON (`sql::facts`,
//!   a tenth of the JSON), the embedding cache's vectors half-precision (`h:` base64);
//!   rows written before either read back as they were.
//! - Index/compaction policy (`maintain`): FTS index on `search_text` with the first rows
//!   (later rows are flat-scanned until folded in); IVF-PQ (cosine) from `ann_min_rows`
//!   (10,000) rows and every row has its vector (an exact scan of jest's 26,000 rows cost
//!   38 ms of a search, the index 12 ms, with the same ranking quality: docs/BENCHMARKS.md);
//!   LanceDB sizes its partitions for 8,192 rows and splits those that outgrow 4x that
//!   (smaller partitions halved a filtered ANN query at 108k rows, not a search); its
//!   candidates re-scored with full vectors (`ann_refine_factor`, 10); compaction and pruning of versions older than `prune_older_than`.
//!   LanceDB's scan reads the vectors from disk at every query; `flat` holds the table's
//!   vectors and rows in memory (both or neither, up to `held_bytes`, 256 MiB) while
//!   they are the table's current version: a vector search is one exact scan, a text
//!   search is scored by BM25 over the held text (`bm25`), and rows and whole files are
//!   read from memory.
//!   Writers run `maintain` every `maintain_every_writes` writes, and as soon as
//!   `reindex_after_rows` (1,000) rows are outside the FTS index (counted from the index's
//!   own statistics at open), so one large file is never flat-scanned for long. Writes are serialised by a
//!   lock inside the store, so pruning unverified files is safe in the single-process
//!   embedded deployment; a multi-replica deployment on object storage must run
//!   maintenance from one place.

pub mod block_cache;
pub mod bm25;
pub mod dot;
mod embed_cache;
mod error;
mod filter;
pub mod flat;
pub mod grep;
mod lance;
mod meta;
mod rows;
mod sql;
mod texts;
mod vector;

pub use embed_cache::{CachedModel, decode_vector, encode_vector};
pub use error::StoreError;
pub use filter::{
    ChunkFilter, MAX_FILTER_ENTRIES, MAX_FILTER_ENTRY_BYTES, PathMatcher, RefView, glob_to_like,
};
pub use lance::{
    DEFAULT_HELD_MB, DEFAULT_INDEX_CACHE_MB, DEFAULT_READ_CONSISTENCY, LanceStore,
    LanceStoreOptions,
};
pub use meta::{
    ApiToken, Credentials, EdgeKind, EdgeRecord, Enqueued, FileCounts, FileRecord, Job, JobState,
    Lease, MetaStore, NewJob, NewRepository, RepoSettings, RepoSource, RepoStatus, Repository,
    SymbolName, SymbolRecord,
};
pub use sql::{DatabaseSize, SqlMetaStore, file_id};
pub use texts::{FileText, LineStarts};
pub use vector::{
    ChunkRow, EmbeddingState, PendingVector, ScoredChunk, StoreStats, StoreStorage, VectorStore,
};

/// Files' contents by version: where a chunk store reads the code of rows that keep
/// only their place in their file ([`ChunkRow::code_in_file`]). The grep index
/// ([`grep::GrepIndex`]) is the one implementation: it holds every indexed file's
/// content, so the chunk store need not hold the code again.
pub trait FileSource: Send + Sync + std::fmt::Debug {
    /// The text (UTF-8, invalid bytes replaced) of the version `hash` of `path` in
    /// repository `repo_id`, with its line starts, or `None` where no such version is held.
    fn file_text(&self, repo_id: &str, path: &str, hash: &str) -> Option<std::sync::Arc<FileText>>;
}

/// Milliseconds since the Unix epoch, the one timestamp unit stored everywhere.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
