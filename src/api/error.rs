//! The API's one error shape: `{"error": {"code": "…", "message": "…"}}` with an HTTP
//! status that says whose fault it is.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::index::IndexError;
use crate::search::SearchError;
use crate::store::StoreError;

/// The JSON body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// Code and message of an error.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable machine-readable code (see [`ApiError::code`]).
    pub code: String,
    /// What went wrong and what to do, for people.
    pub message: String,
}

/// An error answered to a client.
#[derive(Debug, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Stable machine-readable code: `bad_request`, `unauthorized`, `forbidden`,
    /// `not_found`, `conflict`, `payload_too_large`, `unsupported_media_type`,
    /// `too_many_requests`, `uri_too_long`,
    /// `unprocessable`, `timeout`, `not_ready`, `unavailable`, `internal`.
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

    /// 401: no token, or not a live one. Answered with `WWW-Authenticate: Bearer`.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::UNAUTHORIZED,
            code: "unauthorized",
            message: message.into(),
        }
    }

    /// 403: the token may not do this.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::FORBIDDEN,
            code: "forbidden",
            message: message.into(),
        }
    }

    /// A rejected request body: 413 too large, 415 not JSON, 422 JSON of the wrong
    /// shape (which field and why), 400 not JSON at all.
    pub fn from_body_rejection(status: StatusCode, detail: &str) -> Self {
        let (code, message) = match status {
            StatusCode::PAYLOAD_TOO_LARGE => (
                "payload_too_large",
                format!(
                    "the request body is larger than {} bytes",
                    super::MAX_BODY_BYTES
                ),
            ),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => (
                "unsupported_media_type",
                "send the body as JSON with `Content-Type: application/json`".to_string(),
            ),
            StatusCode::UNPROCESSABLE_ENTITY => {
                ("unprocessable", format!("invalid request body: {detail}"))
            }
            _ => ("bad_request", format!("invalid request body: {detail}")),
        };
        let status = if code == "bad_request" {
            StatusCode::BAD_REQUEST
        } else {
            status
        };
        Self {
            status,
            code,
            message,
        }
    }

    /// 429: too many searches at once; try again shortly.
    pub fn too_many(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::TOO_MANY_REQUESTS,
            code: "too_many_requests",
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

    /// 503: the metadata database does not answer; retry later.
    pub fn unavailable(e: &StoreError) -> Self {
        Self {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code: "unavailable",
            message: format!(
                "the metadata database does not answer ({e}); the server keeps running and \
                 recovers when it is back: retry shortly"
            ),
        }
    }

    /// 500.
    pub fn internal(message: impl Into<String>) -> Self {
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
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code.to_string(),
                message: self.message,
            },
        };
        let mut response = (self.status, Json(body)).into_response();
        if self.status == StatusCode::TOO_MANY_REQUESTS {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
        }
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer realm=\"sextant\""),
            );
        }
        response
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
            IndexError::Store(ref s) if s.is_unavailable() => Self::unavailable(s),
            other => Self::internal(other.to_string()),
        }
    }
}

impl From<SearchError> for ApiError {
    fn from(e: SearchError) -> Self {
        match e {
            SearchError::InvalidOption(_)
            | SearchError::EmptyQuery
            | SearchError::QueryTooLong(_) => Self::bad_request(e.to_string()),
            SearchError::Store(ref s) if s.is_unavailable() => Self::unavailable(s),
            other => Self::internal(other.to_string()),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound(_) => Self::not_found(e.to_string()),
            StoreError::Conflict(_) => Self::conflict(e.to_string()),
            ref s if s.is_unavailable() => Self::unavailable(s),
            other => Self::internal(other.to_string()),
        }
    }
}
