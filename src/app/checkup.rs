//! What `sextant doctor` checks: that the data directory's two stores open and agree
//! (with `repair`, what the chunk store lacks or has in excess is mended), and how big
//! they are. A chunk store that cannot be opened or read is told apart from every other
//! failure, since only it may be moved aside ([`move_aside`]) and rebuilt.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::indexer_over;
use crate::config::Config;
use crate::embed::CachedEmbedder;
use crate::index::IndexError;
use crate::store::{LanceStore, SqlMetaStore};

pub use crate::index::RepoAudit;
pub use crate::store::{DatabaseSize, StoreStats, StoreStorage};

/// What the check found.
#[derive(Debug)]
pub struct Checkup {
    /// Each repository's agreement between the stores.
    pub audits: Vec<RepoAudit>,
    /// The chunk store's rows.
    pub stats: StoreStats,
    /// The chunk store's versions, fragments and bytes.
    pub storage: StoreStorage,
}

/// Why the check failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckupError {
    /// The chunk store itself cannot be opened or read (what moving it aside repairs).
    #[error("{0}")]
    ChunkStore(String),
    /// Anything else (the model, the metadata database, a width that does not fit the
    /// model): moving the chunk store would not help.
    #[error("{0}")]
    Other(String),
}

/// Opens the chunk store and audits every repository against the metadata database
/// (mending what disagrees when `repair`).
pub async fn check_stores(
    config: &Config,
    meta: &Arc<SqlMetaStore>,
    dims: usize,
    cached: &Arc<CachedEmbedder>,
    repair: bool,
) -> Result<Checkup, CheckupError> {
    let lance = config.lance_uri();
    let vectors = LanceStore::open(super::lance_options(config, dims))
        .await
        .map_err(|e| {
            // Object storage out of reach is not damage: nothing to move aside.
            if e.is_chunk_store() && !(e.is_unavailable() && lance.contains("://")) {
                CheckupError::ChunkStore(e.to_string())
            } else {
                CheckupError::Other(e.to_string())
            }
        })?;
    let indexer = indexer_over(config, meta.clone(), vectors, cached.clone())
        .await
        .map_err(|e| CheckupError::Other(e.to_string()))?;
    let as_failure = |e: IndexError| match e {
        IndexError::Store(s) if s.is_chunk_store() => CheckupError::ChunkStore(s.to_string()),
        other => CheckupError::Other(other.to_string()),
    };
    // Reading every repository's paths touches every data file.
    let audits = indexer.audit(repair).await.map_err(as_failure)?;
    let stats = indexer.vectors().stats().await;
    let storage = indexer.vectors().storage().await;
    Ok(Checkup {
        audits,
        stats: stats.map_err(IndexError::from).map_err(as_failure)?,
        storage: storage.map_err(IndexError::from).map_err(as_failure)?,
    })
}

/// Renames the chunk store directory `dir` to `<dir>.broken-<seconds since epoch>`;
/// returns the new name.
pub fn move_aside(dir: &Path) -> Result<PathBuf, String> {
    let stamp = crate::store::now_ms() / 1000;
    let mut name = dir.as_os_str().to_owned();
    name.push(format!(".broken-{stamp}"));
    let aside = PathBuf::from(name);
    std::fs::rename(dir, &aside)
        .map_err(|e| format!("cannot move the chunk store {} aside: {e}", dir.display()))?;
    Ok(aside)
}
