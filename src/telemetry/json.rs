//! `--log-format json`: one JSON object per line.
//!
//! tracing-subscriber's own JSON format has no trace ids, which is what a log pipeline
//! joins on; this one writes `timestamp`, `level`, `target`, the event's fields (the
//! message as `message`), the innermost span's name as `span`, and the OpenTelemetry
//! `trace_id` / `span_id` of that span.

use std::fmt;

use opentelemetry::trace::TraceContextExt;
use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The JSON-lines event format.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonLines;

impl<S, N> FormatEvent<S, N> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let meta = event.metadata();
        let mut line = Map::new();
        line.insert("timestamp".into(), Value::String(now_rfc3339()));
        line.insert("level".into(), Value::String(meta.level().to_string()));
        line.insert("target".into(), Value::String(meta.target().to_string()));
        let mut fields = Fields(Map::new());
        event.record(&mut fields);
        line.extend(fields.0);
        if let Some(span) = ctx.lookup_current() {
            line.insert("span".into(), Value::String(span.name().to_string()));
            let otel = tracing::Span::current().context();
            let span_context = otel.span().span_context().clone();
            if span_context.is_valid() {
                line.insert(
                    "trace_id".into(),
                    Value::String(span_context.trace_id().to_string()),
                );
                line.insert(
                    "span_id".into(),
                    Value::String(span_context.span_id().to_string()),
                );
            }
        }
        let text = serde_json::to_string(&line).map_err(|_| fmt::Error)?;
        writeln!(writer, "{text}")
    }
}

/// Collects an event's fields as JSON values.
struct Fields(Map<String, Value>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0
            .insert(field.name().into(), Value::String(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0
            .insert(field.name().into(), Value::String(value.into()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), Value::from(value));
    }
}

/// The current UTC time in RFC 3339, as the text format writes it.
pub(super) fn now_rfc3339() -> String {
    use tracing_subscriber::fmt::time::FormatTime;
    let mut out = String::new();
    let _ = tracing_subscriber::fmt::time::SystemTime.format_time(&mut Writer::new(&mut out));
    out
}
