//! The search layer's error type.

use crate::embed::EmbedError;
use crate::store::StoreError;

/// Why a search failed. An empty result is not an error.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// A parameter is out of range; the message names it.
    #[error("invalid search option: {0}")]
    InvalidOption(String),
    /// The query is longer than [`super::MAX_QUERY_BYTES`].
    #[error(
        "the query is {0} bytes long; at most {max} are allowed (ask a question or name a \
         symbol rather than pasting a file)",
        max = super::MAX_QUERY_BYTES
    )]
    QueryTooLong(usize),
    /// The query is empty.
    #[error("the query is empty: pass a question or `symbol = Name`")]
    EmptyQuery,
    /// A store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Embedding the query or reranking failed.
    #[error(transparent)]
    Embed(#[from] EmbedError),
}
