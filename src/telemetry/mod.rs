//! Logs and traces for the whole process: one `tracing` subscriber with one global
//! `EnvFilter`, a log layer (text or JSON lines) and, when configured, an OpenTelemetry
//! layer that exports spans over OTLP.
//!
//! Tracing follows the standard OpenTelemetry environment: it is off unless
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, and
//! `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn it off again. The
//! exporter, its batch queue and the sampler read their usual variables
//! (`OTEL_EXPORTER_OTLP_HEADERS`, `…_TIMEOUT`, `OTEL_BSP_*`, `OTEL_TRACES_SAMPLER`,
//! `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`). A collector that is slow or down
//! never slows a request: ended spans go to a bounded queue drained by a background
//! thread, and what does not fit is dropped and counted ([`export_stats`], shown in
//! `/metrics`).
//!
//! W3C trace context (`traceparent`) is read from incoming requests and written on
//! outgoing embedding, rerank and chat calls ([`propagate`]).
//!
//! # Design notes
//!
//! - `telemetry::init(format, default_filter)` (called once by `main`, after the CLI is
//!   parsed and before anything starts a thread) installs `registry + EnvFilter + optional
//!   OpenTelemetry layer + fmt layer`. The filter applies to spans too, so with export on
//!   and no `RUST_LOG` the default becomes `warn,sextant=info` (Sextant's spans are at
//!   `info`). `--log-format json` uses `telemetry::json::JsonLines` (fields, the innermost
//!   span's name, its `trace_id`/`span_id`); it installs a tracer even without a collector,
//!   so lines of one request share an id. `telemetry::notice` writes the program's own
//!   status lines (`serving on …`) in whichever format was chosen.
//! - Export is off unless `OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT` is set (`OTEL_SDK_DISABLED`,
//!   `OTEL_TRACES_EXPORTER=none` turn it off). `export::Bounded` wraps the SDK's
//!   `BatchSpanProcessor`: spans waiting for export are at most `OTEL_BSP_MAX_QUEUE_SIZE`
//!   (beyond, dropped and counted), the SDK's own channel has room for twice that so it never
//!   drops unseen, and `export::Counting` counts exported and failed spans; `/metrics` shows
//!   them as `sextant_trace_spans_total{outcome}`. Ending a span never blocks: the export
//!   runs on the processor's thread. `telemetry::grpc` sends the OTLP `Export` call over
//!   hyper's HTTP/2 client on its own current-thread runtime (tonic's channel would turn on
//!   `tower` features that rebuild LanceDB).
//! - Spans: `server::trace::http_span` (one per request: `METHOD /route/template`, kind
//!   server, status, `sextant.repository` from the path, `enduser.id` = the token's id,
//!   recorded by authentication; continues an incoming `traceparent`), `mcp.tool` (one per
//!   tool call; continues the `traceparent` of the HTTP request that carried it), service
//!   operations (`service.search`, `service.sync`, `service.register`, …), the search stages
//!   (`search.freshness`, `.embed`, `.retrieve`, `.units`, `.rerank`, `.enrich`, `.render`,
//!   `.lookup`), jobs (`job`, a root span) and sync phases (`sync` → `sync.scan`, `.parse`,
//!   `.cache` (the cached vectors), `.write`, `.graph`, `.maintain`, `.embed` (the embedding
//!   stage)), and outgoing calls (`http.client` in
//!   `embed::http::HttpClient`, which writes `traceparent` on embedding, rerank and chat
//!   requests).

mod export;
mod grpc;
mod json;
pub mod propagate;

use std::io::{IsTerminal, Write};
use std::sync::OnceLock;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

pub use export::{ExportStats, Protocol, export_stats};

/// How log lines are written to stderr.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum, strum::Display)]
#[strum(serialize_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line, with `trace_id` and `span_id` when inside a span.
    Json,
}

/// Why telemetry could not start.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The OpenTelemetry settings in the environment are not usable.
    #[error("OpenTelemetry: {0}")]
    Config(String),
    /// A global subscriber was installed already.
    #[error("logging is already set up: {0}")]
    AlreadySet(String),
}

/// Keeps the tracer alive; dropping it flushes and shuts down the span export.
#[must_use = "dropping the guard stops trace export"]
#[derive(Debug, Default)]
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
    exporting: bool,
}

impl Telemetry {
    /// Whether spans are exported.
    pub fn exporting(&self) -> bool {
        self.exporting
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Some(provider) = self.provider.take() {
            // Best effort: the collector may be gone; the timeout bounds the wait.
            let _ = provider.shutdown_with_timeout(std::time::Duration::from_secs(5));
        }
    }
}

/// The format chosen at [`init`] (text until then).
static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// Writes one of the program's own status lines (`serving on …`, `stopping …`) to
/// stderr whatever `RUST_LOG` says: `sextant: message` in the text format, a JSON object
/// with `level` `INFO` in the JSON one, so that stderr stays one format.
pub fn notice(message: &str) {
    let line = match FORMAT.get().copied().unwrap_or_default() {
        LogFormat::Text => format!("sextant: {message}\n"),
        LogFormat::Json => {
            let mut line = serde_json::Map::new();
            line.insert("timestamp".into(), json::now_rfc3339().into());
            line.insert("level".into(), "INFO".into());
            line.insert("target".into(), "sextant".into());
            line.insert("message".into(), message.into());
            format!("{}\n", serde_json::Value::Object(line))
        }
    };
    // Nothing to do when stderr is gone.
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Dependencies' targets kept to errors by default (`RUST_LOG` overrides): LanceDB's
/// vector index builder warns, by the hundred, each time it splits a partition of an
/// index that grew ("partition index is N but the number of partitions is M, skip
/// loading it"), a case its own comment calls safe (lance issue 5312).
const QUIETED: &str = "lance::index::vector::builder=error";

/// Installs the process's subscriber: `RUST_LOG` (default `default_filter`, plus
/// `sextant=info` when exporting spans) filters both logs and spans; `format` picks the log layout; spans are exported when the OTLP
/// environment asks for it. Call once, early in `main`.
pub fn init(format: LogFormat, default_filter: &str) -> Result<Telemetry, TelemetryError> {
    let exporter = export::Settings::from_env(|key| std::env::var(key).ok())
        .map_err(TelemetryError::Config)?;
    // The filter applies to spans too: Sextant's spans are at `info`, so exporting
    // without `RUST_LOG` lets them through (its own info events are few).
    let default_filter = match exporter {
        Some(_) => format!("{default_filter},sextant=info,{QUIETED}"),
        None => format!("{default_filter},{QUIETED}"),
    };
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_filter));
    // Trace ids in JSON logs are worth a tracer even without a collector: lines of one
    // request share an id, and an incoming `traceparent` is kept.
    let provider = match (&exporter, format) {
        (Some(settings), _) => Some(export::provider(settings).map_err(TelemetryError::Config)?),
        (None, LogFormat::Json) => Some(SdkTracerProvider::builder().build()),
        (None, LogFormat::Text) => None,
    };
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    let otel = provider
        .as_ref()
        .map(|p| tracing_opentelemetry::layer().with_tracer(p.tracer("sextant")));
    let registry = tracing_subscriber::registry().with(filter).with(otel);
    // `SEXTANT_LOG_SPANS=1`: a line as each span the filter lets through closes, with its
    // busy and idle time (where a slow search or sync spends it, without a collector).
    let span_events = match std::env::var_os("SEXTANT_LOG_SPANS") {
        Some(v) if !v.is_empty() && v != "0" => FmtSpan::CLOSE,
        _ => FmtSpan::NONE,
    };
    let installed = match format {
        LogFormat::Text => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_span_events(span_events)
                    .with_ansi(std::io::stderr().is_terminal()),
            )
            .try_init(),
        LogFormat::Json => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .event_format(json::JsonLines)
                    .with_writer(std::io::stderr),
            )
            .try_init(),
    };
    installed.map_err(|e| TelemetryError::AlreadySet(e.to_string()))?;
    let _ = FORMAT.set(format);
    if let Some(settings) = &exporter {
        tracing::info!(endpoint = %settings.endpoint, protocol = %settings.protocol, "exporting traces");
    }
    Ok(Telemetry {
        provider,
        exporting: exporter.is_some(),
    })
}
