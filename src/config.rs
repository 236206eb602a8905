//! The typed configuration every command starts from.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::chunk::ChunkOptions;
use crate::embed::{EmbedConfig, RerankConfig};
use crate::index::GitPolicy;
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
    /// Files a sync writes per commit (default [`crate::index::DEFAULT_BATCH_FILES`]). Fewer bound the memory a batch of
    /// large files holds and the work a crash throws away; more commit less often.
    pub batch_files: usize,
    /// Metadata database: a `postgres://` URL, a `sqlite:` URL or a file path. `None`
    /// means the embedded default, `<data_dir>/sextant.db` (`DATABASE_URL` sets it).
    pub database_url: Option<String>,
    /// LanceDB URI for chunks. `None` means `<data_dir>/lance`.
    pub lance_uri: Option<String>,
    /// Local repositories may be registered only under these directories (empty: any).
    pub allowed_roots: Vec<PathBuf>,
    /// Which git sources may be registered and fetched.
    pub git: GitPolicy,
    /// Embedding provider settings.
    pub embed: EmbedConfig,
    /// Reranking provider settings.
    pub rerank: RerankConfig,
    /// Scout's optional chat model.
    pub scout_model: crate::embed::ScoutModelConfig,
    /// Scout's expansion rule (coefficients and threshold).
    pub scout_rule: crate::scout::ExpandRule,
}

impl Config {
    /// The metadata database URL or path in effect.
    pub fn database_url(&self) -> String {
        self.database_url.clone().unwrap_or_else(|| {
            self.data_dir
                .join("sextant.db")
                .to_string_lossy()
                .into_owned()
        })
    }

    /// The LanceDB URI in effect.
    pub fn lance_uri(&self) -> String {
        self.lance_uri
            .clone()
            .unwrap_or_else(|| self.data_dir.join("lance").to_string_lossy().into_owned())
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from(".sextant"),
            parse: ParseLimits::default(),
            chunk: ChunkOptions::default(),
            batch_files: crate::index::DEFAULT_BATCH_FILES,
            database_url: None,
            lance_uri: None,
            allowed_roots: Vec::new(),
            git: GitPolicy::default(),
            embed: EmbedConfig::default(),
            rerank: RerankConfig::default(),
            scout_model: crate::embed::ScoutModelConfig::default(),
            scout_rule: crate::scout::ExpandRule::default(),
        }
    }
}
