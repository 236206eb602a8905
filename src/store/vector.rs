//! The chunk store's row type and trait.

use async_trait::async_trait;
use serde::Serialize;

use super::{ChunkFilter, StoreError};
use crate::chunk::CodeChunk;

/// One stored chunk: the chunker's [`CodeChunk`] plus what the indexer knows (repository,
/// file location, content hash, mtime) and its embedding.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChunkRow {
    /// Repository id. Chunk ids are unique within a repository; the store key is
    /// (`repo_id`, `chunk.id`).
    pub repo_id: String,
    /// Path as the indexer saw it (absolute for working trees, repo-rooted for git).
    pub file_path: String,
    /// The chunk.
    pub chunk: CodeChunk,
    /// SHA-256 or git blob id of the file content.
    pub content_hash: String,
    /// File mtime, ms since epoch.
    pub last_modified: i64,
    /// Embedding of `chunk.embedding_text`; its length must equal the store's dimensions,
    /// or empty for a row not embedded yet (found by text search only, until
    /// [`VectorStore::set_vectors`] gives it its vector).
    pub vector: Vec<f32>,
    /// Whether `chunk.full_source` is exactly lines `start_line..=end_line` of the file's
    /// version `content_hash` as the grep index holds it (`store::LineStarts::lines`,
    /// checked by the indexer): a chunk store that can read files back
    /// ([`super::FileSource`]) then stores the code once, in the grep index. Set again on
    /// rows read back so stored, so that writing one again (with its vector) keeps it so.
    #[serde(skip)]
    pub code_in_file: bool,
}

/// A search hit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoredChunk {
    /// The chunk.
    pub row: ChunkRow,
    /// Vector search: cosine similarity (1 − cosine distance, higher is closer). Text
    /// search: BM25 score.
    pub score: f32,
}

/// A stored row waiting for its embedding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingVector {
    /// Chunk id.
    pub id: String,
    /// Content hash of the file the row came from (a vector is only stored while the row
    /// still has it).
    pub content_hash: String,
    /// The text to embed (`chunk.embedding_text`).
    pub text: String,
}

/// How much of a repository (or the store) has its vectors.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct EmbeddingState {
    /// Rows.
    pub total: usize,
    /// Rows still without their vector.
    pub pending: usize,
}

impl EmbeddingState {
    /// Share of rows with their vector (1 when there are no rows).
    pub fn fraction(&self) -> f64 {
        if self.total == 0 {
            1.0
        } else {
            (self.total - self.pending.min(self.total)) as f64 / self.total as f64
        }
    }
}

/// Size and index state of the chunk store.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StoreStats {
    /// Rows.
    pub rows: usize,
    /// Whether an ANN index exists on the vectors.
    pub vector_index: bool,
    /// Whether the full-text index exists.
    pub text_index: bool,
    /// Rows the full-text index does not cover yet (searched by a flat scan).
    pub text_unindexed_rows: usize,
    /// Table version (grows with every write).
    pub version: u64,
    /// The columns with an index of any kind (vector, full-text, B-tree, bitmap), sorted.
    pub indexed_columns: Vec<String>,
}

/// What the chunk store keeps on disk, and what compaction would give back.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StoreStorage {
    /// Rows deleted (or replaced) but still in their data files until compaction.
    pub deleted_rows: usize,
    /// Table versions kept (each write makes one; maintenance prunes old ones).
    pub versions: usize,
    /// Data fragments, and how many of them are small (compaction merges those).
    pub fragments: usize,
    /// Fragments small enough to merge.
    pub small_fragments: usize,
    /// Bytes the current version's data and index files take.
    pub live_bytes: u64,
    /// Bytes of the table's directory on disk (every version kept, manifests, deletion
    /// files); `None` for a store that is not a local directory.
    pub disk_bytes: Option<u64>,
    /// Bytes of the table held in memory for searches (vectors, rows and their BM25
    /// index; 0 while none is held: a store over the limit, or not searched yet).
    pub held_bytes: u64,
    /// The most it may hold (`--search-memory-mb`; 0: searches always go through the
    /// store's indexes).
    pub held_limit_bytes: u64,
}

impl StoreStorage {
    /// Bytes on disk that the current version does not use: old versions and deleted
    /// rows, which maintenance (compaction and version pruning) gives back.
    pub fn reclaimable_bytes(&self) -> Option<u64> {
        self.disk_bytes.map(|d| d.saturating_sub(self.live_bytes))
    }
}

/// Chunk rows with vectors and lexical text.
///
/// `chunk.search_text` is written for the full-text index only: rows read back (search
/// hits, [`VectorStore::get`], [`VectorStore::file_chunks`]) carry it empty.
/// `chunk.embedding_text` is kept until the row's vector is stored: a row read back with
/// its vector carries it empty.
#[async_trait]
pub trait VectorStore: Send + Sync {
    /// Vector width.
    fn dims(&self) -> usize;
    /// Replaces every chunk of one file with `rows`, atomically: a reader sees either the
    /// old set or the new one. Empty `rows` removes the file's chunks.
    async fn replace_file(
        &self,
        repo_id: &str,
        relative_path: &str,
        rows: Vec<ChunkRow>,
    ) -> Result<(), StoreError>;
    /// [`VectorStore::replace_file`] for many files of one repository in a single commit
    /// (the indexer's batch path: fewer table versions, far faster bulk loads).
    async fn replace_files(
        &self,
        repo_id: &str,
        files: Vec<(String, Vec<ChunkRow>)>,
    ) -> Result<(), StoreError>;
    /// Removes one file's chunks.
    async fn delete_file(&self, repo_id: &str, relative_path: &str) -> Result<(), StoreError>;
    /// Removes a repository's chunks.
    async fn delete_repo(&self, repo_id: &str) -> Result<(), StoreError>;
    /// The `k` nearest chunks by cosine distance among those matching `filter`.
    async fn vector_search(
        &self,
        vector: &[f32],
        k: usize,
        filter: &ChunkFilter,
    ) -> Result<Vec<ScoredChunk>, StoreError>;
    /// The `k` best BM25 matches of `query` over `search_text` among those matching `filter`.
    async fn text_search(
        &self,
        query: &str,
        k: usize,
        filter: &ChunkFilter,
    ) -> Result<Vec<ScoredChunk>, StoreError>;
    /// Chunks of one repository by id (unknown ids are left out).
    async fn get(&self, repo_id: &str, ids: &[String]) -> Result<Vec<ChunkRow>, StoreError>;
    /// The paths of the files that have chunks in one repository.
    async fn file_paths(
        &self,
        repo_id: &str,
    ) -> Result<std::collections::BTreeSet<String>, StoreError>;
    /// Chunks of one file, in source order, as [`VectorStore::files_chunks`] reads them.
    async fn file_chunks(
        &self,
        repo_id: &str,
        relative_path: &str,
    ) -> Result<Vec<ChunkRow>, StoreError> {
        Ok(self
            .files_chunks(repo_id, &[relative_path.to_string()])
            .await?
            .remove(relative_path)
            .unwrap_or_default())
    }
    /// Chunks of several files of one repository in one read, by path, each file's in
    /// source order (a path with no chunks is left out): what a search answer's snapshots
    /// are rendered from. One read for ten files cost 15 ms at 108k rows where ten reads
    /// cost 63–69 ms. The rows come without what only search and embedding read: their
    /// `vector`, `chunk.embedding_text` and `chunk.search_text` are empty.
    async fn files_chunks(
        &self,
        repo_id: &str,
        relative_paths: &[String],
    ) -> Result<std::collections::HashMap<String, Vec<ChunkRow>>, StoreError>;
    /// Rows matching `filter`.
    async fn count(&self, filter: &ChunkFilter) -> Result<usize, StoreError>;
    /// Index creation / refresh and compaction per the store's policy. Cheap when there
    /// is nothing to do; writers call it after batches.
    async fn maintain(&self) -> Result<StoreStats, StoreError>;
    /// Current size and index state.
    async fn stats(&self) -> Result<StoreStats, StoreError>;
    /// Whether the store answers (a read of the table's row count, from its manifest).
    async fn ping(&self) -> Result<(), StoreError>;

    /// What the store keeps on disk and what maintenance would reclaim (reads the
    /// table's manifests and, for a local store, walks its directory: for `doctor` and
    /// `/metrics`, not for every write).
    async fn storage(&self) -> Result<StoreStorage, StoreError>;
    /// Called when nothing in this process will read the store again (the end of a
    /// one-shot command): removes at once what maintenance keeps only for readers still
    /// in flight (old versions' files), instead of leaving it to the next maintenance.
    async fn finish(&self) -> Result<(), StoreError> {
        Ok(())
    }
    /// Up to `limit` rows of one repository that have no vector yet and still hold the
    /// text to embed (a row's text is kept only until its vector is stored: rows unembedded
    /// by [`VectorStore::forget_vectors`] get theirs back when their files are chunked
    /// again).
    async fn unembedded(
        &self,
        repo_id: &str,
        limit: usize,
    ) -> Result<Vec<PendingVector>, StoreError>;
    /// Stores vectors for rows listed by [`VectorStore::unembedded`]; a row whose content
    /// changed since (another hash) keeps waiting for its own. Returns the rows updated.
    async fn set_vectors(
        &self,
        repo_id: &str,
        vectors: Vec<(PendingVector, Vec<f32>)>,
    ) -> Result<usize, StoreError>;
    /// Rows and rows without vectors, of one repository or of the whole store.
    async fn embedding_state(&self, repo_id: Option<&str>) -> Result<EmbeddingState, StoreError>;
    /// Whether every row of the store has its vector: cheap when the store has not
    /// changed since the last call that found so (the steady state once indexing is done).
    async fn all_embedded(&self) -> Result<bool, StoreError>;
    /// Marks every row as not embedded (after a change of embedding model of the same
    /// width: the old vectors are never searched again, and are replaced as they land,
    /// once the rows' files are chunked again).
    async fn forget_vectors(&self) -> Result<(), StoreError>;
}
