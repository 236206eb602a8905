//! Change journals of working trees: what lets the freshness check before a search cost a
//! read of a queue instead of a walk of the tree.
//!
//! A [`Journal`] holds an inotify watch on every directory a scan of the tree enters (the
//! same walker: ignore files honoured, [`super::scan::SKIPPED_DIRS`] never entered). The
//! kernel queues an event before the write that causes it returns, and [`Journal::read`]
//! drains that queue without waiting, so a change made before a search began is always
//! seen by it: an agent's own edit is never missed, with no time window to tune.
//!
//! The journal only says *whether* something that can matter changed; the sync that
//! follows still does the two-phase check, which stays the one source of truth. Whatever
//! the journal cannot follow cheaply (a directory created, moved or deleted, an ignore file
//! edited, the kernel's queue overflowing) asks for a restart: the next sync walks the tree
//! as before and starts a new journal. Platforms without inotify, and trees past the
//! watch limit (`fs.inotify.max_user_watches`), have no journal: every search walks.

use std::path::Path;

/// Why a journal could not be started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartError {
    /// This system cannot keep one for this tree (no inotify, or the watch limit):
    /// checks walk the tree instead.
    Unavailable(String),
    /// The tree's root is not a readable directory now: the next sync tries again.
    NoRoot(String),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unavailable(why) | Self::NoRoot(why) => f.write_str(why),
        }
    }
}

/// What [`Journal::read`] found in the events queued since the last read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    /// A file that can matter to the index was written, created, moved or deleted.
    pub changed: bool,
    /// The journal can no longer vouch for the tree (a directory came or went, an ignore
    /// file changed, events were lost): start a new one.
    pub restart: bool,
}

/// Names whose change can alter what the scan finds or reads: sources (by extension),
/// files without an extension (a script is recognised by its first line, which a read
/// after a deletion cannot see), and module-resolution configuration.
fn can_matter(name: &std::ffi::OsStr) -> bool {
    let path = Path::new(name);
    path.extension().is_none()
        || crate::parse::Language::from_path(path).is_some()
        || super::scan::CONFIG_FILES.iter().any(|c| name == *c)
}

/// Ignore files: a change re-decides which directories the scan enters.
fn is_ignore_file(name: &std::ffi::OsStr) -> bool {
    super::scan::IGNORE_FILES.iter().any(|f| name == *f)
}

#[cfg(target_os = "linux")]
mod imp {
    use std::io::ErrorKind;
    use std::path::Path;

    use inotify::{EventMask, Inotify, WatchMask};

    use super::{Reading, StartError};

    /// Events that can change what a scan finds. Attribute changes are left out: a
    /// `touch` alone cannot change a file's content.
    fn mask() -> WatchMask {
        WatchMask::MODIFY
            | WatchMask::CLOSE_WRITE
            | WatchMask::CREATE
            | WatchMask::DELETE
            | WatchMask::MOVED_FROM
            | WatchMask::MOVED_TO
            | WatchMask::DELETE_SELF
            | WatchMask::MOVE_SELF
            | WatchMask::ONLYDIR
    }

    pub struct Journal {
        inotify: Inotify,
        buffer: Vec<u8>,
        directories: usize,
    }

    impl Journal {
        pub fn start(root: &Path) -> Result<Self, StartError> {
            let inotify =
                Inotify::init().map_err(|e| StartError::Unavailable(format!("inotify: {e}")))?;
            // The root first: a journal that watches nothing would vouch for everything.
            inotify
                .watches()
                .add(root, mask())
                .map_err(|e| match e.kind() {
                    ErrorKind::NotFound
                    | ErrorKind::NotADirectory
                    | ErrorKind::PermissionDenied => {
                        StartError::NoRoot(format!("cannot watch {}: {e}", root.display()))
                    }
                    _ => StartError::Unavailable(format!("cannot watch {}: {e}", root.display())),
                })?;
            let mut directories = 1;
            for entry in crate::index::scan::walk(root) {
                let Ok(entry) = entry else { continue };
                if entry.depth() == 0 || !entry.file_type().is_some_and(|t| t.is_dir()) {
                    continue;
                }
                match inotify.watches().add(entry.path(), mask()) {
                    Ok(_) => directories += 1,
                    // Gone since it was listed: the sync's own scan sees the tree as it is.
                    Err(e) if e.kind() == ErrorKind::NotFound => {}
                    Err(e) => {
                        return Err(StartError::Unavailable(format!(
                            "cannot watch {} ({e}; raise fs.inotify.max_user_watches for \
                             trees with this many directories)",
                            entry.path().display()
                        )));
                    }
                }
            }
            Ok(Self {
                inotify,
                // Room for many events per read; a read returns whole events only.
                buffer: vec![0; 64 * 1024],
                directories,
            })
        }

        pub fn directories(&self) -> usize {
            self.directories
        }

        pub fn read(&mut self) -> Reading {
            let mut reading = Reading::default();
            loop {
                let events = match self.inotify.read_events(&mut self.buffer) {
                    Ok(events) => events,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => return reading,
                    Err(e) => {
                        tracing::debug!(error = %e, "the change journal cannot be read");
                        reading.restart = true;
                        return reading;
                    }
                };
                for event in events {
                    let mask = event.mask;
                    if mask.intersects(
                        EventMask::Q_OVERFLOW
                            | EventMask::IGNORED
                            | EventMask::DELETE_SELF
                            | EventMask::MOVE_SELF,
                    ) || (mask.contains(EventMask::ISDIR)
                        && mask.intersects(
                            EventMask::CREATE
                                | EventMask::DELETE
                                | EventMask::MOVED_FROM
                                | EventMask::MOVED_TO,
                        ))
                    {
                        reading.restart = true;
                        reading.changed = true;
                    } else if let Some(name) = event.name {
                        if super::is_ignore_file(name) {
                            reading.restart = true;
                            reading.changed = true;
                        } else if super::can_matter(name) {
                            reading.changed = true;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::path::Path;

    use super::{Reading, StartError};

    pub struct Journal;

    impl Journal {
        pub fn start(_root: &Path) -> Result<Self, StartError> {
            Err(StartError::Unavailable(
                "change journals need inotify (Linux)".into(),
            ))
        }

        pub fn directories(&self) -> usize {
            0
        }

        pub fn read(&mut self) -> Reading {
            Reading {
                changed: true,
                restart: true,
            }
        }
    }
}

/// The change journal of one working tree (see the module's documentation).
pub struct Journal(imp::Journal);

impl Journal {
    /// Watches every directory a scan of `root` enters. Fails on platforms without
    /// inotify and past the system's watch limit (the caller then walks on every check),
    /// and when `root` cannot be watched now. Blocking: walks the tree.
    pub fn start(root: &Path) -> Result<Self, StartError> {
        imp::Journal::start(root).map(Self)
    }

    /// Directories watched.
    pub fn directories(&self) -> usize {
        self.0.directories()
    }

    /// Drains the events queued since the last read, without waiting.
    pub fn read(&mut self) -> Reading {
        self.0.read()
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn quiet(journal: &mut Journal) {
        let _ = journal.read();
    }

    #[test]
    fn a_source_edit_is_seen_by_the_next_read_without_waiting() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::write(root.join("src/deep/a.ts"), "export const a = 1;").unwrap();
        let mut journal = Journal::start(root).unwrap();
        assert_eq!(journal.directories(), 3);
        assert_eq!(journal.read(), Reading::default(), "nothing changed yet");

        // The write returns, then the read at once: the event is already queued.
        std::fs::write(root.join("src/deep/a.ts"), "export const a = 2;").unwrap();
        assert_eq!(
            journal.read(),
            Reading {
                changed: true,
                restart: false
            }
        );
        assert_eq!(
            journal.read(),
            Reading::default(),
            "a read drains the queue"
        );

        std::fs::remove_file(root.join("src/deep/a.ts")).unwrap();
        assert!(journal.read().changed, "a deletion");
        std::fs::write(root.join("src/b.py"), "x = 1").unwrap();
        assert!(journal.read().changed, "a new file");
        std::fs::write(root.join("src/package.json"), "{}").unwrap();
        assert!(journal.read().changed, "module-resolution configuration");
        std::fs::write(root.join("src/run"), "#!/bin/sh").unwrap();
        assert!(journal.read().changed, "a file without an extension");
    }

    #[test]
    fn files_the_scan_never_reads_change_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::create_dir_all(root.join("node_modules/x")).unwrap();
        std::fs::create_dir_all(root.join("ignored")).unwrap();
        std::fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
        let mut journal = Journal::start(root).unwrap();
        quiet(&mut journal);
        std::fs::write(root.join("notes.txt"), "words").unwrap();
        std::fs::write(root.join(".a.ts.swp"), "vim").unwrap();
        std::fs::write(root.join("node_modules/x/index.js"), "module.exports = 1").unwrap();
        std::fs::write(root.join("ignored/a.ts"), "export {}").unwrap();
        assert_eq!(journal.read(), Reading::default());
    }

    #[test]
    fn a_missing_root_starts_no_journal() {
        let tmp = tempfile::tempdir().unwrap();
        let gone = tmp.path().join("gone");
        assert!(matches!(Journal::start(&gone), Err(StartError::NoRoot(_))));
        std::fs::create_dir(&gone).unwrap();
        let mut journal = Journal::start(&gone).unwrap();
        std::fs::remove_dir(&gone).unwrap();
        assert!(journal.read().restart, "the root itself went");
    }

    #[test]
    fn directories_and_ignore_files_ask_for_a_restart() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let mut journal = Journal::start(root).unwrap();
        std::fs::create_dir(root.join("lib")).unwrap();
        assert_eq!(
            journal.read(),
            Reading {
                changed: true,
                restart: true
            },
            "a new directory is not watched yet"
        );
        let mut journal = Journal::start(root).unwrap();
        std::fs::write(root.join(".gitignore"), "lib/\n").unwrap();
        assert!(
            journal.read().restart,
            "an ignore file re-decides what is walked"
        );
        let mut journal = Journal::start(root).unwrap();
        std::fs::remove_dir(root.join("lib")).unwrap();
        assert!(journal.read().restart, "a directory deleted");
    }
}
