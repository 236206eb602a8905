//! Persistence (not built yet: issue "Storage").
//!
//! Will hold the `MetaStore` trait (repositories, files, symbols, edges, jobs, tokens in
//! SQL via sqlx: SQLite by default, Postgres by `DATABASE_URL`) and the `VectorStore`
//! trait (chunks with vectors and lexical text in LanceDB). Depends only on the data types
//! of `parse` and `chunk`; knows nothing of how they are produced or searched.
