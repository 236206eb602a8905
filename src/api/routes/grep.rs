//! `/grep`: exact and regex search over the indexed files.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::Shared;
use crate::api::error::{
    ApiError, BodyRejected, ErrorBody, NoSuchRepositories, TooManySearches, Unauthenticated,
};
use crate::api::extract::{Body, Caller};
use crate::service::Service;
use crate::service::records::{GrepRequest, GrepResponse};

pub(in crate::api) fn routes() -> OpenApiRouter<Arc<Service>> {
    OpenApiRouter::new().routes(routes!(grep))
}

/// Exact (`mode: literal`, the default) or regex (`mode: regex`, Rust `regex` syntax)
/// search over the indexed files of the repositories the caller sees: matching lines in
/// repository, path and line order, each with the content hash (and commit) of the
/// version searched. A trigram index picks the files to read; `nextCursor` pages on.
#[utoipa::path(post, path = "/grep", tag = "code",
    request_body = GrepRequest,
    responses(
        (status = 200, description = "Matching lines (possibly none)", body = GrepResponse),
        (status = 400, description = "Empty, invalid or too complex pattern, or an invalid option (named)", body = ErrorBody),
        Unauthenticated,
        NoSuchRepositories,
        TooManySearches,
        BodyRejected))]
async fn grep(
    State(service): Shared,
    Caller(caller): Caller,
    Body(request): Body<GrepRequest>,
) -> Result<Json<GrepResponse>, ApiError> {
    Ok(Json(service.grep(&caller, request).await?))
}
