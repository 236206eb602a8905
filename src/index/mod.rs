//! Indexing engine (not built yet: issue "Indexing engine").
//!
//! Will turn a registered repository into stored chunks, symbols and vectors and keep it
//! fresh: git tree diffs or mtime + SHA-256 checks, re-parse and re-chunk of changed files
//! only, the signature cascade, an embedding cache keyed by (model, text hash), one worker
//! per repository and durable jobs. Calls `parse` and `chunk`; writes through the `store`
//! traits; embeds through `embed`. Must not depend on `search`, `render` or `api`.
