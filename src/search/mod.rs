//! Retrieval (not built yet: issue "Search pipeline").
//!
//! Will run `symbol = A > B` lookups and the natural-language pipeline: vector + BM25
//! recall, fusion, rerank, blended score, relevance gate and token budget, parent/child
//! de-duplication. Reads through the `store` traits and `embed`; hands survivors to
//! `graph` for enrichment and `render` for output. Scoring logic stays pure.
