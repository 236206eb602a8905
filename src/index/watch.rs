//! Optional file watching for working trees (`RepoSettings::watch`): filesystem events,
//! debounced, filtered to supported source files outside skipped folders, become sync
//! jobs. The sync itself still does the two-phase check, so a burst of saves costs one
//! cheap sync.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify_debouncer_mini::notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_mini::{DebounceEventResult, Debouncer, new_debouncer};

use super::scan::SKIPPED_DIRS;
use super::{IndexError, JobRunner};
use crate::store::{RepoSource, Repository};

/// A running watch; dropping it stops watching.
pub struct Watch {
    _debouncer: Debouncer<RecommendedWatcher>,
}

/// Whether a changed path can matter to the index.
fn relevant(root: &Path, path: &Path) -> bool {
    let rel = path.strip_prefix(root).unwrap_or(path);
    super::scan::language_of(path).is_some()
        && !rel
            .components()
            .any(|c| SKIPPED_DIRS.iter().any(|d| c.as_os_str() == *d))
}

/// Watches `root` recursively and calls `on_change` with the relevant paths of each
/// debounced burst of events.
pub fn watch_dir(
    root: &Path,
    debounce: Duration,
    on_change: impl Fn(Vec<PathBuf>) + Send + 'static,
) -> Result<Watch, IndexError> {
    let base = root.to_path_buf();
    let mut debouncer = new_debouncer(debounce, move |result: DebounceEventResult| {
        if let Ok(events) = result {
            let paths: Vec<PathBuf> = events
                .into_iter()
                .map(|e| e.path)
                .filter(|p| relevant(&base, p))
                .collect();
            if !paths.is_empty() {
                on_change(paths);
            }
        }
    })
    .map_err(|e| IndexError::Settings(format!("cannot start a file watcher: {e}")))?;
    debouncer
        .watcher()
        .watch(root, RecursiveMode::Recursive)
        .map_err(|e| IndexError::Settings(format!("cannot watch {}: {e}", root.display())))?;
    Ok(Watch {
        _debouncer: debouncer,
    })
}

/// The watches a job runner keeps, by repository id, with the directory each watches;
/// `None` where a watch could not start (tried again once the source changes).
#[derive(Default)]
pub struct Watches(HashMap<String, (RepoSource, Option<Watch>)>);

impl Watches {
    /// How many working trees are watched.
    pub fn len(&self) -> usize {
        self.0.values().filter(|(_, w)| w.is_some()).count()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl JobRunner {
    /// Watches every working tree whose settings ask for it (`settings.watch`: a local
    /// repository, or a worktree it tracks as a ref) and that is not watched yet, and
    /// stops watching those removed or no longer asking. [`JobRunner::run_forever`]
    /// calls it on every poll, so a repository or worktree added while the server runs
    /// is watched within a poll.
    pub async fn refresh_watches(
        self: &Arc<Self>,
        watches: &mut Watches,
        debounce: Duration,
    ) -> Result<(), IndexError> {
        let wanted: Vec<Repository> = self
            .indexer
            .meta()
            .list_repositories()
            .await?
            .into_iter()
            .filter(|r| r.settings.watch && matches!(r.source, RepoSource::Path(_)))
            .collect();
        watches
            .0
            .retain(|id, (source, _)| wanted.iter().any(|r| r.id == *id && r.source == *source));
        for repo in wanted {
            if watches.0.contains_key(&repo.id) {
                continue;
            }
            let watch = match self.watch(&repo, debounce) {
                Ok(watch) => Some(watch),
                Err(e) => {
                    tracing::warn!(repo = %repo.name, error = %e, "not watching");
                    None
                }
            };
            watches
                .0
                .insert(repo.id.clone(), (repo.source.clone(), watch));
        }
        Ok(())
    }

    /// Watches a working-tree repository: changes queue a sync job. Call from within a
    /// tokio runtime.
    pub fn watch(
        self: &Arc<Self>,
        repo: &Repository,
        debounce: Duration,
    ) -> Result<Watch, IndexError> {
        let RepoSource::Path(root) = &repo.source else {
            return Err(IndexError::Settings(format!(
                "repository `{}` is a git source: it is refreshed by fetching, not watched",
                repo.name
            )));
        };
        let runtime = tokio::runtime::Handle::current();
        let (runner, repo_id) = (self.clone(), repo.id.clone());
        watch_dir(Path::new(root), debounce, move |paths| {
            tracing::debug!(changed = paths.len(), repo = %repo_id, "files changed");
            let (runner, repo_id) = (runner.clone(), repo_id.clone());
            runtime.spawn(async move {
                if let Err(e) = runner.enqueue_sync(&repo_id).await {
                    tracing::error!(error = %e, "cannot queue a sync after a change");
                }
            });
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_source_files_outside_skipped_folders_matter() {
        let root = Path::new("/r");
        assert!(relevant(root, Path::new("/r/src/a.ts")));
        assert!(
            relevant(root, Path::new("/r/README.md")),
            "documentation is indexed"
        );
        assert!(!relevant(root, Path::new("/r/notes.txt")));
        assert!(!relevant(root, Path::new("/r/node_modules/x/a.js")));
        assert!(!relevant(root, Path::new("/r/.git/index")));
    }

    #[test]
    fn a_burst_of_writes_is_reported_once_debounced() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let _watch = watch_dir(&root, Duration::from_millis(200), move |paths| {
            let _ = tx.send(paths);
        })
        .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        for i in 0..5 {
            std::fs::write(root.join("a.ts"), format!("export const a = {i};")).unwrap();
        }
        std::fs::write(root.join("notes.txt"), "ignored").unwrap();
        let paths = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("a change event");
        assert!(paths.iter().all(|p| p.ends_with("a.ts")), "{paths:?}");
    }
}
