//! REST under `/api/v1`: repositories, jobs, progress streams (SSE), search and symbol
//! lookup. Each handler translates a request into one [`crate::service`] call and its
//! answer (or [`crate::service::ServiceError`]) back; the API holds no business logic
//! and does not know the other adapters.
//!
//! Every route is described by OpenAPI (`utoipa`), its bodies by the [`wire`] types
//! (camelCase field names, like every public body); [`crate::server::openapi`] builds the
//! document from these routes. Errors are `{"error": {"code", "message"}}` with a closed set of codes
//! ([`ErrorCode`]). The server ([`crate::server`]) mounts these routes behind its
//! authentication layer, which leaves the caller's [`crate::auth::Principal`] in each
//! request ([`extract::Caller`]).
//!
//! # Design notes
//!
//! - One file per resource under `api/routes/` (`repositories`, `jobs`, `search`, `scout`, `symbols`, `grep`, `events`); each handler takes `State<Arc<Service>>`,
//!   the `Caller` extractor (the principal the server's authentication left in the
//!   request), `Path`, `Params<T>` (query string) and `Body<T>` (JSON), makes one service
//!   call and returns `api::wire` types. Extractor rejections come in the error shape:
//!   bodies ≤ 1 MiB (413), JSON only (415), shape errors 422 naming the field, malformed
//!   JSON and bad query strings 400.
//! - Wire types (`api::wire`): `Repository`, `Settings`, `Job`, `File`, `Symbol`, built from
//!   the store's plain records with `From`; every public field name is camelCase (REST
//!   bodies, SSE events, MCP arguments, the OpenAPI document; a unit test walks the document
//!   and fails on any other casing). The CLI's `--server` mode reads answers into the same
//!   types, and its local `repo show` prints the same document as `GET …/repositories/{repo}`.
//! - Errors are `{"error": {"code", "message"}}`; `ErrorCode` is a closed enum, each code
//!   with its one HTTP status (`bad_request` 400, `unauthorized` 401, `forbidden` 403,
//!   `not_found` 404, `request_timeout` 408 (a body that did not arrive within
//!   `--body-timeout`), `conflict` 409, `payload_too_large` 413, `uri_too_long` 414,
//!   `unsupported_media_type` 415, `unprocessable` 422, `too_many_requests` 429 with
//!   `Retry-After`, `internal` 500, `unavailable` / `not_ready` 503).
//! - OpenAPI: every handler carries `#[utoipa::path]`; `utoipa_axum::OpenApiRouter`
//!   collects them, so `server::openapi()` (the API's routes plus health and metrics)
//!   cannot miss a route. The committed `openapi/openapi.json` is compared with it by
//!   `tests/it/openapi.rs`; `/openapi.json` adds a `servers` entry for the caller's base URL.

mod error;
pub mod extract;
mod routes;
pub mod wire;

use std::sync::Arc;

use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;

use crate::service::Service;
pub use error::{
    AdminOnly, ApiError, BodyRejected, ErrorBody, ErrorCode, ErrorDetail, NoSuchRepository,
    Unauthenticated,
};
pub use routes::jobs::JobList;
pub use routes::refs::{NewRef, RefDropped, RefList, RefreshJobs};
pub use routes::repositories::{
    FileList, FileSymbols, JobBody, NewRepository, Removed, RepositoryBody, RepositoryCreated,
    RepositoryDetail, RepositoryList,
};
pub use routes::scout::ScoutBody;
pub use routes::search::{SearchRequest, SearchResult};

/// Largest request body accepted, in bytes (413 beyond).
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// The OpenAPI document's fixed parts; the paths come from the routes.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Sextant",
        description = "Token-budgeted, structure-aware code context: register repositories, \
        follow their indexing, search them in natural language or by symbol name. \
        Authenticate with `Authorization: Bearer <token>` (tokens: `sextant token create`); \
        a loopback server without tokens needs none. Field names are camelCase throughout.",
        license(name = "Apache-2.0")
    ),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
    tags(
        (name = "repositories", description = "Register, inspect, change, remove and sync repositories"),
        (name = "jobs", description = "Sync jobs and their progress"),
        (name = "code", description = "Search and symbol lookup"),
        (name = "health", description = "Liveness, readiness, metrics"),
        (name = "access", description = "Who a request acts as; the server's tokens")
    )
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}

/// The API's routes, relative to `/api/v1`: the plain ones, and the streaming ones (SSE)
/// apart, so that the server can bound the first by a request timeout and count the
/// second among a token's sessions.
pub struct Routes {
    /// Requests that answer once.
    pub plain: OpenApiRouter<Arc<Service>>,
    /// Progress streams.
    pub streams: OpenApiRouter<Arc<Service>>,
}

/// The routes with their OpenAPI descriptions.
pub fn routes() -> Routes {
    Routes {
        plain: routes::repositories::routes()
            .merge(routes::refs::routes())
            .merge(routes::jobs::routes())
            .merge(routes::search::routes())
            .merge(routes::scout::routes())
            .merge(routes::symbols::routes())
            .merge(routes::grep::routes())
            .merge(routes::access::routes()),
        streams: routes::events::routes(),
    }
}
