//! Probes and counters: `/healthz`, `/readyz`, `/metrics`, and the answer to unknown
//! routes.

use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::ServerState;
use crate::api::{ApiError, ErrorBody, ErrorCode, Unauthenticated};
use crate::auth::Principal;

/// These routes with their OpenAPI descriptions (the router mounts them itself: they sit
/// outside `/api/v1`, some outside authentication).
pub(super) fn documented() -> OpenApiRouter<Arc<ServerState>> {
    OpenApiRouter::new()
        .routes(routes!(healthz))
        .routes(routes!(readyz))
        .routes(routes!(metrics_text))
}

/// `{"status": …}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Status {
    /// `ok` / `ready`.
    #[schema(value_type = String)]
    pub status: &'static str,
}

/// The process is up.
#[utoipa::path(get, path = "/healthz", tag = "health", security(()),
    responses((status = 200, description = "Alive", body = Status)))]
pub(super) async fn healthz() -> Json<Status> {
    Json(Status { status: "ok" })
}

/// The metadata store answers (migrations are applied when it opens).
#[utoipa::path(get, path = "/readyz", tag = "health", security(()),
    responses(
        (status = 200, description = "Ready", body = Status),
        (status = 503, description = "The metadata store does not answer", body = ErrorBody)))]
pub(super) async fn readyz(State(state): State<Arc<ServerState>>) -> Response {
    match state.service.ready().await {
        Ok(()) => Json(Status { status: "ready" }).into_response(),
        Err(e) => ApiError::new(ErrorCode::NotReady, e.to_string()).into_response(),
    }
}

/// Prometheus text exposition (see [`super::metrics`]); needs a token that sees every
/// repository when authentication is on.
#[utoipa::path(get, path = "/metrics", tag = "health",
    responses(
        (status = 200, description = "Metrics in the Prometheus text format", content_type = "text/plain", body = String),
        Unauthenticated,
        (status = 403, description = "The token is limited to some repositories", body = ErrorBody)))]
pub(super) async fn metrics_text(
    State(state): State<Arc<ServerState>>,
    Extension(caller): Extension<Principal>,
) -> Response {
    let stats = match state.service.stats(&caller).await {
        Ok(stats) => stats,
        Err(e) => return ApiError::from(e).into_response(),
    };
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        super::metrics::render(&state.metrics, &stats),
    )
        .into_response()
}

/// Any other route.
pub(super) async fn not_found() -> ApiError {
    ApiError::not_found("no such route; the API lives under /api/v1 (see /docs)")
}
