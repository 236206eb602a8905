//! Embedding and reranking providers (not built yet: issue "Embedding and reranking").
//!
//! Will hold the `Embedder` and `Reranker` traits and their implementations: the local
//! all-MiniLM-L6-v2 default (candle), a static model2vec mode, Voyage and
//! OpenAI-compatible HTTP providers. Input is text (a chunk's `embeddingText` or a query);
//! output is vectors or scores. Must not depend on stores or on the pipeline above it.
