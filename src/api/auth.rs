//! Request authentication: every request under `/api/v1` and `/mcp` passes through
//! [`authenticate`], which turns its bearer token into a [`Principal`] (or answers 401)
//! and leaves it in the request's extensions for handlers and MCP tools to consult.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::{ApiError, AppState};
use crate::auth::{Principal, ScopeError, bearer, hash_secret};
use crate::index::IndexError;
use crate::store::Repository;

/// Whether requests must carry a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthPolicy {
    /// Every caller is the local administrator: only for loopback-bound servers.
    Off,
    /// Every request needs `Authorization: Bearer <token>` of a live token.
    Tokens,
}

/// The middleware: resolves the caller and stores its [`Principal`] in the request.
pub(super) async fn authenticate(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let principal = match state.auth {
        AuthPolicy::Off => Principal::local(),
        AuthPolicy::Tokens => {
            match principal_of(&state, request.headers().get(AUTHORIZATION).cloned()).await {
                Ok(p) => p,
                Err(e) => return e.into_response(),
            }
        }
    };
    request.extensions_mut().insert(principal);
    next.run(request).await
}

async fn principal_of(
    state: &AppState,
    header: Option<axum::http::HeaderValue>,
) -> Result<Principal, ApiError> {
    let header = header.ok_or_else(|| {
        ApiError::unauthorized(
            "this server requires an API token: send `Authorization: Bearer <token>` \
             (an administrator creates one with `sextant token create`)",
        )
    })?;
    let secret = header.to_str().ok().and_then(bearer).ok_or_else(|| {
        ApiError::unauthorized("the Authorization header must be `Bearer <token>`")
    })?;
    let token = state
        .indexer
        .meta()
        .token_by_hash(&hash_secret(secret))
        .await?
        .ok_or_else(|| ApiError::unauthorized("unknown or revoked API token"))?;
    Principal::from_token(&token).ok_or_else(|| {
        ApiError::unauthorized(format!(
            "token `{}` has an unknown scope `{}`; revoke it and create a new one",
            token.id, token.scope
        ))
    })
}

/// 403 unless `principal` may administer.
pub(super) fn require_admin(principal: &Principal) -> Result<(), ApiError> {
    if principal.is_admin() {
        Ok(())
    } else {
        Err(ApiError::forbidden(
            "this needs a token with the `admin` scope; yours is `read`",
        ))
    }
}

/// The repository named `name` (name or id) as `principal` sees it: one it may not see
/// is reported exactly like one that does not exist.
pub(crate) async fn visible_repo(
    state: &AppState,
    principal: &Principal,
    name: &str,
) -> Result<Repository, IndexError> {
    let repo = state.indexer.find_repo(name).await?;
    if principal.sees(&repo.id) {
        Ok(repo)
    } else {
        Err(IndexError::UnknownRepo(name.to_string()))
    }
}

/// Repository names or ids resolved to the ids a search may cover for `principal`
/// (every visible repository when `names` is empty and the principal is restricted).
pub(crate) async fn search_scope(
    state: &AppState,
    principal: &Principal,
    names: &[String],
) -> Result<Vec<String>, ApiError> {
    let mut ids = Vec::with_capacity(names.len());
    for name in names {
        ids.push(visible_repo(state, principal, name).await?.id);
    }
    principal.scope_search(ids).map_err(|e| match e {
        ScopeError::Invisible(id) => IndexError::UnknownRepo(id).into(),
        ScopeError::Nothing => ApiError::forbidden("this token may not see any repository"),
    })
}
