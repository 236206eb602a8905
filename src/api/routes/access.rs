//! `/me` and `/tokens`: who a request acts as, and the server's tokens (an admin token
//! not limited to some repositories manages them).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::Shared;
use crate::api::error::{
    AdminOnly, ApiError, BodyRejected, ErrorBody, NoSuchRepositories, Unauthenticated,
};
use crate::api::extract::{Body, Caller};
use crate::auth::Scope;
use crate::service::records::ApiToken;
use crate::service::{Service, Whoami};

pub(in crate::api) fn routes() -> OpenApiRouter<Arc<Service>> {
    OpenApiRouter::new()
        .routes(routes!(whoami))
        .routes(routes!(list_tokens, create_token))
        .routes(routes!(revoke_token))
}

/// Who this request acts as: the token, its scope, the repositories it is limited to.
#[utoipa::path(get, path = "/me", tag = "access",
    responses((status = 200, description = "The caller", body = Whoami), Unauthenticated))]
async fn whoami(State(service): Shared, Caller(caller): Caller) -> Result<Json<Whoami>, ApiError> {
    Ok(Json(service.whoami(&caller).await?))
}

/// A token as listed: never its secret.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Token {
    /// Id (what `DELETE /tokens/{id}` takes).
    pub id: String,
    /// Who or what uses it.
    pub name: String,
    /// `read` or `admin`.
    #[schema(value_type = String, example = "read")]
    pub scope: Scope,
    /// Ids of the repositories it is limited to (empty: all).
    pub repositories: Vec<String>,
    /// Created (Unix ms).
    pub created_at: i64,
    /// Revoked (Unix ms), when revoked.
    pub revoked_at: Option<i64>,
}

impl From<ApiToken> for Token {
    fn from(t: ApiToken) -> Self {
        Self {
            id: t.id,
            name: t.name,
            scope: t.scope,
            repositories: t.repositories,
            created_at: t.created_at,
            revoked_at: t.revoked_at,
        }
    }
}

/// `{"tokens": …}`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct TokenList {
    /// Oldest first, live and revoked.
    pub tokens: Vec<Token>,
}

/// Every token of the server, live and revoked.
#[utoipa::path(get, path = "/tokens", tag = "access",
    responses((status = 200, description = "Tokens", body = TokenList), Unauthenticated, AdminOnly))]
async fn list_tokens(
    State(service): Shared,
    Caller(caller): Caller,
) -> Result<Json<TokenList>, ApiError> {
    let tokens = service.tokens(&caller).await?;
    Ok(Json(TokenList {
        tokens: tokens.into_iter().map(Token::from).collect(),
    }))
}

/// `POST /tokens`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    /// Who or what uses it (1–100 bytes).
    #[schema(min_length = 1, max_length = 100)]
    pub name: String,
    /// `read` (search, list, symbols, progress) or `admin` (also register, change,
    /// sync, remove).
    #[schema(value_type = String, example = "read")]
    pub scope: Scope,
    /// Only these repositories (names or ids); default: every one, including ones
    /// registered later.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub repositories: Vec<String>,
}

/// A token just created, with its secret: shown this once.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CreatedToken {
    /// The token.
    pub token: Token,
    /// Send as `Authorization: Bearer <secret>`; it cannot be shown again.
    pub secret: String,
}

/// Creates a token; the answer holds its secret, the only time it is shown.
#[utoipa::path(post, path = "/tokens", tag = "access",
    request_body = NewToken,
    responses(
        (status = 200, description = "Created", body = CreatedToken),
        (status = 400, description = "Bad name", body = ErrorBody),
        Unauthenticated, AdminOnly,
        NoSuchRepositories,
        BodyRejected))]
async fn create_token(
    State(service): Shared,
    Caller(caller): Caller,
    Body(body): Body<NewToken>,
) -> Result<Json<CreatedToken>, ApiError> {
    if body.repositories.len() > 100 {
        return Err(crate::service::ServiceError::invalid(
            "repositories",
            "a token is limited to at most 100 repositories",
        )
        .into());
    }
    let created = service
        .create_token(&caller, &body.name, body.scope, &body.repositories)
        .await?;
    Ok(Json(CreatedToken {
        token: created.token.into(),
        secret: created.secret,
    }))
}

/// Revokes a token: requests carrying it are refused from then on.
#[utoipa::path(delete, path = "/tokens/{id}", tag = "access",
    params(("id" = String, Path, description = "Token id")),
    responses(
        (status = 200, description = "Revoked", body = Token),
        Unauthenticated, AdminOnly,
        (status = 404, description = "No live token with this id", body = ErrorBody)))]
async fn revoke_token(
    State(service): Shared,
    Caller(caller): Caller,
    Path(id): Path<String>,
) -> Result<Json<Token>, ApiError> {
    service.revoke_token(&caller, &id).await?;
    let tokens = service.tokens(&caller).await?;
    let revoked = tokens
        .into_iter()
        .find(|t| t.id == id)
        .ok_or_else(|| ApiError::from(crate::service::ServiceError::NotFound(id.clone())))?;
    Ok(Json(revoked.into()))
}
