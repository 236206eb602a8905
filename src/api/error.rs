//! The API's one error shape: `{"error": {"code": "…", "message": "…"}}` with an HTTP
//! status that says whose fault it is.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::index::IndexError;
use crate::search::SearchError;
use crate::store::StoreError;

/// An error answered to a client.
#[derive(Debug, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Stable machine-readable code (`bad_request`, `not_found`, `conflict`, `internal`).
    pub code: &'static str,
    /// What went wrong and what to do, for people.
    pub message: String,
}

impl ApiError {
    /// 400 with a message naming the field and why.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            code: "bad_request",
            message: message.into(),
        }
    }

    /// 404.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            code: "not_found",
            message: message.into(),
        }
    }

    /// 409.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::CONFLICT,
            code: "conflict",
            message: message.into(),
        }
    }

    fn internal(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            code: "internal",
            message: message.into(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::error!(code = self.code, message = %self.message, "request failed");
        }
        let body = json!({ "error": { "code": self.code, "message": self.message } });
        (self.status, Json(body)).into_response()
    }
}

impl From<IndexError> for ApiError {
    fn from(e: IndexError) -> Self {
        match e {
            IndexError::UnknownRepo(_) => Self::not_found(e.to_string()),
            IndexError::PathRefused { .. } | IndexError::Settings(_) | IndexError::Io { .. } => {
                Self::bad_request(e.to_string())
            }
            IndexError::Store(StoreError::Conflict(_)) => Self::conflict(e.to_string()),
            other => Self::internal(other.to_string()),
        }
    }
}

impl From<SearchError> for ApiError {
    fn from(e: SearchError) -> Self {
        match e {
            SearchError::InvalidOption(_) | SearchError::EmptyQuery => {
                Self::bad_request(e.to_string())
            }
            other => Self::internal(other.to_string()),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(_) => Self::not_found(e.to_string()),
            StoreError::Conflict(_) => Self::conflict(e.to_string()),
            other => Self::internal(other.to_string()),
        }
    }
}
