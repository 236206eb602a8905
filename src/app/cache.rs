//! What `sextant model cache` reads and drops: the embedding cache's vectors by model,
//! beside the model the index records.

use super::{AppError, failed};
use crate::index::MODEL_KEY;
use crate::store::{MetaStore, SqlMetaStore};

pub use crate::store::CachedModel;

/// The embedding cache's contents by model, and the model the index's vectors come from
/// (`None` before anything was indexed).
pub async fn cached_models(
    meta: &SqlMetaStore,
) -> Result<(Option<String>, Vec<CachedModel>), AppError> {
    let indexed = meta.setting(MODEL_KEY).await.map_err(failed)?;
    Ok((indexed, meta.cached_models().await.map_err(failed)?))
}

/// Drops the cached vectors of `model`; returns how many there were.
pub async fn forget_cached_vectors(meta: &SqlMetaStore, model: &str) -> Result<u64, AppError> {
    meta.forget_cached_vectors(model).await.map_err(failed)
}

/// Drops the cached vectors of every model but the index's; returns each model dropped
/// with its count. Fails before anything was indexed (no model is the index's yet).
pub async fn prune_cached_vectors(meta: &SqlMetaStore) -> Result<Vec<(String, u64)>, AppError> {
    let (indexed, models) = cached_models(meta).await?;
    let Some(indexed) = indexed else {
        return Err(AppError::Failed(
            "nothing is indexed yet, so no model is the index's: name one with `--forget MODEL`"
                .into(),
        ));
    };
    let mut dropped = Vec::new();
    for m in models.into_iter().filter(|m| m.model != indexed) {
        let n = forget_cached_vectors(meta, &m.model).await?;
        dropped.push((m.model, n));
    }
    Ok(dropped)
}
