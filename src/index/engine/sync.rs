//! Syncs: one repository at a time, planned, then applied in batches (parse and chunk,
//! embed, write both stores), crash-safe at every batch.

use super::*;
use crate::store::LineStarts;

impl Indexer {
    /// Brings the index of `repo` in line with its files, then embeds what has no vector
    /// yet (see [`Indexer::embed_pending`]). At most one sync per repository runs at a
    /// time; a second call waits for the first. Changed files are searchable by text as
    /// soon as their rows are written, before their vectors land.
    pub async fn sync(
        &self,
        repo: &Repository,
        progress: &mut Progress,
    ) -> Result<SyncReport, IndexError> {
        self.sync_and_embed(repo, progress)
            .instrument(sync_span(repo))
            .await
    }

    pub(super) async fn sync_and_embed(
        &self,
        repo: &Repository,
        progress: &mut Progress,
    ) -> Result<SyncReport, IndexError> {
        let mut report = {
            let lock = self.repo_lock(&repo.id);
            let _held = lock.lock().await;
            self.sync_held(repo, progress).await?
        };
        let started = Instant::now();
        match self.embed_pending(repo, progress).await {
            Ok(embedded) => report.embedded = embedded,
            Err(e) => {
                let e = e.explained();
                let message = format!(
                    "embedding failed ({e}); text search works, and the next sync embeds \
                     what is missing"
                );
                if let Err(record) = self
                    .meta
                    .set_repository_status(&repo.id, RepoStatus::Error, Some(&message), None)
                    .await
                {
                    tracing::warn!(repo = %repo.name, error = %record, "cannot record the failed embedding");
                }
                return Err(e);
            }
        }
        report.phases.embed = started.elapsed();
        report.duration += report.phases.embed;
        report_done(&report, progress);
        Ok(report)
    }

    /// The freshness check before a search: [`Indexer::sync`] without its embedding
    /// stage, unless a sync of `repo` is running already: then `None` at once (that sync
    /// brings the index up to date; callers that only want freshness need not queue
    /// behind it). With journals ([`Indexer::with_journals`]), a working tree whose
    /// journal has seen nothing since its last sync is not walked: the report says
    /// nothing changed. Rows it writes are searchable by text; call
    /// [`Indexer::embed_pending`] after.
    pub async fn sync_unless_running(
        &self,
        repo: &Repository,
        progress: &mut Progress,
    ) -> Option<Result<SyncReport, IndexError>> {
        let lock = self.repo_lock(&repo.id);
        let _held = lock.try_lock().ok()?;
        if self.unchanged_since_sync(repo) {
            return Some(Ok(SyncReport::default()));
        }
        Some(self.sync_reported(repo, progress).await)
    }

    /// A sync in its span, reported done; the repository's lock held by the caller.
    pub(super) async fn sync_reported(
        &self,
        repo: &Repository,
        progress: &mut Progress,
    ) -> Result<SyncReport, IndexError> {
        let outcome = self
            .sync_held(repo, progress)
            .instrument(sync_span(repo))
            .await;
        if let Ok(report) = &outcome {
            report_done(report, progress);
        }
        outcome
    }

    /// A sync, with the repository's lock held by the caller.
    pub(super) async fn sync_held(
        &self,
        repo: &Repository,
        progress: &mut Progress,
    ) -> Result<SyncReport, IndexError> {
        // Removed while this sync waited for the lock (a ref dropped, a repository
        // removed): nothing is written for it, so nothing is left behind.
        if self.meta.get_repository(&repo.id).await?.is_none() {
            return Err(IndexError::UnknownRepo(repo.name.clone()));
        }
        self.journal_before_sync(repo).await;
        let outcome = self
            .sync_locked(repo, progress)
            .await
            .map_err(IndexError::explained);
        if outcome.is_ok() {
            self.journal_after_sync(repo);
        }
        let (status, error, commit) = match &outcome {
            Ok((_, commit)) => (RepoStatus::Ready, None, commit.clone()),
            Err(e) => (RepoStatus::Error, Some(e.to_string()), None),
        };
        // A sync that found nothing to do on a ready repository (the freshness check
        // before most searches) writes nothing: no status flip, no write lock taken.
        let idle = matches!(&outcome, Ok((report, c)) if !report.changed_anything()
            && *c == repo.indexed_commit)
            && repo.status == RepoStatus::Ready
            && repo.last_error.is_none();
        let recorded = if idle {
            Ok(())
        } else {
            self.meta
                .set_repository_status(&repo.id, status, error.as_deref(), commit.as_deref())
                .await
        };
        match (recorded, &outcome) {
            (Err(e), Ok(_)) => return Err(IndexError::from(e).explained()),
            // The sync's own error says more than the failure to record it (on a full
            // disk, the second follows from the first).
            (Err(e), Err(first)) => {
                tracing::warn!(repo = %repo.name, error = %e, sync_error = %first, "cannot record the failed sync");
            }
            (Ok(()), _) => {}
        }
        if let Ok((report, _)) = &outcome {
            tracing::Span::current().record("sextant.files_indexed", report.indexed);
        }
        outcome.map(|(report, _)| report)
    }

    pub(super) async fn sync_locked(
        &self,
        repo: &Repository,
        progress: &mut Progress,
    ) -> Result<(SyncReport, Option<String>), IndexError> {
        let started = Instant::now();
        let filter = FileFilter::new(&repo.settings)?;
        let mut stored: HashMap<String, FileRecord> = self
            .meta
            .list_files(&repo.id)
            .await?
            .into_iter()
            .map(|f| (f.path.clone(), f))
            .collect();
        let mut report = SyncReport::default();
        // Files the grep index lacks are read again: their records lose the mtime and
        // hash the change check compares, and a git source is diffed against nothing.
        let mut planned = std::borrow::Cow::Borrowed(repo);
        if let Some(grep) = &self.grep {
            // Another replica may have written the repository last (a copy on object
            // storage): plan against what it published.
            grep.pull(&repo.id, true).await?;
        }
        self.forget_ungrepped(&repo.id, &mut stored);
        // Indexed files without a hash (forgotten above, or by a change of index format)
        // are read again; a git source is then diffed against nothing.
        if stored
            .values()
            .any(|r| r.skip_reason.is_none() && r.content_hash.is_none())
        {
            planned.to_mut().indexed_commit = None;
        }
        let (root, plan) = self
            .plan(&planned, &filter, stored, &mut report, progress)
            .await?;
        report.phases.scan = started.elapsed();
        let Plan {
            pending,
            removals,
            skipped,
            deleted,
            commit,
            configs,
        } = plan;
        // The repository shows `indexing` only while there is something to write.
        if !(pending.is_empty() && removals.is_empty() && skipped.is_empty() && deleted.is_empty())
        {
            self.meta
                .set_repository_status(&repo.id, RepoStatus::Indexing, None, None)
                .await?;
        }
        // Paths whose symbols changed: the graph re-resolves them and their importers.
        let mut changed: Vec<String> = removals.clone();
        changed.extend(skipped.iter().map(|(f, _)| f.rel.clone()));
        changed.extend(pending.iter().map(|p| p.file.rel.clone()));
        progress.report(
            Phase::Scan,
            report.scanned as u64,
            report.scanned as u64,
            Some(format!(
                "{} files: {} unchanged, {} touched, {} to index, {} to remove",
                report.scanned,
                report.unchanged,
                report.touched,
                pending.len(),
                removals.len()
            )),
        );

        changed.extend(deleted.iter().cloned());
        let drop_started = Instant::now();
        self.drop_files(repo, &removals, &skipped, &mut report)
            .await?;
        self.record_deleted(repo, &deleted, &mut report).await?;
        report.phases.drop = drop_started.elapsed();
        self.index_files(repo, &root, pending, progress, &mut report)
            .await?;
        if !changed.is_empty() {
            self.resolve_graph(repo, changed, &configs, progress, &mut report)
                .await?;
        }
        self.maintain_after_bulk(progress, &mut report).await?;
        report.duration = started.elapsed();
        Ok((report, commit))
    }

    /// Re-resolves the graph of the paths whose symbols changed (and their importers).
    async fn resolve_graph(
        &self,
        repo: &Repository,
        changed: Vec<String>,
        configs: &[(String, String)],
        progress: &mut Progress,
        report: &mut SyncReport,
    ) -> Result<(), IndexError> {
        let graph_started = Instant::now();
        let view = crate::index::graph::GraphView {
            repo_id: repo.id.clone(),
            base: repo.parent_id.clone(),
        };
        let graph = crate::index::graph::update_graph(
            self.meta.as_ref(),
            &view,
            changed,
            configs,
            progress,
        )
        .instrument(tracing::info_span!("sync.graph"))
        .await?;
        report.graph_edges = graph.edges;
        report.phases.graph = graph_started.elapsed();
        Ok(())
    }

    /// After a bulk change, folds the new rows into the store's text and vector indexes
    /// now rather than leaving searches to scan them; small changes wait for the store's
    /// periodic maintenance (they are searchable either way).
    async fn maintain_after_bulk(
        &self,
        progress: &mut Progress,
        report: &mut SyncReport,
    ) -> Result<(), IndexError> {
        if report.indexed + report.removed < self.options.maintain_after_files {
            return Ok(());
        }
        progress.report(Phase::Write, 0, 0, Some("updating search indexes".into()));
        let maintained = self
            .vectors
            .maintain()
            .instrument(tracing::info_span!("sync.maintain"));
        timed(&mut report.phases.maintain, maintained).await?;
        Ok(())
    }

    /// Makes the indexed files in `stored` that the grep index (when kept) does not hold
    /// at their recorded hash look changed to the planner.
    fn forget_ungrepped(&self, repo_id: &str, stored: &mut HashMap<String, FileRecord>) {
        let Some(grep) = &self.grep else {
            return;
        };
        let held = grep.snapshot(repo_id);
        let mut forgotten = 0;
        for record in stored.values_mut() {
            if grep_lacks(&held, record) {
                record.content_hash = None;
                record.mtime_ms = None;
                forgotten += 1;
            }
        }
        if forgotten > 0 {
            tracing::info!(files = forgotten, "reading files the grep index lacks");
        }
    }

    /// The indexed files among `files` (of repository `repo_id`) whose content the grep
    /// index lacks at their hash (none without a grep index), after bringing it up to
    /// its copy on object storage (a replica's own copy may only be behind).
    pub(super) async fn ungrepped(&self, repo_id: &str, files: &[FileRecord]) -> Vec<String> {
        let Some(grep) = &self.grep else {
            return Vec::new();
        };
        if let Err(e) = grep.pull(repo_id, true).await {
            tracing::warn!(repository = %repo_id, error = %e, "contents not refreshed from object storage");
        }
        let held = grep.snapshot(repo_id);
        files
            .iter()
            .filter(|record| grep_lacks(&held, record))
            .map(|record| record.path.clone())
            .collect()
    }

    /// What the sync does: the working tree's files against the stored records, or the
    /// fetched commit's tree against the indexed one. Returns the root files are read
    /// from (empty for git, which reads blobs).
    async fn plan(
        &self,
        repo: &Repository,
        filter: &FileFilter,
        stored: HashMap<String, FileRecord>,
        report: &mut SyncReport,
        progress: &mut Progress,
    ) -> Result<(PathBuf, Plan), IndexError> {
        Ok(match &repo.source {
            RepoSource::Path(p) => {
                let root = PathBuf::from(p);
                let base = match &repo.parent_id {
                    Some(parent) => Some(self.overlay_base(parent).await?),
                    None => None,
                };
                let plan = self
                    .plan_worktree(&root, filter, stored, base.as_ref(), report, progress)
                    .instrument(tracing::info_span!("sync.scan"))
                    .await?;
                (root, plan)
            }
            RepoSource::Git(url) => {
                let plan = self
                    .plan_git(repo, url, filter, stored, report, progress)
                    .instrument(tracing::info_span!("sync.scan", git = true))
                    .await?;
                (PathBuf::new(), plan)
            }
        })
    }

    /// Files that are gone lose their chunks, symbols and records; files now skipped
    /// lose their chunks and keep a record with the reason.
    async fn drop_files(
        &self,
        repo: &Repository,
        removals: &[String],
        skipped: &[(ScannedFile, String)],
        report: &mut SyncReport,
    ) -> Result<(), IndexError> {
        // Files that are gone: their chunks, symbols and records go.
        if !removals.is_empty() {
            let batch = removals.iter().map(|p| (p.clone(), Vec::new())).collect();
            self.vectors.replace_files(&repo.id, batch).await?;
            for path in removals {
                self.meta.delete_file(&repo.id, path).await?;
            }
            self.grep_replace(&repo.id, Vec::new(), removals.to_vec())
                .await?;
            report.removed = removals.len();
        }
        // Files now skipped: chunks go, a record with the reason stays.
        if !skipped.is_empty() {
            let batch = skipped
                .iter()
                .map(|(f, _)| (f.rel.clone(), Vec::new()))
                .collect();
            self.vectors.replace_files(&repo.id, batch).await?;
            let paths = skipped.iter().map(|(f, _)| f.rel.clone()).collect();
            self.grep_replace(&repo.id, Vec::new(), paths).await?;
            for (file, reason) in skipped {
                // The symbols of what was indexed before go with the record.
                self.meta.delete_file(&repo.id, &file.rel).await?;
                self.meta
                    .upsert_file(&skipped_record(&repo.id, file, reason))
                    .await?;
            }
            report.skipped = skipped.len();
        }

        Ok(())
    }

    /// A tracked ref's records of the files it deletes: no chunks (an earlier version
    /// the ref held goes), a record that hides the repository's copy.
    async fn record_deleted(
        &self,
        repo: &Repository,
        deleted: &[String],
        report: &mut SyncReport,
    ) -> Result<(), IndexError> {
        if deleted.is_empty() {
            return Ok(());
        }
        let batch = deleted.iter().map(|p| (p.clone(), Vec::new())).collect();
        self.vectors.replace_files(&repo.id, batch).await?;
        self.grep_replace(&repo.id, Vec::new(), deleted.to_vec())
            .await?;
        for path in deleted {
            let record = FileRecord {
                repo_id: repo.id.clone(),
                path: path.clone(),
                language: None,
                content_hash: None,
                mtime_ms: None,
                size_bytes: 0,
                line_count: 0,
                symbol_count: 0,
                indexed_at: Some(now_ms()),
                skip_reason: Some(DELETED_ON_REF.to_string()),
            };
            // The symbols of a version the ref held before go with its record.
            self.meta.delete_file(&repo.id, path).await?;
            self.meta.upsert_file(&record).await?;
        }
        report.removed += deleted.len();
        Ok(())
    }

    /// Parses, chunks, embeds and writes the pending files, a batch at a time.
    async fn index_files(
        &self,
        repo: &Repository,
        root: &Path,
        pending: Vec<Pending>,
        progress: &mut Progress,
        report: &mut SyncReport,
    ) -> Result<(), IndexError> {
        // Phase 2: parse, chunk, embed and write, a batch of files at a time.
        let total = pending.len() as u64;
        let mut done = 0u64;
        let mut pending = pending.into_iter().peekable();
        while pending.peek().is_some() {
            let batch: Vec<Pending> = pending
                .by_ref()
                .take(self.options.batch_files.max(1))
                .collect();
            let added = batch.iter().filter(|p| p.is_new).count();
            let batch_len = batch.len();
            let prepared = self
                .prepare(batch)
                .instrument(tracing::info_span!("sync.parse", files = batch_len));
            let prepared = timed(&mut report.phases.parse, prepared).await?;
            done += prepared.len() as u64;
            progress.report(Phase::Parse, done, total, None);
            self.write_batch(repo, root, prepared, progress, report)
                .await?;
            report.added += added;
            // A batch is committed in both stores: where the crash tests hold a sync.
            if fail_point(SYNC_AFTER_BATCH) {
                tracing::warn!("fail point {SYNC_AFTER_BATCH}: holding this sync");
                std::future::pending::<()>().await;
            }
        }
        Ok(())
    }

    /// Parses and chunks a batch on the blocking pool.
    pub(super) async fn prepare(&self, batch: Vec<Pending>) -> Result<Vec<Prepared>, IndexError> {
        let (limits, chunk_options) = (self.options.parse.clone(), self.options.chunk.clone());
        tokio::task::spawn_blocking(move || {
            batch
                .into_iter()
                .map(|p| {
                    let outcome = parse_bytes(&p.file.path, &p.bytes, &limits)
                        .map(|parsed| {
                            let source = String::from_utf8_lossy(&p.bytes);
                            let mut chunks =
                                chunk_file(&p.file.rel, &source, &parsed, &chunk_options);
                            let facts = FileFacts::attribute(&parsed.refs, &chunks);
                            // The file's outline is a retrievable unit, not a symbol: it
                            // is stored with the chunks and kept out of the graph.
                            chunks.extend(outline_chunk(&p.file.rel, &source, &parsed, &chunks));
                            let facts = serde_json::to_string(&facts).unwrap_or_default();
                            (chunks, parsed.line_count, facts)
                        })
                        .map_err(|e| e.to_string());
                    Prepared {
                        file: p.file,
                        hash: p.hash,
                        is_new: p.is_new,
                        bytes: p.bytes,
                        outcome,
                    }
                })
                .collect()
        })
        .await
        .map_err(|e| IndexError::Task(e.to_string()))
    }

    /// Writes one prepared batch: chunk rows first (with the vectors the cache has), then
    /// SQL records.
    pub(super) async fn write_batch(
        &self,
        repo: &Repository,
        root: &Path,
        prepared: Vec<Prepared>,
        progress: &mut Progress,
        report: &mut SyncReport,
    ) -> Result<(), IndexError> {
        let texts: Vec<String> = prepared
            .iter()
            .filter_map(|p| p.outcome.as_ref().ok())
            .flat_map(|(chunks, _, _)| chunks.iter().map(|c| c.embedding_text.clone()))
            .collect();
        // Rows are written at once, with the vectors the cache already has; the rest are
        // found by text search until `embed_pending` stores their vectors.
        let vectors = self
            .embedder
            .lookup(&texts, InputKind::Document)
            .instrument(tracing::info_span!("sync.cache", texts = texts.len()));
        let vectors = timed(&mut report.phases.cache, vectors).await?;
        let mut vectors = vectors.into_iter();
        let prepared_new: Vec<String> = prepared
            .iter()
            .filter(|p| p.is_new)
            .map(|p| p.file.rel.clone())
            .collect();
        let BatchRows {
            files,
            records,
            facts,
            grep_docs,
            grep_removed,
        } = batch_rows(
            &repo.id,
            root,
            prepared,
            &mut vectors,
            self.grep.is_some(),
            report,
        );
        progress.report(Phase::Write, 0, records.len() as u64, None);
        let added: Vec<String> = prepared_new
            .into_iter()
            .filter(|rel| files.iter().any(|(f, rows)| f == rel && !rows.is_empty()))
            .collect();
        // Contents first: rows that keep their code as lines of their file read it there.
        // The versions they replace stay readable while their segment is not rewritten;
        // until the rows below are written, a search leaves out rows it cannot read.
        let grep = self
            .grep_replace(&repo.id, grep_docs, grep_removed)
            .instrument(tracing::info_span!("sync.grep"));
        timed(&mut report.phases.grep, grep).await?;
        let write = tracing::info_span!("sync.write", files = records.len());
        let rows = self
            .vectors
            .replace_files(&repo.id, files)
            .instrument(write.clone());
        if let Err(e) = timed(&mut report.phases.chunk_rows, rows).await {
            self.take_back(&repo.id, &added).await;
            return Err(e.into());
        }
        let written = async {
            self.meta.replace_files_symbols(&records).await?;
            self.meta.replace_files_facts(&repo.id, &facts).await
        }
        .instrument(write);
        if let Err(e) = timed(&mut report.phases.records, written).await {
            self.take_back(&repo.id, &added).await;
            return Err(e.into());
        }
        progress.report(
            Phase::Write,
            records.len() as u64,
            records.len() as u64,
            None,
        );
        Ok(())
    }

    /// After contents (and perhaps chunk rows) were written but the records were not (a
    /// full disk, a lost database): chunks and contents of files the metadata store has
    /// never seen are taken back (best effort) so searches do not show files it does not
    /// know; changed files keep their new rows, and their old hash makes the next sync
    /// write them again.
    async fn take_back(&self, repo_id: &str, added: &[String]) {
        for rel in added {
            if let Err(undo) = self.vectors.delete_file(repo_id, rel).await {
                tracing::warn!(file = %rel, error = %undo, "cannot take back chunks of a file whose records were not written; `sextant doctor --repair` will");
            }
        }
        if let Err(undo) = self.grep_replace(repo_id, Vec::new(), added.to_vec()).await {
            tracing::warn!(error = %undo, "cannot take back the contents of files whose records were not written; the next sync of the repository does");
        }
    }
}

/// What one batch writes to each store.
struct BatchRows {
    /// Chunk rows per file (none for a failed file, which removes its old rows).
    files: Vec<(String, Vec<ChunkRow>)>,
    /// File records with their symbols.
    records: Vec<(FileRecord, Vec<SymbolRecord>)>,
    /// Graph facts per file, serialised (none for a failed file).
    facts: Vec<(String, Option<String>)>,
    /// Contents for the grep index.
    grep_docs: Vec<NewDoc>,
    /// Paths the grep index drops.
    grep_removed: Vec<String>,
}

/// Splits a prepared batch into each store's rows, counting what it indexed or failed.
/// With the grep index kept (`grepped`), rows whose code is lines of their file say so
/// ([`ChunkRow::code_in_file`]), so that the chunk store keeps the code only there.
fn batch_rows(
    repo_id: &str,
    root: &Path,
    prepared: Vec<Prepared>,
    vectors: &mut impl Iterator<Item = Option<Vec<f32>>>,
    grepped: bool,
    report: &mut SyncReport,
) -> BatchRows {
    let mut out = BatchRows {
        files: Vec::with_capacity(prepared.len()),
        records: Vec::with_capacity(prepared.len()),
        facts: Vec::with_capacity(prepared.len()),
        grep_docs: Vec::with_capacity(prepared.len()),
        grep_removed: Vec::new(),
    };
    for p in prepared {
        let rel = p.file.rel.clone();
        match p.outcome {
            Ok((chunks, lines, file_facts)) => {
                out.facts.push((rel.clone(), Some(file_facts)));
                let text = grepped.then(|| String::from_utf8_lossy(&p.bytes));
                let (record, symbols, mut rows) =
                    file_rows(repo_id, root, &p.file, &p.hash, chunks, lines, vectors);
                if let Some(text) = &text {
                    let starts = LineStarts::of(text);
                    for row in &mut rows {
                        let c = &row.chunk;
                        row.code_in_file = starts.lines(text, c.start_line, c.end_line)
                            == Some(c.full_source.as_str());
                    }
                }
                drop(text);
                out.grep_docs.push(NewDoc {
                    path: rel.clone(),
                    hash: p.hash.clone(),
                    language: p.file.language.id().to_string(),
                    content: p.bytes,
                });
                report.indexed += 1;
                report.chunks += rows.len();
                report.written_with_vectors += rows.iter().filter(|r| !r.vector.is_empty()).count();
                report.lines += u64::from(lines);
                out.files.push((rel, rows));
                out.records.push((record, symbols));
            }
            Err(reason) => {
                out.grep_removed.push(rel.clone());
                out.facts.push((rel.clone(), None));
                report.failed.push((rel.clone(), reason.clone()));
                out.files.push((rel, Vec::new()));
                out.records
                    .push((skipped_record(repo_id, &p.file, &reason), Vec::new()));
            }
        }
    }
    out
}

/// One indexed file's rows: its record, its symbols and its chunk rows, each chunk with
/// the next of `vectors` (the embedding cache's vectors, in chunk order; empty where the
/// cache has none yet).
fn file_rows(
    repo_id: &str,
    root: &Path,
    file: &ScannedFile,
    hash: &str,
    chunks: Vec<CodeChunk>,
    lines: u32,
    vectors: &mut impl Iterator<Item = Option<Vec<f32>>>,
) -> (FileRecord, Vec<SymbolRecord>, Vec<ChunkRow>) {
    let symbols: Vec<SymbolRecord> = chunks
        .iter()
        .filter(|c| c.node_kind != SymbolKind::File)
        .map(SymbolRecord::from_chunk)
        .collect();
    let record = FileRecord {
        repo_id: repo_id.to_string(),
        path: file.rel.clone(),
        language: Some(file.language.id().to_string()),
        content_hash: Some(hash.to_string()),
        mtime_ms: Some(file.mtime_ms),
        size_bytes: file.size as i64,
        line_count: i64::from(lines),
        symbol_count: symbols.len() as i64,
        indexed_at: Some(now_ms()),
        skip_reason: None,
    };
    let file_path = root.join(&file.rel).to_string_lossy().into_owned();
    let rows = chunks
        .into_iter()
        .map(|chunk| ChunkRow {
            repo_id: repo_id.to_string(),
            file_path: file_path.clone(),
            chunk,
            content_hash: hash.to_string(),
            last_modified: file.mtime_ms,
            vector: vectors.next().flatten().unwrap_or_default(),
            code_in_file: false,
        })
        .collect();
    (record, symbols, rows)
}

/// Whether indexed file `record` has a content hash that `held` (its repository's grep
/// snapshot) does not hold it at.
fn grep_lacks(held: &crate::store::grep::Snapshot, record: &FileRecord) -> bool {
    record.skip_reason.is_none()
        && record.content_hash.is_some()
        && held.hash_of(&record.path) != record.content_hash.as_deref()
}
