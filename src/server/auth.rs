//! Request authentication: every request under `/api/v1`, `/mcp` and `/metrics` passes
//! through [`authenticate`], which turns its bearer token into a [`Principal`] (or
//! answers 401) and leaves it in the request's extensions for REST handlers and MCP tools
//! to hand to the service.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::AUTHORIZATION;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::ServerState;
use crate::api::ApiError;
use crate::auth::Principal;

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
    State(state): State<Arc<ServerState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let principal = match state.auth {
        AuthPolicy::Off => Principal::local(),
        AuthPolicy::Tokens => {
            let header = request.headers().get(AUTHORIZATION).map(|v| v.to_str());
            let header = match header {
                Some(Ok(value)) => Some(value),
                Some(Err(_)) => Some(""),
                None => None,
            };
            match state.service.authenticate(header).await {
                Ok(p) => p,
                Err(e) => return ApiError::from(e).into_response(),
            }
        }
    };
    tracing::Span::current().record("enduser.id", principal.name());
    request.extensions_mut().insert(principal);
    next.run(request).await
}
