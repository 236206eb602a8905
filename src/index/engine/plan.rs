//! Sync planning: what changed in a working tree (mtime and size, then hashes) or
//! between two git commits (a tree diff), as the work a sync must do.

use super::*;

impl Indexer {
    /// Scans a working tree and applies the two-phase change check. With `base` (the
    /// file records of the repository a worktree ref overlays), files whose content is
    /// the base's are left to the base: the ref holds only what differs, and records
    /// the base's files it lacks as deleted.
    pub(super) async fn plan_worktree(
        &self,
        root: &Path,
        filter: &FileFilter,
        mut stored: HashMap<String, FileRecord>,
        base: Option<&HashMap<String, FileRecord>>,
        report: &mut SyncReport,
        progress: &mut Progress,
    ) -> Result<Plan, IndexError> {
        progress.report(
            Phase::Scan,
            0,
            0,
            Some(format!("scanning {}", root.display())),
        );
        let scan = {
            let (root, filter) = (root.to_path_buf(), filter.clone());
            tokio::task::spawn_blocking(move || scan_tree(&root, &filter))
                .await
                .map_err(|e| IndexError::Task(e.to_string()))??
        };
        report.scanned = scan.files.len();
        let scanned: std::collections::HashSet<String> = match base {
            Some(_) => scan.files.iter().map(|f| f.rel.clone()).collect(),
            None => Default::default(),
        };
        let mut pending = Vec::new();
        // Files a worktree ref held that are now as in its base.
        let mut as_base = Vec::new();
        let total = scan.files.len() as u64;
        // Files are opened only where the scan found them: under the real root.
        let real_root = std::fs::canonicalize(root).map_err(|source| IndexError::Io {
            path: root.to_path_buf(),
            source,
        })?;
        for (i, mut file) in scan.files.into_iter().enumerate() {
            let previous = stored.remove(&file.rel);
            if let Some(prev) = &previous
                && prev.skip_reason.is_none()
                && prev.mtime_ms == Some(file.mtime_ms)
                && prev.size_bytes == file.size as i64
            {
                report.unchanged += 1;
                continue;
            }
            let bytes = match read_scanned(&real_root, &mut file, filter.max_file_bytes()) {
                Ok(b) => b,
                Err(reason) => {
                    // Vanished, swapped or still changing since the scan: recorded, the
                    // sync goes on (an indexed copy stays until a sync reads it again).
                    report.failed.push((file.rel.clone(), reason));
                    continue;
                }
            };
            let hash = sha256_hex(&bytes);
            let in_base = base.and_then(|b| b.get(&file.rel)).is_some_and(|b| {
                b.skip_reason.is_none() && b.content_hash.as_deref() == Some(&hash)
            });
            if in_base {
                match previous {
                    Some(_) => as_base.push(file.rel),
                    None => report.unchanged += 1,
                }
                continue;
            }
            match previous {
                Some(mut prev)
                    if prev.skip_reason.is_none()
                        && prev.content_hash.as_deref() == Some(&hash) =>
                {
                    prev.mtime_ms = Some(file.mtime_ms);
                    self.meta.upsert_file(&prev).await?;
                    report.touched += 1;
                }
                previous => pending.push(Pending {
                    file,
                    hash,
                    bytes,
                    is_new: previous.is_none(),
                }),
            }
            if i % 256 == 0 {
                progress.report(Phase::Scan, i as u64 + 1, total, None);
            }
        }
        let (removals, skipped, deleted) =
            settle_worktree(&stored, base, &scanned, scan.skipped, as_base);
        Ok(Plan {
            pending,
            removals,
            skipped,
            deleted,
            commit: base
                .map(|_| crate::index::git::head_commit(root).unwrap_or_else(|| "worktree".into())),
            configs: scan.configs,
        })
    }

    /// Fetches a git source and diffs the indexed commit against the tracked ref.
    pub(super) async fn plan_git(
        &self,
        repo: &Repository,
        url: &str,
        filter: &FileFilter,
        stored: HashMap<String, FileRecord>,
        report: &mut SyncReport,
        progress: &mut Progress,
    ) -> Result<Plan, IndexError> {
        progress.report(Phase::Scan, 0, 0, Some(format!("fetching {url}")));
        // Checked again before every fetch: a name may resolve elsewhere than it did.
        let location = GitLocation::parse(url).map_err(IndexError::Git)?;
        self.check_git_location(&location)
            .await
            .map_err(|reason| IndexError::Git(format!("refusing to fetch {url}: {reason}")))?;
        let deadline = Instant::now() + self.options.git.fetch_deadline;
        // Network fetches go through a proxy that closes them at the deadline, whatever
        // phase libgit2 is in; it lives until the fetch returns or this is dropped.
        let proxy = DeadlineProxy::for_fetch(
            url,
            &location.transport,
            deadline.into(),
            self.options.git.allow_private_hosts,
        )
        .await
        .map_err(|e| IndexError::Git(format!("cannot start the fetch proxy: {e}")))?;
        let access = crate::index::git::FetchAccess {
            credentials: self.meta.credentials(&repo.id).await?,
            deadline: Some(deadline),
            route: proxy.as_ref().map(|p| p.route().clone()),
        };
        let shown = url.to_string();
        let (mirror_of, old) = self.diff_base(repo).await?;
        let (url, dir, tracked, filter) = (
            url.to_string(),
            self.checkout_dir(&mirror_of),
            repo.tracked_ref.clone(),
            filter.clone(),
        );
        let (plan, stored) = tokio::task::spawn_blocking(move || {
            crate::index::git::plan(
                &url,
                &access,
                &dir,
                tracked.as_deref(),
                old.as_deref(),
                &filter,
                &stored,
            )
            .map(|p| (p, stored))
        })
        .await
        .map_err(|e| IndexError::Task(e.to_string()))?
        .map_err(|e| match proxy.as_ref().and_then(DeadlineProxy::refusal) {
            // libgit2 says only that the proxy answered 403 or closed; say why.
            Some(why) => IndexError::Git(format!("cannot fetch {shown}: {why}")),
            None => e,
        })?;
        drop(proxy);
        report.unchanged = plan.unchanged;
        report.scanned = plan.changed.len() + plan.unchanged;
        let mut pending: Vec<Pending> = plan
            .changed
            .into_iter()
            .map(|g| Pending {
                is_new: !stored.contains_key(&g.file.rel),
                file: g.file,
                hash: g.blob,
                bytes: g.bytes,
            })
            .collect();
        let mut skipped = plan.skipped;
        if repo.parent_id.is_some() {
            return Ok(overlay_plan(
                stored,
                pending,
                skipped,
                plan.removed,
                plan.named,
                plan.commit,
                plan.configs,
            ));
        }
        let limit = usize::try_from(repo.settings.max_files).unwrap_or(usize::MAX);
        apply_file_limit(limit, &stored, &plan.removed, &mut pending, &mut skipped);
        Ok(Plan {
            pending,
            removals: plan
                .removed
                .into_iter()
                .filter(|p| stored.contains_key(p))
                .collect(),
            skipped,
            deleted: Vec::new(),
            commit: Some(plan.commit),
            configs: plan.configs,
        })
    }
}

impl Indexer {
    /// Whose mirror a git sync fetches into and the commit it diffs from: a repository's
    /// own and its indexed commit, or, for a tracked ref, its repository's mirror and
    /// indexed commit (the ref holds what differs from it).
    async fn diff_base(&self, repo: &Repository) -> Result<(String, Option<String>), IndexError> {
        let Some(parent_id) = &repo.parent_id else {
            return Ok((repo.id.clone(), repo.indexed_commit.clone()));
        };
        let parent = self.find_repo(parent_id).await?;
        let Some(base) = parent.indexed_commit.clone() else {
            return Err(IndexError::Git(format!(
                "`{}` has not been indexed yet: its refs are synced after it",
                parent.name
            )));
        };
        Ok((parent.id, Some(base)))
    }

    /// The file records of the local repository `parent_id` that a worktree ref
    /// overlays, by path.
    pub(super) async fn overlay_base(
        &self,
        parent_id: &str,
    ) -> Result<HashMap<String, FileRecord>, IndexError> {
        let parent = self.find_repo(parent_id).await?;
        if parent.status == RepoStatus::Registered {
            return Err(IndexError::Settings(format!(
                "`{}` has not been indexed yet: its worktrees are synced after it",
                parent.name
            )));
        }
        Ok(self
            .meta
            .list_files(&parent.id)
            .await?
            .into_iter()
            .map(|f| (f.path.clone(), f))
            .collect())
    }
}

/// The plan of a tracked ref from the diff of its repository's indexed commit against
/// the ref's commit: files changed on the ref are indexed (unless already held at that
/// blob), files it deletes are recorded as deleted, and what the ref held before but no
/// longer differs from the repository is removed from it.
fn overlay_plan(
    stored: HashMap<String, FileRecord>,
    pending: Vec<Pending>,
    skipped: Vec<(ScannedFile, String)>,
    removed: Vec<String>,
    named: std::collections::HashSet<String>,
    commit: String,
    configs: Vec<(String, String)>,
) -> Plan {
    let deleted: Vec<String> = removed
        .into_iter()
        .filter(|p| {
            stored
                .get(p)
                .is_none_or(|f| f.skip_reason.as_deref() != Some(DELETED_ON_REF))
        })
        .collect();
    let removals = stored
        .keys()
        .filter(|p| !named.contains(p.as_str()))
        .cloned()
        .collect();
    Plan {
        pending,
        removals,
        skipped,
        deleted,
        commit: Some(commit),
        configs,
    }
}

/// The file limit on a git sync: files already indexed keep their place; new ones
/// beyond `limit` (in path order) move from `pending` to `skipped`, as a working-tree
/// scan records them.
fn apply_file_limit(
    limit: usize,
    stored: &HashMap<String, FileRecord>,
    removed: &[String],
    pending: &mut Vec<Pending>,
    skipped: &mut Vec<(ScannedFile, String)>,
) {
    let kept = stored
        .values()
        .filter(|f| f.skip_reason.is_none() && !removed.contains(&f.path))
        .count();
    let indexed = |rel: &str| stored.get(rel).is_some_and(|f| f.skip_reason.is_none());
    let new = pending.iter().filter(|p| !indexed(&p.file.rel)).count();
    if kept + new <= limit {
        return;
    }
    let mut room = limit.saturating_sub(kept);
    pending.sort_by(|a, b| a.file.rel.cmp(&b.file.rel));
    pending.retain(|p| {
        if indexed(&p.file.rel) {
            return true;
        }
        if room > 0 {
            room -= 1;
            return true;
        }
        skipped.push((
            p.file.clone(),
            format!("over the repository's limit of {limit} files"),
        ));
        false
    });
}

/// What a worktree scan leaves to remove, record as skipped and record as deleted on a
/// worktree ref: the stored files it no longer has, those it skips for a new reason, and
/// the base's files it lacks.
fn settle_worktree(
    stored: &HashMap<String, FileRecord>,
    base: Option<&HashMap<String, FileRecord>>,
    scanned: &std::collections::HashSet<String>,
    scan_skipped: Vec<(ScannedFile, String)>,
    as_base: Vec<String>,
) -> (Vec<String>, Vec<(ScannedFile, String)>, Vec<String>) {
    let skipped_paths: std::collections::HashSet<&str> =
        scan_skipped.iter().map(|(f, _)| f.rel.as_str()).collect();
    let seen = |p: &str| skipped_paths.contains(p) || scanned.contains(p);
    // The base's files the worktree lacks are deleted on it (once).
    let deleted: Vec<String> = base
        .into_iter()
        .flat_map(|b| b.values())
        .filter(|b| b.skip_reason.is_none() && !seen(&b.path))
        .filter(|b| {
            stored
                .get(&b.path)
                .is_none_or(|r| r.skip_reason.as_deref() != Some(DELETED_ON_REF))
        })
        .map(|b| b.path.clone())
        .collect();
    let deleting: std::collections::HashSet<&str> = deleted.iter().map(String::as_str).collect();
    let mut removals: Vec<String> = stored
        .values()
        .filter(|r| !skipped_paths.contains(r.path.as_str()))
        // A deletion recorded on a worktree ref stays while the base has the file.
        .filter(|r| {
            r.skip_reason.as_deref() != Some(DELETED_ON_REF)
                || base.is_none_or(|b| !b.contains_key(&r.path))
        })
        .filter(|r| !deleting.contains(r.path.as_str()))
        .map(|r| r.path.clone())
        .collect();
    removals.extend(as_base);
    // Files skipped for the same reason as last time (or, on a worktree ref, as in
    // its base) are already recorded as such.
    let skipped = scan_skipped
        .into_iter()
        .filter(|(f, reason)| {
            let same = |r: &FileRecord| r.skip_reason.as_deref() == Some(reason.as_str());
            match stored.get(&f.rel) {
                Some(r) => !same(r),
                None => base.and_then(|b| b.get(&f.rel)).is_none_or(|r| !same(r)),
            }
        })
        .collect();
    (removals, skipped, deleted)
}
