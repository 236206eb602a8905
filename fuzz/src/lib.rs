//! Sextant's pure layers compiled from `../src` for fuzzing: the same files, included by
//! path, under the same module paths, so `crate::…` references inside them resolve.
//! Only what the fuzz checks (`../src/dev/fuzz.rs`) reach is included.
#![allow(dead_code, unused_imports, unexpected_cfgs)]

#[path = "../../src/chunk/mod.rs"]
pub mod chunk;
#[path = "../../src/dev/fuzz.rs"]
pub mod fuzz;
#[path = "../../src/parse/mod.rs"]
pub mod parse;
#[path = "../../src/roles.rs"]
pub mod roles;
#[path = "../../src/text.rs"]
pub mod text;
#[path = "../../src/conformance.rs"]
pub mod conformance;

pub mod mcp;
pub mod search;
pub mod store;

/// What `conformance::validate_source` reads of the server configuration.
pub mod config {
    /// Parse limits and chunking options only.
    #[derive(Debug, Default)]
    pub struct Config {
        /// Input limits.
        pub parse: crate::parse::ParseLimits,
        /// Chunking options.
        pub chunk: crate::chunk::ChunkOptions,
    }
}

/// What the MCP tools' arguments name of the service: the search overrides.
pub mod service {
    /// The records the operations take (here only the search overrides).
    pub mod records {
        pub use crate::search::options::SearchOverrides;
    }
}
