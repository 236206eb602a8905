//! Retrieval: `symbol = A > B` lookups and the natural-language pipeline.
//!
//! ```text
//! query ─ classify ─┬─ symbol = …  → exact lookup in the symbol table (no vectors)
//!                   └─ text        → stage 1: vector ANN ∥ BM25 over identifier-split text
//!                                    fusion (normalised RRF, or a calibrated blend)
//!                                    stage 2: reranker (optional) → finalScore blend
//!                                    parent/child folding
//!                                    stage 3: relevance gate, then token budget
//! ```
//!
//! [`query`] and [`score`] are pure and unit-tested; [`engine`] holds the I/O (stores,
//! embedder, reranker) behind their traits. Structural enrichment and rendering of the
//! survivors belong to `graph` and `render`.

pub mod engine;
mod error;
pub mod lexical;
pub mod options;
pub mod query;
pub mod score;

pub use engine::{SearchHit, SearchMode, SearchResponse, Searcher, StageTimings};
pub use error::SearchError;
pub use lexical::lexical_query;
pub use options::{Fusion, Retrieval, SearchOptions};
pub use query::{Query, SymbolPath, classify, parse_symbol_query};
