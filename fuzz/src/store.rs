//! The chunk filter (the rest of the store layer is I/O).

#[path = "../../src/store/filter.rs"]
pub mod filter;
pub use filter::ChunkFilter;
