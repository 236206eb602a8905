//! OTLP over gRPC: one unary call, `TraceService/Export`, on an HTTP/2 connection.
//!
//! Written here rather than taken from `opentelemetry-otlp`'s `grpc-tonic` feature:
//! tonic's channel needs `tower` features (balance, buffer, limit, load-shed) that no other
//! crate in the tree enables, and turning them on rebuilds `tower`, both `reqwest`s and
//! everything above them, LanceDB included (see docs/BENCHMARKS.md, "Build"). A unary
//! gRPC call is small: the protobuf request behind a five-byte frame header, sent over
//! plain-text HTTP/2 with the hyper client the tree already has, and `grpc-status` read
//! from the trailers. The message types and the span conversion are `opentelemetry-proto`'s.

use std::sync::Mutex;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use prost::Message;

/// The gRPC method every OTLP trace receiver serves.
const EXPORT_PATH: &str = "/opentelemetry.proto.collector.trace.v1.TraceService/Export";

/// Default time for one export (`OTEL_EXPORTER_OTLP_TIMEOUT`, in milliseconds).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Exports span batches to an OTLP/gRPC receiver.
pub struct GrpcExporter {
    authority: String,
    host_port: String,
    headers: Vec<(http::HeaderName, http::HeaderValue)>,
    timeout: Duration,
    resource: ResourceAttributesWithSchema,
    /// The batch processor calls `export` from its own thread, outside any runtime; the
    /// connection lives on this one, which runs only while an export does.
    runtime: tokio::runtime::Runtime,
    connection: Mutex<Option<SendRequest<Full<Bytes>>>>,
}

impl std::fmt::Debug for GrpcExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrpcExporter")
            .field("authority", &self.authority)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl GrpcExporter {
    /// An exporter for `endpoint` (`http://host:port`), with the headers and timeout of
    /// `OTEL_EXPORTER_OTLP_[TRACES_]HEADERS` and `…_TIMEOUT`.
    pub fn new(endpoint: &str) -> Result<Self, String> {
        let uri: http::Uri = endpoint
            .parse()
            .map_err(|e| format!("{endpoint} is not a URL: {e}"))?;
        let authority = uri
            .authority()
            .ok_or_else(|| format!("{endpoint} names no host"))?
            .to_string();
        let host_port = match uri.port_u16() {
            Some(_) => authority.clone(),
            None => format!("{authority}:80"),
        };
        let var = |key: &str| std::env::var(key).ok().filter(|v| !v.trim().is_empty());
        let headers = var("OTEL_EXPORTER_OTLP_TRACES_HEADERS")
            .or_else(|| var("OTEL_EXPORTER_OTLP_HEADERS"))
            .map(|h| parse_headers(&h))
            .transpose()?
            .unwrap_or_default();
        let timeout = match var("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
            .or_else(|| var("OTEL_EXPORTER_OTLP_TIMEOUT"))
        {
            None => DEFAULT_TIMEOUT,
            Some(ms) => ms
                .trim()
                .parse::<u64>()
                .map(Duration::from_millis)
                .map_err(|_| format!("OTEL_EXPORTER_OTLP_TIMEOUT={ms} must be milliseconds"))?,
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the exporter's runtime: {e}"))?;
        Ok(Self {
            authority,
            host_port,
            headers,
            timeout,
            resource: ResourceAttributesWithSchema::default(),
            runtime,
            connection: Mutex::new(None),
        })
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, String> {
        let stream = tokio::net::TcpStream::connect(&self.host_port)
            .await
            .map_err(|e| format!("cannot connect to {}: {e}", self.host_port))?;
        let _ = stream.set_nodelay(true);
        let (sender, connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await
                .map_err(|e| format!("HTTP/2 handshake with {}: {e}", self.host_port))?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(sender)
    }

    async fn call(&self, body: Bytes) -> Result<(), String> {
        let cached = self.connection.lock().ok().and_then(|mut c| c.take());
        let mut sender = match cached {
            Some(s) if !s.is_closed() => s,
            _ => self.connect().await?,
        };
        sender
            .ready()
            .await
            .map_err(|e| format!("connection to {}: {e}", self.host_port))?;
        let mut request = http::Request::post(format!("http://{}{EXPORT_PATH}", self.authority))
            .header(http::header::CONTENT_TYPE, "application/grpc")
            .header(http::header::TE, "trailers")
            .body(Full::new(body))
            .map_err(|e| e.to_string())?;
        request.headers_mut().extend(self.headers.iter().cloned());
        let response = sender
            .send_request(request)
            .await
            .map_err(|e| format!("export to {}: {e}", self.host_port))?;
        if let Ok(mut slot) = self.connection.lock() {
            *slot = Some(sender);
        }
        let status = response.status();
        let head = response.headers().clone();
        let collected = response
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("reading the collector's answer: {e}"))?;
        if !status.is_success() {
            return Err(format!("the collector answered HTTP {status}"));
        }
        // A trailers-only answer carries the status in the headers.
        let trailers = collected.trailers().cloned().unwrap_or_default();
        let grpc_status = trailers
            .get("grpc-status")
            .or_else(|| head.get("grpc-status"))
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        match grpc_status {
            "0" => Ok(()),
            "" => Err("the collector's answer has no grpc-status".into()),
            code => {
                let message = trailers
                    .get("grpc-message")
                    .or_else(|| head.get("grpc-message"))
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                Err(format!(
                    "the collector refused the export: grpc-status {code} {message}"
                ))
            }
        }
    }
}

impl SpanExporter for GrpcExporter {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let request = ExportTraceServiceRequest {
            resource_spans: group_spans_by_resource_and_scope(batch, &self.resource),
        };
        let body = frame(&request.encode_to_vec());
        let outcome = self.runtime.block_on(async {
            tokio::time::timeout(self.timeout, self.call(body))
                .await
                .unwrap_or_else(|_| {
                    Err(format!(
                        "no answer from {} in {:?}",
                        self.host_port, self.timeout
                    ))
                })
        });
        outcome.map_err(OTelSdkError::InternalFailure)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource = resource.into();
    }
}

/// A gRPC length-prefixed message: no compression, big-endian length, the bytes.
fn frame(message: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(5 + message.len());
    out.put_u8(0);
    out.put_u32(message.len() as u32);
    out.put_slice(message);
    out.freeze()
}

/// `key=value,key2=value2` (values percent-encoded) as gRPC metadata.
fn parse_headers(raw: &str) -> Result<Vec<(http::HeaderName, http::HeaderValue)>, String> {
    raw.split(',')
        .filter(|pair| !pair.trim().is_empty())
        .map(|pair| {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("OTEL_EXPORTER_OTLP_HEADERS: `{pair}` is not key=value"))?;
            let value = percent_encoding::percent_decode_str(value.trim()).decode_utf8_lossy();
            let name = http::HeaderName::from_bytes(key.trim().to_ascii_lowercase().as_bytes())
                .map_err(|_| format!("OTEL_EXPORTER_OTLP_HEADERS: `{key}` is not a header name"))?;
            let value = http::HeaderValue::from_str(&value).map_err(|_| {
                format!("OTEL_EXPORTER_OTLP_HEADERS: the value of `{key}` is not a header value")
            })?;
            Ok((name, value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_messages_with_a_length_prefix() {
        assert_eq!(&frame(b"abc")[..], &[0, 0, 0, 0, 3, b'a', b'b', b'c']);
    }

    #[test]
    fn reads_metadata_from_the_environment_format() {
        let h = parse_headers("Authorization=Bearer%20x, tenant=a").unwrap();
        assert_eq!(h[0].0.as_str(), "authorization");
        assert_eq!(h[0].1, "Bearer x");
        assert_eq!(h[1].1, "a");
        assert!(parse_headers("novalue").unwrap_err().contains("key=value"));
    }
}
