//! Retrieval: `symbol = A > B` lookups and the natural-language pipeline.
//!
//! ```text
//! query ─ classify ─┬─ symbol = …  → exact lookup in the symbol table (no vectors)
//!                   └─ text        → stage 1: vector ANN ∥ BM25 over identifier-split text
//!                                    fusion (normalised RRF, or a calibrated blend)
//!                                    stage 2: reranker (optional) → finalScore blend
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
pub mod query;
pub mod score;

pub use engine::{SearchHit, SearchMode, SearchResponse, Searcher, StageTimings};
pub use error::SearchError;
pub use lexical::{coverage, lexical_query, query_terms};
pub use options::{Fusion, Retrieval, SearchOptions};
pub use query::{Query, SymbolPath, classify, parse_symbol_query};
