//! The freshness check before a search, and the change journals that make it cheap.
//!
//! Without a journal, the check is a sync: the two-phase dirty check walks the working
//! tree and stats every file (~14 µs a file: 75 ms at 5,000 files), before every search.
//! With journals on ([`Indexer::with_journals`], for processes that live on), each sync
//! of a working tree starts or drains its [`Journal`]; a check then reads the journal's
//! queue and walks only when something that can matter changed since the last sync ended
//! (or a minute passed since the last walk: [`WALK_AT_LEAST_EVERY`]).

use std::path::PathBuf;

/// However quiet its journal, a working tree is walked again after this long: inotify
/// does not see every change (writes by another machine to a network file system, a
/// file changed through a memory mapping), and this bounds how long such a change can
/// go unseen. One walk a minute costs a server ~75 ms per 5,000 files.
const WALK_AT_LEAST_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

use super::*;
use crate::index::journal::{Journal, StartError};

/// A working tree's journal and what it has seen since its last finished sync.
pub(super) enum Tracked {
    /// The journal of `root`, under `settings`.
    Watched {
        root: PathBuf,
        settings: Box<RepoSettings>,
        journal: Journal,
        /// Something changed since the last sync finished (or none has yet).
        dirty: bool,
        /// The journal cannot vouch for the tree any more: the next sync starts a new one.
        restart: bool,
        /// When the last sync that walked the tree began.
        walked: Instant,
    },
    /// No journal can be kept of `root` (no inotify, or past the watch limit): every
    /// check walks. Not retried while the root stays the same.
    Unwatchable { root: PathBuf },
}

/// Journals by repository id.
pub(super) type Journals = std::sync::Mutex<HashMap<String, Tracked>>;

impl Indexer {
    /// Keeps a change journal of each working tree it syncs, so that a freshness check
    /// after which nothing changed does not walk the tree. For processes that live on
    /// (`serve`, `mcp`): a one-shot command would pay for watches it never reads.
    pub fn with_journals(mut self) -> Self {
        self.journals = Some(std::sync::Mutex::new(HashMap::new()));
        self
    }

    fn journals(&self) -> Option<std::sync::MutexGuard<'_, HashMap<String, Tracked>>> {
        let journals = self.journals.as_ref()?;
        Some(
            journals
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    }

    /// Whether `repo`'s journal vouches that nothing changed since its last sync.
    pub(super) fn unchanged_since_sync(&self, repo: &Repository) -> bool {
        let RepoSource::Path(root) = &repo.source else {
            return false;
        };
        if repo.status != RepoStatus::Ready || repo.last_error.is_some() {
            return false;
        }
        let Some(mut journals) = self.journals() else {
            return false;
        };
        let Some(Tracked::Watched {
            root: watched,
            settings,
            journal,
            dirty,
            restart,
            walked,
        }) = journals.get_mut(&repo.id)
        else {
            return false;
        };
        if watched.as_os_str() != root.as_str()
            || **settings != repo.settings
            || walked.elapsed() >= WALK_AT_LEAST_EVERY
        {
            return false;
        }
        let reading = journal.read();
        *dirty |= reading.changed;
        *restart |= reading.restart;
        !*dirty
    }

    /// Before a sync of a working tree reads it: its journal is started (or started
    /// again) or drained. What changes from here on is the next sync's to see.
    pub(super) async fn journal_before_sync(&self, repo: &Repository) {
        let RepoSource::Path(root) = &repo.source else {
            return;
        };
        let root = PathBuf::from(root);
        {
            let Some(mut journals) = self.journals() else {
                return;
            };
            match journals.get_mut(&repo.id) {
                Some(Tracked::Watched {
                    root: watched,
                    settings,
                    journal,
                    restart: false,
                    walked,
                    ..
                }) if *watched == root && **settings == repo.settings => {
                    let _ = journal.read();
                    *walked = Instant::now();
                    return;
                }
                Some(Tracked::Unwatchable { root: r }) if *r == root => return,
                // Gone first, so that its watches count no more against the limit.
                _ => drop(journals.remove(&repo.id)),
            }
        }
        let started = {
            let root = root.clone();
            tokio::task::spawn_blocking(move || Journal::start(&root)).await
        };
        let tracked = match started {
            Ok(Ok(journal)) => {
                tracing::debug!(repo = %repo.name, directories = journal.directories(), "change journal started");
                Tracked::Watched {
                    root,
                    settings: Box::new(repo.settings.clone()),
                    journal,
                    dirty: true,
                    restart: false,
                    walked: Instant::now(),
                }
            }
            // Not there now (the sync reports it): tried again by the next sync.
            Ok(Err(StartError::NoRoot(reason))) => {
                tracing::debug!(repo = %repo.name, %reason, "no change journal yet");
                return;
            }
            Ok(Err(StartError::Unavailable(reason))) => {
                tracing::warn!(repo = %repo.name, %reason, "no change journal: every search walks this working tree to check it is fresh");
                Tracked::Unwatchable { root }
            }
            Err(e) => {
                tracing::warn!(repo = %repo.name, error = %e, "no change journal");
                Tracked::Unwatchable { root }
            }
        };
        if let Some(mut journals) = self.journals() {
            journals.insert(repo.id.clone(), tracked);
        }
    }

    /// After a sync of a working tree finished: clean unless something changed while it
    /// ran (a sync that failed or was abandoned leaves the tree dirty).
    pub(super) fn journal_after_sync(&self, repo: &Repository) {
        let Some(mut journals) = self.journals() else {
            return;
        };
        if let Some(Tracked::Watched {
            journal,
            dirty,
            restart,
            ..
        }) = journals.get_mut(&repo.id)
        {
            let reading = journal.read();
            *dirty = reading.changed;
            *restart |= reading.restart;
        }
    }

    /// Drops the journal of a repository that is no longer registered.
    pub(super) fn forget_journal(&self, repo_id: &str) {
        if let Some(mut journals) = self.journals() {
            journals.remove(repo_id);
        }
    }
}
