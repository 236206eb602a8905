//! [`MetaStore`] over sqlx's `Any` driver: one implementation for SQLite and PostgreSQL.
//!
//! Queries are runtime strings in the portable subset both databases accept (`$N`
//! placeholders, `ON CONFLICT … DO UPDATE`, `RETURNING`-free), so the same code and the
//! same migrations (`migrations/`, embedded at build time) serve both backends.

use std::collections::HashMap;
use std::path::Path;
use std::str::FromStr;

use async_trait::async_trait;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, FromRow, Row};

use super::meta::*;
use super::{StoreError, now_ms};

/// Migrations embedded in the binary, applied at open.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Bound parameters per `IN (…)` list (SQLite allows 32,766, Postgres 65,535 per query).
const IN_BATCH: usize = 500;

/// How the symbol graph's tables store chunk ids (migration 12): the 16 bytes of an id
/// that is 32 lowercase hex characters (every id the chunker makes: `chunk::ids`), any
/// other id as its UTF-8 bytes, with a 0xFF byte appended when those are 16 long (UTF-8
/// never holds 0xFF, so no such id reads back as hex).
mod chunk_keys {
    use super::StoreError;

    /// The stored form of a chunk id.
    pub fn key(id: &str) -> Vec<u8> {
        let hex = |b: u8| match b {
            b'0'..=b'9' => Some(b - b'0'),
            b'a'..=b'f' => Some(b - b'a' + 10),
            _ => None,
        };
        if id.len() == 32 {
            let bytes: Option<Vec<u8>> = id
                .as_bytes()
                .chunks_exact(2)
                .map(|pair| Some(hex(pair[0])? << 4 | hex(pair[1])?))
                .collect();
            if let Some(bytes) = bytes {
                return bytes;
            }
        }
        let mut bytes = id.as_bytes().to_vec();
        if bytes.len() == 16 {
            bytes.push(0xFF);
        }
        bytes
    }

    /// The chunk id of a stored key.
    pub fn id(key: &[u8]) -> Result<String, StoreError> {
        if key.len() == 16 {
            return Ok(key.iter().map(|b| format!("{b:02x}")).collect());
        }
        let text = key.strip_suffix(&[0xFF]).unwrap_or(key);
        String::from_utf8(text.to_vec()).map_err(|_| {
            StoreError::Invalid(
                "a chunk id in the symbol graph is damaged; remove the repository \
                 (`sextant repo remove`) and add it again to rebuild its graph"
                    .into(),
            )
        })
    }

    /// SQL turning a text id column written before migration 12 into its key, as
    /// [`key`] does, on `backend`.
    pub fn from_text_sql(backend: &str, column: &str) -> String {
        if backend == "postgres" {
            format!(
                "CASE WHEN {column} ~ '^[0-9a-f]{{32}}$' THEN decode({column}, 'hex') \
                 WHEN octet_length({column}) = 16 THEN convert_to({column}, 'UTF8') || '\\xff'::bytea \
                 ELSE convert_to({column}, 'UTF8') END"
            )
        } else {
            format!(
                "CASE WHEN length({column}) = 32 AND {column} NOT GLOB '*[^0-9a-f]*' THEN unhex({column}) \
                 WHEN length(CAST({column} AS BLOB)) = 16 THEN CAST(CAST({column} AS BLOB) || X'FF' AS BLOB) \
                 ELSE CAST({column} AS BLOB) END"
            )
        }
    }
}

/// How a file's graph facts are stored: their JSON compressed with zstd, as base64 behind
/// a `z:` tag (TEXT, so the one schema serves both backends). The JSON repeats its keys
/// and chunk ids and was the largest table of a large index (50 MB for 41 MB of source);
/// compressed it is about a tenth. Rows written before hold the JSON itself and still
/// read.
mod facts {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;

    use super::StoreError;

    const TAG: &str = "z:";

    /// zstd's level: its default, fast to write and within a few per cent of the best.
    const LEVEL: i32 = 3;

    /// The stored form of `json`.
    pub fn pack(json: &str) -> Result<String, StoreError> {
        let packed = zstd::encode_all(json.as_bytes(), LEVEL)
            .map_err(|e| StoreError::Invalid(format!("cannot compress graph facts: {e}")))?;
        Ok(format!("{TAG}{}", STANDARD.encode(packed)))
    }

    /// The JSON of a stored row (packed, or plain JSON as written before packing).
    pub fn unpack(stored: String) -> Result<String, StoreError> {
        let Some(encoded) = stored.strip_prefix(TAG) else {
            return Ok(stored);
        };
        let damaged = |what: String| {
            StoreError::Invalid(format!(
                "stored graph facts are damaged ({what}); remove the repository \
                 (`sextant repo remove`) and add it again to rebuild them"
            ))
        };
        let packed = STANDARD
            .decode(encoded)
            .map_err(|e| damaged(e.to_string()))?;
        let json = zstd::decode_all(packed.as_slice()).map_err(|e| damaged(e.to_string()))?;
        String::from_utf8(json).map_err(|e| damaged(e.to_string()))
    }
}

/// `$first, $first+1, …` (`count` placeholders).
pub(super) fn placeholders(first: usize, count: usize) -> String {
    (first..first + count)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The SQL metadata store.
#[derive(Debug, Clone)]
pub struct SqlMetaStore {
    pool: AnyPool,
    backend: &'static str,
}

/// Bytes of a SQLite database read through a memory map (1 GiB).
const SQLITE_MMAP_BYTES: u64 = 1 << 30;

fn new_id() -> String {
    // Time-ordered (UUIDv7): ids sort by creation, which the job queue relies on.
    uuid::Uuid::now_v7().simple().to_string()
}

fn b(value: bool) -> i64 {
    i64::from(value)
}

impl SqlMetaStore {
    /// Opens (creating if needed) the store at `url` and applies pending migrations.
    ///
    /// `url` is a `postgres://` / `postgresql://` URL, a `sqlite:` URL, or a plain file
    /// path (SQLite; parent directories are created).
    pub async fn open(url: &str) -> Result<Self, StoreError> {
        sqlx::any::install_default_drivers();
        let (url, backend) = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            (url.to_string(), "postgres")
        } else if url.starts_with("sqlite:") {
            (url.to_string(), "sqlite")
        } else if url.contains("://") {
            return Err(StoreError::UnsupportedUrl(url.to_string()));
        } else {
            let path = Path::new(url);
            if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(|source| StoreError::Io {
                    path: parent.display().to_string(),
                    source,
                })?;
            }
            (format!("sqlite://{}?mode=rwc", path.display()), "sqlite")
        };
        let options = AnyConnectOptions::from_str(&url)?;
        let pool = AnyPoolOptions::new()
            .max_connections(if backend == "sqlite" { 4 } else { 10 })
            // A database that does not answer fails a request within this time (503)
            // instead of holding it for sqlx's default 30 s.
            .acquire_timeout(std::time::Duration::from_secs(10))
            // No idle timeout or lifetime, so no maintenance task: sqlx 0.9.0's can spin
            // without yielding once the pool is closed (its idle count wraps below
            // zero), which held a test's runtime shutdown for good. A connection the
            // server dropped is found by the ping before each acquire and replaced
            // (PostgreSQL: a SQLite connection is a file handle in this process, and the
            // ping a round trip to its thread before every query).
            .idle_timeout(None)
            .max_lifetime(None)
            .test_before_acquire(backend != "sqlite")
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if backend == "sqlite" {
                        // Reads through the memory map: the operating system's page
                        // cache, shared by the pool's connections, instead of a small
                        // page cache copied into each (SQLite caps the map at the file's
                        // size and at its own compile-time limit).
                        sqlx::query(sqlx::AssertSqlSafe(format!(
                            "PRAGMA mmap_size = {SQLITE_MMAP_BYTES}"
                        )))
                        .execute(conn)
                        .await?;
                    }
                    Ok(())
                })
            })
            .connect_with(options)
            .await?;
        if backend == "sqlite" {
            // Per-connection settings are in the URL defaults (WAL, foreign keys on);
            // check foreign keys really are enforced, cascades depend on them.
            let fk: i64 = sqlx::query("PRAGMA foreign_keys")
                .fetch_one(&pool)
                .await?
                .try_get(0)?;
            if fk != 1 {
                return Err(StoreError::Invalid(
                    "SQLite foreign keys are off; cascading deletes would orphan rows".into(),
                ));
            }
        }
        MIGRATOR.run(&pool).await?;
        let store = Self { pool, backend };
        store.move_graph_rows_by_path().await?;
        store.move_graph_chunk_ids_as_text().await?;
        store.move_text_cache().await?;
        Ok(store)
    }

    /// The default embedded store: `<data_dir>/sextant.db`.
    pub async fn open_in(data_dir: &Path) -> Result<Self, StoreError> {
        Self::open(&data_dir.join("sextant.db").to_string_lossy()).await
    }

    /// How large the database is, and (SQLite) how much of it is free pages that
    /// `VACUUM` would give back.
    pub async fn size(&self) -> Result<DatabaseSize, StoreError> {
        if self.backend == "sqlite" {
            let pragma = |name: &'static str| async move {
                let value: i64 = sqlx::query(sqlx::AssertSqlSafe(format!("PRAGMA {name}")))
                    .fetch_one(&self.pool)
                    .await?
                    .try_get(0)?;
                Ok::<u64, StoreError>(value.max(0) as u64)
            };
            let page = pragma("page_size").await?;
            // Pages of each table and of its indexes (SQLite's `dbstat`, which reads
            // every page: a second or so for a few hundred MB).
            let tables = sqlx::query(
                "SELECT s.tbl_name AS name, SUM(d.pgsize) AS bytes FROM dbstat d \
                 JOIN sqlite_schema s ON s.name = d.name GROUP BY s.tbl_name",
            )
            .fetch_all(&self.pool)
            .await?;
            Ok(DatabaseSize {
                bytes: pragma("page_count").await? * page,
                free_bytes: Some(pragma("freelist_count").await? * page),
                tables: table_sizes(tables)?,
            })
        } else {
            let bytes: i64 = sqlx::query("SELECT pg_database_size(current_database())")
                .fetch_one(&self.pool)
                .await?
                .try_get(0)?;
            let tables = sqlx::query(
                "SELECT c.relname::text AS name, pg_total_relation_size(c.oid) AS bytes \
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE c.relkind = 'r' AND n.nspname = current_schema()",
            )
            .fetch_all(&self.pool)
            .await?;
            Ok(DatabaseSize {
                bytes: bytes.max(0) as u64,
                free_bytes: None,
                tables: table_sizes(tables)?,
            })
        }
    }

    /// The connection pool (for store extensions in this layer).
    pub(super) fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Closes the pool (waits for connections to be returned).
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// The metadata database's size ([`SqlMetaStore::size`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseSize {
    /// Bytes the database takes (SQLite: pages × page size, WAL aside; Postgres:
    /// `pg_database_size`).
    pub bytes: u64,
    /// Bytes in free pages, which `VACUUM` gives back (SQLite only).
    pub free_bytes: Option<u64>,
    /// Bytes of each table with its indexes, largest first.
    pub tables: Vec<(String, u64)>,
}

/// `(name, bytes)` rows as [`DatabaseSize::tables`], largest first.
fn table_sizes(rows: Vec<AnyRow>) -> Result<Vec<(String, u64)>, StoreError> {
    let mut tables = rows
        .iter()
        .map(|row| {
            let bytes: i64 = row.try_get("bytes")?;
            Ok((row.try_get("name")?, bytes.max(0) as u64))
        })
        .collect::<Result<Vec<(String, u64)>, StoreError>>()?;
    tables.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(tables)
}

/// Reads stored settings. Versions before 0.2 wrote snake_case keys; the record (which is
/// also the wire's) takes its own camelCase names only, so each stored key is matched to
/// the record's names without case or underscores (`max_file_bytes` → `maxFileBytes`).
fn stored_settings(text: &str) -> Result<RepoSettings, StoreError> {
    let invalid = |e: serde_json::Error| {
        StoreError::Invalid(format!(
            "stored repository settings are not valid: {e}; set them again with `sextant repo set`"
        ))
    };
    let folded = |key: &str| key.replace('_', "").to_ascii_lowercase();
    let names: HashMap<String, String> = match serde_json::to_value(RepoSettings::default()) {
        Ok(serde_json::Value::Object(fields)) => {
            fields.keys().map(|k| (folded(k), k.clone())).collect()
        }
        _ => HashMap::new(),
    };
    let mut value: serde_json::Value = serde_json::from_str(text).map_err(invalid)?;
    if let Some(map) = value.as_object_mut() {
        *map = std::mem::take(map)
            .into_iter()
            .map(|(key, v)| (names.get(&folded(&key)).cloned().unwrap_or(key), v))
            .collect();
    }
    serde_json::from_value(value).map_err(invalid)
}

fn repository(row: &AnyRow) -> Result<Repository, StoreError> {
    let name: String = row.try_get("name")?;
    // One repository's unreadable settings must not hide every repository (nor the
    // command that sets them again): it gets the defaults, and the log says so.
    let settings = stored_settings(&row.try_get::<String, _>("settings")?).unwrap_or_else(|e| {
        tracing::warn!(repository = %name, error = %e, "using default settings");
        RepoSettings::default()
    });
    Ok(Repository {
        id: row.try_get("id")?,
        name,
        source: RepoSource::join(
            &row.try_get::<String, _>("source_kind")?,
            row.try_get("source")?,
        )?,
        tracked_ref: row.try_get("tracked_ref")?,
        indexed_commit: row.try_get("indexed_commit")?,
        parent_id: row.try_get("parent_id")?,
        status: row.try_get::<String, _>("status")?.try_into()?,
        last_error: row.try_get("last_error")?,
        settings,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn file(row: &AnyRow) -> Result<FileRecord, StoreError> {
    Ok(FileRecord::from_row(row)?)
}

/// A chunk id column's value (see [`chunk_keys`]).
fn chunk_column(row: &AnyRow, column: &str) -> Result<Option<String>, StoreError> {
    row.try_get::<Option<Vec<u8>>, _>(column)?
        .as_deref()
        .map(chunk_keys::id)
        .transpose()
}

/// A chunk id column's value that is never null.
fn required_chunk(row: &AnyRow, column: &str) -> Result<String, StoreError> {
    chunk_column(row, column)?
        .ok_or_else(|| StoreError::Invalid(format!("the symbol graph holds a null {column}")))
}

fn symbol(row: &AnyRow) -> Result<SymbolRecord, StoreError> {
    Ok(SymbolRecord {
        chunk_id: required_chunk(row, "chunk_id")?,
        name: row.try_get("name")?,
        kind: row.try_get("kind")?,
        parent_chunk_id: chunk_column(row, "parent_chunk_id")?,
        parent_name: row.try_get("parent_name")?,
        breadcrumb: row.try_get("breadcrumb")?,
        signature: row.try_get("signature")?,
        modifiers: row.try_get("modifiers")?,
        exported: row.try_get::<i64, _>("exported")? != 0,
        depth: row.try_get("depth")?,
        start_line: row.try_get("start_line")?,
        end_line: row.try_get("end_line")?,
    })
}

fn edge(row: &AnyRow) -> Result<EdgeRecord, StoreError> {
    Ok(EdgeRecord {
        from_chunk: required_chunk(row, "from_chunk")?,
        to_chunk: chunk_column(row, "to_chunk")?,
        to_name: row.try_get("to_name")?,
        kind: row.try_get::<String, _>("kind")?.try_into()?,
        certain: row.try_get::<i64, _>("certain")? != 0,
        line: row.try_get("line")?,
    })
}

fn job(row: &AnyRow) -> Result<Job, StoreError> {
    Ok(Job::from_row(row)?)
}

fn token(row: &AnyRow) -> Result<ApiToken, StoreError> {
    let repos: String = row.try_get("repositories")?;
    Ok(ApiToken {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        token_hash: row.try_get("token_hash")?,
        scope: row.try_get::<String, _>("scope")?.try_into()?,
        repositories: repos.split_whitespace().map(str::to_string).collect(),
        created_at: row.try_get("created_at")?,
        revoked_at: row.try_get("revoked_at")?,
    })
}

/// Inserts a queued job; its id.
async fn insert_job<'e, E>(executor: E, new: &NewJob) -> Result<String, StoreError>
where
    E: sqlx::Executor<'e, Database = sqlx::Any>,
{
    let id = new_id();
    let now = now_ms();
    sqlx::query(
        "INSERT INTO jobs (id, repo_id, kind, state, progress_done, progress_total, message, error, attempts, \
         created_at, started_at, finished_at, updated_at) VALUES ($1, $2, $3, $4, 0, 0, NULL, NULL, 0, $5, NULL, NULL, $5)",
    )
    .bind(&id)
    .bind(&new.repo_id)
    .bind(&new.kind)
    .bind(JobState::Queued.as_str())
    .bind(now)
    .execute(executor)
    .await?;
    Ok(id)
}

fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
}

// Column lists as macros so queries stay `&'static str` (sqlx only takes static or
// explicitly asserted SQL).
macro_rules! job_columns {
    () => {
        "id, repo_id, kind, state, progress_done, progress_total, message, error, attempts, \
         created_at, started_at, finished_at, updated_at, lease_owner, lease_until, not_before"
    };
}
macro_rules! file_columns {
    () => {
        "repo_id, path, language, content_hash, mtime_ms, size_bytes, line_count, symbol_count, \
         indexed_at, skip_reason"
    };
}
macro_rules! symbol_columns {
    () => {
        "chunk_id, name, kind, parent_chunk_id, parent_name, breadcrumb, signature, modifiers, \
         exported, depth, start_line, end_line"
    };
}
macro_rules! edge_columns {
    () => {
        "from_chunk, to_chunk, to_name, kind, certain, line"
    };
}

/// How a table's rows name the repository and file they belong to.
#[derive(Debug, Clone, Copy)]
enum Owner {
    /// `repo_id` and this column, the file's path.
    Path(&'static str),
    /// `file_id` ([`file_id`]), the file's number.
    FileId,
    /// `repo_id` only: rows of the whole repository.
    Repository,
}

/// The tables that hold a repository's rows besides `repositories`, children before
/// parents (the order deletes run in), each with how its rows name their file. The one
/// cascade `delete_repository` and `delete_file` follow; `files` is the last table with
/// a file.
const REPOSITORY_ROWS: [(&str, Owner); 6] = [
    ("edges", Owner::FileId),
    ("file_facts", Owner::Path("path")),
    ("symbols", Owner::FileId),
    ("files", Owner::Path("path")),
    ("jobs", Owner::Repository),
    ("repo_credentials", Owner::Repository),
];

/// A file's number, which keys its symbols and edges: the first eight bytes of the
/// SHA-256 of its repository id and path. Any process derives it without asking the
/// database; two of a store's files share one with a chance of about n²/2⁶⁵ (n files),
/// and the unique index on `files.file_id` refuses the second rather than mix them.
pub fn file_id(repo_id: &str, path: &str) -> i64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::new()
        .chain_update(repo_id.as_bytes())
        .chain_update([0u8])
        .chain_update(path.as_bytes())
        .finalize();
    let mut head = [0u8; 8];
    head.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(head)
}

/// Replaces a repository's stored credentials with `credentials` (none: removes them).
async fn put_credentials(
    conn: &mut sqlx::AnyConnection,
    repo_id: &str,
    credentials: Option<&Credentials>,
) -> Result<(), StoreError> {
    sqlx::query("DELETE FROM repo_credentials WHERE repo_id = $1")
        .bind(repo_id)
        .execute(&mut *conn)
        .await?;
    if let Some(c) = credentials {
        sqlx::query(
            "INSERT INTO repo_credentials (repo_id, username, password) VALUES ($1, $2, $3)",
        )
        .bind(repo_id)
        .bind(&c.username)
        .bind(&c.password)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Deletes one file's rows from `table` (whose file column is `column`); the number of
/// rows deleted.
async fn delete_file_rows<'e, E>(
    executor: E,
    table: &'static str,
    owner: Owner,
    repo_id: &str,
    path: &str,
) -> Result<u64, StoreError>
where
    E: sqlx::Executor<'e, Database = sqlx::Any>,
{
    // Table and column names come from `REPOSITORY_ROWS` only.
    let query = match owner {
        Owner::Path(column) => {
            let sql = format!("DELETE FROM {table} WHERE repo_id = $1 AND {column} = $2");
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(repo_id)
                .bind(path)
        }
        Owner::FileId => {
            let sql = format!("DELETE FROM {table} WHERE file_id = $1");
            sqlx::query(sqlx::AssertSqlSafe(sql)).bind(file_id(repo_id, path))
        }
        Owner::Repository => return Ok(0),
    };
    Ok(query.execute(executor).await?.rows_affected())
}

async fn upsert_file_in<'e, E>(executor: E, f: &FileRecord) -> Result<(), StoreError>
where
    E: sqlx::Executor<'e, Database = sqlx::Any>,
{
    sqlx::query(
        "INSERT INTO files (repo_id, path, language, content_hash, mtime_ms, size_bytes, line_count, \
         symbol_count, indexed_at, skip_reason, file_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
         ON CONFLICT (repo_id, path) DO UPDATE SET language = excluded.language, \
         content_hash = excluded.content_hash, mtime_ms = excluded.mtime_ms, size_bytes = excluded.size_bytes, \
         line_count = excluded.line_count, symbol_count = excluded.symbol_count, \
         indexed_at = excluded.indexed_at, skip_reason = excluded.skip_reason, \
         file_id = excluded.file_id",
    )
    .bind(&f.repo_id)
    .bind(&f.path)
    .bind(&f.language)
    .bind(&f.content_hash)
    .bind(f.mtime_ms)
    .bind(f.size_bytes)
    .bind(f.line_count)
    .bind(f.symbol_count)
    .bind(f.indexed_at)
    .bind(&f.skip_reason)
    .bind(file_id(&f.repo_id, &f.path))
    .execute(executor)
    .await?;
    Ok(())
}

/// A repository row to insert.
struct NewRow<'a> {
    id: &'a str,
    name: &'a str,
    source: &'a RepoSource,
    tracked_ref: Option<&'a str>,
    settings: &'a RepoSettings,
    parent_id: Option<&'a str>,
}

/// The columns a repository is looked up by.
#[derive(Clone, Copy)]
enum RepoColumn {
    Id,
    Name,
    ParentId,
}

impl SqlMetaStore {
    /// The repositories whose column is the value given (every one, for `None`), by
    /// name.
    async fn repositories_where(
        &self,
        filter: Option<(RepoColumn, &str)>,
    ) -> Result<Vec<Repository>, StoreError> {
        let query = match filter {
            None => sqlx::query("SELECT * FROM repositories ORDER BY name"),
            Some((column, value)) => sqlx::query(match column {
                RepoColumn::Id => "SELECT * FROM repositories WHERE id = $1 ORDER BY name",
                RepoColumn::Name => "SELECT * FROM repositories WHERE name = $1 ORDER BY name",
                RepoColumn::ParentId => {
                    "SELECT * FROM repositories WHERE parent_id = $1 ORDER BY name"
                }
            })
            .bind(value),
        };
        let rows = query.fetch_all(&self.pool).await?;
        rows.iter().map(repository).collect()
    }

    /// Inserts a registered repository (or tracked ref) and reads it back; `Conflict`
    /// naming `what` when its name is taken.
    async fn insert_repository(
        &self,
        row: NewRow<'_>,
        what: impl FnOnce() -> String,
    ) -> Result<Repository, StoreError> {
        let now = now_ms();
        let (kind, location) = row.source.split();
        let settings = serde_json::to_string(row.settings)
            .map_err(|e| StoreError::Invalid(format!("settings do not serialise: {e}")))?;
        let result = sqlx::query(
            "INSERT INTO repositories (id, name, source_kind, source, tracked_ref, indexed_commit, status, \
             last_error, settings, created_at, updated_at, parent_id) \
             VALUES ($1, $2, $3, $4, $5, NULL, $6, NULL, $7, $8, $8, $9)",
        )
        .bind(row.id)
        .bind(row.name)
        .bind(kind)
        .bind(location)
        .bind(row.tracked_ref)
        .bind(RepoStatus::Registered.as_str())
        .bind(&settings)
        .bind(now)
        .bind(row.parent_id)
        .execute(&self.pool)
        .await;
        match result {
            Err(e) if is_unique_violation(&e) => return Err(StoreError::Conflict(what())),
            other => other?,
        };
        self.existing_repository(row.id).await
    }

    /// The repository `id`, which a write just made or changed.
    async fn existing_repository(&self, id: &str) -> Result<Repository, StoreError> {
        self.get_repository(id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("repository {id}")))
    }

    /// The repository's edges whose `column` (`from_chunk` or `to_chunk`) is one of
    /// `ids`, in batches of [`IN_BATCH`], ordered by `order` (`e.` edges, `f.` files)
    /// within each batch.
    async fn edges_where(
        &self,
        column: &'static str,
        order: &'static str,
        repo_id: &str,
        ids: &[String],
    ) -> Result<Vec<EdgeRecord>, StoreError> {
        let mut out = Vec::new();
        let mut ids = ids.to_vec();
        ids.sort();
        ids.dedup();
        for batch in ids.chunks(IN_BATCH) {
            // `CROSS JOIN`: SQLite reads edges by the chunk index first, then each one's
            // file by its number (left alone it may walk the repository's files instead).
            let sql = format!(
                concat!(
                    "SELECT ",
                    edge_columns!(),
                    " FROM edges e CROSS JOIN files f WHERE f.file_id = e.file_id \
                     AND f.repo_id = $1 AND e.{} IN ({}) ORDER BY {}"
                ),
                column,
                placeholders(2, batch.len()),
                order
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(repo_id);
            for id in batch {
                query = query.bind(chunk_keys::key(id));
            }
            for row in query.fetch_all(&self.pool).await? {
                out.push(edge(&row)?);
            }
        }
        Ok(out)
    }

    /// A transaction in which the rows a migration left waiting (the store setting `key`)
    /// move, or `None` when none wait. A read first, so that every later open takes no
    /// write lock; the setting is deleted in the transaction, so that of two replicas
    /// opening at once only one moves the rows.
    pub(super) async fn move_waiting(
        &self,
        key: &str,
    ) -> Result<Option<sqlx::Transaction<'static, sqlx::Any>>, StoreError> {
        let marked = sqlx::query("SELECT key FROM store_settings WHERE key = $1")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        if marked.is_none() {
            return Ok(None);
        }
        let mut tx = self.pool.begin().await?;
        let waiting = sqlx::query("DELETE FROM store_settings WHERE key = $1")
            .bind(key)
            .execute(&mut *tx)
            .await?
            .rows_affected()
            > 0;
        Ok(waiting.then_some(tx))
    }

    /// Commits a move and, when it `moved` rows (SQLite), gives the old tables' pages
    /// back to the file system; a new database, whose old tables were empty, is not
    /// rewritten.
    pub(super) async fn finish_move(
        &self,
        tx: sqlx::Transaction<'static, sqlx::Any>,
        moved: u64,
    ) -> Result<(), StoreError> {
        tx.commit().await?;
        if moved > 0 && self.backend == "sqlite" {
            sqlx::query("VACUUM").execute(&self.pool).await?;
        }
        Ok(())
    }

    /// Copies the rows of `symbols_from` and `edges_from` (tables with text chunk ids,
    /// aliased `s` and `e`, joined to `files f` by `join`) into the current tables in `tx`,
    /// converting the ids to their keys ([`chunk_keys`]), and drops the two old tables.
    /// Returns the rows copied.
    async fn move_graph_rows(
        &self,
        tx: &mut sqlx::Transaction<'static, sqlx::Any>,
        symbols_from: &str,
        edges_from: &str,
        join: &str,
    ) -> Result<u64, StoreError> {
        let key = |column: &str| chunk_keys::from_text_sql(self.backend, column);
        let statements = [
            format!(
                "INSERT INTO symbols (file_id, ordinal, {}) SELECT f.file_id, s.ordinal, {}, s.name, \
                 s.kind, {}, s.parent_name, s.breadcrumb, s.signature, s.modifiers, s.exported, \
                 s.depth, s.start_line, s.end_line FROM {symbols_from} s JOIN files f ON {}",
                symbol_columns!(),
                key("s.chunk_id"),
                key("s.parent_chunk_id"),
                join.replace("{t}", "s"),
            ),
            format!(
                "INSERT INTO edges (file_id, {}) SELECT f.file_id, {}, {}, e.to_name, e.kind, \
                 e.certain, e.line FROM {edges_from} e JOIN files f ON {}",
                edge_columns!(),
                key("e.from_chunk"),
                key("e.to_chunk"),
                join.replace("{t}", "e"),
            ),
            format!("DROP TABLE {symbols_from}"),
            format!("DROP TABLE {edges_from}"),
        ];
        let mut moved = 0;
        for sql in statements {
            moved += sqlx::query(sqlx::AssertSqlSafe(sql))
                .execute(&mut **tx)
                .await?
                .rows_affected();
        }
        Ok(moved)
    }

    /// Moves the symbols and edges stored by repository id and path (before migration
    /// 10) to their tables keyed by file number, if any wait: numbers every file, copies
    /// the rows by a join on `files`, drops the old tables. One transaction. About 5 s
    /// for a million lines' 195k edges and 106k symbols.
    async fn move_graph_rows_by_path(&self) -> Result<(), StoreError> {
        let Some(mut tx) = self.move_waiting("graph_rows_by_path").await? else {
            return Ok(());
        };
        tracing::info!("moving the symbol graph to tables keyed by file number (once)");
        let unnumbered = sqlx::query("SELECT repo_id, path FROM files WHERE file_id IS NULL")
            .fetch_all(&mut *tx)
            .await?;
        for row in &unnumbered {
            let (repo_id, path): (String, String) = (row.try_get(0)?, row.try_get(1)?);
            sqlx::query("UPDATE files SET file_id = $1 WHERE repo_id = $2 AND path = $3")
                .bind(file_id(&repo_id, &path))
                .bind(&repo_id)
                .bind(&path)
                .execute(&mut *tx)
                .await?;
        }
        let moved = self
            .move_graph_rows(
                &mut tx,
                "symbols_by_path",
                "edges_by_path",
                "f.repo_id = {t}.repo_id AND f.path = {t}.file_path",
            )
            .await?;
        self.finish_move(tx, moved).await
    }

    /// Moves the symbols and edges stored with text chunk ids (before migration 12) to
    /// the tables that store them as bytes, if any wait; drops the old tables.
    async fn move_graph_chunk_ids_as_text(&self) -> Result<(), StoreError> {
        let Some(mut tx) = self.move_waiting("graph_chunk_ids_as_text").await? else {
            return Ok(());
        };
        tracing::info!("storing the symbol graph's chunk ids as bytes (once)");
        let moved = self
            .move_graph_rows(
                &mut tx,
                "symbols_text_ids",
                "edges_text_ids",
                "f.file_id = {t}.file_id",
            )
            .await?;
        self.finish_move(tx, moved).await
    }

    /// Symbols (with their file path) of the repository's files named by `keys`, in
    /// batches of [`IN_BATCH`]; by file in order of path and position within each batch.
    async fn symbols_where(
        &self,
        repo_id: &str,
        keys: SymbolKeys<'_>,
    ) -> Result<Vec<(String, SymbolRecord)>, StoreError> {
        let rows = self.symbol_rows(repo_id, keys, symbol_columns!()).await?;
        rows.iter()
            .map(|row| Ok((row.try_get("file_path")?, symbol(row)?)))
            .collect()
    }

    /// The rows of [`SqlMetaStore::symbols_where`], with `columns` of the symbols (and the
    /// file's path as `file_path`).
    async fn symbol_rows(
        &self,
        repo_id: &str,
        keys: SymbolKeys<'_>,
        columns: &str,
    ) -> Result<Vec<AnyRow>, StoreError> {
        let (values, by_file) = match keys {
            SymbolKeys::Files(paths) => (paths, true),
            SymbolKeys::Chunks(ids) => (ids, false),
        };
        let mut out = Vec::with_capacity(values.len());
        for batch in values.chunks(IN_BATCH) {
            let filter = if by_file {
                format!(
                    "s.file_id IN ({}) ORDER BY f.path, s.ordinal",
                    placeholders(1, batch.len())
                )
            } else {
                format!(
                    "f.repo_id = $1 AND s.chunk_id IN ({})",
                    placeholders(2, batch.len())
                )
            };
            // `CROSS JOIN`: symbols first (by file number or chunk index), then each
            // one's file by its number.
            let sql = format!(
                "SELECT f.path AS file_path, {columns} FROM symbols s CROSS JOIN files f \
                 WHERE f.file_id = s.file_id AND {filter}"
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
            if by_file {
                for path in batch {
                    query = query.bind(file_id(repo_id, path));
                }
            } else {
                query = query.bind(repo_id);
                for id in batch {
                    query = query.bind(chunk_keys::key(id));
                }
            }
            out.extend(query.fetch_all(&self.pool).await?);
        }
        Ok(out)
    }
}

/// Which symbols [`SqlMetaStore::symbols_where`] reads.
enum SymbolKeys<'a> {
    /// Those of the files at these paths.
    Files(&'a [String]),
    /// Those with these chunk ids.
    Chunks(&'a [String]),
}

#[async_trait]
impl MetaStore for SqlMetaStore {
    fn backend(&self) -> &'static str {
        self.backend
    }

    async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn create_repository(&self, new: NewRepository) -> Result<Repository, StoreError> {
        let id = new_id();
        let row = NewRow {
            id: &id,
            name: &new.name,
            source: &new.source,
            tracked_ref: new.tracked_ref.as_deref(),
            settings: &new.settings,
            parent_id: None,
        };
        self.insert_repository(row, || format!("repository `{}`", new.name))
            .await
    }

    async fn create_ref(
        &self,
        parent: &Repository,
        ref_name: &str,
        source: &RepoSource,
    ) -> Result<Repository, StoreError> {
        // Under the repository's id, so that whoever may see the repository sees its refs
        // (`auth::Principal::sees`), their jobs and progress included.
        let id = format!("{}@{}", parent.id, new_id());
        let name = format!("{}@{ref_name}", parent.name);
        let row = NewRow {
            id: &id,
            name: &name,
            source,
            tracked_ref: Some(ref_name),
            settings: &parent.settings,
            parent_id: Some(&parent.id),
        };
        self.insert_repository(row, || {
            format!("ref `{ref_name}` of repository `{}`", parent.name)
        })
        .await
    }

    async fn list_refs(&self, parent_id: &str) -> Result<Vec<Repository>, StoreError> {
        self.repositories_where(Some((RepoColumn::ParentId, parent_id)))
            .await
    }

    async fn get_repository(&self, id: &str) -> Result<Option<Repository>, StoreError> {
        Ok(self
            .repositories_where(Some((RepoColumn::Id, id)))
            .await?
            .pop())
    }

    async fn get_repository_by_name(&self, name: &str) -> Result<Option<Repository>, StoreError> {
        Ok(self
            .repositories_where(Some((RepoColumn::Name, name)))
            .await?
            .pop())
    }

    async fn list_repositories(&self) -> Result<Vec<Repository>, StoreError> {
        self.repositories_where(None).await
    }

    async fn update_repository_settings(
        &self,
        id: &str,
        tracked_ref: Option<String>,
        settings: &RepoSettings,
    ) -> Result<Repository, StoreError> {
        let settings = serde_json::to_string(settings)
            .map_err(|e| StoreError::Invalid(format!("settings do not serialise: {e}")))?;
        let done = sqlx::query("UPDATE repositories SET tracked_ref = $1, settings = $2, updated_at = $3 WHERE id = $4")
            .bind(tracked_ref)
            .bind(settings)
            .bind(now_ms())
            .bind(id)
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("repository {id}")));
        }
        self.existing_repository(id).await
    }

    async fn set_repository_status(
        &self,
        id: &str,
        status: RepoStatus,
        last_error: Option<&str>,
        indexed_commit: Option<&str>,
    ) -> Result<(), StoreError> {
        let done = sqlx::query(
            "UPDATE repositories SET status = $1, last_error = $2, \
             indexed_commit = COALESCE($3, indexed_commit), updated_at = $4 WHERE id = $5",
        )
        .bind(status.as_str())
        .bind(last_error)
        .bind(indexed_commit)
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("repository {id}")));
        }
        Ok(())
    }

    async fn delete_repository(&self, id: &str) -> Result<bool, StoreError> {
        // Symbols and edges cascade from files, files and jobs from the repository; the
        // explicit deletes keep that true even for rows whose file row is gone.
        let mut tx = self.pool.begin().await?;
        for (table, owner) in REPOSITORY_ROWS {
            let sql = match owner {
                Owner::FileId => format!(
                    "DELETE FROM {table} WHERE file_id IN (SELECT file_id FROM files WHERE repo_id = $1)"
                ),
                Owner::Path(_) | Owner::Repository => {
                    format!("DELETE FROM {table} WHERE repo_id = $1")
                }
            };
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(id)
                .execute(&mut *tx)
                .await?;
        }
        let done = sqlx::query("DELETE FROM repositories WHERE id = $1")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(done.rows_affected() > 0)
    }

    async fn upsert_file(&self, f: &FileRecord) -> Result<(), StoreError> {
        upsert_file_in(&self.pool, f).await
    }

    async fn get_file(&self, repo_id: &str, path: &str) -> Result<Option<FileRecord>, StoreError> {
        let row = sqlx::query(concat!(
            "SELECT ",
            file_columns!(),
            " FROM files WHERE repo_id = $1 AND path = $2"
        ))
        .bind(repo_id)
        .bind(path)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(file).transpose()
    }

    async fn list_files(&self, repo_id: &str) -> Result<Vec<FileRecord>, StoreError> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            file_columns!(),
            " FROM files WHERE repo_id = $1 ORDER BY path"
        ))
        .bind(repo_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(file).collect()
    }

    async fn file_counts(&self, repo_id: &str) -> Result<FileCounts, StoreError> {
        let row = sqlx::query(
            "SELECT \
             CAST(COALESCE(SUM(CASE WHEN skip_reason IS NULL THEN 1 ELSE 0 END), 0) AS BIGINT) AS indexed, \
             CAST(COALESCE(SUM(CASE WHEN skip_reason IS NULL THEN 0 ELSE 1 END), 0) AS BIGINT) AS skipped, \
             CAST(COALESCE(SUM(symbol_count), 0) AS BIGINT) AS symbols \
             FROM files WHERE repo_id = $1",
        )
        .bind(repo_id)
        .fetch_one(&self.pool)
        .await?;
        Ok(FileCounts {
            indexed: row.try_get("indexed")?,
            skipped: row.try_get("skipped")?,
            symbols: row.try_get("symbols")?,
        })
    }

    async fn delete_file(&self, repo_id: &str, path: &str) -> Result<bool, StoreError> {
        let mut tx = self.pool.begin().await?;
        let mut deleted = 0;
        for (table, owner) in REPOSITORY_ROWS {
            if !matches!(owner, Owner::Repository) {
                deleted = delete_file_rows(&mut *tx, table, owner, repo_id, path).await?;
            }
        }
        tx.commit().await?;
        // The last table is `files`: whether the file itself was there.
        Ok(deleted > 0)
    }

    async fn replace_file_symbols(
        &self,
        f: &FileRecord,
        symbols: &[SymbolRecord],
    ) -> Result<(), StoreError> {
        self.replace_files_symbols(&[(f.clone(), symbols.to_vec())])
            .await
    }

    async fn replace_files_symbols(
        &self,
        files: &[(FileRecord, Vec<SymbolRecord>)],
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        for (f, symbols) in files {
            upsert_file_in(&mut *tx, f).await?;
            delete_file_rows(&mut *tx, "symbols", Owner::FileId, &f.repo_id, &f.path).await?;
            let file = file_id(&f.repo_id, &f.path);
            for (ordinal, s) in symbols.iter().enumerate() {
                sqlx::query(
                    "INSERT INTO symbols (file_id, ordinal, chunk_id, name, kind, parent_chunk_id, parent_name, \
                     breadcrumb, signature, modifiers, exported, depth, start_line, end_line) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
                )
                .bind(file)
                .bind(ordinal as i64)
                .bind(chunk_keys::key(&s.chunk_id))
                .bind(&s.name)
                .bind(&s.kind)
                .bind(s.parent_chunk_id.as_deref().map(chunk_keys::key))
                .bind(&s.parent_name)
                .bind(&s.breadcrumb)
                .bind(&s.signature)
                .bind(&s.modifiers)
                .bind(b(s.exported))
                .bind(s.depth)
                .bind(s.start_line)
                .bind(s.end_line)
                .execute(&mut *tx)
                .await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    async fn file_symbols(
        &self,
        repo_id: &str,
        path: &str,
    ) -> Result<Vec<SymbolRecord>, StoreError> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            symbol_columns!(),
            " FROM symbols WHERE file_id = $1 ORDER BY ordinal"
        ))
        .bind(file_id(repo_id, path))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(symbol).collect()
    }

    async fn symbols_of_files(
        &self,
        repo_id: &str,
        paths: &[String],
    ) -> Result<Vec<(String, SymbolRecord)>, StoreError> {
        self.symbols_where(repo_id, SymbolKeys::Files(paths)).await
    }

    async fn symbols_and_members(
        &self,
        repo_id: &str,
        paths: &[String],
        ids: &[String],
    ) -> Result<Vec<(String, SymbolRecord)>, StoreError> {
        // Each id is bound twice: batches of a third of the bound parameters each.
        let third = IN_BATCH / 3;
        let mut out = Vec::new();
        for files in paths.chunks(third) {
            for batch in ids.chunks(third) {
                let ids_at = 1 + files.len();
                let sql = format!(
                    concat!(
                        "SELECT f.path AS file_path, ",
                        symbol_columns!(),
                        " FROM symbols s CROSS JOIN files f WHERE f.file_id = s.file_id \
                         AND s.file_id IN ({}) \
                         AND (s.chunk_id IN ({}) OR s.parent_chunk_id IN ({})) \
                         ORDER BY f.path, s.ordinal"
                    ),
                    placeholders(1, files.len()),
                    placeholders(ids_at, batch.len()),
                    placeholders(ids_at + batch.len(), batch.len()),
                );
                let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
                for path in files {
                    query = query.bind(file_id(repo_id, path));
                }
                for value in batch.iter().chain(batch) {
                    query = query.bind(chunk_keys::key(value));
                }
                for row in query.fetch_all(&self.pool).await? {
                    out.push((row.try_get("file_path")?, symbol(&row)?));
                }
            }
        }
        if paths.len() > third || ids.len() > third {
            // Several batches: one order over all of them. A member whose parent is in one
            // batch of ids and itself in another comes twice, adjacent in this order.
            out.sort_by(|a, b| {
                (&a.0, a.1.start_line, &a.1.chunk_id).cmp(&(&b.0, b.1.start_line, &b.1.chunk_id))
            });
            out.dedup_by(|a, b| a.1.chunk_id == b.1.chunk_id);
        }
        Ok(out)
    }

    async fn symbols_named(
        &self,
        name: &str,
        repos: &[String],
    ) -> Result<Vec<(String, String, SymbolRecord)>, StoreError> {
        let rows = sqlx::query(concat!(
            "SELECT f.repo_id, f.path AS file_path, ",
            symbol_columns!(),
            " FROM symbols s CROSS JOIN files f WHERE f.file_id = s.file_id AND s.name = $1 \
             ORDER BY f.repo_id, f.path, s.ordinal"
        ))
        .bind(name)
        .fetch_all(&self.pool)
        .await?;
        let mut out = Vec::new();
        for row in &rows {
            let repo: String = row.try_get("repo_id")?;
            if repos.is_empty() || repos.contains(&repo) {
                out.push((repo, row.try_get("file_path")?, symbol(row)?));
            }
        }
        Ok(out)
    }

    async fn names_starting_like(
        &self,
        head: &str,
        repos: &[String],
    ) -> Result<Vec<String>, StoreError> {
        let Some(first) = head.chars().next() else {
            return Ok(Vec::new());
        };
        // Names that begin with `first` in either case, as two ranges of the name index:
        // `lower(name) LIKE 'h%'` read every symbol (220 ms a misspelt name at c1m's
        // 106k symbols; the ranges 20 ms). Ranges compare code points (SQLite's binary
        // order; PostgreSQL is told `COLLATE "C"`, whose index it then does not use).
        let collate = if self.backend == "sqlite" {
            ""
        } else {
            " COLLATE \"C\""
        };
        let sql = format!(
            "SELECT DISTINCT f.repo_id, s.name FROM symbols s CROSS JOIN files f \
             WHERE f.file_id = s.file_id AND ((s.name{collate} >= $1 AND s.name{collate} < $2) \
             OR (s.name{collate} >= $3 AND s.name{collate} < $4))"
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for case in [
            first.to_lowercase().next().unwrap_or(first),
            first.to_uppercase().next().unwrap_or(first),
        ] {
            // The first character after `case` (past the surrogate gap). U+10FFFF has none,
            // and as a noncharacter begins no name: its range is left empty.
            let end = (case as u32 + 1..=char::MAX as u32)
                .find_map(char::from_u32)
                .unwrap_or(case)
                .to_string();
            query = query.bind(case.to_string()).bind(end);
        }
        let rows = query.fetch_all(&self.pool).await?;
        let mut seen = std::collections::HashSet::new();
        let mut names = Vec::new();
        for row in &rows {
            let repo: String = row.try_get("repo_id")?;
            let name: String = row.try_get("name")?;
            if (repos.is_empty() || repos.contains(&repo)) && seen.insert(name.clone()) {
                names.push(name);
            }
        }
        Ok(names)
    }

    async fn replace_file_edges(
        &self,
        repo_id: &str,
        path: &str,
        edges: &[EdgeRecord],
    ) -> Result<(), StoreError> {
        self.replace_files_edges(repo_id, &[(path.to_string(), edges.to_vec())])
            .await
    }

    async fn replace_files_edges(
        &self,
        repo_id: &str,
        files: &[(String, Vec<EdgeRecord>)],
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        for (path, edges) in files {
            delete_file_rows(&mut *tx, "edges", Owner::FileId, repo_id, path).await?;
            let file = file_id(repo_id, path);
            for e in edges {
                sqlx::query(concat!(
                    "INSERT INTO edges (file_id, ",
                    edge_columns!(),
                    ") VALUES ($1, $2, $3, $4, $5, $6, $7)"
                ))
                .bind(file)
                .bind(chunk_keys::key(&e.from_chunk))
                .bind(e.to_chunk.as_deref().map(chunk_keys::key))
                .bind(&e.to_name)
                .bind(e.kind.as_str())
                .bind(b(e.certain))
                .bind(e.line)
                .execute(&mut *tx)
                .await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    async fn replace_files_facts(
        &self,
        repo_id: &str,
        facts: &[(String, Option<String>)],
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        for (path, json) in facts {
            delete_file_rows(&mut *tx, "file_facts", Owner::Path("path"), repo_id, path).await?;
            if let Some(json) = json {
                sqlx::query("INSERT INTO file_facts (repo_id, path, facts) VALUES ($1, $2, $3)")
                    .bind(repo_id)
                    .bind(path)
                    .bind(facts::pack(json)?)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    async fn files_facts(
        &self,
        repo_id: &str,
        paths: &[String],
    ) -> Result<Vec<(String, String)>, StoreError> {
        let mut out = Vec::with_capacity(paths.len());
        for batch in paths.chunks(IN_BATCH) {
            let sql = format!(
                "SELECT path, facts FROM file_facts WHERE repo_id = $1 AND path IN ({})",
                placeholders(2, batch.len())
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(repo_id);
            for p in batch {
                query = query.bind(p);
            }
            for row in query.fetch_all(&self.pool).await? {
                let stored: String = row.try_get("facts")?;
                out.push((row.try_get("path")?, facts::unpack(stored)?));
            }
        }
        Ok(out)
    }

    async fn importers(
        &self,
        repo_id: &str,
        targets: &[String],
    ) -> Result<Vec<String>, StoreError> {
        let mut out = std::collections::BTreeSet::new();
        for batch in targets.chunks(IN_BATCH) {
            let sql = format!(
                "SELECT DISTINCT f.path AS file_path FROM edges e CROSS JOIN files f \
                 WHERE f.file_id = e.file_id AND f.repo_id = $1 AND e.kind = 'imports' \
                 AND e.to_name IN ({})",
                placeholders(2, batch.len())
            );
            let mut query = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(repo_id);
            for t in batch {
                query = query.bind(t);
            }
            for row in query.fetch_all(&self.pool).await? {
                out.insert(row.try_get::<String, _>("file_path")?);
            }
        }
        Ok(out.into_iter().collect())
    }

    async fn imports_of(
        &self,
        repo_id: &str,
        target: &str,
    ) -> Result<Vec<(String, EdgeRecord)>, StoreError> {
        let rows = sqlx::query(concat!(
            "SELECT f.path AS file_path, ",
            edge_columns!(),
            " FROM edges e CROSS JOIN files f WHERE f.file_id = e.file_id AND f.repo_id = $1 \
             AND e.kind = 'imports' AND e.to_name = $2 ORDER BY f.path, e.line"
        ))
        .bind(repo_id)
        .bind(target)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| Ok((row.try_get("file_path")?, edge(row)?)))
            .collect()
    }

    async fn symbols_by_id(
        &self,
        repo_id: &str,
        ids: &[String],
    ) -> Result<Vec<(String, SymbolRecord)>, StoreError> {
        // No ORDER BY: with one, SQLite walks the repository's whole file index to skip a
        // sort (3 ms a query on jest, four rounds a search) instead of the primary key.
        let mut found = self.symbols_where(repo_id, SymbolKeys::Chunks(ids)).await?;
        found.sort_by(|a, b| (&a.0, a.1.start_line).cmp(&(&b.0, b.1.start_line)));
        Ok(found)
    }

    async fn symbol_names(
        &self,
        repo_id: &str,
        ids: &[String],
    ) -> Result<Vec<SymbolName>, StoreError> {
        let rows = self
            .symbol_rows(repo_id, SymbolKeys::Chunks(ids), "s.chunk_id, s.breadcrumb")
            .await?;
        rows.iter()
            .map(|row| {
                Ok(SymbolName {
                    chunk_id: required_chunk(row, "chunk_id")?,
                    path: row.try_get("file_path")?,
                    breadcrumb: row.try_get("breadcrumb")?,
                })
            })
            .collect()
    }

    async fn edges_from_any(
        &self,
        repo_id: &str,
        chunk_ids: &[String],
    ) -> Result<Vec<EdgeRecord>, StoreError> {
        self.edges_where(
            "from_chunk",
            "e.from_chunk, e.line, e.to_name",
            repo_id,
            chunk_ids,
        )
        .await
    }

    async fn edges_to_any(
        &self,
        repo_id: &str,
        chunk_ids: &[String],
    ) -> Result<Vec<EdgeRecord>, StoreError> {
        self.edges_where("to_chunk", "e.to_chunk, f.path, e.line", repo_id, chunk_ids)
            .await
    }

    async fn enqueue_job(&self, new: NewJob) -> Result<Job, StoreError> {
        let id = insert_job(&self.pool, &new).await?;
        self.get_job(&id)
            .await?
            .ok_or_else(|| StoreError::NotFound(format!("job {id}")))
    }

    async fn enqueue_job_unless_active(&self, new: NewJob) -> Result<Enqueued, StoreError> {
        let mut tx = self.pool.begin().await?;
        // Take the repository's row lock first (Postgres: a row lock; SQLite: the
        // database's write lock), so a concurrent caller waits here and then sees the job
        // this one queued.
        if let Some(repo) = &new.repo_id {
            sqlx::query("UPDATE repositories SET updated_at = updated_at WHERE id = $1")
                .bind(repo)
                .execute(&mut *tx)
                .await?;
        }
        let active = sqlx::query(
            "SELECT * FROM jobs WHERE kind = $1 AND repo_id IS NOT DISTINCT FROM $2 \
             AND state IN ('queued', 'running') ORDER BY id LIMIT 1",
        )
        .bind(&new.kind)
        .bind(&new.repo_id)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(row) = active {
            let job = job(&row)?;
            tx.commit().await?;
            return Ok(Enqueued::Active(job));
        }
        let id = insert_job(&mut *tx, &new).await?;
        tx.commit().await?;
        self.get_job(&id)
            .await?
            .map(Enqueued::Queued)
            .ok_or_else(|| StoreError::NotFound(format!("job {id}")))
    }

    async fn claim_job(
        &self,
        repo_id: Option<&str>,
        lease: &Lease,
    ) -> Result<Option<Job>, StoreError> {
        // Jobs of a repository with a running job are not candidates.
        // Nor are jobs waiting out a retry's back-off.
        const CLAIMABLE: &str = "SELECT id, repo_id FROM jobs j WHERE state = 'queued' \
             AND (not_before IS NULL OR not_before <= $1) \
             AND (repo_id IS NULL OR NOT EXISTS \
             (SELECT 1 FROM jobs r WHERE r.repo_id = j.repo_id AND r.state = 'running'))";
        loop {
            let candidate = match repo_id {
                Some(repo) => {
                    sqlx::query(sqlx::AssertSqlSafe(format!(
                        "{CLAIMABLE} AND repo_id = $2 ORDER BY id LIMIT 1"
                    )))
                    .bind(now_ms())
                    .bind(repo)
                    .fetch_optional(&self.pool)
                    .await?
                }
                None => {
                    sqlx::query(sqlx::AssertSqlSafe(format!(
                        "{CLAIMABLE} ORDER BY id LIMIT 1"
                    )))
                    .bind(now_ms())
                    .fetch_optional(&self.pool)
                    .await?
                }
            };
            let Some(row) = candidate else {
                return Ok(None);
            };
            let id: String = row.try_get("id")?;
            let repo: Option<String> = row.try_get("repo_id")?;
            let mut tx = self.pool.begin().await?;
            if let Some(repo) = &repo {
                // The repository's row lock (Postgres: a row lock; SQLite: the database's
                // write lock) makes "none of its jobs runs" and the claim one step: a
                // concurrent claimer of another of its jobs waits here, then sees this one.
                sqlx::query("UPDATE repositories SET updated_at = updated_at WHERE id = $1")
                    .bind(repo)
                    .execute(&mut *tx)
                    .await?;
                let running = sqlx::query(
                    "SELECT 1 AS one FROM jobs WHERE repo_id = $1 AND state = 'running' LIMIT 1",
                )
                .bind(repo)
                .fetch_optional(&mut *tx)
                .await?;
                if running.is_some() {
                    tx.rollback().await?;
                    continue;
                }
            }
            let now = now_ms();
            // Compare-and-set on the state: of two concurrent claimers exactly one wins.
            let done = sqlx::query(
                "UPDATE jobs SET state = 'running', attempts = attempts + 1, started_at = $1, \
                 updated_at = $1, lease_owner = $2, lease_until = $3 WHERE id = $4 AND state = 'queued'",
            )
            .bind(now)
            .bind(&lease.owner)
            .bind(lease.until(now))
            .bind(&id)
            .execute(&mut *tx)
            .await?;
            if done.rows_affected() == 1 {
                tx.commit().await?;
                return self.get_job(&id).await;
            }
            tx.rollback().await?;
        }
    }

    async fn renew_job_lease(&self, id: &str, lease: &Lease) -> Result<bool, StoreError> {
        let now = now_ms();
        let done = sqlx::query(
            "UPDATE jobs SET lease_until = $1 WHERE id = $2 AND state = 'running' AND lease_owner = $3",
        )
        .bind(lease.until(now))
        .bind(id)
        .bind(&lease.owner)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    async fn requeue_jobs_held_by(&self, owner: &str, reason: &str) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "UPDATE jobs SET state = 'queued', error = $1, updated_at = $2, lease_owner = NULL, \
             lease_until = NULL WHERE state = 'running' AND lease_owner = $3",
        )
        .bind(reason)
        .bind(now_ms())
        .bind(owner)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    async fn requeue_expired_jobs(&self) -> Result<u64, StoreError> {
        let now = now_ms();
        // A running job without a lease was claimed before leases existed: its process
        // is gone with the upgrade.
        let done = sqlx::query(
            "UPDATE jobs SET state = 'queued', updated_at = $1, \
             error = 'its runner ' || COALESCE(lease_owner, '(unknown)') || ' stopped renewing its lease', \
             lease_owner = NULL, lease_until = NULL \
             WHERE state = 'running' AND (lease_until IS NULL OR lease_until < $1)",
        )
        .bind(now)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    async fn update_job_progress(
        &self,
        id: &str,
        done: i64,
        total: i64,
        message: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE jobs SET progress_done = $1, progress_total = $2, message = COALESCE($3, message), updated_at = $4 WHERE id = $5")
            .bind(done)
            .bind(total)
            .bind(message)
            .bind(now_ms())
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn finish_job(
        &self,
        id: &str,
        state: JobState,
        error: Option<&str>,
    ) -> Result<(), StoreError> {
        if matches!(state, JobState::Queued | JobState::Running) {
            return Err(StoreError::Invalid(format!(
                "a job cannot finish as `{}`",
                state.as_str()
            )));
        }
        let now = now_ms();
        let done = sqlx::query("UPDATE jobs SET state = $1, error = $2, finished_at = $3, updated_at = $3 WHERE id = $4")
            .bind(state.as_str())
            .bind(error)
            .bind(now)
            .bind(id)
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("job {id}")));
        }
        Ok(())
    }

    async fn get_job(&self, id: &str) -> Result<Option<Job>, StoreError> {
        let row = sqlx::query(concat!(
            "SELECT ",
            job_columns!(),
            " FROM jobs WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(job).transpose()
    }

    async fn running_jobs(&self) -> Result<Vec<Job>, StoreError> {
        let rows = sqlx::query(concat!(
            "SELECT ",
            job_columns!(),
            " FROM jobs WHERE state = 'running' ORDER BY id"
        ))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(job).collect()
    }

    async fn list_jobs(&self, repo_id: Option<&str>, limit: i64) -> Result<Vec<Job>, StoreError> {
        let rows = match repo_id {
            Some(repo) => {
                sqlx::query(concat!(
                    "SELECT ",
                    job_columns!(),
                    " FROM jobs WHERE repo_id = $1 ORDER BY id DESC LIMIT $2"
                ))
                .bind(repo)
                .bind(limit)
                .fetch_all(&self.pool)
                .await?
            }
            None => {
                sqlx::query(concat!(
                    "SELECT ",
                    job_columns!(),
                    " FROM jobs ORDER BY id DESC LIMIT $1"
                ))
                .bind(limit)
                .fetch_all(&self.pool)
                .await?
            }
        };
        rows.iter().map(job).collect()
    }

    async fn requeue_running_jobs(&self) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "UPDATE jobs SET state = 'queued', updated_at = $1, lease_owner = NULL, \
             lease_until = NULL WHERE state = 'running'",
        )
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    async fn requeue_job(
        &self,
        id: &str,
        reason: &str,
        not_before: Option<i64>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE jobs SET state = 'queued', error = $1, updated_at = $2, lease_owner = NULL, \
             lease_until = NULL, not_before = $3 WHERE id = $4 AND state = 'running'",
        )
        .bind(reason)
        .bind(now_ms())
        .bind(not_before)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn create_token(&self, t: &ApiToken) -> Result<(), StoreError> {
        let result = sqlx::query(
            "INSERT INTO api_tokens (id, name, token_hash, scope, repositories, created_at, revoked_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&t.id)
        .bind(&t.name)
        .bind(&t.token_hash)
        .bind(t.scope.as_str())
        .bind(t.repositories.join(" "))
        .bind(t.created_at)
        .bind(t.revoked_at)
        .execute(&self.pool)
        .await;
        match result {
            Err(e) if is_unique_violation(&e) => {
                Err(StoreError::Conflict(format!("token {}", t.id)))
            }
            other => other.map(|_| ()).map_err(StoreError::from),
        }
    }

    async fn token_by_hash(&self, hash: &str) -> Result<Option<ApiToken>, StoreError> {
        let row =
            sqlx::query("SELECT * FROM api_tokens WHERE token_hash = $1 AND revoked_at IS NULL")
                .bind(hash)
                .fetch_optional(&self.pool)
                .await?;
        row.as_ref().map(token).transpose()
    }

    async fn list_tokens(&self) -> Result<Vec<ApiToken>, StoreError> {
        let rows = sqlx::query("SELECT * FROM api_tokens ORDER BY created_at, id")
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(token).collect()
    }

    async fn revoke_token(&self, id: &str) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE api_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL",
        )
        .bind(now_ms())
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    async fn set_credentials(
        &self,
        repo_id: &str,
        credentials: Option<&Credentials>,
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        put_credentials(&mut tx, repo_id, credentials).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn move_source_credentials(
        &self,
        repo_id: &str,
        url: &str,
        credentials: &Credentials,
    ) -> Result<(), StoreError> {
        let mut tx = self.pool.begin().await?;
        let done = sqlx::query(
            "UPDATE repositories SET source = $1, updated_at = $2 WHERE id = $3 AND source_kind = 'git'",
        )
        .bind(url)
        .bind(now_ms())
        .bind(repo_id)
        .execute(&mut *tx)
        .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("git repository {repo_id}")));
        }
        put_credentials(&mut tx, repo_id, Some(credentials)).await?;
        tx.commit().await?;
        Ok(())
    }

    async fn credentials(&self, repo_id: &str) -> Result<Option<Credentials>, StoreError> {
        Ok(sqlx::query_as::<_, Credentials>(
            "SELECT username, password FROM repo_credentials WHERE repo_id = $1",
        )
        .bind(repo_id)
        .fetch_optional(&self.pool)
        .await?)
    }

    async fn forget_file_contents(&self) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "UPDATE files SET content_hash = NULL, mtime_ms = NULL \
             WHERE content_hash IS NOT NULL OR mtime_ms IS NOT NULL",
        )
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    async fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        Ok(
            sqlx::query_scalar::<_, String>("SELECT value FROM store_settings WHERE key = $1")
                .bind(key)
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    async fn set_setting(&self, key: &str, value: &str) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO store_settings (key, value) VALUES ($1, $2) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        )
        .bind(key)
        .bind(value)
        .execute(&self.pool)
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::chunk_keys;

    #[test]
    fn chunk_ids_are_stored_as_their_bytes_and_read_back() {
        let hex = "d5626a8ff176d8cd7069d3c6e110a0f6";
        assert_eq!(chunk_keys::key(hex).len(), 16);
        assert_eq!(chunk_keys::id(&chunk_keys::key(hex)).unwrap(), hex);
        // Any other id is kept whole, never as 16 bytes that would read back as hex.
        let upper = hex.to_uppercase();
        for id in [
            "c1",
            "abcdefghijklmnop",
            upper.as_str(),
            &"x".repeat(32),
            "é",
            "",
        ] {
            let key = chunk_keys::key(id);
            assert_ne!(key.len(), 16, "{id}");
            assert_eq!(chunk_keys::id(&key).unwrap(), id);
        }
        // Keys sort as the ids do (the graph's queries order by them).
        let (a, b) = ("0f".repeat(16), "a0".repeat(16));
        assert!(chunk_keys::key(&a) < chunk_keys::key(&b));
        assert!(chunk_keys::id(&[0xC3]).is_err(), "not UTF-8");
    }

    #[test]
    fn graph_facts_pack_small_and_read_back() {
        let json = format!(
            "{{\"refs\":[{}]}}",
            (0..200)
                .map(|i| format!(
                    "{{\"from\":\"848fd208894de66775cd88241f7e233e\",\"name\":\"n{i}\"}}"
                ))
                .collect::<Vec<_>>()
                .join(",")
        );
        let packed = super::facts::pack(&json).unwrap();
        assert!(packed.starts_with("z:"), "{packed}");
        assert!(
            packed.len() * 5 < json.len(),
            "{} of {}",
            packed.len(),
            json.len()
        );
        assert_eq!(super::facts::unpack(packed).unwrap(), json);
        // Rows written before packing hold the JSON itself.
        assert_eq!(super::facts::unpack(json.clone()).unwrap(), json);
        let err = super::facts::unpack("z:AAAA".into()).unwrap_err();
        assert!(err.to_string().contains("repo remove"), "{err}");
    }

    #[test]
    fn settings_stored_by_earlier_versions_still_read() {
        let old = r#"{"include":["src/**"],"exclude":[],"max_file_bytes":10,"max_files":5,
            "languages":["go"],"watch":true,"fetch_interval_secs":60,"path_roles":{"test":["t/**"]}}"#;
        let read = super::stored_settings(old).unwrap();
        assert_eq!(read.max_file_bytes, 10);
        assert_eq!(read.max_files, 5);
        assert_eq!(read.fetch_interval_secs, 60);
        assert_eq!(read.path_roles["test"], vec!["t/**".to_string()]);
        // What is written now is the wire's camelCase, and reads back the same.
        let now = serde_json::to_string(&read).unwrap();
        assert!(now.contains("\"maxFileBytes\":10"), "{now}");
        assert_eq!(super::stored_settings(&now).unwrap(), read);
        // Unknown keys are refused with what to do.
        let err = super::stored_settings(r#"{"maxFileByte": 3}"#).unwrap_err();
        assert!(err.to_string().contains("repo set"), "{err}");
    }

    #[tokio::test]
    async fn unreadable_settings_of_one_repository_do_not_hide_the_others() {
        use super::super::meta::{MetaStore, NewRepository, RepoSettings, RepoSource};
        let dir = tempfile::tempdir().unwrap();
        let store = super::SqlMetaStore::open(&dir.path().join("db").to_string_lossy())
            .await
            .unwrap();
        let settings = RepoSettings {
            max_files: 7,
            ..RepoSettings::default()
        };
        for name in ["good", "bad"] {
            let new = NewRepository {
                name: name.into(),
                source: RepoSource::Path(format!("/src/{name}")),
                tracked_ref: None,
                settings: settings.clone(),
            };
            store.create_repository(new).await.unwrap();
        }
        sqlx::query("UPDATE repositories SET settings = $1 WHERE name = $2")
            .bind(r#"{"maxFiles": "many"}"#)
            .bind("bad")
            .execute(&store.pool)
            .await
            .unwrap();
        let listed = store.list_repositories().await.unwrap();
        let of = |name: &str| {
            listed
                .iter()
                .find(|r| r.name == name)
                .unwrap()
                .settings
                .clone()
        };
        assert_eq!(of("good"), settings);
        assert_eq!(of("bad"), RepoSettings::default());
    }
}
