//! Sextant's integration tests, as one binary: the library (LanceDB, DataFusion, the
//! model runtime) is linked once instead of once per test file. Each module is what a
//! `tests/*.rs` file would be; `support` holds the shared harnesses.
//!
//! Run one area with a filter: `cargo test --test it api::`.

mod support;

mod api;
mod architecture;
mod budget;
mod cli;
mod console;
mod corpora;
mod crash;
mod deploy;
mod e2e;
mod eval_cli;
mod fixtures;
mod git_sync;
mod graph;
mod grep;
mod index;
mod local_models;
mod mcp;
mod meta_store;
mod openapi;
mod providers;
mod refs;
mod replicas;
mod robustness;
mod scout;
mod search;
mod snapshot;
mod telemetry;
mod vector_store;
