//! Voyage AI: `voyage-code-3` embeddings (with `input_type` and `output_dimension`) and
//! `rerank-2.5` reranking.

use async_trait::async_trait;
use serde::Deserialize;

use super::http::{HttpClient, join_url};
use super::openai::{EmbeddingsResponse, clip};
use super::{BatchLimits, EmbedError, Embedder, InputKind, Reranker};

/// Voyage's public API base URL.
pub const VOYAGE_BASE_URL: &str = "https://api.voyageai.com/v1";

/// Settings of the Voyage embedder.
#[derive(Debug, Clone, PartialEq)]
pub struct VoyageOptions {
    /// API base URL (default [`VOYAGE_BASE_URL`]).
    pub base_url: String,
    /// Model (default `voyage-code-3`).
    pub model: String,
    /// Output width: 256, 512, 1024 (the model's default) or 2048.
    pub dims: usize,
}

impl Default for VoyageOptions {
    fn default() -> Self {
        Self {
            base_url: VOYAGE_BASE_URL.into(),
            model: "voyage-code-3".into(),
            dims: 1024,
        }
    }
}

/// Voyage embeddings.
pub struct VoyageEmbedder {
    http: HttpClient,
    options: VoyageOptions,
    model_id: String,
}

impl VoyageEmbedder {
    /// An embedder using `http` (which carries the API key).
    pub fn new(http: HttpClient, options: VoyageOptions) -> Result<Self, EmbedError> {
        if ![256, 512, 1024, 2048].contains(&options.dims) {
            return Err(EmbedError::Config(format!(
                "Voyage output dimension {} is not one of 256, 512, 1024, 2048",
                options.dims
            )));
        }
        let model_id = format!("voyage:{}:{}", options.model, options.dims);
        Ok(Self {
            http,
            options,
            model_id,
        })
    }
}

/// voyage-code-3 reads 32k tokens a text; a request carries at most 1,000 texts and
/// 120k tokens. Estimates leave head-room below both.
const VOYAGE_LIMITS: BatchLimits = BatchLimits {
    max_texts: 128,
    max_tokens: 90_000,
    max_text_tokens: 30_000,
};

#[async_trait]
impl Embedder for VoyageEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dims(&self) -> usize {
        self.options.dims
    }

    fn limits(&self) -> BatchLimits {
        VOYAGE_LIMITS
    }

    async fn embed(&self, texts: &[String], kind: InputKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let input: Vec<String> = texts
            .iter()
            .map(|t| clip(t, VOYAGE_LIMITS.max_text_tokens))
            .collect();
        let body = serde_json::json!({
            "model": self.options.model,
            "input": input,
            "input_type": kind.as_str(),
            "output_dimension": self.options.dims,
            "truncation": true,
        });
        let url = join_url(&self.options.base_url, "embeddings");
        let response: EmbeddingsResponse = self.http.post_json(&url, &body).await?;
        response.into_vectors(self.http.provider(), texts.len(), Some(self.options.dims))
    }
}

/// Voyage reranking (`rerank-2.5` by default).
pub struct VoyageReranker {
    http: HttpClient,
    base_url: String,
    model: String,
    model_id: String,
}

impl VoyageReranker {
    /// A reranker for `model` at `base_url`.
    pub fn new(http: HttpClient, base_url: &str, model: &str) -> Self {
        Self {
            http,
            base_url: base_url.to_string(),
            model: model.to_string(),
            model_id: format!("voyage:{model}"),
        }
    }
}

#[derive(Deserialize)]
struct VoyageRerankResponse {
    data: Vec<ScoredIndex>,
}

/// One scored document of a rerank answer.
#[derive(Debug, Deserialize)]
pub(crate) struct ScoredIndex {
    pub(crate) index: usize,
    #[serde(alias = "score")]
    pub(crate) relevance_score: f32,
}

/// Puts scores back in document order, checking every document got exactly one.
pub(crate) fn scores_in_order(
    provider: &str,
    items: Vec<ScoredIndex>,
    n: usize,
) -> Result<Vec<f32>, EmbedError> {
    let mut out = vec![None; n];
    for item in items {
        match out.get_mut(item.index) {
            Some(slot @ None) => *slot = Some(item.relevance_score),
            _ => {
                return Err(EmbedError::BadResponse {
                    provider: provider.to_string(),
                    reason: format!("rerank index {} is out of range or repeated", item.index),
                });
            }
        }
    }
    out.into_iter()
        .collect::<Option<Vec<f32>>>()
        .ok_or_else(|| EmbedError::BadResponse {
            provider: provider.to_string(),
            reason: "some documents got no score".into(),
        })
}

#[async_trait]
impl Reranker for VoyageReranker {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    async fn rerank(&self, query: &str, documents: &[String]) -> Result<Vec<f32>, EmbedError> {
        if documents.is_empty() {
            return Ok(Vec::new());
        }
        // rerank-2.5: 8k-token queries, 32k tokens per query+document, 1,000 documents.
        let documents: Vec<String> = documents.iter().map(|d| clip(d, 24_000)).collect();
        let body = serde_json::json!({
            "model": self.model,
            "query": clip(query, 4_000),
            "documents": documents,
            "truncation": true,
        });
        let url = join_url(&self.base_url, "rerank");
        let response: VoyageRerankResponse = self.http.post_json(&url, &body).await?;
        scores_in_order(self.http.provider(), response.data, documents.len())
    }
}
