//! The storage layer's error type.

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The SQL database rejected or failed a statement.
    #[error("metadata database error: {0}")]
    Sql(#[from] sqlx::Error),
    /// Migrations could not be applied.
    #[error("cannot apply database migrations: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// LanceDB failed.
    #[error(
        "chunk store (LanceDB) error: {0} (if it persists, `sextant doctor` checks the data \
         directory and `sextant doctor --repair` rebuilds the chunk store)"
    )]
    Lance(#[from] lancedb::Error),
    /// Arrow data could not be built or read.
    #[error("chunk store data error: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// The database URL is not one Sextant understands.
    #[error(
        "unsupported database URL `{0}`: use a SQLite path / `sqlite://` URL or a `postgres://` URL"
    )]
    UnsupportedUrl(String),
    /// A referenced row does not exist.
    #[error("{0} not found")]
    NotFound(String),
    /// A unique value is taken.
    #[error("{0} already exists")]
    Conflict(String),
    /// Stored data or arguments do not fit the schema.
    #[error("{0}")]
    Invalid(String),
    /// A filesystem operation failed.
    #[error("cannot access {path}: {source}")]
    Io {
        /// Path concerned.
        path: String,
        /// Underlying error.
        source: std::io::Error,
    },
}

impl StoreError {
    /// Whether the chunk store's files could not be read (LanceDB or Arrow failed), as
    /// opposed to the metadata database.
    pub fn is_chunk_store(&self) -> bool {
        matches!(self, StoreError::Lance(_) | StoreError::Arrow(_))
    }

    /// Whether the metadata database could not be reached (down, restarting, out of
    /// connections): the request may succeed later, unlike a rejected statement.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            StoreError::Sql(
                sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_)
            )
        )
    }
}
