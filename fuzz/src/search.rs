//! The search modules the fuzz checks use (the engine, with its stores, is left out).

#[path = "../../src/search/lexical.rs"]
pub mod lexical;
#[path = "../../src/search/options.rs"]
pub mod options;
#[path = "../../src/search/prior.rs"]
pub mod prior;
#[path = "../../src/search/query.rs"]
pub mod query;
#[path = "../../src/search/score.rs"]
pub mod score;
