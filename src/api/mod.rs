//! HTTP surface: REST under `/api/v1`, SSE progress, health. Translates requests into
//! calls on [`crate::index`] and [`crate::search`] and renders with [`crate::render`]; it
//! holds no business logic of its own.
//!
//! Routes (all JSON; errors are `{"error": {"code", "message"}}` with a stable `code`):
//!
//! | method | path | what |
//! |---|---|---|
//! | GET | `/healthz` | the process is up |
//! | GET | `/readyz` | the metadata store answers (migrations are applied at open) |
//! | GET | `/api/v1/repositories` | registered repositories |
//! | POST | `/api/v1/repositories` | register a directory (`path`) or git URL (`git`, `ref`) and queue its first sync |
//! | GET / DELETE | `/api/v1/repositories/{repo}` | one repository (name or id) with its file counts / remove it and its index |
//! | POST | `/api/v1/repositories/{repo}/sync` | queue a sync (409 when one is already queued or running) |
//! | GET | `/api/v1/repositories/{repo}/symbols?path=…` | the symbols of one file |
//! | GET | `/api/v1/jobs/{id}` | one job |
//! | GET | `/api/v1/events` | indexing progress as server-sent events |
//! | POST | `/api/v1/search` | `{query, …options}`: the structured response plus the MCP content items |
//! | POST/GET | `/mcp` | MCP over streamable HTTP ([`crate::mcp`]) |

mod error;
mod routes;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use tokio::sync::broadcast;

use crate::index::{Indexer, JobRunner, ProgressEvent};
use crate::search::Searcher;
pub use error::ApiError;

/// Largest request body accepted, in bytes.
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// What every handler reaches.
pub struct AppState {
    /// Repositories and syncs.
    pub indexer: Arc<Indexer>,
    /// Searches (with the bounded freshness check).
    pub searcher: Arc<Searcher>,
    /// The durable sync queue.
    pub jobs: Arc<JobRunner>,
    /// Progress of every sync, for SSE subscribers.
    pub events: broadcast::Sender<ProgressEvent>,
}

/// The application router.
pub fn router(state: Arc<AppState>) -> Router {
    let api = Router::new()
        .route(
            "/repositories",
            get(routes::list_repositories).post(routes::add_repository),
        )
        .route(
            "/repositories/{repo}",
            get(routes::get_repository).delete(routes::delete_repository),
        )
        .route("/repositories/{repo}/sync", post(routes::sync_repository))
        .route("/repositories/{repo}/symbols", get(routes::file_symbols))
        .route("/jobs/{id}", get(routes::get_job))
        .route("/events", get(routes::events))
        .route("/search", post(routes::search));
    let mcp = crate::mcp::http_service(
        state.clone(),
        vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
    );
    Router::new()
        .route("/healthz", get(routes::healthz))
        .nest_service("/mcp", mcp)
        .route("/readyz", get(routes::readyz))
        .nest("/api/v1", api)
        .fallback(routes::not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state)
}
