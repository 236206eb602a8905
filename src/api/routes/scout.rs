//! `/scout`: what depends on a symbol, rated and explained.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::Shared;
use crate::api::error::{ApiError, ErrorBody};
use crate::api::extract::{Body, Caller};
use crate::scout::ScoutResponse;
use crate::service::{ScoutRequest, Service};

pub(in crate::api) fn routes() -> OpenApiRouter<Arc<Service>> {
    OpenApiRouter::new().routes(routes!(scout))
}

/// `POST /api/v1/scout`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScoutBody {
    /// What to find out: "what breaks if I add a variant to ShapeKind", a symbol's name,
    /// or `symbol = path/file.ts > Parent > name`.
    #[schema(min_length = 1, max_length = 8192)]
    pub query: String,
    /// Interest tags; links with these tags are explored first. The structural rater
    /// gives `exhaustive`, `pattern-match`, `record`, `implements`, `overrides`,
    /// `subclass`, `call-site`, `type-only`, `reference`, `import`, `re-export`, `test`.
    #[serde(default)]
    #[schema(max_items = 20)]
    pub tags: Vec<String>,
    /// Most symbols to explore (1–200, default 20).
    #[schema(minimum = 1, maximum = 200)]
    pub budget: Option<u32>,
    /// Only these repositories (names or ids); default: every one the token sees.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub repositories: Vec<String>,
}

/// Explores what depends on the symbol a question names (callers, references,
/// implementations, overrides, exhaustive `switch`es and `Record`s over it), rates every
/// link and answers with a summary and the places that must change with it.
#[utoipa::path(post, path = "/scout", tag = "code",
    request_body = ScoutBody,
    responses(
        (status = 200, description = "Summary, pointers, and what the exploration did", body = ScoutResponse),
        (status = 400, description = "Empty query, bad budget or tags (named)", body = ErrorBody),
        (status = 401, description = "No or unknown token", body = ErrorBody),
        (status = 404, description = "A repository in `repositories` does not exist", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Body is not JSON", body = ErrorBody),
        (status = 422, description = "Body of the wrong shape", body = ErrorBody),
        (status = 429, description = "Too many searches at once (see Retry-After)", body = ErrorBody)))]
async fn scout(
    State(service): Shared,
    Caller(caller): Caller,
    Body(body): Body<ScoutBody>,
) -> Result<Json<ScoutResponse>, ApiError> {
    let request = ScoutRequest {
        query: body.query,
        tags: body.tags,
        budget: body.budget,
        repositories: body.repositories,
    };
    Ok(Json(service.scout(&caller, request, |_, _| {}).await?))
}
