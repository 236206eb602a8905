//! The API's one error shape: `{"error": {"code": "…", "message": "…"}}` with an HTTP
//! status that says whose fault it is.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

use crate::service::ServiceError;

/// The JSON body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// Declares error responses that routes name in their OpenAPI `responses(…)`: each a
/// status, a description and the [`ErrorBody`]. They are described, never built: the
/// authentication layer, the extractors and `ApiError` answer them.
macro_rules! described_errors {
    ($($(#[$doc:meta])* $name:ident = $status:tt, $description:tt;)*) => {$(
        $(#[$doc])*
        #[derive(utoipa::IntoResponses)]
        #[response(status = $status, description = $description)]
        #[allow(dead_code)]
        pub struct $name(ErrorBody);
    )*};
}

described_errors! {
    /// The `401` every operation may answer (no token, or not a live one).
    Unauthenticated = 401, "No or unknown token";
    /// 403 for a change that needs the `admin` scope.
    AdminOnly = 403, "Not an admin token";
    /// 404 for a `{repo}` path parameter that names no repository the token sees.
    NoSuchRepository = 404, "No such repository (or not visible to this token)";
    /// 404 for a `repositories` list that names a repository the token does not see.
    NoSuchRepositories = 404, "A repository in `repositories` does not exist";
    /// 429 for a search (or grep, symbol lookup, Scout run) over the server's limit of
    /// searches at once.
    TooManySearches = 429, "Too many searches at once (see Retry-After)";
    /// 429 for a stream or MCP session over the token's limit of sessions.
    SessionsFull = 429, "The token holds as many sessions (streams and MCP sessions) as allowed";
}

/// 413, 415 and 422: what a route with a JSON body answers about a body it cannot read.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)] // Described, never built: the `Body` extractor answers these.
pub enum BodyRejected {
    /// The body is over [`crate::api::MAX_BODY_BYTES`].
    #[response(status = 413, description = "Body too large")]
    TooLarge(ErrorBody),
    /// The body is not `application/json`.
    #[response(status = 415, description = "Body is not JSON")]
    NotJson(ErrorBody),
    /// The body is JSON of the wrong shape.
    #[response(status = 422, description = "Body of the wrong shape")]
    WrongShape(ErrorBody),
}

/// Code and message of an error.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorDetail {
    /// Stable machine-readable code.
    pub code: ErrorCode,
    /// What went wrong and what to do, for people.
    pub message: String,
}

/// Every error code the API answers, each with its one HTTP status.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema, strum::IntoStaticStr, strum::EnumIter,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ErrorCode {
    /// 400: a parameter or body field is wrong (the message names it).
    BadRequest,
    /// 401: no token, or not a live one.
    Unauthorized,
    /// 403: the token may not do this.
    Forbidden,
    /// 404: no such route, repository, job or file (or not visible to this token).
    NotFound,
    /// 408: the request's body did not arrive in time.
    RequestTimeout,
    /// 409: conflicts with the current state (a name taken, a sync already queued).
    Conflict,
    /// 413: the body is larger than the server accepts.
    PayloadTooLarge,
    /// 414: the URI is longer than the server accepts.
    UriTooLong,
    /// 415: the body is not JSON.
    UnsupportedMediaType,
    /// 422: JSON of the wrong shape (the message names the field).
    Unprocessable,
    /// 429: too much at once; retry after `Retry-After` seconds.
    TooManyRequests,
    /// 500: a fault of the server.
    Internal,
    /// 503: a store does not answer; retry shortly.
    Unavailable,
    /// 503: not ready to serve (the metadata store does not answer).
    NotReady,
}

impl ErrorCode {
    /// The HTTP status this code is answered with.
    pub fn status(self) -> StatusCode {
        match self {
            Self::BadRequest => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::Forbidden => StatusCode::FORBIDDEN,
            Self::NotFound => StatusCode::NOT_FOUND,
            Self::RequestTimeout => StatusCode::REQUEST_TIMEOUT,
            Self::Conflict => StatusCode::CONFLICT,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UriTooLong => StatusCode::URI_TOO_LONG,
            Self::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Unprocessable => StatusCode::UNPROCESSABLE_ENTITY,
            Self::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
            Self::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Unavailable | Self::NotReady => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The code as written on the wire (`not_found`).
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// An error answered to a client.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", code.as_str())]
pub struct ApiError {
    /// What kind of error, with its status.
    pub code: ErrorCode,
    /// What went wrong and what to do, for people.
    pub message: String,
}

impl ApiError {
    /// An error with this code.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    /// 400 with a message naming the field and why.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::BadRequest, message)
    }

    /// 403: the token may not do this.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Forbidden, message)
    }

    /// 404.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }

    /// 429: too much at once; try again shortly.
    pub fn too_many(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::TooManyRequests, message)
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.code.status()
    }

    /// 413: a body over [`super::MAX_BODY_BYTES`].
    pub fn too_large() -> Self {
        Self::from_body_rejection(StatusCode::PAYLOAD_TOO_LARGE, "")
    }

    /// 408: the body did not arrive within `deadline`.
    pub fn slow_body(deadline: std::time::Duration) -> Self {
        Self::new(
            ErrorCode::RequestTimeout,
            format!(
                "the request body did not arrive within {} s; send it at once",
                deadline.as_secs()
            ),
        )
    }

    /// A rejected request body: 413 too large, 415 not JSON, 422 JSON of the wrong
    /// shape (which field and why), 400 not JSON at all.
    pub fn from_body_rejection(status: StatusCode, detail: &str) -> Self {
        match status {
            StatusCode::PAYLOAD_TOO_LARGE => Self::new(
                ErrorCode::PayloadTooLarge,
                format!(
                    "the request body is larger than {} bytes",
                    super::MAX_BODY_BYTES
                ),
            ),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => Self::new(
                ErrorCode::UnsupportedMediaType,
                "send the body as JSON with `Content-Type: application/json`",
            ),
            StatusCode::UNPROCESSABLE_ENTITY => Self::new(
                ErrorCode::Unprocessable,
                format!("invalid request body: {detail}"),
            ),
            _ => Self::bad_request(format!("invalid request body: {detail}")),
        }
    }
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        let code = match &e {
            ServiceError::Unauthenticated(_) => ErrorCode::Unauthorized,
            ServiceError::Forbidden(_) => ErrorCode::Forbidden,
            ServiceError::NotFound(_) => ErrorCode::NotFound,
            ServiceError::Conflict(_) => ErrorCode::Conflict,
            ServiceError::Invalid { .. } => ErrorCode::BadRequest,
            ServiceError::Busy(_) => ErrorCode::TooManyRequests,
            ServiceError::Unavailable(_) => ErrorCode::Unavailable,
            ServiceError::Internal(_) => ErrorCode::Internal,
        };
        Self::new(code, e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::error!(code = self.code.as_str(), message = %self.message, "request failed");
        }
        let body = ErrorBody {
            error: ErrorDetail {
                code: self.code,
                message: self.message,
            },
        };
        let mut response = (status, Json(body)).into_response();
        if status == StatusCode::TOO_MANY_REQUESTS {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
        }
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer realm=\"sextant\""),
            );
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use strum::IntoEnumIterator;

    use super::*;

    #[test]
    fn every_code_has_one_status_and_a_snake_case_name() {
        for code in ErrorCode::iter() {
            let wire = serde_json::to_value(code).unwrap();
            assert_eq!(wire, code.as_str(), "serde and strum agree");
            assert!(
                code.as_str()
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_')
            );
            assert!(code.status().is_client_error() || code.status().is_server_error());
        }
        assert_eq!(
            ErrorCode::NotReady.status(),
            StatusCode::SERVICE_UNAVAILABLE
        );
    }

    #[test]
    fn service_errors_map_to_their_codes() {
        let cases = [
            (
                ServiceError::Unauthenticated("x".into()),
                ErrorCode::Unauthorized,
            ),
            (ServiceError::Forbidden("x".into()), ErrorCode::Forbidden),
            (ServiceError::NotFound("x".into()), ErrorCode::NotFound),
            (ServiceError::Conflict("x".into()), ErrorCode::Conflict),
            (ServiceError::invalid("limit", "x"), ErrorCode::BadRequest),
            (ServiceError::Busy("x".into()), ErrorCode::TooManyRequests),
            (
                ServiceError::Unavailable("x".into()),
                ErrorCode::Unavailable,
            ),
            (ServiceError::Internal("x".into()), ErrorCode::Internal),
        ];
        for (error, code) in cases {
            assert_eq!(ApiError::from(error).code, code);
        }
    }
}
