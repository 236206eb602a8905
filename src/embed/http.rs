//! The HTTP client remote providers share: JSON POST with a timeout, bearer auth, and
//! retries with exponential back-off on 429, 5xx and transport failures (honouring
//! `Retry-After`).

use std::time::Duration;

use serde::de::DeserializeOwned;
use tracing::Instrument;

use super::EmbedError;

/// Retry and timeout policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// First back-off; doubled each retry.
    pub base_delay: Duration,
    /// Longest single wait (also caps `Retry-After`).
    pub max_delay: Duration,
    /// Whole-request timeout.
    pub timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            timeout: Duration::from_secs(60),
        }
    }
}

/// A JSON-over-HTTP client for one provider.
#[derive(Debug, Clone)]
pub struct HttpClient {
    client: reqwest::Client,
    provider: String,
    api_key: Option<String>,
    policy: RetryPolicy,
}

impl HttpClient {
    /// A client for `provider` (used in errors) sending `api_key` as a bearer token.
    pub fn new(
        provider: &str,
        api_key: Option<String>,
        policy: RetryPolicy,
    ) -> Result<Self, EmbedError> {
        let client = reqwest::Client::builder()
            .timeout(policy.timeout)
            .connect_timeout(policy.timeout.min(Duration::from_secs(10)))
            .user_agent(concat!("sextant/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| EmbedError::Transport {
                provider: provider.to_string(),
                reason: format!("cannot build the HTTP client: {e}"),
            })?;
        Ok(Self {
            client,
            provider: provider.to_string(),
            api_key,
            policy,
        })
    }

    /// The provider name.
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// POSTs `body` as JSON to `url` and decodes the JSON answer, retrying transient
    /// failures. The call is a client span, and its trace travels in `traceparent`.
    pub async fn post_json<T: DeserializeOwned>(
        &self,
        url: &str,
        body: &serde_json::Value,
    ) -> Result<T, EmbedError> {
        let span = tracing::info_span!(
            "http.client",
            otel.name = %format!("POST {}", self.provider),
            otel.kind = "client",
            http.request.method = "POST",
            url.full = %url,
            http.response.status_code = tracing::field::Empty,
            sextant.attempts = tracing::field::Empty,
        );
        self.post_json_attempts(url, body).instrument(span).await
    }

    async fn post_json_attempts<T: DeserializeOwned>(
        &self,
        url: &str,
        body: &serde_json::Value,
    ) -> Result<T, EmbedError> {
        let mut attempt = 0u32;
        loop {
            tracing::Span::current().record("sextant.attempts", attempt + 1);
            let mut request = self
                .client
                .post(url)
                .headers(crate::telemetry::propagate::outgoing_headers())
                .json(body);
            if let Some(key) = &self.api_key {
                request = request.bearer_auth(key);
            }
            let outcome = request.send().await;
            let (retryable, retry_after, error) = match outcome {
                Ok(response) => {
                    let status = response.status();
                    tracing::Span::current().record("http.response.status_code", status.as_u16());
                    if status.is_success() {
                        let bytes = response.bytes().await.map_err(|e| self.transport(e))?;
                        return serde_json::from_slice(&bytes).map_err(|e| {
                            EmbedError::BadResponse {
                                provider: self.provider.clone(),
                                reason: format!(
                                    "cannot decode the answer ({e}): {}",
                                    snippet(&bytes)
                                ),
                            }
                        });
                    }
                    let retry_after = response
                        .headers()
                        .get(reqwest::header::RETRY_AFTER)
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .map(Duration::from_secs);
                    let bytes = response.bytes().await.unwrap_or_default();
                    let retryable = status.as_u16() == 429 || status.is_server_error();
                    let error = EmbedError::Http {
                        provider: self.provider.clone(),
                        status: status.as_u16(),
                        body: snippet(&bytes),
                    };
                    (retryable, retry_after, error)
                }
                Err(e) => (e.is_timeout() || e.is_connect(), None, self.transport(e)),
            };
            if !retryable || attempt >= self.policy.max_retries {
                return Err(error);
            }
            let delay = retry_after
                .unwrap_or_else(|| backoff(self.policy.base_delay, attempt))
                .min(self.policy.max_delay);
            tracing::warn!(provider = %self.provider, attempt, ?delay, %error, "retrying");
            tokio::time::sleep(delay).await;
            attempt += 1;
        }
    }

    fn transport(&self, e: reqwest::Error) -> EmbedError {
        EmbedError::Transport {
            provider: self.provider.clone(),
            reason: e.to_string(),
        }
    }
}

/// `base · 2^attempt`, plus up to a quarter of that as jitter so that many clients do not
/// retry in lock-step.
fn backoff(base: Duration, attempt: u32) -> Duration {
    let exp = base.saturating_mul(1u32 << attempt.min(16));
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let jitter = exp.mul_f64(f64::from(nanos % 1000) / 4000.0);
    exp + jitter
}

fn snippet(bytes: &[u8]) -> String {
    crate::text::truncate_chars(String::from_utf8_lossy(bytes).trim(), 300)
}

/// Joins a base URL and a path with exactly one `/`.
pub fn join_url(base: &str, path: &str) -> String {
    format!(
        "{}/{}",
        base.trim_end_matches('/'),
        path.trim_start_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_bounded_jitter() {
        let base = Duration::from_millis(100);
        for attempt in 0..5 {
            let d = backoff(base, attempt);
            let exp = base * (1 << attempt);
            assert!(
                d >= exp && d <= exp + exp / 4,
                "{d:?} for attempt {attempt}"
            );
        }
    }

    #[test]
    fn urls_join_with_one_slash() {
        assert_eq!(
            join_url("http://h/v1/", "/embeddings"),
            "http://h/v1/embeddings"
        );
        assert_eq!(join_url("http://h/v1", "rerank"), "http://h/v1/rerank");
    }
}
