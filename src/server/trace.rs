//! One server span per HTTP request, named by method and route template, continuing the
//! caller's trace when it sends `traceparent`.

use axum::RequestExt;
use axum::extract::{MatchedPath, RawPathParams, Request};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

/// The middleware. The span carries the route template (never the raw path's values
/// beyond the repository), the status, the repository named in the path and the caller
/// (recorded by authentication: the token's id, never the token).
pub(super) async fn http_span(mut request: Request, next: Next) -> Response {
    let method = request.method().as_str().to_string();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string());
    let repository = match request.extract_parts::<RawPathParams>().await {
        Ok(params) => params
            .iter()
            .find(|(name, _)| *name == "repo")
            .map(|(_, value)| value.to_string()),
        Err(_) => None,
    };
    let name = match &route {
        Some(route) => format!("{method} {route}"),
        None => method.clone(),
    };
    let span = tracing::info_span!(
        "http.request",
        otel.name = %name,
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = %method,
        http.route = route.as_deref(),
        http.response.status_code = tracing::field::Empty,
        sextant.repository = repository.as_deref(),
        enduser.id = tracing::field::Empty,
    );
    crate::telemetry::propagate::continue_trace(&span, request.headers());
    let started = std::time::Instant::now();
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status();
    span.record("http.response.status_code", status.as_u16());
    if status.is_server_error() {
        span.record("otel.status_code", "ERROR");
    }
    // The access log (`RUST_LOG=sextant=debug`), inside the span so JSON lines carry its
    // trace id.
    span.in_scope(|| {
        tracing::debug!(
            status = status.as_u16(),
            ms = started.elapsed().as_millis() as u64,
            "{name}"
        )
    });
    response
}
