//! The typed configuration every command starts from.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::chunk::ChunkOptions;
use crate::embed::{EmbedConfig, RerankConfig};
use crate::index::GitPolicy;
use crate::parse::ParseLimits;

/// A value that must never reach a log or a screen whole (a token, a database URL with
/// its password): `Debug` prints a placeholder, and the value is read only through
/// [`Secret::expose`], so a `debug!(?cli)` or a stray `{:?}` cannot leak it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The value itself, for the one place that uses it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self(s.to_string()))
    }
}

/// `url` with the password of its userinfo replaced by `****`, for messages
/// (`postgres://sextant:****@db:5432/sextant`); anything that is not such a URL unchanged.
pub fn without_password(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("****"));
            parsed.to_string()
        }
        _ => url.to_string(),
    }
}

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
    /// MiB of data and index files kept in memory when the chunk store is on object
    /// storage (`store::block_cache`; 0: none). Unused for a local store.
    pub lance_cache_mb: u64,
    /// MiB of opened chunk-store indexes kept in memory (LanceDB's index cache).
    pub lance_index_cache_mb: u64,
    /// MiB of the chunk store held in memory for searches (`store::flat`: its vectors and
    /// rows, both or neither; 0: every search goes through LanceDB).
    pub search_memory_mb: u64,
    /// Directory of the grep index. `None` means `<data_dir>/grep`.
    pub grep_dir: Option<PathBuf>,
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

    /// The grep index's directory in effect.
    pub fn grep_dir(&self) -> PathBuf {
        self.grep_dir
            .clone()
            .unwrap_or_else(|| self.data_dir.join("grep"))
    }

    /// Where the grep index is mirrored: beside a chunk store on object storage
    /// (`<lance-uri>/grep`), so that replicas sharing no disk share it; `None` for a
    /// local chunk store (the directory is the index).
    pub fn grep_mirror(&self) -> Option<String> {
        let lance = self.lance_uri();
        lance
            .contains("://")
            .then(|| format!("{}/grep", lance.trim_end_matches('/')))
    }

    /// The LanceDB URI in effect.
    pub fn lance_uri(&self) -> String {
        self.lance_uri
            .clone()
            .unwrap_or_else(|| self.data_dir.join("lance").to_string_lossy().into_owned())
    }
}

/// Default of [`Config::lance_cache_mb`]: the rxjs source's whole table is 9 MB, a
/// 1M-line repository's 273 MB (docs/BENCHMARKS.md).
pub const DEFAULT_LANCE_CACHE_MB: u64 = 256;

/// Default of [`Config::lance_index_cache_mb`]: the chunk store's own
/// ([`crate::store::DEFAULT_INDEX_CACHE_MB`]).
pub const DEFAULT_LANCE_INDEX_CACHE_MB: u64 = crate::store::DEFAULT_INDEX_CACHE_MB;

/// Default of [`Config::search_memory_mb`]: the chunk store's own
/// ([`crate::store::DEFAULT_HELD_MB`]).
pub const DEFAULT_SEARCH_MEMORY_MB: u64 = crate::store::DEFAULT_HELD_MB;

impl Default for Config {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from(".sextant"),
            parse: ParseLimits::default(),
            chunk: ChunkOptions::default(),
            batch_files: crate::index::DEFAULT_BATCH_FILES,
            database_url: None,
            lance_uri: None,
            lance_cache_mb: DEFAULT_LANCE_CACHE_MB,
            lance_index_cache_mb: DEFAULT_LANCE_INDEX_CACHE_MB,
            search_memory_mb: DEFAULT_SEARCH_MEMORY_MB,
            grep_dir: None,
            allowed_roots: Vec::new(),
            git: GitPolicy::default(),
            embed: EmbedConfig::default(),
            rerank: RerankConfig::default(),
            scout_model: crate::embed::ScoutModelConfig::default(),
            scout_rule: crate::scout::ExpandRule::default(),
        }
    }
}

#[cfg(test)]
mod secret_tests {
    use super::*;

    #[test]
    fn secrets_do_not_print_and_passwords_are_masked() {
        let s: Secret = "sxt_0123456789".parse().unwrap();
        assert_eq!(s.expose(), "sxt_0123456789");
        assert!(!format!("{s:?}").contains("sxt_"));
        assert_eq!(
            without_password("postgres://u:pw@db:5432/x"),
            "postgres://u:****@db:5432/x"
        );
        assert_eq!(without_password("/data/sextant.db"), "/data/sextant.db");
    }
}
