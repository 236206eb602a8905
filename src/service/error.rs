//! What a service call can fail with, independent of the protocol that carries it: each
//! adapter maps a [`ServiceError`] to its own form (an HTTP status and error code, an MCP
//! tool error).

use crate::index::IndexError;
use crate::search::SearchError;
use crate::store::StoreError;

/// Why a caller's request was not done. Messages say what to do.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// No credentials, or not live ones.
    #[error("{0}")]
    Unauthenticated(String),
    /// The caller may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// No such repository, job, file or symbol (or not visible to the caller).
    #[error("{0}")]
    NotFound(String),
    /// The request conflicts with the current state (a name taken, a sync already queued).
    #[error("{0}")]
    Conflict(String),
    /// A value the caller gave is wrong; `field` names it when one field is to blame.
    #[error("{message}")]
    Invalid {
        /// The field at fault (`limit`, `query`, `settings.include`…), if one is.
        field: Option<&'static str>,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// The server is doing as much of this as it may at once; retry shortly.
    #[error("{0}")]
    Busy(String),
    /// A store does not answer; the server recovers when it is back.
    #[error("{0}")]
    Unavailable(String),
    /// A fault of the server (a bug, a broken store).
    #[error("{0}")]
    Internal(String),
}

impl ServiceError {
    /// An invalid value of `field`.
    pub fn invalid(field: &'static str, message: impl Into<String>) -> Self {
        Self::Invalid {
            field: Some(field),
            message: message.into(),
        }
    }

    /// An invalid request, not down to one field.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::Invalid {
            field: None,
            message: message.into(),
        }
    }

    fn unavailable(e: &StoreError) -> Self {
        Self::Unavailable(format!(
            "the metadata database does not answer ({e}); the server keeps running and \
             recovers when it is back: retry shortly"
        ))
    }
}

impl From<StoreError> for ServiceError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(_) => Self::NotFound(e.to_string()),
            StoreError::Conflict(_) => Self::Conflict(e.to_string()),
            ref s if s.is_unavailable() => Self::unavailable(s),
            other => Self::Internal(other.to_string()),
        }
    }
}

impl From<IndexError> for ServiceError {
    fn from(e: IndexError) -> Self {
        match e {
            IndexError::UnknownRepo(_) | IndexError::UnknownRef { .. } => {
                Self::NotFound(e.to_string())
            }
            IndexError::PathRefused { .. } | IndexError::Io { .. } => Self::Invalid {
                field: Some("source"),
                message: e.to_string(),
            },
            IndexError::Settings(_) => Self::Invalid {
                field: Some("settings"),
                message: e.to_string(),
            },
            IndexError::Store(s) => match s {
                StoreError::Conflict(_) => Self::Conflict(IndexError::Store(s).to_string()),
                s => s.into(),
            },
            other => Self::Internal(other.to_string()),
        }
    }
}

impl From<SearchError> for ServiceError {
    fn from(e: SearchError) -> Self {
        match e {
            SearchError::InvalidOption(_) => Self::invalid_request(e.to_string()),
            SearchError::EmptyQuery | SearchError::QueryTooLong(_) => {
                Self::invalid("query", e.to_string())
            }
            SearchError::Store(s) => s.into(),
            other => Self::Internal(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_and_index_errors_keep_their_meaning() {
        assert!(matches!(
            ServiceError::from(IndexError::UnknownRepo("x".into())),
            ServiceError::NotFound(m) if m.contains('x')
        ));
        assert!(matches!(
            ServiceError::from(IndexError::Store(StoreError::Conflict("name".into()))),
            ServiceError::Conflict(_)
        ));
        assert!(matches!(
            ServiceError::from(IndexError::Settings("bad glob".into())),
            ServiceError::Invalid {
                field: Some("settings"),
                ..
            }
        ));
        assert!(matches!(
            ServiceError::from(SearchError::EmptyQuery),
            ServiceError::Invalid {
                field: Some("query"),
                ..
            }
        ));
    }
}
