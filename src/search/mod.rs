//! Retrieval: `symbol = A > B` lookups and the natural-language pipeline.
//!
//! ```text
//! query ─ classify ─┬─ symbol = …  → exact lookup in the symbol table (no vectors)
//!                   └─ text        → stage 1: vector ANN ∥ BM25 over identifier-split text
//!                                    fusion (normalised RRF, or a calibrated blend)
//!                                    stage 2: reranker (optional) → finalScore blend
//!                                    priors: definitions, path roles and words, coherence
//!                                    parent/child folding
//!                                    relevance gate, then token budget
//!                                    stage 3: structural enrichment from the symbol graph
//! ```
//!
//! [`query`] and [`score`] are pure and unit-tested; [`engine`] and [`enrich`] hold the
//! I/O (stores, embedder, reranker) behind their traits. Metadata assembly is
//! [`crate::graph`]'s, rendering [`crate::render`]'s.

pub mod engine;
pub mod enrich;
mod error;
pub mod lexical;
pub mod options;
pub mod prior;
pub mod query;
pub mod score;

pub use engine::{SearchHit, SearchMode, SearchResponse, Searcher, StageTimings};
pub use error::SearchError;
pub use lexical::{coverage, lexical_query, query_terms};
pub use options::{Fusion, MAX_QUERY_BYTES, Retrieval, SearchOptions, SearchOverrides};
pub use prior::Priors;
pub use query::{Query, SymbolPath, classify, parse_symbol_query};

/// Checks a search request before any work is done (and before its repository names are
/// looked up): the query's length and emptiness, then the options (ranges, filter sizes,
/// globs).
pub fn validate_request(query: &str, options: &SearchOptions) -> Result<(), SearchError> {
    if query.len() > MAX_QUERY_BYTES {
        return Err(SearchError::QueryTooLong(query.len()));
    }
    if query.trim().is_empty() {
        return Err(SearchError::EmptyQuery);
    }
    options.validate().map_err(SearchError::InvalidOption)
}
