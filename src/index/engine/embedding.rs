//! The embedding stage: chunk rows stored without vectors get them, in batches, after
//! (or apart from) the sync that wrote them.

use super::*;

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
                let pending = self.vectors.unembedded(&repo.id, slice).await?;
                if pending.is_empty() {
                    break;
                }
                let texts: Vec<String> = pending.iter().map(|p| p.text.clone()).collect();
                let vectors =
                    crate::embed::embed_all(self.embedder.as_ref(), &texts, InputKind::Document)
                        .await?;
                let stored = self
                    .vectors
                    .set_vectors(&repo.id, pending.into_iter().zip(vectors).collect())
                    .await?;
                done += stored;
                // Rows written meanwhile by another sync join this run.
                total = total.max(done);
                progress.report(Phase::Embed, done as u64, total as u64, None);
                if stored == 0 {
                    // Every row of the slice changed under us; their new versions are
                    // read again (with their new text) on the next turn. Rows that never
                    // take a vector would loop for ever: stop after a few turns.
                    idle_turns += 1;
                    if idle_turns >= 3 {
                        return Err(IndexError::Task(format!(
                            "vectors for {} rows of `{}` could not be stored; \
                             `sextant doctor --repair` rebuilds what is inconsistent",
                            texts.len(),
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
        Ok(done)
    }
}
