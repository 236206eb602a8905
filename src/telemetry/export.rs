//! The span export pipeline: OTLP settings from the environment, a bounded queue in front
//! of the SDK's batch processor, and the counts `/metrics` shows.
//!
//! The SDK's `BatchSpanProcessor` already exports on its own thread from a bounded
//! channel, but it keeps the number of spans it drops to itself (one log line, and a
//! meter only behind an experimental feature). [`Bounded`] therefore keeps the bound:
//! it counts spans handed on and not yet taken for export, refuses (and counts) spans
//! beyond `OTEL_BSP_MAX_QUEUE_SIZE`, and gives the SDK's channel room for more, so the SDK
//! never drops one unseen.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider, Span, SpanData, SpanExporter,
    SpanProcessor,
};

/// Default bound of the export queue (the OpenTelemetry default for `OTEL_BSP_MAX_QUEUE_SIZE`).
const DEFAULT_QUEUE: usize = 2048;
/// Largest export queue accepted: the SDK allocates its channel (twice the queue) up
/// front, so a queue of millions would cost gigabytes before the first span (issue 37,
/// finding 8); 65,536 spans is 32 times the default.
const MAX_QUEUE: usize = 65_536;

/// Counts of the span export since the process started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Spans the collector accepted.
    pub exported: u64,
    /// Spans dropped because the export queue was full (a slow or absent collector).
    pub dropped: u64,
    /// Spans lost in exports that failed (collector down, refused or timed out).
    pub failed: u64,
}

static EXPORTED: AtomicU64 = AtomicU64::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);
static FAILED: AtomicU64 = AtomicU64::new(0);

/// The export counts so far (all zero when tracing is off).
pub fn export_stats() -> ExportStats {
    ExportStats {
        exported: EXPORTED.load(Ordering::Relaxed),
        dropped: DROPPED.load(Ordering::Relaxed),
        failed: FAILED.load(Ordering::Relaxed),
    }
}

/// The OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::Display, strum::EnumString)]
pub enum Protocol {
    /// Protobuf over HTTP (`POST /v1/traces`, usually port 4318).
    #[strum(serialize = "http/protobuf")]
    HttpProtobuf,
    /// gRPC (usually port 4317).
    #[strum(serialize = "grpc")]
    Grpc,
}

/// What the environment asks of the exporter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Where spans go, as configured (the exporter adds `/v1/traces` to a base endpoint).
    pub endpoint: String,
    /// The transport.
    pub protocol: Protocol,
    /// Most spans waiting for export.
    pub queue: usize,
}

impl Settings {
    /// Reads the standard variables through `var`; `Ok(None)` when tracing is off.
    pub fn from_env(var: impl Fn(&str) -> Option<String>) -> Result<Option<Self>, String> {
        let set = |key: &str| var(key).filter(|v| !v.trim().is_empty());
        if set("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        if let Some(exporter) = set("OTEL_TRACES_EXPORTER") {
            match exporter.trim() {
                "none" => return Ok(None),
                "otlp" => {}
                other => {
                    return Err(format!(
                        "OTEL_TRACES_EXPORTER={other} is not supported: use `otlp` or `none`"
                    ));
                }
            }
        }
        let Some(endpoint) = set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .or_else(|| set("OTEL_EXPORTER_OTLP_ENDPOINT"))
        else {
            return Ok(None);
        };
        let protocol = match set("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| set("OTEL_EXPORTER_OTLP_PROTOCOL"))
        {
            None => Protocol::HttpProtobuf,
            Some(p) => p.trim().parse().map_err(|_| {
                format!(
                    "OTEL_EXPORTER_OTLP_PROTOCOL={p} is not supported: use `http/protobuf` \
                     (port 4318) or `grpc` (port 4317)"
                )
            })?,
        };
        let scheme = endpoint.split("://").next().unwrap_or_default();
        if endpoint.starts_with("https://") {
            return Err(format!(
                "{endpoint}: this build exports over plain http only; send spans to an \
                 OpenTelemetry Collector on the host or in the pod (http://…:4318), which \
                 can forward them over TLS"
            ));
        }
        if scheme != "http" {
            return Err(format!(
                "{endpoint}: the OTLP endpoint must be an http:// URL (http://collector:4318)"
            ));
        }
        let queue = match set("OTEL_BSP_MAX_QUEUE_SIZE") {
            None => DEFAULT_QUEUE,
            Some(q) => q
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|&q| q > 0 && q <= MAX_QUEUE)
                .ok_or_else(|| {
                    format!(
                        "OTEL_BSP_MAX_QUEUE_SIZE={q} must be a positive number of spans, at \
                         most {MAX_QUEUE} (the queue is allocated up front)"
                    )
                })?,
        };
        Ok(Some(Self {
            endpoint,
            protocol,
            queue,
        }))
    }
}

/// The tracer provider for `settings`: the OTLP exporter behind the bounded batch queue,
/// with the `sextant` service name unless the environment names another.
pub fn provider(settings: &Settings) -> Result<SdkTracerProvider, String> {
    let exporter: Box<dyn SpanExporterDyn> = match settings.protocol {
        Protocol::HttpProtobuf => Box::new(
            opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .build()
                .map_err(|e| format!("cannot build the OTLP exporter: {e}"))?,
        ),
        Protocol::Grpc => Box::new(super::grpc::GrpcExporter::new(&settings.endpoint)?),
    };
    let pending = Arc::new(AtomicUsize::new(0));
    // Room beyond our bound for the batch being taken: the SDK's channel never fills.
    let config = BatchConfigBuilder::default()
        .with_max_queue_size(settings.queue.saturating_mul(2).max(2))
        .build();
    let batch = BatchSpanProcessor::builder(Counting {
        inner: exporter,
        pending: pending.clone(),
    })
    .with_batch_config(config)
    .build();
    let mut resource = Resource::builder();
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| v.contains("service.name="));
    if !named {
        resource = resource.with_service_name("sextant");
    }
    resource = resource.with_attribute(opentelemetry::KeyValue::new(
        "service.version",
        env!("CARGO_PKG_VERSION"),
    ));
    Ok(SdkTracerProvider::builder()
        .with_span_processor(Bounded {
            inner: batch,
            pending,
            bound: settings.queue,
        })
        .with_resource(resource.build())
        .build())
}

/// Object-safe view of [`SpanExporter`], so either transport fits one processor type.
trait SpanExporterDyn: Send + Sync + fmt::Debug {
    fn export_boxed(
        &self,
        batch: Vec<SpanData>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = OTelSdkResult> + Send + '_>>;
    fn shutdown_dyn(&self, timeout: Duration) -> OTelSdkResult;
    fn set_resource_dyn(&mut self, resource: &Resource);
}

impl<E: SpanExporter> SpanExporterDyn for E {
    fn export_boxed(
        &self,
        batch: Vec<SpanData>,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = OTelSdkResult> + Send + '_>> {
        Box::pin(self.export(batch))
    }
    fn shutdown_dyn(&self, timeout: Duration) -> OTelSdkResult {
        self.shutdown_with_timeout(timeout)
    }
    fn set_resource_dyn(&mut self, resource: &Resource) {
        self.set_resource(resource)
    }
}

/// Refuses spans beyond `bound` waiting for export, and counts them.
#[derive(Debug)]
struct Bounded<P> {
    inner: P,
    pending: Arc<AtomicUsize>,
    bound: usize,
}

impl<P: SpanProcessor> SpanProcessor for Bounded<P> {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        let taken = self
            .pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.bound).then_some(n + 1)
            });
        match taken {
            Ok(_) => self.inner.on_end(span),
            Err(_) => {
                DROPPED.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The exporter, releasing queue places as batches leave and counting outcomes.
#[derive(Debug)]
struct Counting {
    inner: Box<dyn SpanExporterDyn>,
    pending: Arc<AtomicUsize>,
}

impl SpanExporter for Counting {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let n = batch.len();
        self.pending.fetch_sub(n, Ordering::AcqRel);
        let outcome = self.inner.export_boxed(batch).await;
        match &outcome {
            Ok(()) => EXPORTED.fetch_add(n as u64, Ordering::Relaxed),
            Err(_) => FAILED.fetch_add(n as u64, Ordering::Relaxed),
        };
        outcome
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_dyn(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource_dyn(resource);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |key| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    }

    #[test]
    fn off_without_an_endpoint_or_when_disabled() {
        assert_eq!(Settings::from_env(env(&[])), Ok(None));
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318");
        assert_eq!(
            Settings::from_env(env(&[endpoint, ("OTEL_SDK_DISABLED", "true")])),
            Ok(None)
        );
        assert_eq!(
            Settings::from_env(env(&[endpoint, ("OTEL_TRACES_EXPORTER", "none")])),
            Ok(None)
        );
    }

    #[test]
    fn reads_endpoint_protocol_and_queue() {
        let s = Settings::from_env(env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "10"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(
            s.endpoint, "http://b:4317",
            "the traces-specific endpoint wins"
        );
        assert_eq!(s.protocol, Protocol::Grpc);
        assert_eq!(s.queue, 10);
        let s = Settings::from_env(env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318")]))
            .unwrap()
            .unwrap();
        assert_eq!(
            (s.protocol, s.queue),
            (Protocol::HttpProtobuf, DEFAULT_QUEUE)
        );
    }

    #[test]
    fn unusable_settings_say_what_to_do() {
        let e = |pairs: &[(&str, &str)]| Settings::from_env(env(pairs)).unwrap_err();
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318");
        assert!(
            e(&[endpoint, ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")]).contains("http/protobuf")
        );
        assert!(e(&[endpoint, ("OTEL_BSP_MAX_QUEUE_SIZE", "0")]).contains("positive"));
        assert!(e(&[endpoint, ("OTEL_BSP_MAX_QUEUE_SIZE", "3000000")]).contains("at most 65536"));
        assert!(Settings::from_env(env(&[endpoint, ("OTEL_BSP_MAX_QUEUE_SIZE", "65536")])).is_ok());
        assert!(e(&[endpoint, ("OTEL_TRACES_EXPORTER", "zipkin")]).contains("otlp"));
        assert!(e(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "https://a:4318")]).contains("Collector"));
        assert!(e(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")]).contains("http://"));
    }
}
