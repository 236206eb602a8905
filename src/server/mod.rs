//! The HTTP server: one router that mounts the REST API ([`crate::api`]) under `/api/v1`
//! and the MCP service ([`crate::mcp`]) at `/mcp`, side by side, plus health probes,
//! `/metrics`, the OpenAPI document and its interactive page; and the accept loop that
//! serves it ([`serve`]). Everything both adapters share on the way in lives here:
//! authentication (bearer token → [`crate::auth::Principal`]), per-token session limits
//! (SSE streams and MCP sessions), request metrics, the `Host` and cross-site guards,
//! CORS.
//!
//! Layers, outermost first: `guard` (URI length, `X-Forwarded-*`, `Host` allowlist,
//! cross-site refusal), CORS, request metrics, tracing, then per group: authentication
//! (`auth`) for `/api/v1`, `/mcp` and `/metrics`, session counting for streams and MCP,
//! and a timeout for the non-streaming API routes.
//!
//! # Design notes
//!
//! - `router(Arc<ServerState>, HttpOptions)`: `ServerState` is the `Service` plus the
//!   `AuthPolicy`, request/tool-call `Metrics` and per-token `Sessions`. It mounts
//!   `api::routes()` under `/api/v1` (plain routes behind a 408 timeout, streams apart) and
//!   `mcp::http_service` at `/mcp`, side by side.
//! - `server::serve` is the accept loop (hyper HTTP/1.1 per connection): a header-read
//!   timeout (slow or silent clients are disconnected), a write timeout (a client that stops
//!   reading is disconnected once a write makes no progress) and a connection cap (beyond
//!   it, an immediate 503 with `Retry-After`).
//! - `server::sessions`: SSE streams and MCP sessions per token (at most `SessionLimits::
//!   per_token`, 429 beyond). The streams' layer takes a `StreamPermit` and attaches it to
//!   the response body, so it is given back when the client goes away; the `/mcp` layer
//!   records sessions from rmcp's `Mcp-Session-Id`, forgets deleted ones and closes those
//!   idle past `SessionLimits::idle` in rmcp's `LocalSessionManager`.
//! - Layers, outermost first: `guard` (URI ≤ 8 KiB → 414; trusted `X-Forwarded-*`; `Host`
//!   allowlist against DNS rebinding, probes exempt only at exactly `/healthz` and `/readyz`;
//!   state-changing requests that a browser sends from another site, by `Sec-Fetch-Site` or
//!   `Origin`, → 403 unless the origin is allowed), CORS when origins are configured,
//!   request metrics (`MatchedPath` labels, unknown methods as `other`), tracing; then
//!   `auth::authenticate` on `/api/v1`, `/mcp` and `/metrics` (`Service::authenticate`:
//!   bearer token → `auth::Principal` in the request extensions; 401 with
//!   `WWW-Authenticate`). A metadata database that does not answer (`StoreError::
//!   is_unavailable`: pool timeout after 10 s, I/O) is a 503 `unavailable`; `/readyz` gives
//!   up after 3 s.
//! - `sextant serve` (`cli::serve`) decides the `AuthPolicy` at start (`--auth auto`:
//!   tokens when any exists or the bind is not loopback; a non-loopback bind without tokens
//!   refuses to start), opens the stores and the model, resumes interrupted jobs, watches
//!   working trees with `settings.watch` and runs the queue. Tokens are checked per request
//!   against the store, so creating or revoking one takes effect at once. SIGINT/SIGTERM
//!   start the graceful shutdown, bounded by `SHUTDOWN_GRACE` (5 s): SSE and MCP
//!   streams never end by themselves, so the server stops waiting for them.
//! - `deploy/`: an nginx site and a systemd unit; `deploy/nginx/smoke.sh` runs the site in
//!   a real nginx in front of the binary and checks REST, SSE, MCP and the Host allowlist
//!   through it. `deploy/helm/sextant` is the Helm chart and `deploy/check.sh` validates it
//!   (and `docker/compose.yaml`) without a cluster; `docker/` holds the image
//!   (`Dockerfile`, `build-local.sh`, `test-image.sh`).

mod accept;
mod auth;
mod health;
mod metrics;
pub mod sessions;
mod trace;

use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::timeout::TimeoutLayer;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use crate::api::{ApiDoc, ApiError, ErrorCode};
use crate::service::Service;
pub use accept::{ConnectionLimits, serve};
pub use auth::AuthPolicy;
pub use metrics::Metrics;
pub use sessions::SessionLimits;

/// Longest request URI accepted, in bytes (414 beyond).
pub const MAX_URI_BYTES: usize = 8 * 1024;

/// What the server holds beside the service: who may call, counters, open sessions.
pub struct ServerState {
    /// The operations both adapters call.
    pub service: Arc<Service>,
    /// Whether requests need a token.
    pub auth: AuthPolicy,
    /// Request and tool-call counters for `/metrics`.
    pub metrics: Arc<Metrics>,
    /// Open SSE streams and MCP sessions per token, under their limits.
    pub sessions: Arc<sessions::Sessions>,
}

impl ServerState {
    /// State with authentication off, fresh counters and the default session limits.
    pub fn new(service: Arc<Service>) -> Self {
        Self {
            service,
            auth: AuthPolicy::Off,
            metrics: Arc::default(),
            sessions: Arc::new(sessions::Sessions::new(SessionLimits::default())),
        }
    }

    /// Sets the authentication policy.
    pub fn with_auth(mut self, auth: AuthPolicy) -> Self {
        self.auth = auth;
        self
    }

    /// Bounds SSE streams and MCP sessions per token, and MCP sessions' idle time.
    pub fn with_session_limits(mut self, limits: SessionLimits) -> Self {
        self.sessions = Arc::new(sessions::Sessions::new(limits));
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
    /// Longest a client may take to send a request's whole body, on every route (MCP
    /// included), before a 408: a body trickled a byte at a time no longer holds a
    /// connection and a worker for as long as the client likes.
    pub body_timeout: Duration,
    /// Serve MCP without sessions: every request stands alone (no `Mcp-Session-Id`), so
    /// replicas behind a load balancer answer any request of any client. Clients of MCP
    /// 2026-07-28 and later are served so whatever this says.
    pub mcp_stateless: bool,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            base_path: String::new(),
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()],
            allowed_origins: Vec::new(),
            trust_forwarded: false,
            request_timeout: Duration::from_secs(60),
            body_timeout: Duration::from_secs(30),
            mcp_stateless: false,
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

/// The OpenAPI 3.1 document of every route (without `servers`; the served copy adds the
/// caller's base URL).
pub fn openapi() -> utoipa::openapi::OpenApi {
    let api = crate::api::routes();
    let (_, doc) = OpenApiRouter::<Arc<Service>>::with_openapi(ApiDoc::openapi())
        .nest("/api/v1", api.plain.merge(api.streams))
        .split_for_parts();
    let (_, health) = health::documented().split_for_parts();
    let mut doc = doc;
    doc.merge(health);
    doc
}

/// Reads a request's whole body within `deadline` (and at most [`crate::api::MAX_BODY_BYTES`]
/// of it) before any route sees the request: one limit for REST and MCP alike. A body
/// that does not arrive in time gets 408, one that is too large 413; the route then gets
/// the body from memory.
async fn body_deadline(State(deadline): State<Duration>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    let limit = crate::api::MAX_BODY_BYTES;
    match tokio::time::timeout(deadline, axum::body::to_bytes(body, limit)).await {
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                .await
        }
        Ok(Err(_)) => crate::api::ApiError::too_large().into_response(),
        Err(_) => crate::api::ApiError::slow_body(deadline).into_response(),
    }
}

/// The application: every route under `options.base_path`.
pub fn router(state: Arc<ServerState>, options: &HttpOptions) -> Router {
    let authed = || middleware::from_fn_with_state(state.clone(), auth::authenticate);
    let open = Router::new()
        .route("/healthz", axum::routing::get(health::healthz))
        .route("/readyz", axum::routing::get(health::readyz))
        .route(
            "/openapi.json",
            axum::routing::get({
                let base = options.base_path.clone();
                move |request: Request| served_openapi(request, base)
            }),
        )
        .with_state(state.clone());
    let protected = Router::new()
        .route("/metrics", axum::routing::get(health::metrics_text))
        .layer(authed())
        .with_state(state.clone());
    let base = options.base_path.clone();
    let app = Router::new()
        .nest("/api/v1", rest_routes(&state, options))
        .merge(mcp_routes(&state, options))
        .merge(crate::console::routes(&options.base_path))
        .merge(open)
        .merge(protected)
        .fallback(health::not_found)
        .layer(DefaultBodyLimit::max(crate::api::MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(
            options.body_timeout,
            body_deadline,
        ));
    let docs = utoipa_swagger_ui::SwaggerUi::new(format!("{base}/docs")).config(
        utoipa_swagger_ui::Config::from(format!("{base}/openapi.json")),
    );
    let app = if base.is_empty() {
        app
    } else {
        // The console's page at `/base/` as well as `/base`.
        Router::new()
            .nest(&base, app)
            .route(&format!("{base}/"), crate::console::page(&base))
    };
    let mut app = Router::new()
        .merge(docs)
        .merge(app)
        .layer(middleware::from_fn_with_state(
            state.metrics.clone(),
            metrics::track,
        ))
        .layer(middleware::from_fn(trace::http_span));
    if !options.allowed_origins.is_empty() {
        app = app.layer(cors(&options.allowed_origins));
    }
    app.layer(middleware::from_fn_with_state(
        Arc::new(options.clone()),
        guard,
    ))
}

/// The REST API: plain routes under the request timeout, streams (SSE) without it, all
/// authenticated, each counted against the session limits.
fn rest_routes(state: &Arc<ServerState>, options: &HttpOptions) -> Router {
    let api = crate::api::routes();
    let (plain, _) = api.plain.split_for_parts();
    let (streams, _) = api.streams.split_for_parts();
    plain
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            options.request_timeout,
        ))
        // A streamed Scout answer is a long-lived session like a progress stream.
        .layer(middleware::from_fn_with_state(
            state.sessions.clone(),
            sessions::streamed_sessions,
        ))
        .merge(streams.layer(middleware::from_fn_with_state(
            state.sessions.clone(),
            sessions::sse_sessions,
        )))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            auth::authenticate,
        ))
        .with_state(state.service.clone())
}

/// MCP over streamable HTTP at `/mcp`, authenticated, its hosts and origins checked.
fn mcp_routes(state: &Arc<ServerState>, options: &HttpOptions) -> Router {
    let mcp_hosts = if options.allowed_hosts.iter().any(|h| h == "*") {
        Vec::new()
    } else {
        options.allowed_hosts.clone()
    };
    let tools =
        crate::mcp::SextantMcp::new(state.service.clone()).with_tool_calls(state.metrics.clone());
    Router::new()
        .nest_service(
            "/mcp",
            crate::mcp::http_service(
                tools,
                state.sessions.manager(),
                mcp_hosts,
                options.allowed_origins.clone(),
                options.mcp_stateless,
            ),
        )
        .layer(middleware::from_fn_with_state(
            state.sessions.clone(),
            sessions::mcp_sessions,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            auth::authenticate,
        ))
}

/// CORS for the configured browser origins: the API's methods and the headers MCP
/// clients send and read.
fn cors(allowed_origins: &[String]) -> CorsLayer {
    let origins: Vec<HeaderValue> = allowed_origins
        .iter()
        .filter_map(|o| HeaderValue::from_str(o).ok())
        .collect();
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
        .expose_headers([header::HeaderName::from_static("mcp-session-id")])
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
        return ApiError::new(
            ErrorCode::UriTooLong,
            format!("the request URI is longer than {MAX_URI_BYTES} bytes"),
        )
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
            "/api/v1/scout",
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
        let filter = &json["components"]["schemas"]["SearchOverrides"]["properties"];
        for list in ["repositories", "paths", "languages", "kinds"] {
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

    /// One casing for the whole public API: every property of every documented body,
    /// event and parameter is camelCase (enum values and error codes are values, not
    /// names).
    #[test]
    fn every_documented_name_is_camel_case() {
        fn names(value: &serde_json::Value, out: &mut Vec<String>) {
            match value {
                serde_json::Value::Object(map) => {
                    for (key, v) in map {
                        if key == "properties"
                            && let Some(props) = v.as_object()
                        {
                            out.extend(props.keys().cloned());
                        }
                        if key == "parameters"
                            && let Some(params) = v.as_array()
                        {
                            out.extend(
                                params
                                    .iter()
                                    .filter_map(|p| p["name"].as_str().map(str::to_string)),
                            );
                        }
                        names(v, out);
                    }
                }
                serde_json::Value::Array(items) => items.iter().for_each(|v| names(v, out)),
                _ => {}
            }
        }
        let mut found = Vec::new();
        names(&serde_json::to_value(openapi()).unwrap(), &mut found);
        assert!(found.len() > 100, "{found:?}");
        assert!(found.iter().any(|n| n == "lastError"), "{found:?}");
        let wrong: Vec<&String> = found
            .iter()
            .filter(|n| n.contains(['_', '-']) || n.starts_with(|c: char| c.is_ascii_uppercase()))
            .collect();
        assert!(wrong.is_empty(), "not camelCase: {wrong:?}");
    }
}
