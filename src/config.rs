//! The typed configuration every command starts from.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::chunk::ChunkOptions;
use crate::parse::ParseLimits;

/// Sextant's settings. Built from CLI flags and `SEXTANT_*` environment variables in
/// `main`; later issues add stores, providers and server settings here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// Where Sextant keeps its state (default `./.sextant`).
    pub data_dir: PathBuf,
    /// Input limits for the parser.
    pub parse: ParseLimits,
    /// Chunker settings.
    pub chunk: ChunkOptions,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from(".sextant"),
            parse: ParseLimits::default(),
            chunk: ChunkOptions::default(),
        }
    }
}
