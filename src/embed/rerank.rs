//! Cohere/TEI-style `/rerank` endpoints (text-embeddings-inference, Cohere, Jina, and
//! self-hosted cross-encoders that copy either shape).

use async_trait::async_trait;
use serde::Deserialize;

use super::http::{HttpClient, join_url};
use super::openai::clip;
use super::voyage::{ScoredIndex, scores_in_order};
use super::{EmbedError, Reranker};

/// Which request shape the endpoint expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RerankStyle {
    /// text-embeddings-inference: `{query, texts}` → `[{index, score}]`.
    Tei,
    /// Cohere (and Jina): `{model, query, documents}` → `{results: [{index, relevance_score}]}`.
    Cohere,
}

/// A reranker behind an HTTP `/rerank` endpoint.
pub struct HttpReranker {
    http: HttpClient,
    url: String,
    model: Option<String>,
    style: RerankStyle,
    model_id: String,
}

impl HttpReranker {
    /// A reranker posting to `base_url` + `/rerank`.
    pub fn new(
        http: HttpClient,
        base_url: &str,
        model: Option<String>,
        style: RerankStyle,
    ) -> Self {
        let model_id = format!(
            "http-rerank:{}",
            model.as_deref().unwrap_or(base_url.trim_end_matches('/'))
        );
        Self {
            http,
            url: join_url(base_url, "rerank"),
            model,
            style,
            model_id,
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RerankAnswer {
    List(Vec<ScoredIndex>),
    Results { results: Vec<ScoredIndex> },
}

#[async_trait]
impl Reranker for HttpReranker {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    async fn rerank(&self, query: &str, documents: &[String]) -> Result<Vec<f32>, EmbedError> {
        if documents.is_empty() {
            return Ok(Vec::new());
        }
        let docs: Vec<String> = documents.iter().map(|d| clip(d, 8_000)).collect();
        let mut body = match self.style {
            RerankStyle::Tei => serde_json::json!({
                "query": clip(query, 2_000),
                "texts": docs,
                "truncate": true,
            }),
            RerankStyle::Cohere => serde_json::json!({
                "query": clip(query, 2_000),
                "documents": docs,
            }),
        };
        if let Some(model) = &self.model {
            body["model"] = model.as_str().into();
        }
        let answer: RerankAnswer = self.http.post_json(&self.url, &body).await?;
        let items = match answer {
            RerankAnswer::List(items) | RerankAnswer::Results { results: items } => items,
        };
        scores_in_order(self.http.provider(), items, documents.len())
    }
}
