//! [`VectorStore`] on LanceDB: one table of chunk rows keyed by (`repo_id`, `id`).
//!
//! Index and compaction policy (run by [`VectorStore::maintain`], which writers call every
//! `maintain_every_writes` writes, and as soon as `reindex_after_rows` rows, or a quarter
//! of the table if that is more, have been written since the last run, whatever the
//! number of writes or files; so the work of all runs during a bulk load stays linear in
//! its rows):
//!
//! - Full-text (BM25) index on `search_text`: created with the first rows. Rows written
//!   later are searched by a flat scan until `maintain` folds them into the index; the
//!   row threshold bounds that scan (one file of 4,000 chunks is folded in at once).
//! - ANN index (IVF-PQ, cosine) on `vector`: created once the table holds
//!   `ann_min_rows` rows (10,000: an exact scan of 26,000 rows already costs ~38 ms on two
//!   cores) and every row has its vector (an index trained on the placeholders of rows
//!   still waiting for theirs would be useless); refreshed by `maintain` with new rows.
//!   Searches re-score `ann_refine_factor` × k of its candidates with their full vectors
//!   (the quantised order alone finds about half of the exact top 50 at 100k rows).
//! - B-tree indexes on `id` and `relative_path` (point lookups by id and by file), created
//!   by the first `maintain` and refreshed by later ones.
//! - Compaction: `maintain` merges small fragments and removes table versions older than
//!   `prune_older_than`; versions it had to keep are pruned by one deferred task once
//!   they are old enough (`prune_later`), or at once by [`VectorStore::finish`] at the end
//!   of a one-shot command. Writes are serialised by a lock inside the store, and
//!   maintenance runs under it, so removing unverified files is safe for the embedded
//!   single-process deployment.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{Float16Type, Float32Type, UInt32Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, FixedSizeListArray, Float16Array, Float32Array, Int64Array,
    RecordBatch, RecordBatchIterator, StringArray, UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use futures::TryStreamExt;
use lancedb::index::Index;
use lancedb::index::scalar::{BTreeIndexBuilder, FtsIndexBuilder, FullTextSearchQuery};
use lancedb::index::vector::IvfPqIndexBuilder;
use lancedb::query::{ExecutableQuery, QueryBase};
use lancedb::table::{Duration as PruneDuration, OptimizeAction};
use lancedb::{Connection, DistanceType, Table};
use tokio::sync::Mutex;
use tracing::Instrument;

use super::flat::{FlatBuilder, FlatCache, FlatRow, FlatVectors};
use super::rows::{CodeReader, RowReader, column, primitive, required, strings};
use super::texts;
use super::{
    ChunkFilter, ChunkRow, EmbeddingState, FileSource, PendingVector, ScoredChunk, StoreError,
    StoreStats, StoreStorage, VectorStore,
};

/// Settings of the LanceDB chunk store.
#[derive(Debug, Clone, PartialEq)]
pub struct LanceStoreOptions {
    /// Database URI: a local directory (default `<data-dir>/lance`) or an object-store URI.
    pub uri: String,
    /// Table name.
    pub table: String,
    /// Vector width of the configured embedding model.
    pub dims: usize,
    /// Rows at which the ANN index is created.
    pub ann_min_rows: usize,
    /// Candidates the ANN index proposes per wanted hit, re-scored with their full
    /// vectors (0: the index's own, product-quantised, order). PQ alone finds about half
    /// of the exact top 50 at 100k rows; 10 finds 94 % for ~4 ms more (docs/BENCHMARKS.md).
    pub ann_refine_factor: u32,
    /// Writes between automatic maintenance runs.
    pub maintain_every_writes: usize,
    /// Rows written since the last maintenance at which maintenance runs (folding them
    /// into the full-text index), however few writes carried them.
    pub reindex_after_rows: usize,
    /// Table versions older than this are removed by maintenance.
    pub prune_older_than: std::time::Duration,
    /// Bytes LanceDB may keep of opened indexes (full-text, vector, B-tree) in memory.
    /// Each maintenance makes new index versions; without a bound the old ones stay
    /// cached (LanceDB's default budget is 6 GiB), so memory grew with the repository.
    pub index_cache_bytes: usize,
    /// Bytes LanceDB may keep of table metadata (manifests, fragments, deletion files):
    /// 16 MB, against 64 before, took ~50 MB off a cold 1M-line index's peak.
    pub metadata_cache_bytes: usize,
    /// Bytes of data and index files kept in memory for a store on object storage
    /// ([`super::block_cache`]: LanceDB re-reads them from the store on every search
    /// otherwise); 0 turns the cache off. A local store is left to the OS's page cache.
    pub block_cache_bytes: u64,
    /// How stale a read may be: a read checks for versions that other processes (another
    /// replica, `sextant index` beside `serve`) committed once this long has passed since
    /// the last check. Writes always start from the latest version.
    pub read_consistency: std::time::Duration,
    /// Bytes of the table a process may hold in memory ([`super::flat`]): its vectors
    /// (scanned exactly instead of LanceDB's vector query) with its rows (searches and
    /// whole-file reads without row reads), both or neither. A table that needs more is
    /// searched through LanceDB. 0 turns it off.
    pub held_bytes: usize,
}

impl LanceStoreOptions {
    /// Defaults for a store at `uri` with `dims`-wide vectors.
    pub fn new(uri: impl Into<String>, dims: usize) -> Self {
        Self {
            uri: uri.into(),
            table: "chunks".into(),
            dims,
            ann_min_rows: 10_000,
            ann_refine_factor: 10,
            maintain_every_writes: 64,
            reindex_after_rows: 1_000,
            prune_older_than: std::time::Duration::from_secs(60),
            index_cache_bytes: (DEFAULT_INDEX_CACHE_MB as usize) << 20,
            metadata_cache_bytes: 16 << 20,
            block_cache_bytes: 256 << 20,
            read_consistency: DEFAULT_READ_CONSISTENCY,
            held_bytes: (DEFAULT_HELD_MB as usize) << 20,
        }
    }
}

/// MiB of opened indexes a store keeps by default ([`LanceStoreOptions::index_cache_bytes`]).
/// Every maintenance makes new index versions and the cache keeps the old ones until it
/// is full, so any large sync reaches its budget: at 256 MB a cold 1M-line index held
/// ~100 MB more to its end than at 32, and searches of that repository took the same
/// time (docs/BENCHMARKS.md, "Memory at 1M lines").
pub const DEFAULT_INDEX_CACHE_MB: u64 = 32;

/// MiB of the table a store holds in memory by default ([`LanceStoreOptions::held_bytes`]):
/// a 1M-line repository's vectors, rows and BM25 index (~155 MB with the static model's
/// 256-dimensional vectors, ~195 MB with the default model's 384: vectors and their codes
/// 768 or 1,152 bytes a chunk, rows ~480 bytes, their text index ~90), so that its
/// searches scan and read from memory (docs/BENCHMARKS.md, "Held in memory at half the
/// bytes"). Larger stores stay on LanceDB's indexes.
pub const DEFAULT_HELD_MB: u64 = 256;

/// Default for [`LanceStoreOptions::read_consistency`] (and for how often the grep
/// index's copy on object storage is looked at). A check on every read cost a search
/// ~6 ms at 110k rows (several reads, each listing the table's versions); once a second
/// costs nothing measurable.
pub const DEFAULT_READ_CONSISTENCY: std::time::Duration = std::time::Duration::from_secs(1);

/// k-means iterations when the ANN index is trained (by maintenance).
const ANN_KMEANS_ITERATIONS: u32 = 10;

/// Rows a partition sampled to train the ANN index (LanceDB's default is 256).
const ANN_SAMPLE_RATE: u32 = 64;

/// The LanceDB chunk store.
pub struct LanceStore {
    options: LanceStoreOptions,
    table: Table,
    schema: SchemaRef,
    write_lock: Arc<Mutex<()>>,
    /// Whether a deferred prune is waiting (at most one at a time).
    prune_pending: Arc<std::sync::atomic::AtomicBool>,
    writes_since_maintain: AtomicUsize,
    /// Rows written since the last maintenance (not yet in the full-text index).
    rows_since_maintain: AtomicUsize,
    /// Rows in the table at the last maintenance (or at opening): the row-count trigger
    /// of `after_write` scales with it.
    rows_at_maintain: AtomicUsize,
    /// The last table version seen with every row embedded: until the table changes,
    /// vector searches need no `embedded` filter (which costs a column scan per query
    /// once the ANN index answers) and searches no pending count.
    all_embedded_at: std::sync::Mutex<Option<u64>>,
    /// The table's vectors in memory, for exact searches without LanceDB.
    flat: Arc<FlatCache>,
    /// Where rows that keep their code as lines of their file read it
    /// ([`LanceStore::with_sources`]).
    sources: Option<Arc<dyn FileSource>>,
    _db: Connection,
}

impl std::fmt::Debug for LanceStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LanceStore")
            .field("options", &self.options)
            .finish()
    }
}

/// The element type of the vectors of a table created now: half-precision floats, half
/// the bytes of `f32` (the largest column: 256 or 384 numbers a row against a few hundred
/// bytes of compressed text) for a change in cosine similarity below 1e-3. Tables created
/// before hold `f32` vectors and keep them ([`vector_type`]).
const VECTOR_ELEMENT: DataType = DataType::Float16;

/// Read parameters that route data and index files through the block cache, on
/// object storage with a cache configured.
fn cached_read_params(options: &LanceStoreOptions) -> Option<lance::dataset::ReadParams> {
    (options.uri.contains("://") && options.block_cache_bytes > 0).then(|| {
        let cache = super::block_cache::BlockCache::new(options.block_cache_bytes);
        lance::dataset::ReadParams {
            store_options: Some(lance::io::ObjectStoreParams {
                object_store_wrapper: Some(Arc::new(cache)),
                ..Default::default()
            }),
            ..Default::default()
        }
    })
}

/// Fails with what to do when an existing table's vector width is not the model's.
fn check_width(options: &LanceStoreOptions, width: Option<usize>) -> Result<(), StoreError> {
    if width == Some(options.dims) {
        return Ok(());
    }
    Err(StoreError::Invalid(format!(
        "the chunk store at {} holds {}-dimensional vectors but the configured embedding model makes \
         {}-dimensional ones; re-index into a fresh data directory (or delete {}) after changing models",
        options.uri,
        width.map_or("unknown".to_string(), |w| w.to_string()),
        options.dims,
        options.uri
    )))
}

/// Columns added since the first release, appended to an older table in the schema's
/// order.
async fn add_missing_columns(table: &Table, existing: &Schema) -> Result<(), StoreError> {
    if existing.field_with_name("embedded").is_err() {
        // Tables written before progressive indexing: every row has its vector.
        table
            .add_columns()
            .transform(lancedb::table::NewColumnTransform::SqlExpressions(vec![(
                "embedded".to_string(),
                "true".to_string(),
            )]))
            .execute()
            .await?;
    }
    if existing.field_with_name("native_kind").is_err() {
        // Tables written before languages' own kind names were kept.
        table
            .add_columns()
            .transform(lancedb::table::NewColumnTransform::AllNulls(Arc::new(
                Schema::new(vec![Field::new("native_kind", DataType::Utf8, true)]),
            )))
            .execute()
            .await?;
    }
    Ok(())
}

/// Columns reads of whole files leave out: the vectors, the texts they were embedded
/// from, and the full-text index's text (rows come back with these empty).
const FILE_SKIPS: &[&str] = &["vector", "embedded", "embedding_text", "search_text"];

/// The width and element type of a schema's `vector` column.
fn vector_type(schema: &Schema) -> Option<(usize, DataType)> {
    match schema.field_with_name("vector").ok()?.data_type() {
        DataType::FixedSizeList(item, n) => Some((*n as usize, item.data_type().clone())),
        _ => None,
    }
}

fn schema(dims: usize, element: DataType) -> SchemaRef {
    let text = |name: &str| Field::new(name, DataType::Utf8, false);
    let opt_text = |name: &str| Field::new(name, DataType::Utf8, true);
    let list = |name: &str| {
        Field::new(
            name,
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            false,
        )
    };
    Arc::new(Schema::new(vec![
        text("repo_id"),
        text("id"),
        text("file_path"),
        text("relative_path"),
        text("language"),
        text("node_kind"),
        text("name"),
        opt_text("parent_name"),
        opt_text("parent_chunk_id"),
        list("child_chunk_ids"),
        Field::new("depth", DataType::UInt32, false),
        text("breadcrumb"),
        text("signature"),
        text("modifiers"),
        Field::new("exported", DataType::Boolean, false),
        opt_text("jsdoc"),
        Field::new("start_line", DataType::UInt32, false),
        Field::new("end_line", DataType::UInt32, false),
        Field::new("start_byte", DataType::UInt64, false),
        Field::new("end_byte", DataType::UInt64, false),
        text("full_source"),
        text("content"),
        Field::new("has_collapsed_children", DataType::Boolean, false),
        list("relevant_imports"),
        text("embedding_text"),
        Field::new("embedding_tokens", DataType::UInt32, false),
        Field::new("truncated", DataType::Boolean, false),
        text("search_text"),
        text("content_hash"),
        Field::new("last_modified", DataType::Int64, false),
        Field::new(
            "vector",
            DataType::FixedSizeList(Arc::new(Field::new("item", element, true)), dims as i32),
            false,
        ),
        // Whether `vector` holds the row's embedding yet: rows are written as soon as
        // their file is parsed (searchable by text at once) and embedded after.
        Field::new("embedded", DataType::Boolean, false),
        // The language's own name for the construct (last: stores written before it get
        // the column appended when opened).
        opt_text("native_kind"),
    ]))
}

/// Connecting to a store and listing its tables are its first requests. For a store on
/// object storage a failure there is the storage's (out of reach, credentials refused),
/// which LanceDB reports as invalid input: it is reported as an object-store failure, to
/// be retried, with the settings to check, rather than as damage to repair.
fn storage_error(uri: &str) -> impl FnOnce(lancedb::Error) -> StoreError + '_ {
    move |e| {
        if uri.contains("://") {
            StoreError::ObjectStore {
                uri: uri.to_string(),
                message: e.to_string(),
            }
        } else {
            StoreError::Lance(e)
        }
    }
}

/// The tables at `uri` (see [`storage_error`]).
async fn list_tables(db: &lancedb::Connection, uri: &str) -> Result<Vec<String>, StoreError> {
    db.table_names().execute().await.map_err(storage_error(uri))
}

fn quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

impl LanceStore {
    /// Removes the chunk table at `options.uri` (after a change of embedding model to
    /// another vector width: every row must be written again). Nothing to do when there
    /// is none.
    pub async fn destroy(options: &LanceStoreOptions) -> Result<(), StoreError> {
        if !options.uri.contains("://") && !Path::new(&options.uri).exists() {
            return Ok(());
        }
        let db = lancedb::connect(&options.uri)
            .execute()
            .await
            .map_err(storage_error(&options.uri))?;
        if list_tables(&db, &options.uri)
            .await?
            .contains(&options.table)
        {
            db.drop_table(&options.table, &[]).await?;
        }
        Ok(())
    }

    /// The vector width of the existing table at `options.uri` (`None` when there is none).
    pub async fn width(options: &LanceStoreOptions) -> Result<Option<usize>, StoreError> {
        if !options.uri.contains("://") && !Path::new(&options.uri).exists() {
            return Ok(None);
        }
        let db = lancedb::connect(&options.uri)
            .execute()
            .await
            .map_err(storage_error(&options.uri))?;
        if !list_tables(&db, &options.uri)
            .await?
            .contains(&options.table)
        {
            return Ok(None);
        }
        let schema = db
            .open_table(&options.table)
            .execute()
            .await?
            .schema()
            .await?;
        Ok(vector_type(&schema).map(|(width, _)| width))
    }

    /// Opens the table at `options.uri`, creating it when missing. Fails with a clear
    /// message when an existing table's vector width differs from `options.dims`.
    pub async fn open(options: LanceStoreOptions) -> Result<Self, StoreError> {
        if options.dims == 0 {
            return Err(StoreError::Invalid(
                "vector dimensions must be positive".into(),
            ));
        }
        if !options.uri.contains("://") {
            std::fs::create_dir_all(&options.uri).map_err(|source| StoreError::Io {
                path: options.uri.clone(),
                source,
            })?;
        }
        let session = lance::session::Session::new(
            options.index_cache_bytes,
            options.metadata_cache_bytes,
            Arc::new(lance::io::ObjectStoreRegistry::default()),
        );
        // Reads check for versions other processes committed (a second server on the
        // same store, `sextant index` beside `serve`): without it a process reads the
        // table as it was when opened, forever.
        let db = lancedb::connect(&options.uri)
            .session(Arc::new(session))
            .read_consistency_interval(options.read_consistency)
            .execute()
            .await
            .map_err(storage_error(&options.uri))?;
        let read_params = cached_read_params(&options);
        let open = |db: &Connection| {
            let builder = db.open_table(&options.table);
            match &read_params {
                Some(params) => builder.lance_read_params(params.clone()),
                None => builder,
            }
        };
        let names = list_tables(&db, &options.uri).await?;
        let (table, expected) = if names.contains(&options.table) {
            let table = open(&db).execute().await?;
            let existing = table.schema().await?;
            let found = vector_type(&existing);
            check_width(&options, found.as_ref().map(|(width, _)| *width))?;
            add_missing_columns(&table, &existing).await?;
            let element = found.map_or(VECTOR_ELEMENT, |(_, element)| element);
            (table, schema(options.dims, element))
        } else {
            let expected = schema(options.dims, VECTOR_ELEMENT);
            let created = db
                .create_empty_table(&options.table, expected.clone())
                .execute()
                .await?;
            let table = if read_params.is_some() {
                // Opened again, to read through the cache.
                open(&db).execute().await?
            } else {
                created
            };
            (table, expected)
        };
        let flat = Arc::new(FlatCache::new(options.held_bytes));
        let store = Self {
            options,
            table,
            schema: expected,
            write_lock: Arc::new(Mutex::new(())),
            prune_pending: Arc::new(std::sync::atomic::AtomicBool::new(false)),
            writes_since_maintain: AtomicUsize::new(0),
            all_embedded_at: std::sync::Mutex::new(None),
            flat,
            rows_since_maintain: AtomicUsize::new(0),
            rows_at_maintain: AtomicUsize::new(0),
            sources: None,
            _db: db,
        };
        // Rows a previous process wrote but never folded into the full-text index count
        // toward the next maintenance.
        let unindexed = store.text_unindexed_rows().await?;
        store
            .rows_since_maintain
            .store(unindexed, Ordering::Relaxed);
        // The row trigger scales with the table from the start, not from the first
        // maintenance of this process (a large store reopened would otherwise be
        // maintained every `reindex_after_rows` rows until then).
        let rows = store.table.count_rows(None).await?;
        store.rows_at_maintain.store(rows, Ordering::Relaxed);
        Ok(store)
    }

    /// Reads the code of rows written as lines of their file ([`ChunkRow::code_in_file`])
    /// from `sources` (the grep index), and writes such rows so: their code is then held
    /// once, in the grep index, compressed a file at a time. Without sources every row's
    /// code is stored in the row, and rows written so by another process cannot be read.
    pub fn with_sources(mut self, sources: Arc<dyn FileSource>) -> Self {
        self.sources = Some(sources);
        self
    }

    /// Rows the full-text index does not cover yet (all rows when there is no index).
    async fn text_unindexed_rows(&self) -> Result<usize, StoreError> {
        for index in self.table.list_indices().await? {
            if index.columns.iter().any(|c| c == "search_text") {
                return Ok(self
                    .table
                    .index_stats(&index.name)
                    .await?
                    .map_or(0, |s| s.num_unindexed_rows));
            }
        }
        Ok(self.table.count_rows(None).await?)
    }

    /// Reads the table's vectors and rows into memory now ([`super::flat`]); searches
    /// otherwise start the read themselves, in the background, when the table has
    /// changed. Whether the table as it is now is held (false when the memory allowed is
    /// 0 or too little, or another read is under way).
    pub async fn load_into_memory(&self) -> Result<bool, StoreError> {
        self.flat.allow_load_now();
        let started = std::time::Instant::now();
        if !self.flat.begin_load(started) {
            return Ok(false);
        }
        let loaded = load_flat(
            self.table.clone(),
            self.options.dims,
            self.flat.limit_bytes(),
            self.held_columns(),
        )
        .await;
        let (kept, result) = match loaded {
            Ok(kept) => (kept, Ok(())),
            Err(e) => (None, Err(e)),
        };
        self.flat.end_load(kept, started, std::time::Instant::now());
        result?;
        Ok(self.flat.at(self.table.version().await?).is_some())
    }

    /// The columns read into memory: every one (the full-text column is indexed by the
    /// in-memory BM25, the others are held as rows).
    fn held_columns(&self) -> Vec<String> {
        self.schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    /// Starts reading the table into memory in the background, unless a read
    /// is under way or the last one was too recent ([`FlatCache::begin_load`]).
    fn refresh_flat(&self) {
        let started = std::time::Instant::now();
        if !self.flat.begin_load(started) {
            return;
        }
        let (table, cache, dims) = (self.table.clone(), self.flat.clone(), self.options.dims);
        let columns = self.held_columns();
        tokio::spawn(async move {
            let loaded = match load_flat(table, dims, cache.limit_bytes(), columns).await {
                Ok(None) if cache.first_too_large() => {
                    tracing::info!(
                        limit_mib = cache.limit_bytes() >> 20,
                        "the chunk store's vectors and rows need more memory than \
                         --search-memory-mb allows (SEXTANT_SEARCH_MEMORY_MB): searches use its \
                         index; raise the setting to have them scanned and read from memory"
                    );
                    None
                }
                Ok(loaded) => loaded,
                Err(e) => {
                    tracing::warn!(error = %e, "the chunk store could not be read into memory; searches go through LanceDB");
                    None
                }
            };
            if let Some(flat) = &loaded {
                let parts = flat.parts();
                tracing::debug!(
                    rows = flat.len(),
                    bytes = flat.bytes(),
                    vector_bytes = parts.vectors,
                    row_bytes = parts.rows,
                    text_bytes = parts.text,
                    version = flat.version(),
                    ms = started.elapsed().as_millis() as u64,
                    "chunk store held in memory"
                );
            }
            cache.end_load(loaded, started, std::time::Instant::now());
        });
    }

    /// The pending rows of `batches` (an `unembedded` page) with their embedding texts;
    /// rows whose code the grep index no longer holds are left out.
    fn pending_of(&self, batches: &[RecordBatch]) -> Result<Vec<PendingVector>, StoreError> {
        let mut out = Vec::new();
        let code = CodeReader::new(self.sources.as_deref());
        for batch in batches {
            let text = |name: &'static str| required(batch, name);
            let (ids, hashes) = (text("id")?, text("content_hash")?);
            let (repos, paths) = (text("repo_id")?, text("relative_path")?);
            let (full, contents, stored) = (
                text("full_source")?,
                text("content")?,
                text("embedding_text")?,
            );
            let lines = (
                primitive::<UInt32Type>(batch, "start_line")?,
                primitive::<UInt32Type>(batch, "end_line")?,
            );
            for (i, ((((id, content_hash), full), content), stored)) in ids
                .into_iter()
                .zip(hashes)
                .zip(full)
                .zip(contents)
                .zip(stored)
                .enumerate()
            {
                let place = (repos[i].as_str(), paths[i].as_str(), content_hash.as_str());
                let span = (lines.0.value(i), lines.1.value(i));
                let full = match code.code(&full, place, span) {
                    Ok((full, _)) => full,
                    // Its file changed since: the next sync writes new rows.
                    Err(StoreError::CodeNotHeld { .. }) => continue,
                    Err(e) => return Err(e),
                };
                let content = texts::unpack_content(&full, content);
                out.push(PendingVector {
                    id,
                    content_hash,
                    text: texts::unpack_embedding(&content, stored),
                });
            }
        }
        Ok(out)
    }

    /// Rows `indices` of `flat` from memory, in that order, with empty vectors and the
    /// columns named in `leave` read as absent (`None` when its rows are not held). Each
    /// row is read where it lies: only its own values are copied.
    fn held_rows(
        &self,
        flat: &FlatVectors,
        indices: &[usize],
        leave: &[&str],
    ) -> Result<Option<Vec<ChunkRow>>, StoreError> {
        let Some((batches, places)) = flat.places(indices) else {
            return Ok(None);
        };
        let mut readers: Vec<Option<RowReader>> = Vec::new();
        readers.resize_with(batches.len(), || None);
        let mut out = Vec::with_capacity(places.len());
        for (batch, offset) in places {
            let reader = match &mut readers[batch] {
                Some(reader) => reader,
                empty => empty.insert(RowReader::new(
                    &batches[batch],
                    leave,
                    self.sources.as_deref(),
                )?),
            };
            if let Some(row) = readable(reader.row(offset))? {
                out.push(row);
            }
        }
        Ok(Some(out))
    }

    /// [`LanceStore::held_rows`], each row with its vector (what searches and reads by id
    /// return, as LanceDB's do).
    fn held_rows_with_vectors(
        &self,
        flat: &FlatVectors,
        indices: &[usize],
    ) -> Result<Option<Vec<ChunkRow>>, StoreError> {
        Ok(self.held_rows(flat, indices, &[])?.map(|rows| {
            rows.into_iter()
                .zip(indices)
                .map(|(mut row, &index)| {
                    row.vector = flat.vector(index);
                    row
                })
                .collect()
        }))
    }

    /// What is held in memory, when it is the table as it is now.
    async fn fresh_flat(&self) -> Result<Option<std::sync::Arc<FlatVectors>>, StoreError> {
        if self.flat.limit_bytes() == 0 {
            return Ok(None);
        }
        let held = self.flat.at(self.table.version().await?);
        if held.is_none() {
            self.refresh_flat();
        }
        Ok(held)
    }

    /// A text search answered from memory: scored by the BM25 held with the rows
    /// ([`super::bm25`]). `None` when what is held is not every row of the table as it is
    /// now, with its text, for LanceDB to answer.
    async fn held_text_search(
        &self,
        query: &str,
        k: usize,
        filter: &ChunkFilter,
        paths: &super::PathMatcher,
    ) -> Result<Option<Vec<ScoredChunk>>, StoreError> {
        let Some(flat) = self.fresh_flat().await?.filter(|f| f.holds_text()) else {
            return Ok(None);
        };
        let (indices, found): (Vec<usize>, Vec<f32>) = {
            let _scan = tracing::debug_span!("store.text.scan").entered();
            flat.text_search(query, k, filter, paths)
                .into_iter()
                .map(|hit| (hit.index, hit.score))
                .unzip()
        };
        let Some(rows) = self.held_rows_with_vectors(&flat, &indices)? else {
            return Ok(None);
        };
        let mut hits: Vec<ScoredChunk> = rows
            .into_iter()
            .zip(found)
            .filter(|(row, _)| paths.is_match(&row.chunk.relative_path))
            .map(|(row, score)| ScoredChunk { row, score })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        Ok(Some(hits))
    }

    /// [`VectorStore::get`] from memory: each id's row once, in the order asked, with its
    /// vector; `None` when not every row of the table as it is now is held.
    async fn held_get(
        &self,
        repo_id: &str,
        ids: &[String],
    ) -> Result<Option<Vec<ChunkRow>>, StoreError> {
        let Some(flat) = self.fresh_flat().await?.filter(|f| f.holds_every_row()) else {
            return Ok(None);
        };
        let mut indices: Vec<usize> = Vec::with_capacity(ids.len());
        for index in ids.iter().filter_map(|id| flat.find(repo_id, id)) {
            if !indices.contains(&index) {
                indices.push(index);
            }
        }
        self.held_rows_with_vectors(&flat, &indices)
    }

    /// Every chunk of some files of a repository from memory, grouped by path and in
    /// file order, as [`VectorStore::files_chunks`] reads them from LanceDB; `None` when
    /// not every row of the table as it is now is held.
    async fn held_files(
        &self,
        repo_id: &str,
        relative_paths: &[String],
    ) -> Result<Option<HashMap<String, Vec<ChunkRow>>>, StoreError> {
        let Some(flat) = self.fresh_flat().await? else {
            return Ok(None);
        };
        let Some(files) = relative_paths
            .iter()
            .map(|p| flat.file_rows(repo_id, p))
            .collect::<Option<Vec<&[u32]>>>()
        else {
            return Ok(None);
        };
        let indices: Vec<usize> = files.concat().into_iter().map(|i| i as usize).collect();
        // Without what LanceDB's reads of whole files leave out.
        let Some(rows) = self.held_rows(&flat, &indices, FILE_SKIPS)? else {
            return Ok(None);
        };
        Ok(Some(by_file(rows)))
    }

    /// A vector search answered from memory: `None` when what is held is not the table
    /// as it is now (a background read is then started), for LanceDB to answer.
    async fn flat_search(
        &self,
        vector: &[f32],
        k: usize,
        filter: &ChunkFilter,
    ) -> Result<Option<Vec<ScoredChunk>>, StoreError> {
        let Some(flat) = self.fresh_flat().await? else {
            return Ok(None);
        };
        let paths = filter.path_matcher().map_err(StoreError::Invalid)?;
        let (query, owned) = (vector.to_vec(), filter.clone());
        let (flat, hits) = tokio::task::spawn_blocking(move || {
            let hits = flat.search(&query, k, &owned, &paths);
            (flat, hits)
        })
        .instrument(tracing::debug_span!("store.vectors.scan"))
        .await
        .map_err(|e| StoreError::Invalid(format!("the vector scan failed: {e}")))?;
        if hits.is_empty() {
            return Ok(Some(Vec::new()));
        }
        let indices: Vec<usize> = hits.iter().map(|h| h.index).collect();
        let Some(rows) = self.held_rows_with_vectors(&flat, &indices)? else {
            return Ok(None);
        };
        let out = hits
            .into_iter()
            .zip(rows)
            .map(|(hit, row)| ScoredChunk {
                row,
                score: hit.score,
            })
            .collect();
        Ok(Some(out))
    }

    /// The columns query results read: every column but `search_text`, which only the
    /// full-text index needs (it is the largest text column and nothing reads it back),
    /// plus `score` (`_distance`, `_score`) for searches.
    fn read_columns(&self, score: Option<&str>) -> lancedb::query::Select {
        self.columns_but(&["search_text"], score)
    }

    /// Every column but `skip`, plus `score`.
    fn columns_but(&self, skip: &[&str], score: Option<&str>) -> lancedb::query::Select {
        lancedb::query::Select::columns(
            &self
                .schema
                .fields()
                .iter()
                .map(|f| f.name().as_str())
                .filter(|name| !skip.contains(name))
                .chain(score)
                .collect::<Vec<_>>(),
        )
    }

    /// Takes this process's write lock and moves the table to its latest version: a
    /// write planned on a stale view (an append where another process already wrote the
    /// file's rows) would store rows twice.
    async fn lock_for_write(&self) -> Result<tokio::sync::MutexGuard<'_, ()>, StoreError> {
        let guard = self.write_lock.lock().await;
        self.table.checkout_latest().await?;
        Ok(guard)
    }

    /// The options the store was opened with.
    pub fn options(&self) -> &LanceStoreOptions {
        &self.options
    }

    /// The vector column of `rows`, in the element type of the table's schema.
    fn vector_column(&self, rows: &[ChunkRow]) -> Result<FixedSizeListArray, StoreError> {
        let dims = self.options.dims;
        for row in rows {
            if !row.vector.is_empty() && row.vector.len() != dims {
                return Err(StoreError::Invalid(format!(
                    "chunk {} has a {}-dimensional vector; the store expects {dims}",
                    row.chunk.id,
                    row.vector.len()
                )));
            }
        }
        // Rows not embedded yet hold a zero vector (never searched: see `embedded`); the
        // values are read in place, not copied per row.
        let values = rows
            .iter()
            .flat_map(|r| (0..dims).map(move |i| r.vector.get(i).copied().unwrap_or(0.0)));
        let flat: ArrayRef = match vector_type(&self.schema).map(|(_, e)| e) {
            Some(DataType::Float32) => Arc::new(Float32Array::from_iter_values(values)),
            Some(DataType::Float16) => Arc::new(Float16Array::from_iter_values(
                values.map(half::f16::from_f32),
            )),
            other => {
                return Err(StoreError::Invalid(format!(
                    "the chunk table's vectors are {other:?}, not float16 or float32; \
                     re-index into a fresh data directory"
                )));
            }
        };
        Ok(FixedSizeListArray::try_new(
            Arc::new(Field::new("item", flat.data_type().clone(), true)),
            dims as i32,
            flat,
            None,
        )?)
    }

    fn batch(&self, rows: &[ChunkRow]) -> Result<RecordBatch, StoreError> {
        let vectors = self.vector_column(rows)?;
        let s = |f: fn(&ChunkRow) -> &str| -> ArrayRef {
            Arc::new(StringArray::from_iter_values(rows.iter().map(f)))
        };
        let o = |f: fn(&ChunkRow) -> Option<&str>| -> ArrayRef {
            Arc::new(rows.iter().map(f).collect::<StringArray>())
        };
        let l = |f: fn(&ChunkRow) -> &Vec<String>| -> ArrayRef {
            let mut builder = ListBuilder::new(StringBuilder::new());
            for row in rows {
                for value in f(row) {
                    builder.values().append_value(value);
                }
                builder.append(true);
            }
            Arc::new(builder.finish())
        };
        let u32s = |f: fn(&ChunkRow) -> u32| -> ArrayRef {
            Arc::new(UInt32Array::from_iter_values(rows.iter().map(f)))
        };
        let u64s = |f: fn(&ChunkRow) -> u64| -> ArrayRef {
            Arc::new(UInt64Array::from_iter_values(rows.iter().map(f)))
        };
        let bools = |f: fn(&ChunkRow) -> bool| -> ArrayRef {
            Arc::new(BooleanArray::from(rows.iter().map(f).collect::<Vec<_>>()))
        };
        let modifiers: Vec<String> = rows
            .iter()
            .map(|r| {
                r.chunk
                    .modifiers
                    .iter()
                    .map(|m| m.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        // The code's other copies, stored relative to `full_source` (see `store::texts`).
        let contents: Vec<_> = rows
            .iter()
            .map(|r| texts::pack_chunk_content(&r.chunk))
            .collect();
        let embedding_texts: Vec<_> = rows
            .iter()
            .map(|r| texts::pack_embedding_until_embedded(r))
            .collect();
        let columns: Vec<ArrayRef> = vec![
            s(|r| &r.repo_id),
            s(|r| &r.chunk.id),
            s(|r| &r.file_path),
            s(|r| &r.chunk.relative_path),
            s(|r| r.chunk.language.id()),
            s(|r| r.chunk.node_kind.as_str()),
            s(|r| &r.chunk.name),
            o(|r| r.chunk.parent_name.as_deref()),
            o(|r| r.chunk.parent_chunk_id.as_deref()),
            l(|r| &r.chunk.child_chunk_ids),
            u32s(|r| r.chunk.depth),
            s(|r| &r.chunk.breadcrumb),
            s(|r| &r.chunk.signature),
            Arc::new(StringArray::from_iter_values(modifiers.iter())),
            bools(|r| r.chunk.exported),
            o(|r| r.chunk.jsdoc.as_deref()),
            u32s(|r| r.chunk.start_line),
            u32s(|r| r.chunk.end_line),
            u64s(|r| r.chunk.bytes.start as u64),
            u64s(|r| r.chunk.bytes.end as u64),
            Arc::new(StringArray::from_iter_values(
                rows.iter()
                    .map(|r| texts::pack_full_source(r, self.sources.is_some())),
            )),
            Arc::new(StringArray::from_iter_values(
                contents.iter().map(|c| c.as_ref()),
            )),
            bools(|r| r.chunk.has_collapsed_children),
            l(|r| &r.chunk.relevant_imports),
            Arc::new(StringArray::from_iter_values(
                embedding_texts.iter().map(|e| e.as_ref()),
            )),
            u32s(|r| r.chunk.embedding_tokens as u32),
            bools(|r| r.chunk.truncated),
            s(|r| &r.chunk.search_text),
            s(|r| &r.content_hash),
            Arc::new(Int64Array::from_iter_values(
                rows.iter().map(|r| r.last_modified),
            )),
            Arc::new(vectors),
            bools(|r| !r.vector.is_empty()),
            o(|r| r.chunk.native_kind.as_deref()),
        ];
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }

    async fn run_query(&self, query: impl ExecutableQuery) -> Result<Vec<RecordBatch>, StoreError> {
        Ok(query.execute().await?.try_collect::<Vec<_>>().await?)
    }

    async fn has_index_on(&self, column: &str) -> Result<bool, StoreError> {
        Ok(self
            .table
            .list_indices()
            .await?
            .iter()
            .any(|i| i.columns.iter().any(|c| c == column)))
    }

    async fn ensure_text_index(&self) -> Result<(), StoreError> {
        if !self.has_index_on("search_text").await? && self.table.count_rows(None).await? > 0 {
            // English stemming, but no stop-word removal: in code, words like `until`,
            // `while`, `once`, `only` and `before` are names (`takeUntil`, `skipWhile`),
            // and BM25's IDF already discounts words that are everywhere.
            let params = FtsIndexBuilder::default()
                .with_position(false)
                .remove_stop_words(false);
            self.table
                .create_index(&["search_text"], Index::FTS(params))
                .execute()
                .await?;
        }
        Ok(())
    }

    /// Maintenance without taking the write lock (callers hold it).
    async fn maintain_locked(&self) -> Result<StoreStats, StoreError> {
        self.writes_since_maintain.store(0, Ordering::Relaxed);
        self.rows_since_maintain.store(0, Ordering::Relaxed);
        let rows = self.table.count_rows(None).await?;
        self.rows_at_maintain.store(rows, Ordering::Relaxed);
        if rows > 0 {
            self.ensure_text_index().await?;
            // Point lookups (`get` by id: search reads the parents of nested hits;
            // `file_chunks` by path: snapshots) use B-tree indexes instead of scans.
            // Every search filters on `repo_id` and `language` (code only by language,
            // refs' rows kept out by repository): without an index, that prefilter read
            // the column of every row each time (13 of a vector search's 21 ms and 9 of a
            // text search's 12 at 110k rows). Few distinct values: bitmaps.
            let scalar = |column| match column {
                "id" | "relative_path" => Index::BTree(BTreeIndexBuilder::default()),
                _ => Index::Bitmap(Default::default()),
            };
            for column in ["id", "relative_path", "repo_id", "language"] {
                if !self.has_index_on(column).await? {
                    self.table
                        .create_index(&[column], scalar(column))
                        .execute()
                        .await?;
                }
            }
            // Only once every row has its vector: rows written ahead of their vectors
            // (progressive indexing) hold placeholders, and an index trained on them
            // would partition nothing. The embedding stage ends with a `maintain`.
            if rows >= self.options.ann_min_rows
                && !self.has_index_on("vector").await?
                && self.all_embedded().await?
            {
                // 10 k-means iterations instead of LanceDB's 50: at 104k rows the build
                // takes 34 s instead of 84 s, with the same recall once candidates are
                // re-scored (0.951 against 0.943 at 50) and the same search time.
                // A sample of 64 rows a partition instead of 256: the same recall and
                // build time at 104k rows, 50 MB less at the build's peak (384 dims).
                let builder = IvfPqIndexBuilder::default()
                    .distance_type(DistanceType::Cosine)
                    .max_iterations(ANN_KMEANS_ITERATIONS)
                    .sample_rate(ANN_SAMPLE_RATE);
                self.table
                    .create_index(&["vector"], Index::IvfPq(builder))
                    .execute()
                    .await?;
            }
            self.table
                .optimize(OptimizeAction::Compact {
                    options: Default::default(),
                    remap_options: None,
                })
                .await?;
            self.table
                .optimize(OptimizeAction::Index(Default::default()))
                .await?;
        }
        prune(&self.table, self.options.prune_older_than, true).await?;
        // Only the count of versions here: the size walk is `storage`'s, for readers.
        if self.version_count().await? > 1 {
            self.prune_later();
        }
        self.stats().await
    }

    /// Versions younger than `prune_older_than` survive a maintenance (a reader may still
    /// be on them); without another write they would stay on disk. So once they are old
    /// enough, a task prunes them (at most one waits at a time; it ends with the process:
    /// a one-shot command calls [`VectorStore::finish`] instead).
    fn prune_later(&self) {
        if self.prune_pending.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.prune_pending.store(false, Ordering::Release);
            return;
        };
        let (table, lock, pending) = (
            self.table.clone(),
            self.write_lock.clone(),
            self.prune_pending.clone(),
        );
        let wait = self.options.prune_older_than + std::time::Duration::from_millis(500);
        runtime.spawn(async move {
            tokio::time::sleep(wait).await;
            let _guard = lock.lock().await;
            pending.store(false, Ordering::Release);
            // Only the files of old versions: files no version names yet may belong to
            // work in flight (an index being built), whatever the lock.
            if let Err(e) = prune(&table, wait, false).await {
                tracing::warn!(error = %e, "deferred pruning of old chunk-store versions failed; the next maintenance retries");
            }
        });
    }

    /// Counts a write of `rows` rows and runs maintenance when either threshold is met.
    async fn after_write(&self, rows: usize) -> Result<(), StoreError> {
        let writes = self.writes_since_maintain.fetch_add(1, Ordering::Relaxed) + 1;
        let unindexed = self.rows_since_maintain.fetch_add(rows, Ordering::Relaxed) + rows;
        // Maintenance rewrites and re-indexes in proportion to the table: run every so
        // many rows whatever the table's size, a bulk load would cost the square of its
        // size. Scaled to a quarter of the table, the work of all maintenances stays
        // linear in the rows written (a geometric series), while text searches scan at
        // most that many rows outside the index meanwhile.
        let table = self.rows_at_maintain.load(Ordering::Relaxed);
        let every_rows = self.options.reindex_after_rows.max(table / 4);
        if writes >= self.options.maintain_every_writes || unindexed >= every_rows {
            self.maintain_locked().await?;
        } else {
            self.ensure_text_index().await?;
        }
        Ok(())
    }
}

/// Removes table versions older than `older_than` and the files only they use; with
/// `unverified`, also files no version names (left by interrupted writes).
async fn prune(
    table: &Table,
    older_than: std::time::Duration,
    unverified: bool,
) -> Result<(), StoreError> {
    let older_than = PruneDuration::from_std(older_than)
        .map_err(|e| StoreError::Invalid(format!("prune interval out of range: {e}")))?;
    table
        .optimize(OptimizeAction::Prune {
            older_than: Some(older_than),
            delete_unverified: Some(unverified),
            error_if_tagged_old_versions: Some(false),
        })
        .await?;
    Ok(())
}

/// Reads every embedded row (`columns`, which must hold the filter columns and
/// `vector`) at the table's current version ([`super::flat`]); `None` when the vectors
/// and rows would take more than `limit` bytes.
async fn load_flat(
    table: Table,
    dims: usize,
    limit: usize,
    columns: Vec<String>,
) -> Result<Option<FlatVectors>, StoreError> {
    let version = table.version().await?;
    let rows = table.count_rows(Some("embedded = true".into())).await?;
    if FlatBuilder::vector_bytes(dims, rows) > limit {
        return Ok(None);
    }
    let complete = table.count_rows(None).await? == rows;
    let mut stream = table
        .query()
        .only_if("embedded = true")
        .select(lancedb::query::Select::columns(&columns))
        .execute()
        .await?;
    let mut flat = FlatBuilder::new(version, dims);
    let mut widened = Vec::new();
    while let Some(batch) = stream.try_next().await? {
        let text = |name: &'static str| required(&batch, name);
        let (ids, repos, paths) = (text("id")?, text("repo_id")?, text("relative_path")?);
        let (languages, kinds) = (text("language")?, text("node_kind")?);
        // The full-text column feeds the in-memory BM25 (`store::bm25`), not the rows.
        let search_texts = strings(&batch, "search_text").ok();
        let list = column(&batch, "vector")?
            .as_fixed_size_list_opt()
            .ok_or_else(|| {
                StoreError::Invalid("column `vector` is not a fixed-size list".into())
            })?;
        // The rows as read, less what memory need not hold (the vectors are held apart).
        let kept: Vec<usize> = (0..batch.num_columns())
            .filter(|&i| {
                !matches!(
                    batch.schema().field(i).name().as_str(),
                    "vector" | "search_text"
                )
            })
            .collect();
        let held = flat.hold(batch.project(&kept)?, limit);
        for i in 0..batch.num_rows() {
            let v = list.value(i);
            let vector: &[half::f16] = match v.as_primitive_opt::<Float16Type>() {
                Some(halves) => halves.values(),
                None => {
                    // A table created before half precision: its `f32`s, rounded.
                    let floats = v.as_primitive_opt::<Float32Type>().ok_or_else(|| {
                        StoreError::Invalid(format!(
                            "column `vector` holds {} (float16 or float32 expected)",
                            v.data_type()
                        ))
                    })?;
                    widened.clear();
                    widened.extend(floats.values().iter().map(|x| half::f16::from_f32(*x)));
                    &widened
                }
            };
            let at = held.zip(u32::try_from(i).ok());
            flat.push(
                FlatRow {
                    id: &ids[i],
                    repo: &repos[i],
                    path: &paths[i],
                    language: &languages[i],
                    kind: &kinds[i],
                    vector,
                    text: search_texts.as_ref().and_then(|t| t[i].as_deref()),
                },
                at,
            )
            .map_err(StoreError::Invalid)?;
        }
        if held.is_none() {
            return Ok(None);
        }
    }
    Ok(Some(flat.finish(complete)))
}

/// Bytes of the files under `dir` (0 when it cannot be read: a store not created yet).
fn directory_bytes(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter_map(|e| e.metadata().ok())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum()
}

/// Rows grouped by file, each file's in the order of its code (then outer before inner).
fn by_file(rows: impl IntoIterator<Item = ChunkRow>) -> HashMap<String, Vec<ChunkRow>> {
    let mut out: HashMap<String, Vec<ChunkRow>> = HashMap::new();
    for row in rows {
        out.entry(row.chunk.relative_path.clone())
            .or_default()
            .push(row);
    }
    for rows in out.values_mut() {
        rows.sort_by_key(|r| (r.chunk.bytes.start, r.chunk.depth));
    }
    out
}

/// A row read, or `None` for one whose code is no longer held (its file changed a
/// moment ago: its new rows replace it; see [`StoreError::CodeNotHeld`]).
fn readable(row: Result<ChunkRow, StoreError>) -> Result<Option<ChunkRow>, StoreError> {
    match row {
        Ok(row) => Ok(Some(row)),
        Err(e @ StoreError::CodeNotHeld { .. }) => {
            tracing::debug!(error = %e, "chunk row left out");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Rows of result batches, with the score column when present; code kept as lines of
/// files is read from `sources`.
fn rows_of(
    batches: &[RecordBatch],
    score_column: Option<&str>,
    sources: Option<&dyn FileSource>,
) -> Result<Vec<(ChunkRow, f32)>, StoreError> {
    let mut out = Vec::new();
    for batch in batches {
        let n = batch.num_rows();
        if n == 0 {
            continue;
        }
        let reader = RowReader::new(batch, &[], sources)?;
        let scores = scores(batch, score_column)?;
        for (i, score) in scores.into_iter().enumerate() {
            if let Some(row) = readable(reader.row(i))? {
                out.push((row, score));
            }
        }
    }
    Ok(out)
}

/// The score column of a result batch as `f32`s (zeros without one).
fn scores(batch: &RecordBatch, score_column: Option<&str>) -> Result<Vec<f32>, StoreError> {
    Ok(match score_column.and_then(|c| batch.column_by_name(c)) {
        Some(col) => match col.data_type() {
            DataType::Float32 => col.as_primitive::<Float32Type>().values().to_vec(),
            DataType::Float64 => col
                .as_primitive::<arrow_array::types::Float64Type>()
                .values()
                .iter()
                .map(|v| *v as f32)
                .collect(),
            other => {
                return Err(StoreError::Invalid(format!(
                    "score column has type {other}"
                )));
            }
        },
        None => vec![0.0; batch.num_rows()],
    })
}

#[async_trait]
impl VectorStore for LanceStore {
    fn dims(&self) -> usize {
        self.options.dims
    }

    async fn replace_file(
        &self,
        repo_id: &str,
        relative_path: &str,
        rows: Vec<ChunkRow>,
    ) -> Result<(), StoreError> {
        self.replace_files(repo_id, vec![(relative_path.to_string(), rows)])
            .await
    }

    async fn replace_files(
        &self,
        repo_id: &str,
        files: Vec<(String, Vec<ChunkRow>)>,
    ) -> Result<(), StoreError> {
        if files.is_empty() {
            return Ok(());
        }
        for (path, rows) in &files {
            if let Some(bad) = rows
                .iter()
                .find(|r| r.repo_id != repo_id || &r.chunk.relative_path != path)
            {
                return Err(StoreError::Invalid(format!(
                    "chunk {} belongs to {}:{}, not {repo_id}:{path}",
                    bad.chunk.id, bad.repo_id, bad.chunk.relative_path
                )));
            }
        }
        let paths = files
            .iter()
            .map(|(p, _)| quote(p))
            .collect::<Vec<_>>()
            .join(", ");
        let scope = format!(
            "repo_id = {} AND relative_path IN ({paths})",
            quote(repo_id)
        );
        let rows: Vec<ChunkRow> = files.into_iter().flat_map(|(_, rows)| rows).collect();
        let written = rows.len();
        let _guard = self.lock_for_write().await?;
        if rows.is_empty() {
            self.table.delete(scope.as_str()).await?;
        } else if self.table.count_rows(Some(scope.clone())).await? == 0 {
            // None of the files has rows yet (a first index, new files): an append. A
            // merge would join the batch against the whole table, so that a bulk load
            // cost the square of its size.
            self.table.add(self.batch(&rows)?).execute().await?;
        } else {
            let batch = self.batch(&rows)?;
            let reader = RecordBatchIterator::new(vec![Ok(batch)], self.schema.clone());
            // One commit: update the chunks that stay, insert new ones, delete the files'
            // chunks that are gone.
            let mut merge = self.table.merge_insert(&["repo_id", "id"]);
            merge
                .when_matched_update_all(None)
                .when_not_matched_insert_all()
                .when_not_matched_by_source_delete(Some(scope));
            merge.execute(Box::new(reader)).await?;
        }
        self.after_write(written).await
    }

    async fn delete_file(&self, repo_id: &str, relative_path: &str) -> Result<(), StoreError> {
        self.replace_file(repo_id, relative_path, Vec::new()).await
    }

    async fn delete_repo(&self, repo_id: &str) -> Result<(), StoreError> {
        let _guard = self.lock_for_write().await?;
        self.table
            .delete(format!("repo_id = {}", quote(repo_id)).as_str())
            .await?;
        self.after_write(0).await
    }

    async fn vector_search(
        &self,
        vector: &[f32],
        k: usize,
        filter: &ChunkFilter,
    ) -> Result<Vec<ScoredChunk>, StoreError> {
        if vector.len() != self.options.dims {
            return Err(StoreError::Invalid(format!(
                "query vector has {} dimensions; the store expects {}",
                vector.len(),
                self.options.dims
            )));
        }
        if k == 0 {
            return Ok(Vec::new());
        }
        if let Some(hits) = self.flat_search(vector, k, filter).await? {
            return Ok(hits);
        }
        let paths = filter.path_matcher().map_err(StoreError::Invalid)?;
        let mut query = self
            .table
            .query()
            .nearest_to(vector.to_vec())?
            .distance_type(DistanceType::Cosine)
            .select(self.read_columns(Some("_distance")))
            .limit(k);
        if self.options.ann_refine_factor > 0 {
            query = query.refine_factor(self.options.ann_refine_factor);
        }
        // Rows whose embedding has not landed yet are found by text search only.
        let predicate = match (self.all_embedded().await?, filter.to_sql()) {
            (true, predicate) => predicate,
            (false, Some(predicate)) => Some(format!("embedded = true AND ({predicate})")),
            (false, None) => Some("embedded = true".to_string()),
        };
        if let Some(predicate) = predicate {
            query = query.only_if(predicate);
        }
        let batches = self.run_query(query).await?;
        Ok(
            rows_of(&batches, Some("_distance"), self.sources.as_deref())?
                .into_iter()
                .filter(|(row, _)| paths.is_match(&row.chunk.relative_path))
                .map(|(row, distance)| ScoredChunk {
                    row,
                    score: 1.0 - distance,
                })
                .collect(),
        )
    }

    async fn text_search(
        &self,
        query: &str,
        k: usize,
        filter: &ChunkFilter,
    ) -> Result<Vec<ScoredChunk>, StoreError> {
        if query.trim().is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let paths = filter.path_matcher().map_err(StoreError::Invalid)?;
        // Memory first: the rows held are the table as it is now, with their texts.
        if let Some(hits) = self.held_text_search(query, k, filter, &paths).await? {
            return Ok(hits);
        }
        if !self.has_index_on("search_text").await? {
            // Nothing was ever written (the index comes with the first rows).
            return Ok(Vec::new());
        }
        let mut q = self
            .table
            .query()
            .full_text_search(FullTextSearchQuery::new(query.to_string()))
            .select(self.read_columns(Some("_score")))
            .limit(k);
        if let Some(predicate) = filter.to_sql() {
            q = q.only_if(predicate);
        }
        let batches = self.run_query(q).await?;
        let mut hits: Vec<ScoredChunk> =
            rows_of(&batches, Some("_score"), self.sources.as_deref())?
                .into_iter()
                .filter(|(row, _)| paths.is_match(&row.chunk.relative_path))
                .map(|(row, score)| ScoredChunk { row, score })
                .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score));
        Ok(hits)
    }

    async fn get(&self, repo_id: &str, ids: &[String]) -> Result<Vec<ChunkRow>, StoreError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        if let Some(rows) = self.held_get(repo_id, ids).await? {
            return Ok(rows);
        }
        let list = ids.iter().map(|i| quote(i)).collect::<Vec<_>>().join(", ");
        // On `id` alone, which has a B-tree index: with `repo_id = …` in the same
        // predicate the scan was 5–7 ms for a handful of ids; the repository is checked
        // on the few rows that come back.
        let batches = self
            .run_query(
                self.table
                    .query()
                    .select(self.read_columns(None))
                    .only_if(format!("id IN ({list})")),
            )
            .await?;
        Ok(rows_of(&batches, None, self.sources.as_deref())?
            .into_iter()
            .map(|(row, _)| row)
            .filter(|row| row.repo_id == repo_id)
            .collect())
    }

    async fn file_paths(
        &self,
        repo_id: &str,
    ) -> Result<std::collections::BTreeSet<String>, StoreError> {
        let batches = self
            .run_query(
                self.table
                    .query()
                    .select(lancedb::query::Select::columns(&["relative_path"]))
                    .only_if(format!("repo_id = {}", quote(repo_id))),
            )
            .await?;
        let mut paths = std::collections::BTreeSet::new();
        for batch in &batches {
            paths.extend(strings(batch, "relative_path")?.into_iter().flatten());
        }
        Ok(paths)
    }

    async fn files_chunks(
        &self,
        repo_id: &str,
        relative_paths: &[String],
    ) -> Result<HashMap<String, Vec<ChunkRow>>, StoreError> {
        if relative_paths.is_empty() {
            return Ok(HashMap::new());
        }
        if let Some(held) = self.held_files(repo_id, relative_paths).await? {
            return Ok(held);
        }
        let list = relative_paths
            .iter()
            .map(|p| quote(p))
            .collect::<Vec<_>>()
            .join(", ");
        // `relative_path` has a B-tree index and `repo_id` a bitmap: 11 ms for ten files at
        // 108k rows, with or without the repository in the predicate. Vectors and
        // embedding texts are left where they are (what reads whole files renders or
        // compares code).
        let batches = self
            .run_query(
                self.table
                    .query()
                    .select(self.columns_but(FILE_SKIPS, None))
                    .only_if(format!(
                        "repo_id = {} AND relative_path IN ({list})",
                        quote(repo_id)
                    )),
            )
            .await?;
        Ok(by_file(
            rows_of(&batches, None, self.sources.as_deref())?
                .into_iter()
                .map(|(row, _)| row),
        ))
    }

    async fn count(&self, filter: &ChunkFilter) -> Result<usize, StoreError> {
        if filter.has_glob() {
            // Globs need the exact re-check: count the matching rows' paths.
            let paths = filter.path_matcher().map_err(StoreError::Invalid)?;
            let mut query = self
                .table
                .query()
                .select(lancedb::query::Select::columns(&["relative_path"]));
            if let Some(predicate) = filter.to_sql() {
                query = query.only_if(predicate);
            }
            let batches = self.run_query(query).await?;
            let mut n = 0;
            for batch in &batches {
                n += strings(batch, "relative_path")?
                    .iter()
                    .flatten()
                    .filter(|p| paths.is_match(p))
                    .count();
            }
            return Ok(n);
        }
        Ok(self.table.count_rows(filter.to_sql()).await?)
    }

    async fn maintain(&self) -> Result<StoreStats, StoreError> {
        let _guard = self.lock_for_write().await?;
        self.maintain_locked().await
    }

    async fn unembedded(
        &self,
        repo_id: &str,
        limit: usize,
    ) -> Result<Vec<PendingVector>, StoreError> {
        // A page whose rows all read their code from file versions the grep index lost
        // (they wait for their files' next sync) must not end the stage while rows after
        // it are readable: such pages are stepped over.
        let mut skipped = 0;
        loop {
            let batches = self
                .run_query(
                    self.table
                        .query()
                        .select(lancedb::query::Select::columns(&[
                            "id",
                            "repo_id",
                            "relative_path",
                            "start_line",
                            "end_line",
                            "content_hash",
                            "full_source",
                            "content",
                            "embedding_text",
                        ]))
                        // Rows whose text went with their vector (see `store::texts`) wait
                        // for their file to be chunked again.
                        .only_if(format!(
                            "repo_id = {} AND embedded = false AND embedding_text <> ''",
                            quote(repo_id)
                        ))
                        .limit(limit)
                        .offset(skipped),
                )
                .await?;
            let read: usize = batches.iter().map(RecordBatch::num_rows).sum();
            let out = self.pending_of(&batches)?;
            if !out.is_empty() || read < limit || limit == 0 {
                return Ok(out);
            }
            skipped += read;
        }
    }

    async fn set_vectors(
        &self,
        repo_id: &str,
        vectors: Vec<(PendingVector, Vec<f32>)>,
    ) -> Result<usize, StoreError> {
        if vectors.is_empty() {
            return Ok(0);
        }
        if let Some((p, v)) = vectors.iter().find(|(_, v)| v.len() != self.options.dims) {
            return Err(StoreError::Invalid(format!(
                "chunk {} got a {}-dimensional vector; the store expects {}",
                p.id,
                v.len(),
                self.options.dims
            )));
        }
        let list = vectors
            .iter()
            .map(|(p, _)| quote(&p.id))
            .collect::<Vec<_>>()
            .join(", ");
        let _guard = self.lock_for_write().await?;
        // Whole rows (search text included) are read back and written with their vector:
        // a merge updates rows only where the content is still the one that was embedded.
        let batches = self
            .run_query(
                self.table
                    .query()
                    .only_if(format!("repo_id = {} AND id IN ({list})", quote(repo_id))),
            )
            .await?;
        let mut by_id: HashMap<&str, (&str, &Vec<f32>)> = vectors
            .iter()
            .map(|(p, v)| (p.id.as_str(), (p.content_hash.as_str(), v)))
            .collect();
        let rows: Vec<ChunkRow> = rows_of(&batches, None, self.sources.as_deref())?
            .into_iter()
            .filter_map(|(mut row, _)| {
                let (hash, vector) = by_id.remove(row.chunk.id.as_str())?;
                (row.content_hash == hash).then(|| {
                    row.vector = vector.clone();
                    row
                })
            })
            .collect();
        let written = rows.len();
        if written == 0 {
            return Ok(0);
        }
        let batch = self.batch(&rows)?;
        let reader = RecordBatchIterator::new(vec![Ok(batch)], self.schema.clone());
        let mut merge = self.table.merge_insert(&["repo_id", "id"]);
        merge.when_matched_update_all(Some(
            "target.content_hash = source.content_hash".to_string(),
        ));
        merge.execute(Box::new(reader)).await?;
        drop(_guard);
        self.after_write(written).await?;
        Ok(written)
    }

    async fn embedding_state(&self, repo_id: Option<&str>) -> Result<EmbeddingState, StoreError> {
        let scope = repo_id.map(|r| format!("repo_id = {}", quote(r)));
        let pending = match &scope {
            Some(s) => format!("{s} AND embedded = false"),
            None => "embedded = false".to_string(),
        };
        Ok(EmbeddingState {
            total: self.table.count_rows(scope).await?,
            pending: self.table.count_rows(Some(pending)).await?,
        })
    }

    async fn all_embedded(&self) -> Result<bool, StoreError> {
        let version = self.table.version().await?;
        let known = *self
            .all_embedded_at
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if known == Some(version) {
            return Ok(true);
        }
        let pending = self
            .table
            .count_rows(Some("embedded = false".to_string()))
            .await?;
        if pending == 0 {
            *self
                .all_embedded_at
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(version);
        }
        Ok(pending == 0)
    }

    async fn forget_vectors(&self) -> Result<(), StoreError> {
        let _guard = self.lock_for_write().await?;
        self.table
            .update()
            .only_if("embedded = true")
            .column("embedded", "false")
            .execute()
            .await?;
        Ok(())
    }

    async fn ping(&self) -> Result<(), StoreError> {
        self.table.count_rows(None).await?;
        Ok(())
    }

    async fn stats(&self) -> Result<StoreStats, StoreError> {
        let mut indexed_columns: Vec<String> = self
            .table
            .list_indices()
            .await?
            .into_iter()
            .flat_map(|i| i.columns)
            .collect();
        indexed_columns.sort();
        indexed_columns.dedup();
        Ok(StoreStats {
            indexed_columns,
            rows: self.table.count_rows(None).await?,
            vector_index: self.has_index_on("vector").await?,
            text_index: self.has_index_on("search_text").await?,
            text_unindexed_rows: self.text_unindexed_rows().await?,
            version: self.table.version().await?,
        })
    }

    async fn finish(&self) -> Result<(), StoreError> {
        let _guard = self.lock_for_write().await?;
        if self.version_count().await? > 1 {
            // Only old versions' files: files no version names yet may belong to work
            // of another process (an index being built).
            prune(&self.table, std::time::Duration::ZERO, false).await?;
        }
        Ok(())
    }

    async fn storage(&self) -> Result<StoreStorage, StoreError> {
        let stats = self.table.stats().await?;
        let versions = self.version_count().await?;
        let disk_bytes = if self.options.uri.contains("://") {
            None
        } else {
            let dir = Path::new(&self.options.uri).join(format!("{}.lance", self.options.table));
            Some(directory_bytes(&dir))
        };
        Ok(StoreStorage {
            deleted_rows: stats.num_deleted_rows.unwrap_or(0),
            versions,
            fragments: stats.fragment_stats.num_fragments,
            small_fragments: stats.fragment_stats.num_small_fragments,
            live_bytes: stats.total_bytes as u64,
            disk_bytes,
            held_bytes: self.flat.held_bytes() as u64,
            held_limit_bytes: self.flat.limit_bytes() as u64,
        })
    }
}

impl LanceStore {
    /// How many versions the table has. Listing them reads each version's manifest, and a
    /// cleanup running meanwhile (this store's maintenance, another replica's) may delete
    /// one between the listing and the read: the listing is taken again then.
    async fn version_count(&self) -> Result<usize, StoreError> {
        let mut tries = 0;
        loop {
            match self.table.list_versions().await {
                Ok(versions) => return Ok(versions.len()),
                Err(lancedb::Error::Lance {
                    source: lance::Error::NotFound { .. },
                }) if tries < VERSION_LIST_TRIES => tries += 1,
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// Listings of the table's versions retried when a listed version vanished meanwhile.
const VERSION_LIST_TRIES: usize = 4;
