//! OpenAI-compatible `/v1/embeddings` provider: OpenAI, TEI, Ollama, vLLM, LM Studio and
//! anything else that speaks the same JSON.

use async_trait::async_trait;
use serde::Deserialize;

use super::http::{HttpClient, join_url};
use super::{BatchLimits, EmbedError, Embedder, InputKind};

/// The `data` list an embeddings endpoint answers with (OpenAI's and Voyage's shape).
#[derive(Debug, Deserialize)]
pub(crate) struct EmbeddingsResponse {
    data: Vec<EmbeddingItem>,
}

#[derive(Debug, Deserialize)]
struct EmbeddingItem {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

impl EmbeddingsResponse {
    /// The vectors in input order, checked for count and width.
    pub(crate) fn into_vectors(
        self,
        provider: &str,
        expected: usize,
        dims: Option<usize>,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let bad = |reason: String| EmbedError::BadResponse {
            provider: provider.to_string(),
            reason,
        };
        if self.data.len() != expected {
            return Err(bad(format!(
                "{} vectors for {expected} texts",
                self.data.len()
            )));
        }
        let mut out: Vec<Option<Vec<f32>>> = vec![None; expected];
        for (pos, item) in self.data.into_iter().enumerate() {
            let i = item.index.unwrap_or(pos);
            if let Some(d) = dims
                && item.embedding.len() != d
            {
                return Err(bad(format!(
                    "vector of width {} where {d} was configured",
                    item.embedding.len()
                )));
            }
            match out.get_mut(i) {
                Some(slot @ None) => *slot = Some(item.embedding),
                _ => return Err(bad(format!("index {i} is out of range or repeated"))),
            }
        }
        Ok(out.into_iter().flatten().collect())
    }
}

/// Settings of an OpenAI-compatible embeddings endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenAiOptions {
    /// Base URL up to and including the version (`http://localhost:8080/v1`).
    pub base_url: String,
    /// Model name sent in each request.
    pub model: String,
    /// Vector width. Sent as `dimensions` only when `send_dimensions` is set (models with
    /// Matryoshka output); otherwise checked against the answers.
    pub dims: usize,
    /// Ask the server for `dims`-wide vectors (`dimensions` field).
    pub send_dimensions: bool,
    /// Prefix put before queries (e.g. `search_query: ` for nomic models).
    pub query_prefix: String,
    /// Prefix put before documents.
    pub document_prefix: String,
    /// Tokens of one text the model reads (texts are cut to about this many).
    pub max_text_tokens: usize,
    /// Texts per request.
    pub max_texts: usize,
    /// Estimated tokens per request.
    pub max_batch_tokens: usize,
}

/// An embedder behind an OpenAI-compatible `/embeddings` endpoint.
pub struct OpenAiEmbedder {
    http: HttpClient,
    options: OpenAiOptions,
    model_id: String,
}

impl OpenAiEmbedder {
    /// An embedder that talks to `options.base_url` through `http`.
    pub fn new(http: HttpClient, options: OpenAiOptions) -> Self {
        let model_id = format!("openai:{}:{}", options.model, options.dims);
        Self {
            http,
            options,
            model_id,
        }
    }
}

/// Cuts `text` to about `max_tokens` tokens (3 characters a token, code's usual density)
/// so providers that reject over-long input do not fail the whole batch.
pub(crate) fn clip(text: &str, max_tokens: usize) -> String {
    crate::text::truncate_chars(text, max_tokens.saturating_mul(3))
}

#[async_trait]
impl Embedder for OpenAiEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dims(&self) -> usize {
        self.options.dims
    }

    fn limits(&self) -> BatchLimits {
        BatchLimits {
            max_texts: self.options.max_texts,
            max_tokens: self.options.max_batch_tokens,
            max_text_tokens: self.options.max_text_tokens,
        }
    }

    async fn embed(&self, texts: &[String], kind: InputKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let prefix = match kind {
            InputKind::Query => &self.options.query_prefix,
            InputKind::Document => &self.options.document_prefix,
        };
        let input: Vec<String> = texts
            .iter()
            .map(|t| format!("{prefix}{}", clip(t, self.options.max_text_tokens)))
            .collect();
        let mut body = serde_json::json!({
            "model": self.options.model,
            "input": input,
            "encoding_format": "float",
        });
        if self.options.send_dimensions {
            body["dimensions"] = self.options.dims.into();
        }
        let url = join_url(&self.options.base_url, "embeddings");
        let response: EmbeddingsResponse = self.http.post_json(&url, &body).await?;
        // Width 0 means "not known yet" (the start-up probe).
        let dims = (self.options.dims > 0).then_some(self.options.dims);
        response.into_vectors(self.http.provider(), texts.len(), dims)
    }
}
