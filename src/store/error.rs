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
    #[error("chunk store (LanceDB) error: {0} ({advice})", advice = lance_advice(.0))]
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
    /// Object storage (the grep index's copy beside an object-store chunk store) failed or
    /// could not be reached.
    #[error("object storage at {uri} failed: {message} ({advice})", advice = REACH_ADVICE)]
    ObjectStore {
        /// The store's URI.
        uri: String,
        /// What failed.
        message: String,
    },
    /// A chunk row keeps its code as lines of its file, and the grep index does not hold
    /// that version of the file (it changed a moment ago, or the index was lost): readers
    /// leave the row out; the next sync writes the file's rows and contents again.
    #[error(
        "the code of a chunk of {path} is not in the grep index (version {hash}); run `sextant index` to write the file again"
    )]
    CodeNotHeld {
        /// The file's path in its repository.
        path: String,
        /// The version the row was cut from.
        hash: String,
    },
    /// A filesystem operation failed.
    #[error("cannot access {path}: {source}")]
    Io {
        /// Path concerned.
        path: String,
        /// Underlying error.
        source: std::io::Error,
    },
}

/// What to check when object storage does not answer or refuses a request.
const REACH_ADVICE: &str = "check that it is reachable and, for an s3:// store, its \
    AWS_ENDPOINT, AWS_REGION and credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY; \
    AWS_ALLOW_HTTP for an http endpoint); the request can be retried";

/// What a user can do about a LanceDB error: a store that could not be reached or read
/// (object storage down, refused credentials, a timeout) is a matter of its location and
/// settings, and rebuilding it would not help; anything else may be damage that `doctor`
/// finds and `doctor --repair` rebuilds.
fn lance_advice(e: &lancedb::Error) -> &'static str {
    match e {
        lancedb::Error::ObjectStore { .. } | lancedb::Error::Timeout { .. } => REACH_ADVICE,
        lancedb::Error::Runtime { message } if is_s3_failure(message) => REACH_ADVICE,
        // A file that cannot be read: object storage out of reach, or a damaged local store.
        lancedb::Error::Lance {
            source: lance::Error::IO { .. },
        } => {
            "its storage could not be read: for an s3:// store, check that it is reachable and \
             its AWS_* settings; for one on disk, `sextant doctor` checks the data directory \
             and `sextant doctor --repair` rebuilds the chunk store"
        }
        _ => {
            "if it persists, `sextant doctor` checks the data directory and `sextant doctor \
             --repair` rebuilds the chunk store"
        }
    }
}

/// Whether LanceDB failed in its storage (object storage, a timeout, an I/O error) rather
/// than on the data it read.
fn is_storage_failure(e: &lancedb::Error) -> bool {
    match e {
        lancedb::Error::ObjectStore { .. }
        | lancedb::Error::Timeout { .. }
        | lancedb::Error::Lance {
            source: lance::Error::IO { .. },
        } => true,
        // A query plan's failure comes as text: S3 that did not answer while a search
        // looked for new versions or read a page.
        lancedb::Error::Runtime { message } => is_s3_failure(message),
        _ => false,
    }
}

/// Whether an error's text is an S3 request's failure (object_store's S3 client).
fn is_s3_failure(message: &str) -> bool {
    message.contains("Generic S3 error")
}

impl StoreError {
    /// Whether the chunk store's files could not be read (LanceDB or Arrow failed), as
    /// opposed to the metadata database.
    pub fn is_chunk_store(&self) -> bool {
        matches!(self, StoreError::Lance(_) | StoreError::Arrow(_))
    }

    /// Whether the disk holding a store is full (SQLite's `SQLITE_FULL`, Postgres'
    /// `disk_full`, or `ENOSPC` from a file write, which LanceDB reports as text).
    pub fn is_disk_full(&self) -> bool {
        if let StoreError::Sql(sqlx::Error::Database(db)) = self
            && matches!(db.code().as_deref(), Some("13" | "53100"))
        {
            return true;
        }
        #[cfg(unix)]
        let enospc = Some(libc::ENOSPC);
        #[cfg(not(unix))]
        let enospc: Option<i32> = None;
        let Some(enospc) = enospc else {
            return false;
        };
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(self);
        while let Some(e) = cause {
            if e.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.raw_os_error() == Some(enospc))
            {
                return true;
            }
            cause = e.source();
        }
        self.to_string()
            .contains(&std::io::Error::from_raw_os_error(enospc).to_string())
    }

    /// Whether a store could not be reached (the metadata database down, restarting or
    /// out of connections; the chunk store's storage failed: object storage that does not
    /// answer, a request that timed out): the request may succeed later, unlike a rejected
    /// statement.
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            StoreError::Sql(
                sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_)
            ) | StoreError::ObjectStore { .. }
        ) || matches!(self, StoreError::Lance(e) if is_storage_failure(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_failures_inside_a_query_are_unavailable_and_name_the_settings() {
        let down = StoreError::Lance(lancedb::Error::Runtime {
            message: "lance error: LanceError(IO): Generic S3 error: Error performing list \
                      request: … HTTP error: error sending request"
                .into(),
        });
        assert!(down.is_unavailable());
        let text = down.to_string();
        assert!(
            text.contains("AWS_ENDPOINT") && !text.contains("--repair"),
            "{text}"
        );

        let other = StoreError::Lance(lancedb::Error::Runtime {
            message: "the plan could not be built".into(),
        });
        assert!(!other.is_unavailable());
        assert!(other.to_string().contains("doctor --repair"));
    }
}
