//! W3C trace context across process boundaries: read from incoming request headers,
//! written on outgoing ones. Both do nothing when tracing is off.

use opentelemetry::trace::TraceContextExt;
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Makes `span` a child of the trace named by `headers` (`traceparent`, `tracestate`),
/// when they name a valid one.
pub fn continue_trace(span: &tracing::Span, headers: &http::HeaderMap) {
    let parent =
        opentelemetry::global::get_text_map_propagator(|p| p.extract(&HeaderExtractor(headers)));
    if parent.span().span_context().is_valid() {
        // Fails only when the OpenTelemetry layer is not installed: nothing to continue.
        let _ = span.set_parent(parent);
    }
}

/// The headers that carry the current span's trace to another service (empty when there
/// is no trace).
pub fn outgoing_headers() -> http::HeaderMap {
    let mut headers = http::HeaderMap::new();
    let context = tracing::Span::current().context();
    if context.span().span_context().is_valid() {
        opentelemetry::global::get_text_map_propagator(|p| {
            p.inject_context(&context, &mut HeaderInjector(&mut headers))
        });
    }
    headers
}
