//! What the stored index was built with (the embedding model its vectors come from, the
//! index format its chunks were made at): adopting a change of either, the repositories
//! still missing vectors, and the audit of both stores.

use super::*;

impl Indexer {
    /// Makes the index follow the configured embedding model. On first use the model is
    /// recorded; when the index was built with another one, its vectors are forgotten
    /// (never compared with the new model's), every file is marked to be read and chunked
    /// again (rows keep their embedding text only until their vector is stored, so the
    /// texts to embed come from the files), and the new model is recorded: the next sync
    /// of each repository re-embeds it (vectors of a model used before come from the
    /// embedding cache). Text search works throughout.
    pub async fn adopt_model(&self) -> Result<ModelChange, IndexError> {
        let configured = self.embedder.model_id().to_string();
        let change = match self.meta.setting(MODEL_KEY).await? {
            Some(indexed) if indexed == configured => return Ok(ModelChange::Unchanged),
            None => ModelChange::First,
            Some(from) => {
                self.meta.set_setting(RESYNC_KEY, "1").await?;
                self.vectors.forget_vectors().await?;
                self.meta.forget_file_contents().await?;
                self.audit(true).await?;
                ModelChange::Changed { from }
            }
        };
        self.meta.set_setting(MODEL_KEY, &configured).await?;
        Ok(change)
    }

    /// Makes the index follow this build's [`crate::chunk::FORMAT`]: when the stored
    /// files were indexed at another one (or before formats were recorded), every file
    /// record forgets its hash and time, so that the next sync of each repository reads
    /// and chunks every file again (a git source diffs against nothing), and servers
    /// queue those syncs at start. Search works throughout, on the older chunks until
    /// their files are read again. Crash-safe: the format is recorded last.
    pub async fn adopt_format(&self) -> Result<FormatChange, IndexError> {
        let current = crate::chunk::FORMAT.to_string();
        let from = self.meta.setting(FORMAT_KEY).await?;
        if from.as_deref() == Some(current.as_str()) {
            return Ok(FormatChange::Unchanged);
        }
        let files = self.meta.forget_file_contents().await?;
        if files > 0 {
            self.meta.set_setting(RESYNC_KEY, "1").await?;
        }
        self.meta.set_setting(FORMAT_KEY, &current).await?;
        Ok(if files == 0 {
            FormatChange::Unchanged
        } else {
            FormatChange::Changed { from, files }
        })
    }

    /// Repositories a server should sync when it starts: every one after a change of
    /// model (until [`Indexer::resync_queued`]), else those with rows still without
    /// vectors (an interrupted embedding stage).
    pub async fn repos_to_complete(&self) -> Result<Vec<Repository>, IndexError> {
        if self
            .meta
            .setting(RESYNC_KEY)
            .await?
            .is_some_and(|v| v == "1")
        {
            return Ok(self.meta.list_repositories().await?);
        }
        self.repos_missing_vectors().await
    }

    /// Records that the syncs a change of model needs are queued (durable jobs).
    pub async fn resync_queued(&self) -> Result<(), IndexError> {
        if self
            .meta
            .setting(RESYNC_KEY)
            .await?
            .is_some_and(|v| v == "1")
        {
            self.meta.set_setting(RESYNC_KEY, "0").await?;
        }
        Ok(())
    }

    /// Repositories with rows that have no vector yet (after a crash, a change of model,
    /// or a freshness sync), to be synced.
    pub async fn repos_missing_vectors(&self) -> Result<Vec<Repository>, IndexError> {
        let mut out = Vec::new();
        for repo in self.meta.list_repositories().await? {
            if self.vectors.embedding_state(Some(&repo.id)).await?.pending > 0 {
                out.push(repo);
            }
        }
        Ok(out)
    }

    /// Compares what the two stores hold for every repository: indexed files (with
    /// symbols) that have no chunks, and chunks of files the metadata store does not list
    /// as indexed. With `repair`, the first lose their file record (so the next sync
    /// indexes them again) and the second are deleted. Each repository is checked under
    /// its sync lock.
    pub async fn audit(&self, repair: bool) -> Result<Vec<RepoAudit>, IndexError> {
        let mut out = Vec::new();
        for repo in self.meta.list_repositories().await? {
            let lock = self.repo_lock(&repo.id);
            let _held = lock.lock().await;
            let files = self.meta.list_files(&repo.id).await?;
            let indexed: std::collections::BTreeSet<&str> = files
                .iter()
                .filter(|f| f.skip_reason.is_none())
                .map(|f| f.path.as_str())
                .collect();
            let chunked = self.vectors.file_paths(&repo.id).await?;
            let missing_chunks: Vec<String> = files
                .iter()
                .filter(|f| f.skip_reason.is_none() && f.symbol_count > 0)
                .filter(|f| !chunked.contains(&f.path))
                .map(|f| f.path.clone())
                .collect();
            let orphan_chunks: Vec<String> = chunked
                .iter()
                .filter(|p| !indexed.contains(p.as_str()))
                .cloned()
                .collect();
            let missing_code = self.ungrepped(&repo.id, &files).await;
            if repair {
                for path in &missing_chunks {
                    self.meta.delete_file(&repo.id, path).await?;
                }
                for path in &orphan_chunks {
                    self.vectors.delete_file(&repo.id, path).await?;
                }
            }
            out.push(RepoAudit {
                repo,
                missing_chunks,
                orphan_chunks,
                missing_code,
            });
        }
        Ok(out)
    }
}
