//! `/symbols`: exact symbol lookup by name.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::Shared;
use super::search::SearchResult;
use crate::api::error::{ApiError, ErrorBody, NoSuchRepository, TooManySearches, Unauthenticated};
use crate::api::extract::{Caller, Params};
use crate::service::Service;

pub(in crate::api) fn routes() -> OpenApiRouter<Arc<Service>> {
    OpenApiRouter::new().routes(routes!(get_symbol))
}

/// `?name=…&repository=…`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct SymbolQuery {
    /// `name`, `Parent > name` or `path/file.ts > Parent > name`.
    #[param(min_length = 1, pattern = "\\S")]
    name: String,
    /// Only this repository (name or id).
    repository: Option<String>,
    /// On this ref the repositories track besides their default one.
    #[serde(rename = "ref")]
    git_ref: Option<String>,
}

/// Exact symbol lookup (no vectors): every symbol with that name or breadcrumb, complete,
/// with its structural metadata. Same answer shape as search; unknown names give an empty
/// result.
#[utoipa::path(get, path = "/symbols", tag = "code",
    params(SymbolQuery),
    responses(
        (status = 200, description = "Matches (possibly none)", body = SearchResult),
        (status = 400, description = "Missing or empty `name`", body = ErrorBody),
        Unauthenticated,
        NoSuchRepository,
        TooManySearches))]
async fn get_symbol(
    State(service): Shared,
    Caller(caller): Caller,
    Params(q): Params<SymbolQuery>,
) -> Result<Json<SearchResult>, ApiError> {
    Ok(Json(
        service
            .symbol(&caller, &q.name, q.repository, q.git_ref)
            .await?
            .into(),
    ))
}
