//! HTTP surface: REST under `/api/v1`, SSE progress, MCP at `/mcp`, health, metrics,
//! the OpenAPI document and its interactive page. Translates requests into calls on
//! [`crate::index`] and [`crate::search`] and renders with [`crate::render`]; it holds no
//! business logic of its own.
//!
//! Every route is described by OpenAPI (`utoipa`); [`openapi`] is the document, committed
//! as `openapi/openapi.json` (a test fails when the two drift). Errors are
//! `{"error": {"code", "message"}}` with a stable `code` ([`ApiError`]).
//!
//! Layers, outermost first: [`guard`] (URI length, `X-Forwarded-*`, `Host` allowlist),
//! request metrics, tracing, then per group: authentication ([`auth`]) for `/api/v1` and
//! `/mcp`, and a timeout for the non-streaming API routes.

mod auth;
mod error;
mod metrics;
mod routes;
pub mod server;
pub mod sessions;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use tokio::sync::broadcast;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::embed::CachedEmbedder;
use crate::index::{Indexer, JobRunner, ProgressEvent};
use crate::search::Searcher;
pub use auth::AuthPolicy;
pub(crate) use auth::visible_repo;
pub use error::{ApiError, ErrorBody, ErrorDetail};
pub use metrics::Metrics;
pub(crate) use routes::{NewRepository, register, run_search, symbol_lookup};
pub use server::{ConnectionLimits, serve};
pub use sessions::SessionLimits;

/// Largest request body accepted, in bytes (413 beyond).
pub const MAX_BODY_BYTES: usize = 1 << 20;

/// Longest request URI accepted, in bytes (414 beyond).
pub const MAX_URI_BYTES: usize = 8 * 1024;

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
    /// Whether requests need a token.
    pub auth: AuthPolicy,
    /// Request and tool-call counters for `/metrics`.
    pub metrics: Metrics,
    /// The indexer's embedding cache, for its hit/miss counters in `/metrics`.
    pub embed_cache: Option<Arc<CachedEmbedder>>,
    /// Searches that may run at once; beyond, callers get 429 (REST) or a tool error.
    pub search_slots: Arc<tokio::sync::Semaphore>,
    /// The server's search defaults: what a request does not set comes from here.
    pub search_defaults: crate::search::SearchOptions,
    /// Open SSE streams and MCP sessions per token, under their limits.
    pub sessions: Arc<sessions::Sessions>,
}

/// Searches run at once by default.
pub const DEFAULT_MAX_SEARCHES: usize = 32;

impl AppState {
    /// State with authentication off and fresh counters.
    pub fn new(
        indexer: Arc<Indexer>,
        searcher: Arc<Searcher>,
        jobs: Arc<JobRunner>,
        events: broadcast::Sender<ProgressEvent>,
    ) -> Self {
        Self {
            indexer,
            searcher,
            jobs,
            events,
            auth: AuthPolicy::Off,
            metrics: Metrics::default(),
            embed_cache: None,
            search_slots: Arc::new(tokio::sync::Semaphore::new(DEFAULT_MAX_SEARCHES)),
            sessions: Arc::new(sessions::Sessions::new(SessionLimits::default())),
            search_defaults: crate::search::SearchOptions::default(),
        }
    }

    /// Server-wide search defaults (checked by the caller with `SearchOptions::validate`).
    pub fn with_search_defaults(mut self, defaults: crate::search::SearchOptions) -> Self {
        self.search_defaults = defaults;
        self
    }

    /// At most `n` searches at once (at least 1).
    pub fn with_max_searches(mut self, n: usize) -> Self {
        self.search_slots = Arc::new(tokio::sync::Semaphore::new(n.max(1)));
        self
    }

    /// Sets the authentication policy.
    pub fn with_auth(mut self, auth: AuthPolicy) -> Self {
        self.auth = auth;
        self
    }

    /// Bounds SSE streams and MCP sessions per token, and MCP sessions' idle time.
    pub fn with_session_limits(mut self, limits: sessions::SessionLimits) -> Self {
        self.sessions = Arc::new(sessions::Sessions::new(limits));
        self
    }

    /// Reports this embedding cache's counters in `/metrics`.
    pub fn with_embed_cache(mut self, cache: Arc<CachedEmbedder>) -> Self {
        self.embed_cache = Some(cache);
        self
    }
}

/// How the server meets the network: the reverse proxy in front, browsers, slow clients.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Path prefix every route is served under (`/sextant`), for proxies that forward
    /// the path unchanged; empty for none.
    pub base_path: String,
    /// Accepted `Host` values (`name` or `name:port`; `*` accepts any): a guard against
    /// DNS rebinding, which matters most when authentication is off. Default: loopback
    /// names.
    pub allowed_hosts: Vec<String>,
    /// Browser origins allowed to call the API and MCP (CORS, and rmcp's `Origin` check);
    /// empty: no cross-origin access.
    pub allowed_origins: Vec<String>,
    /// Honour `X-Forwarded-Host`, `X-Forwarded-Proto` and `X-Forwarded-Prefix` (set only
    /// behind a proxy that overwrites them).
    pub trust_forwarded: bool,
    /// Longest a non-streaming API request may take before a 408.
    pub request_timeout: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            base_path: String::new(),
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()],
            allowed_origins: Vec::new(),
            trust_forwarded: false,
            request_timeout: Duration::from_secs(60),
        }
    }
}

impl HttpOptions {
    /// Checks and normalises the options (`base_path` to `/x` without a trailing slash).
    pub fn validated(mut self) -> Result<Self, String> {
        let base = self.base_path.trim().trim_end_matches('/');
        if !base.is_empty() && (!base.starts_with('/') || base.contains(['?', '#', '{', '}', ' ']))
        {
            return Err(format!(
                "base path `{}` must look like `/sextant` (a path starting with `/`)",
                self.base_path
            ));
        }
        self.base_path = base.to_string();
        if self.allowed_hosts.iter().any(|h| h.trim().is_empty()) {
            return Err("an allowed host is empty".into());
        }
        for origin in &self.allowed_origins {
            HeaderValue::from_str(origin)
                .ok()
                .filter(|_| origin.contains("://") || origin == "null")
                .ok_or_else(|| {
                    format!("allowed origin `{origin}` must look like `https://app.example.com`")
                })?;
        }
        Ok(self)
    }
}

/// The OpenAPI document's fixed parts; the paths come from the routes.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Sextant",
        description = "Token-budgeted, structure-aware code context: register repositories, \
        follow their indexing, search them in natural language or by symbol name. \
        Authenticate with `Authorization: Bearer <token>` (tokens: `sextant token create`); \
        a loopback server without tokens needs none.",
        license(name = "Apache-2.0")
    ),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
    tags(
        (name = "repositories", description = "Register, inspect, change, remove and sync repositories"),
        (name = "jobs", description = "Sync jobs and their progress"),
        (name = "code", description = "Search and symbol lookup"),
        (name = "health", description = "Liveness, readiness, metrics")
    )
)]
struct ApiDoc;

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

/// The API routes with their OpenAPI descriptions, relative to `/api/v1`. Streaming
/// routes (SSE) are kept apart so the request timeout does not cut them.
fn api_routes() -> (OpenApiRouter<Arc<AppState>>, OpenApiRouter<Arc<AppState>>) {
    let plain = OpenApiRouter::new()
        .routes(routes!(routes::list_repositories, routes::add_repository))
        .routes(routes!(
            routes::get_repository,
            routes::update_repository,
            routes::delete_repository
        ))
        .routes(routes!(routes::sync_repository))
        .routes(routes!(routes::list_files))
        .routes(routes!(routes::file_symbols))
        .routes(routes!(routes::list_jobs))
        .routes(routes!(routes::get_job))
        .routes(routes!(routes::search))
        .routes(routes!(routes::get_symbol));
    let streams = OpenApiRouter::new()
        .routes(routes!(routes::events))
        .routes(routes!(routes::repository_events));
    (plain, streams)
}

fn health_routes() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new()
        .routes(routes!(routes::healthz))
        .routes(routes!(routes::readyz))
        .routes(routes!(metrics_text))
}

/// The OpenAPI 3.1 document of every route (without `servers`; the served copy adds the
/// caller's base URL).
pub fn openapi() -> utoipa::openapi::OpenApi {
    let (plain, streams) = api_routes();
    let (_, doc) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .nest("/api/v1", plain.merge(streams))
        .merge(health_routes())
        .split_for_parts();
    doc
}

/// Prometheus text exposition (see [`metrics`]); needs a token that sees every repository
/// when authentication is on.
#[utoipa::path(get, path = "/metrics", tag = "health",
    responses(
        (status = 200, description = "Metrics in the Prometheus text format", content_type = "text/plain", body = String),
        (status = 401, description = "No or unknown token", body = ErrorBody),
        (status = 403, description = "The token is limited to some repositories", body = ErrorBody)))]
async fn metrics_text(
    State(state): State<Arc<AppState>>,
    axum::Extension(caller): axum::Extension<crate::auth::Principal>,
) -> Response {
    if !caller.sees_all() {
        return ApiError::forbidden("metrics cover every repository: use an unrestricted token")
            .into_response();
    }
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        metrics::render(&state).await,
    )
        .into_response()
}

/// The application: every route under `options.base_path`.
pub fn router(state: Arc<AppState>, options: &HttpOptions) -> Router {
    let (plain, streams) = api_routes();
    let (plain, _) = plain.split_for_parts();
    let (streams, _) = streams.split_for_parts();
    let authed = || middleware::from_fn_with_state(state.clone(), auth::authenticate);
    let api = plain
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            options.request_timeout,
        ))
        .merge(streams)
        .layer(authed());
    let mcp_hosts = if options.allowed_hosts.iter().any(|h| h == "*") {
        Vec::new()
    } else {
        options.allowed_hosts.clone()
    };
    let mcp = Router::new()
        .nest_service(
            "/mcp",
            crate::mcp::http_service(
                state.clone(),
                state.sessions.manager(),
                mcp_hosts,
                options.allowed_origins.clone(),
            ),
        )
        .layer(middleware::from_fn_with_state(
            state.sessions.clone(),
            sessions::mcp_sessions,
        ))
        .layer(authed());
    let open = Router::new()
        .route("/healthz", axum::routing::get(routes::healthz))
        .route("/readyz", axum::routing::get(routes::readyz))
        .route(
            "/openapi.json",
            axum::routing::get({
                let base = options.base_path.clone();
                move |request: Request| served_openapi(request, base)
            }),
        );
    let protected = Router::new()
        .route("/metrics", axum::routing::get(metrics_text))
        .layer(authed());
    let base = options.base_path.clone();
    let app = Router::new()
        .nest("/api/v1", api)
        .merge(mcp)
        .merge(open)
        .merge(protected)
        .fallback(routes::not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(state.clone());
    let docs = utoipa_swagger_ui::SwaggerUi::new(format!("{base}/docs")).config(
        utoipa_swagger_ui::Config::from(format!("{base}/openapi.json")),
    );
    let app = if base.is_empty() {
        app
    } else {
        Router::new().nest(&base, app)
    };
    let mut app = Router::new()
        .merge(docs)
        .merge(app)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            metrics::track,
        ))
        .layer(TraceLayer::new_for_http());
    if !options.allowed_origins.is_empty() {
        let origins: Vec<HeaderValue> = options
            .allowed_origins
            .iter()
            .filter_map(|o| HeaderValue::from_str(o).ok())
            .collect();
        app = app.layer(
            CorsLayer::new()
                .allow_origin(AllowOrigin::list(origins))
                .allow_methods([
                    axum::http::Method::GET,
                    axum::http::Method::POST,
                    axum::http::Method::PATCH,
                    axum::http::Method::DELETE,
                ])
                .allow_headers([
                    header::AUTHORIZATION,
                    header::CONTENT_TYPE,
                    header::ACCEPT,
                    header::HeaderName::from_static("mcp-session-id"),
                    header::HeaderName::from_static("mcp-protocol-version"),
                    header::HeaderName::from_static("last-event-id"),
                ])
                .expose_headers([header::HeaderName::from_static("mcp-session-id")]),
        );
    }
    app.layer(middleware::from_fn_with_state(
        Arc::new(options.clone()),
        guard,
    ))
}

/// Where the client reached us, as far as a trusted proxy says (`X-Forwarded-Proto`,
/// `X-Forwarded-Prefix`); present in request extensions when `trust_forwarded` is on.
#[derive(Debug, Clone, Default)]
pub struct Forwarded {
    /// `http` or `https`.
    pub proto: Option<String>,
    /// Path prefix the proxy strips before forwarding.
    pub prefix: Option<String>,
}

/// Outermost layer: refuses over-long URIs and unknown `Host`s, applies trusted
/// `X-Forwarded-*` headers.
async fn guard(
    State(options): State<Arc<HttpOptions>>,
    mut request: Request,
    next: Next,
) -> Response {
    if request.uri().to_string().len() > MAX_URI_BYTES {
        return ApiError {
            status: StatusCode::URI_TOO_LONG,
            code: "uri_too_long",
            message: format!("the request URI is longer than {MAX_URI_BYTES} bytes"),
        }
        .into_response();
    }
    if options.trust_forwarded {
        let headers = request.headers();
        let first = |name: &str| {
            headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.split(',').next())
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let host = first("x-forwarded-host");
        let forwarded = Forwarded {
            proto: first("x-forwarded-proto"),
            prefix: first("x-forwarded-prefix").map(|p| p.trim_end_matches('/').to_string()),
        };
        if let Some(client) = first("x-forwarded-for") {
            tracing::debug!(%client, "forwarded request");
        }
        if let Some(value) = host.and_then(|h| HeaderValue::from_str(&h).ok()) {
            request.headers_mut().insert(header::HOST, value);
        }
        request.extensions_mut().insert(forwarded);
    }
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| request.uri().authority().map(|a| a.to_string()));
    // Probes reach the server by address; health answers carry nothing worth rebinding
    // for. Exactly these two paths: nothing else that merely ends like them.
    let path = request.uri().path();
    let probe = path
        .strip_prefix(options.base_path.as_str())
        .is_some_and(|p| p == "/healthz" || p == "/readyz");
    if let Some(host) = &host
        && !probe
        && !host_allowed(host, &options.allowed_hosts)
    {
        return ApiError::forbidden(format!(
            "Host `{host}` is not allowed (a guard against DNS rebinding); the server's \
             operator can allow it with `--allowed-host`"
        ))
        .into_response();
    }
    if let Err(refused) = cross_site_check(&request, host.as_deref(), &options.allowed_origins) {
        return refused.into_response();
    }
    next.run(request).await
}

/// Refuses state-changing requests (anything but GET, HEAD, OPTIONS) that a browser sends
/// on behalf of another site: a page elsewhere could otherwise `POST …/sync` or call MCP
/// tools on a loopback server without authentication (a "simple" cross-site request
/// needs no CORS preflight). Browsers say where a request comes from with
/// `Sec-Fetch-Site` and `Origin`; clients that are not browsers send neither and pass.
fn cross_site_check(
    request: &Request,
    host: Option<&str>,
    allowed_origins: &[String],
) -> Result<(), ApiError> {
    use axum::http::Method;
    if matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    ) {
        return Ok(());
    }
    let headers = request.headers();
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    let allowed = origin.is_some_and(|o| allowed_origins.iter().any(|a| a == o));
    if allowed {
        return Ok(());
    }
    let fetch_site = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase);
    let cross = match (fetch_site.as_deref(), origin) {
        (Some("cross-site" | "same-site"), _) => true,
        (Some(_), _) => false,
        // Without Sec-Fetch-Site (older browsers), compare Origin with Host.
        (None, Some(origin)) => {
            let authority = origin.split_once("://").map_or(origin, |(_, rest)| rest);
            host.is_none_or(|h| !h.eq_ignore_ascii_case(authority))
        }
        (None, None) => false,
    };
    if cross {
        return Err(ApiError::forbidden(format!(
            "cross-site request refused: a page at `{}` may not change this server's state; \
             the server's operator can allow that origin with `--allowed-origin`",
            origin.unwrap_or("another site")
        )));
    }
    Ok(())
}

/// Whether a `Host` header value (`name`, `name:port`, `[v6]:port`) matches the list:
/// entries without a port match any port; `*` matches everything.
pub fn host_allowed(host: &str, allowed: &[String]) -> bool {
    fn split(authority: &str) -> (String, Option<&str>) {
        let authority = authority.trim();
        if let Some(rest) = authority.strip_prefix('[') {
            return match rest.split_once(']') {
                Some((h, tail)) => (
                    format!("[{}]", h.to_ascii_lowercase()),
                    tail.strip_prefix(':'),
                ),
                None => (authority.to_ascii_lowercase(), None),
            };
        }
        match authority.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h.to_ascii_lowercase(), Some(p)),
            _ => (authority.to_ascii_lowercase(), None),
        }
    }
    let (name, port) = split(host);
    allowed.iter().any(|entry| {
        if entry == "*" {
            return true;
        }
        let (allowed_name, allowed_port) = split(entry);
        allowed_name == name && allowed_port.is_none_or(|p| Some(p) == port)
    })
}

/// `/openapi.json`: the document with a `servers` entry for where the caller reached us
/// (the proxy's prefix, then our base path).
async fn served_openapi(request: Request, base: String) -> Json<utoipa::openapi::OpenApi> {
    let mut doc = openapi();
    let forwarded = request.extensions().get::<Forwarded>();
    let prefix = forwarded.and_then(|f| f.prefix.clone()).unwrap_or_default();
    // An absolute URL when a trusted proxy said which scheme the client used.
    let origin = match (
        forwarded.and_then(|f| f.proto.as_deref()),
        request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok()),
    ) {
        (Some(proto), Some(host)) => format!("{proto}://{host}"),
        _ => String::new(),
    };
    doc.servers = Some(vec![utoipa::openapi::Server::new(format!(
        "{origin}{prefix}{base}"
    ))]);
    Json(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_match_by_name_and_optional_port() {
        let allowed: Vec<String> = vec![
            "localhost".into(),
            "[::1]".into(),
            "code.example.com:443".into(),
        ];
        assert!(host_allowed("localhost:7878", &allowed));
        assert!(host_allowed("LOCALHOST", &allowed));
        assert!(host_allowed("[::1]:7878", &allowed));
        assert!(host_allowed("code.example.com:443", &allowed));
        assert!(!host_allowed("code.example.com:8443", &allowed));
        assert!(!host_allowed("evil.example:7878", &allowed));
        assert!(host_allowed("anything", &["*".to_string()]));
    }

    #[test]
    fn options_normalise_the_base_path_and_check_origins() {
        let o = HttpOptions {
            base_path: "/sextant/".into(),
            ..HttpOptions::default()
        };
        assert_eq!(o.validated().unwrap().base_path, "/sextant");
        let bad = HttpOptions {
            base_path: "sextant".into(),
            ..HttpOptions::default()
        };
        assert!(bad.validated().is_err());
        let origin = HttpOptions {
            allowed_origins: vec!["app.example.com".into()],
            ..HttpOptions::default()
        };
        assert!(origin.validated().is_err());
    }

    #[test]
    fn every_api_route_is_documented_with_the_bearer_scheme() {
        let doc = openapi();
        let paths: Vec<&String> = doc.paths.paths.keys().collect();
        for expected in [
            "/api/v1/repositories",
            "/api/v1/repositories/{repo}",
            "/api/v1/repositories/{repo}/sync",
            "/api/v1/repositories/{repo}/files",
            "/api/v1/repositories/{repo}/symbols",
            "/api/v1/repositories/{repo}/events",
            "/api/v1/jobs",
            "/api/v1/jobs/{id}",
            "/api/v1/events",
            "/api/v1/search",
            "/api/v1/symbols",
            "/healthz",
            "/readyz",
            "/metrics",
        ] {
            assert!(
                paths.iter().any(|p| *p == expected),
                "{expected} missing: {paths:?}"
            );
        }
        let json = serde_json::to_value(&doc).unwrap();
        assert!(json["openapi"].as_str().unwrap().starts_with("3.1"));
        // The documented bounds are the enforced ones.
        let filter = &json["components"]["schemas"]["ChunkFilter"]["properties"];
        for list in ["repos", "paths", "languages", "kinds"] {
            assert_eq!(
                filter[list]["maxItems"],
                crate::store::MAX_FILTER_ENTRIES,
                "{list}"
            );
        }
        assert_eq!(
            json["components"]["schemas"]["SearchRequest"]["allOf"][1]["properties"]["query"]["maxLength"],
            crate::search::MAX_QUERY_BYTES
        );
        assert_eq!(
            json["components"]["securitySchemes"]["bearer"]["scheme"],
            "bearer"
        );
    }
}
