//! `/search`: natural-language search or `symbol =` lookup.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::Shared;
use crate::api::error::{
    ApiError, BodyRejected, ErrorBody, NoSuchRepositories, TooManySearches, Unauthenticated,
};
use crate::api::extract::{Body, Caller};
use crate::render::ContentItem;
use crate::service::records::{SearchOverrides, SearchResponse};
use crate::service::{SearchAnswer, Service};

pub(in crate::api) fn routes() -> OpenApiRouter<Arc<Service>> {
    OpenApiRouter::new().routes(routes!(search))
}

/// `POST /api/v1/search`: the query and any search option; what it leaves out comes from
/// the server's defaults. `repositories` may hold names or ids.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SearchRequest {
    /// A natural-language question, or `symbol = [path/file.ts >] [Parent >] name`
    /// (at most 8,192 bytes).
    #[schema(min_length = 1, max_length = 8192, pattern = "\\S")]
    pub query: String,
    /// Budget, thresholds, recall sizes and scope (`repositories`, `paths`, `languages`, `kinds`).
    #[serde(flatten)]
    pub options: SearchOverrides,
}

/// A search's answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResult {
    /// The structured response: results with their code and scores, every candidate,
    /// structural metadata, timings.
    pub response: SearchResponse,
    /// The same answer as MCP content: the connection graph, then one snapshot per file.
    pub content: Vec<ContentItem>,
}

impl From<SearchAnswer> for SearchResult {
    fn from(a: SearchAnswer) -> Self {
        Self {
            response: a.response,
            content: a.content,
        }
    }
}

/// Natural-language search or `symbol =` lookup over the repositories the caller sees.
#[utoipa::path(post, path = "/search", tag = "code",
    request_body = SearchRequest,
    responses(
        (status = 200, description = "Results", body = SearchResult),
        (status = 400, description = "Empty query or invalid option (named)", body = ErrorBody),
        Unauthenticated,
        NoSuchRepositories,
        TooManySearches,
        BodyRejected))]
async fn search(
    State(service): Shared,
    Caller(caller): Caller,
    Body(request): Body<SearchRequest>,
) -> Result<Json<SearchResult>, ApiError> {
    let answer = service
        .search(&caller, &request.query, request.options)
        .await?;
    Ok(Json(answer.into()))
}
