//! The embedding stage: chunk rows stored without vectors get them, in batches, after
//! (or apart from) the sync that wrote them.

use super::*;
use crate::store::PendingVector;

impl Indexer {
    /// Embeds the rows of `repo` that have no vector yet (written by a sync before their
    /// vectors, or forgotten after a change of model), a slice at a time, storing each
    /// slice as it lands: searches use the vectors of a slice as soon as it is stored,
    /// and a crash loses at most one slice. One stage per repository runs at a time: a
    /// second call waits for the first (then embeds whatever is still missing), so a sync
    /// that returns has every vector in. Returns the rows given vectors by this call.
    pub async fn embed_pending(
        &self,
        repo: &Repository,
        progress: &mut Progress,
    ) -> Result<usize, IndexError> {
        let lock = self.embed_lock(&repo.id);
        let _turn = lock.lock().await;
        self.embed_pending_held(repo, progress).await
    }

    /// [`Indexer::embed_pending`], unless a stage for `repo` is running: then `None` at
    /// once (that stage takes the new rows too).
    pub async fn embed_pending_unless_running(
        &self,
        repo: &Repository,
        progress: &mut Progress,
    ) -> Option<Result<usize, IndexError>> {
        let lock = self.embed_lock(&repo.id);
        let _turn = lock.try_lock().ok()?;
        Some(self.embed_pending_held(repo, progress).await)
    }

    pub(super) async fn embed_pending_held(
        &self,
        repo: &Repository,
        progress: &mut Progress,
    ) -> Result<usize, IndexError> {
        let slice = self.options.embed_slice.max(1);
        let mut total = self.vectors.embedding_state(Some(&repo.id)).await?.pending;
        let (mut done, mut idle_turns) = (0usize, 0u32);
        if total == 0 {
            return Ok(0);
        }
        let span =
            tracing::info_span!("sync.embed", sextant.repository = %repo.name, texts = total);
        async {
            progress.report(Phase::Embed, 0, total as u64, None);
            loop {
                let pending = self
                    .vectors
                    .unembedded(&repo.id, slice * SLICES_PER_READ)
                    .await?;
                if pending.is_empty() {
                    break;
                }
                let asked = pending.len();
                let stored = self
                    .embed_and_store(repo, pending, slice, |stored| {
                        done += stored;
                        // Rows written meanwhile by another sync join this run.
                        total = total.max(done);
                        progress.report(Phase::Embed, done as u64, total as u64, None);
                    })
                    .await?;
                if stored == 0 {
                    // Every row read changed under us; their new versions are read again
                    // (with their new text) on the next turn. Rows that never take a
                    // vector would loop for ever: stop after a few turns.
                    idle_turns += 1;
                    if idle_turns >= 3 {
                        return Err(IndexError::Task(format!(
                            "vectors for {asked} rows of `{}` could not be stored; \
                             `sextant doctor --repair` rebuilds what is inconsistent",
                            repo.name
                        )));
                    }
                    tokio::task::yield_now().await;
                } else {
                    idle_turns = 0;
                }
            }
            // Vectors land as rewritten rows: after a bulk of them, fold those rows into
            // the text and vector indexes now (as a bulk sync does) rather than leaving
            // searches to scan them until the store's periodic maintenance.
            if done >= slice {
                progress.report(
                    Phase::Embed,
                    done as u64,
                    total as u64,
                    Some("updating search indexes".into()),
                );
                self.vectors
                    .maintain()
                    .instrument(tracing::info_span!("sync.maintain"))
                    .await?;
            }
            Ok::<_, IndexError>(())
        }
        .instrument(span)
        .await?;
        self.bound_cache().await;
        Ok(done)
    }

    /// Trims the embedding cache to [`IndexOptions::cached_vectors_per_row`] per row of
    /// the chunk store (at least [`IndexOptions::cached_vectors_floor`]). A failure is logged, not returned: the vectors are stored, and
    /// the next stage trims again.
    async fn bound_cache(&self) {
        let trimmed = async {
            let state = self.vectors.embedding_state(None).await?;
            let rows = state.total as u64;
            let keep =
                (self.options.cached_vectors_per_row * rows).max(self.options.cached_vectors_floor);
            Ok::<_, IndexError>(self.embedder.bound_kept(keep).await?)
        };
        match trimmed.await {
            Ok(0) => {}
            Ok(dropped) => tracing::info!(dropped, "embedding cache trimmed"),
            Err(e) => tracing::warn!(error = %e, "could not trim the embedding cache"),
        }
    }

    /// Embeds `pending`, `slice` texts per call, while storing what has landed: each
    /// store takes every slice embedded since the previous one began. A slow model thus
    /// has each slice stored as it lands (searches use it at once, a crash loses one
    /// slice), and a fast one has many slices stored per write, so that the number of
    /// writes (each of which costs the store a pass over the table) does not grow with
    /// the rows. `stored` hears each write's count; returns the rows stored.
    async fn embed_and_store(
        &self,
        repo: &Repository,
        pending: Vec<PendingVector>,
        slice: usize,
        mut stored: impl FnMut(usize),
    ) -> Result<usize, IndexError> {
        type Landed = Result<Vec<(PendingVector, Vec<f32>)>, IndexError>;
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Landed>(SLICES_PER_READ);
        let embedder = self.embedder.clone();
        let produce = async move {
            let mut rest = pending.into_iter().peekable();
            while rest.peek().is_some() {
                let rows: Vec<PendingVector> = rest.by_ref().take(slice).collect();
                let texts: Vec<String> = rows.iter().map(|p| p.text.clone()).collect();
                let landed =
                    crate::embed::embed_all(embedder.as_ref(), &texts, InputKind::Document)
                        .await
                        .map(|vectors| rows.into_iter().zip(vectors).collect())
                        .map_err(IndexError::from);
                let failed = landed.is_err();
                // A closed channel: the writer failed, and says why.
                if tx.send(landed).await.is_err() || failed {
                    break;
                }
            }
        };
        let consume = async {
            let mut written = 0;
            while let Some(first) = rx.recv().await {
                let mut batch = first?;
                while let Ok(more) = rx.try_recv() {
                    batch.extend(more?);
                }
                let rows = batch.len();
                let count = self.vectors.set_vectors(&repo.id, batch).await?;
                tracing::debug!(rows, stored = count, "vectors stored");
                stored(count);
                written += count;
            }
            Ok::<_, IndexError>(written)
        };
        let ((), written) = tokio::join!(produce, consume);
        written
    }
}

/// Slices read from the store at once by the embedding stage (and the most that may wait
/// embedded for one write): 16 × `embed_slice` texts held in memory at the most.
const SLICES_PER_READ: usize = 16;
