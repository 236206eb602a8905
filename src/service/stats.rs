//! What the server holds right now, for `/metrics`: repositories by status, files, chunk
//! rows, jobs by state, the embedding cache's counters.

use std::collections::BTreeMap;

use strum::IntoEnumIterator;

use super::{Service, ServiceError};
use crate::auth::Principal;
use crate::embed::cache::CacheStats;
use crate::store::{JobState, RepoStatus};

/// Jobs counted by [`Service::stats`]: the most recent this many.
pub const STATS_JOBS: i64 = 10_000;

/// Counts read from the stores at one moment. A store that does not answer leaves its
/// part `None`, so the rest is still reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerStats {
    /// Repositories by status (every status present, zero included).
    pub repositories: Option<BTreeMap<RepoStatus, u64>>,
    /// Files indexed and skipped, over every repository.
    pub files: Option<(u64, u64)>,
    /// Chunk rows in the vector store.
    pub chunks: Option<u64>,
    /// What the chunk store keeps on disk.
    pub chunk_storage: Option<crate::store::StoreStorage>,
    /// The most recent `STATS_JOBS` (10,000) jobs by state (every state present).
    pub jobs: Option<BTreeMap<JobState, u64>>,
    /// Texts answered from the embedding cache and sent to the model.
    pub embed_cache: Option<CacheStats>,
}

impl Service {
    /// Counts over every repository: only for callers that see them all.
    pub async fn stats(&self, caller: &Principal) -> Result<ServerStats, ServiceError> {
        if !caller.sees_all() {
            return Err(ServiceError::Forbidden(
                "metrics cover every repository: use an unrestricted token".into(),
            ));
        }
        let meta = self.indexer.meta();
        let mut stats = ServerStats::default();
        if let Ok(repos) = meta.list_repositories().await {
            let mut by_status: BTreeMap<RepoStatus, u64> =
                RepoStatus::iter().map(|s| (s, 0)).collect();
            let (mut indexed, mut skipped) = (0, 0);
            for r in &repos {
                // Tracked refs are rows of their repository, not repositories.
                if r.parent_id.is_none() {
                    *by_status.entry(r.status).or_default() += 1;
                }
                if let Ok(files) = meta.file_counts(&r.id).await {
                    indexed += files.indexed.max(0) as u64;
                    skipped += files.skipped.max(0) as u64;
                }
            }
            stats.repositories = Some(by_status);
            stats.files = Some((indexed, skipped));
        }
        if let Ok(vectors) = self.indexer.vectors().stats().await {
            stats.chunks = Some(vectors.rows as u64);
            stats.chunk_storage = self.indexer.vectors().storage().await.ok();
        }
        if let Ok(jobs) = meta.list_jobs(None, STATS_JOBS).await {
            let mut by_state: BTreeMap<JobState, u64> = JobState::iter().map(|s| (s, 0)).collect();
            for j in &jobs {
                *by_state.entry(j.state).or_default() += 1;
            }
            stats.jobs = Some(by_state);
        }
        stats.embed_cache = self.embed_cache.as_ref().map(|c| c.stats());
        Ok(stats)
    }
}
