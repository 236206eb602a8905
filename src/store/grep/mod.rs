//! The grep index: every indexed file's content, as the index holds it, with trigram
//! postings over it, so that exact and regex searches read only the files that can
//! match.
//!
//! One directory per repository under `<data-dir>/grep/<repository id>/`: immutable
//! segment files ([`segment`]) and a `manifest.json` naming the live ones with the
//! documents each has lost to newer versions. A sync adds a segment per batch of changed
//! files (and marks the old versions deleted) before it records the batch in the
//! metadata store, so what the metadata store calls indexed is always here; a file here
//! whose record says otherwise is rewritten by the next sync. Segments are merged by size
//! tier ([`merge_plan`]): four of one tier become one of the next, and a segment more than
//! half deleted is rewritten, so a repository has a few dozen segments at most.
//!
//! Readers take a [`Snapshot`] (the segments and deletions at one moment, memory-mapped)
//! and never wait for a writer; a merged-away segment's file is unlinked while readers
//! that hold it keep reading it.
//!
//! Replicas that share no disk keep the directory as a cache of a copy on object
//! storage ([`mirror`]): writers publish each commit there, readers pull new versions.

pub mod mirror;
pub mod segment;
pub mod trigrams;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use roaring::RoaringBitmap;
use serde::{Deserialize, Serialize};

use super::{FileText, StoreError};
pub use mirror::GrepMirror;
pub use segment::{DocMeta, NewDoc, Segment};
pub use trigrams::Plan;

const MANIFEST: &str = "manifest.json";

/// The grep indexes of every repository, under one directory.
#[derive(Debug)]
pub struct GrepIndex {
    dir: PathBuf,
    repos: Mutex<HashMap<String, Arc<RepoGrep>>>,
    mirror: Option<Arc<GrepMirror>>,
    /// Files read back for chunk rows' code, most recent last.
    recent: Mutex<RecentFiles>,
}

/// The files last read back for chunk rows' code ([`super::FileSource`]), each with its
/// line starts: a search reads its candidates' files, then its results' files again to
/// render them, and an agent's next question often the same ones. At most
/// [`RECENT_FILES`] files and [`RECENT_BYTES`] bytes; a version is immutable, so an entry
/// is never stale.
#[derive(Default)]
struct RecentFiles {
    files: std::collections::VecDeque<(String, String, String, Arc<FileText>)>,
    bytes: usize,
}

impl std::fmt::Debug for RecentFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecentFiles")
            .field("files", &self.files.len())
            .field("bytes", &self.bytes)
            .finish()
    }
}

/// Files [`RecentFiles`] keeps.
const RECENT_FILES: usize = 64;
/// Bytes [`RecentFiles`] keeps: the files' text and their line starts
/// ([`FileText::held_bytes`]).
const RECENT_BYTES: usize = 16 << 20;

impl RecentFiles {
    fn get(&mut self, repo: &str, path: &str, hash: &str) -> Option<Arc<FileText>> {
        let at = self
            .files
            .iter()
            .rposition(|(r, p, h, _)| h == hash && p == path && r == repo)?;
        let entry = self.files.remove(at)?;
        let text = entry.3.clone();
        self.files.push_back(entry);
        Some(text)
    }

    fn put(&mut self, repo: &str, path: &str, hash: &str, text: Arc<FileText>) {
        self.bytes += text.held_bytes();
        self.files
            .push_back((repo.into(), path.into(), hash.into(), text));
        while self.files.len() > RECENT_FILES || (self.bytes > RECENT_BYTES && self.files.len() > 1)
        {
            if let Some((.., old)) = self.files.pop_front() {
                self.bytes -= old.held_bytes();
            }
        }
    }
}

/// One repository's grep index.
#[derive(Debug)]
struct RepoGrep {
    dir: PathBuf,
    current: RwLock<Arc<Snapshot>>,
    /// The manifest `current` was read from: when the file on disk differs (another
    /// process sharing the directory committed), readers and the writer load it again.
    loaded: Mutex<Option<Stamp>>,
    /// Held by the one writer (syncs of a repository are serialised already; this keeps
    /// the index whole even if they were not), with the number of the last segment file.
    writing: Mutex<u64>,
    /// The copy on object storage, when kept.
    mirror: Option<Arc<GrepMirror>>,
    /// The repository's id (its directory's name, and its prefix in the mirror).
    id: String,
    /// Held while the directory is brought up to the mirror or a write is published, so
    /// that a reader's pull never lays an older remote manifest over a newer local one.
    syncing: tokio::sync::Mutex<()>,
    /// What the last look at the mirror found.
    remote: Mutex<RemoteState>,
}

/// The mirror as a repository's index last saw it.
#[derive(Debug, Default)]
struct RemoteState {
    /// The tag of the remote manifest the directory holds.
    tag: Option<String>,
    /// When readers last looked.
    checked: Option<Instant>,
    /// Whether this process removed the strays of failed publishes yet.
    swept: bool,
}

/// A live segment with the documents it has lost.
#[derive(Debug, Clone)]
pub struct LiveSegment {
    /// The segment.
    pub segment: Arc<Segment>,
    /// Documents replaced by newer versions or removed.
    pub deleted: RoaringBitmap,
}

impl LiveSegment {
    fn live_docs(&self) -> u64 {
        self.segment.docs().len() as u64 - self.deleted.len()
    }
}

/// A repository's grep index at one moment.
#[derive(Debug, Default)]
pub struct Snapshot {
    segments: Vec<LiveSegment>,
    by_path: HashMap<String, (usize, u32)>,
}

/// One file a query may match in: its segment and number there.
#[derive(Debug, Clone)]
pub struct Candidate {
    segment: Arc<Segment>,
    doc: u32,
}

impl Candidate {
    /// Path, hash and language of this version.
    pub fn meta(&self) -> &DocMeta {
        &self.segment.docs()[self.doc as usize]
    }

    /// Its content (an error when the segment holding it is damaged).
    pub fn content(&self) -> Result<std::borrow::Cow<'_, [u8]>, StoreError> {
        self.segment.content(self.doc)
    }
}

impl Snapshot {
    fn new(segments: Vec<LiveSegment>) -> Snapshot {
        let mut by_path = HashMap::new();
        for (i, live) in segments.iter().enumerate() {
            for (doc, meta) in live.segment.docs().iter().enumerate() {
                if !live.deleted.contains(doc as u32) {
                    by_path.insert(meta.path.clone(), (i, doc as u32));
                }
            }
        }
        Snapshot { segments, by_path }
    }

    /// The files `plan` admits, in path order, each file once (its current version).
    pub fn candidates(&self, plan: &Plan) -> Vec<Candidate> {
        let mut out: Vec<Candidate> = Vec::new();
        for live in &self.segments {
            let docs = live.segment.candidates(plan) - &live.deleted;
            out.extend(docs.iter().map(|doc| Candidate {
                segment: live.segment.clone(),
                doc,
            }));
        }
        out.sort_by(|a, b| a.meta().path.cmp(&b.meta().path));
        out
    }

    /// The hash of the version of `path` held, if any.
    pub fn hash_of(&self, path: &str) -> Option<&str> {
        let &(seg, doc) = self.by_path.get(path)?;
        Some(
            self.segments[seg].segment.docs()[doc as usize]
                .hash
                .as_str(),
        )
    }

    /// The content of version `hash` of `path`: the live one, or one a later version
    /// replaced that a segment still holds (a reader's rows may be a moment behind or
    /// ahead of this snapshot). `None` where no segment holds it.
    pub fn content_of(
        &self,
        path: &str,
        hash: &str,
    ) -> Option<Result<std::borrow::Cow<'_, [u8]>, StoreError>> {
        let live = self.by_path.get(path).copied();
        let held = live
            .filter(|&(seg, doc)| self.segments[seg].segment.docs()[doc as usize].hash == hash)
            .or_else(|| {
                self.segments.iter().enumerate().find_map(|(seg, live)| {
                    let docs = live.segment.docs();
                    let doc = docs.iter().position(|d| d.path == path && d.hash == hash)?;
                    Some((seg, doc as u32))
                })
            })?;
        Some(self.segments[held.0].segment.content(held.1))
    }

    /// Files indexed, with the hash of the version held.
    pub fn files(&self) -> HashMap<String, String> {
        self.by_path
            .iter()
            .map(|(path, &(seg, doc))| {
                let meta = &self.segments[seg].segment.docs()[doc as usize];
                (path.clone(), meta.hash.clone())
            })
            .collect()
    }

    /// Number of live files.
    pub fn file_count(&self) -> usize {
        self.by_path.len()
    }

    /// Bytes of the segment files.
    pub fn bytes(&self) -> u64 {
        self.segments.iter().map(|s| s.segment.bytes()).sum()
    }

    /// Number of segments.
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }
}

/// What `manifest.json` records.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Manifest {
    /// Number of the last segment file written.
    last: u64,
    segments: Vec<ManifestSegment>,
}

#[derive(Debug, Serialize, Deserialize)]
struct ManifestSegment {
    name: String,
    deleted: Vec<u32>,
}

fn io(path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io {
        path: path.display().to_string(),
        source,
    }
}

impl GrepIndex {
    /// The grep indexes kept under `dir` (created when missing).
    pub fn open(dir: impl Into<PathBuf>) -> Result<GrepIndex, StoreError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
        Ok(GrepIndex {
            dir,
            repos: Mutex::new(HashMap::new()),
            mirror: None,
            recent: Mutex::new(RecentFiles::default()),
        })
    }

    /// Keeps the indexes as caches of copies in `mirror` (replicas that share no disk).
    pub fn with_mirror(mut self, mirror: GrepMirror) -> GrepIndex {
        self.mirror = Some(Arc::new(mirror));
        self
    }

    /// The copy on object storage, when kept.
    pub fn mirror(&self) -> Option<&Arc<GrepMirror>> {
        self.mirror.as_ref()
    }

    /// Where the indexes live.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn repo(&self, repo_id: &str) -> Arc<RepoGrep> {
        let mut repos = self
            .repos
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        repos
            .entry(repo_id.to_string())
            .or_insert_with(|| {
                Arc::new(RepoGrep::open(
                    self.dir.join(repo_id),
                    repo_id,
                    self.mirror.clone(),
                ))
            })
            .clone()
    }

    /// Brings the repository's index up to its copy on object storage (when kept): a
    /// reader's look happens at most once per the mirror's interval and is skipped while
    /// this process writes the repository; `now` (a writer about to plan its work) looks
    /// at once and fails when the store cannot be reached. Without a mirror, nothing.
    pub async fn pull(&self, repo_id: &str, now: bool) -> Result<(), StoreError> {
        self.repo(repo_id).pull(now).await
    }

    /// The repository's index as it is now (empty when it has none).
    pub fn snapshot(&self, repo_id: &str) -> Arc<Snapshot> {
        self.repo(repo_id).snapshot()
    }

    /// Replaces the indexed versions of `docs`' paths with these and drops `removed`
    /// (blocking: call from the blocking pool).
    pub fn replace(
        &self,
        repo_id: &str,
        docs: &[NewDoc],
        removed: &[String],
    ) -> Result<(), StoreError> {
        self.repo(repo_id).replace(docs, removed)
    }

    /// Drops a repository's index.
    pub fn drop_repository(&self, repo_id: &str) -> Result<(), StoreError> {
        let removed = self
            .repos
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(repo_id);
        let dir = self.dir.join(repo_id);
        let _writing = removed.as_ref().map(|r| r.writing.lock());
        if let Some(mirror) = &self.mirror {
            mirror.drop_repository(repo_id)?;
        }
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(&dir, e)),
            _ => Ok(()),
        }
    }
}

impl super::FileSource for GrepIndex {
    fn file_text(&self, repo_id: &str, path: &str, hash: &str) -> Option<Arc<FileText>> {
        let recent = || {
            self.recent
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
        };
        if let Some(text) = recent().get(repo_id, path, hash) {
            return Some(text);
        }
        let snapshot = self.snapshot(repo_id);
        match snapshot.content_of(path, hash)? {
            Ok(bytes) => {
                let text = Arc::new(FileText::from_bytes(bytes.into_owned()));
                recent().put(repo_id, path, hash, text.clone());
                Some(text)
            }
            Err(e) => {
                tracing::warn!(repository = repo_id, path, error = %e, "a file's content in the grep index is unreadable; its chunks are left out until the next sync writes it again");
                None
            }
        }
    }
}

/// What identifies one version of a manifest file: each commit writes a new file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    modified: Option<std::time::SystemTime>,
    len: u64,
}

fn stamp(dir: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(dir.join(MANIFEST)).ok()?;
    Some(Stamp {
        modified: meta.modified().ok(),
        len: meta.len(),
    })
}

impl RepoGrep {
    /// Opens a repository's index; a missing or unreadable one reads as empty (with a
    /// warning), and the next sync writes what is missing.
    fn open(dir: PathBuf, id: &str, mirror: Option<Arc<GrepMirror>>) -> RepoGrep {
        let repo = RepoGrep {
            current: RwLock::new(Arc::new(Snapshot::new(Vec::new()))),
            loaded: Mutex::new(None),
            writing: Mutex::new(highest_segment_number(&dir)),
            dir,
            mirror,
            id: id.to_string(),
            syncing: tokio::sync::Mutex::new(()),
            remote: Mutex::new(RemoteState::default()),
        };
        if let Err(e) = repo.refresh() {
            tracing::warn!(dir = %repo.dir.display(), error = %e, "grep index unreadable; the next sync rebuilds it");
        }
        repo
    }

    /// Loads the manifest again if it changed on disk since it was read (another
    /// process that shares the directory committed). Returns the number of its last
    /// segment file. On failure (a segment merged away meanwhile) the snapshot stays.
    fn refresh(&self) -> Result<u64, StoreError> {
        let mut loaded = self
            .loaded
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let now = stamp(&self.dir);
        if now.is_none() || now == *loaded {
            return Ok(0);
        }
        let (segments, last) = load(&self.dir)?;
        *self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(Snapshot::new(segments));
        *loaded = now;
        Ok(last)
    }

    fn remote_state(&self) -> std::sync::MutexGuard<'_, RemoteState> {
        self.remote
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// See [`GrepIndex::pull`].
    async fn pull(&self, now: bool) -> Result<(), StoreError> {
        let Some(mirror) = &self.mirror else {
            return Ok(());
        };
        let _syncing = if now {
            self.syncing.lock().await
        } else {
            let due = self
                .remote_state()
                .checked
                .is_none_or(|at| at.elapsed() >= mirror.interval());
            if !due {
                return Ok(());
            }
            // A write of this process in progress: the directory is the newest there is.
            let Ok(guard) = self.syncing.try_lock() else {
                return Ok(());
            };
            guard
        };
        let tag = self.remote_state().tag.clone();
        let pulled = mirror.pull(&self.dir, &self.id, tag.as_deref()).await;
        let mut state = self.remote_state();
        state.checked = Some(Instant::now());
        match pulled {
            Ok(tag) => {
                state.tag = tag;
                Ok(())
            }
            Err(e) if !now => {
                tracing::warn!(repository = %self.id, error = %e, "grep index not refreshed from object storage; searches read the last copy");
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn snapshot(&self) -> Arc<Snapshot> {
        if let Err(e) = self.refresh() {
            tracing::debug!(dir = %self.dir.display(), error = %e, "grep index changed on disk; reading it again at the next search");
        }
        self.current
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    fn replace(&self, docs: &[NewDoc], removed: &[String]) -> Result<(), StoreError> {
        let mut last = self
            .writing
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        std::fs::create_dir_all(&self.dir).map_err(|e| io(&self.dir, e))?;
        // With a mirror: no reader's pull while this writes, and the directory starts
        // from the published copy (another replica may have written last).
        let _syncing = match &self.mirror {
            Some(mirror) => {
                let guard = self.syncing.blocking_lock();
                let tag = self.remote_state().tag.clone();
                let pulled = mirror.pull_blocking(&self.dir, &self.id, tag.as_deref())?;
                let sweep = {
                    let mut state = self.remote_state();
                    state.tag = pulled;
                    !std::mem::replace(&mut state.swept, true)
                };
                if sweep {
                    mirror.sweep(&self.id)?;
                }
                Some(guard)
            }
            None => None,
        };
        // Start from what is on disk: another process may have written since (the
        // repository's previous sync ran there).
        let on_disk = self.refresh()?;
        *last = (*last).max(on_disk).max(highest_segment_number(&self.dir));
        let before = self.snapshot();
        let mut segments = before.segments.clone();
        for path in docs.iter().map(|d| &d.path).chain(removed) {
            if let Some(&(seg, doc)) = before.by_path.get(path) {
                segments[seg].deleted.insert(doc);
            }
        }
        if !docs.is_empty() {
            let path = self.dir.join(segment_name(&mut last));
            segment::write(&path, docs)?;
            segments.push(LiveSegment {
                segment: Arc::new(Segment::open(&path)?),
                deleted: RoaringBitmap::new(),
            });
        }
        segments.retain(|s| s.live_docs() > 0);
        let segments = self.merge(segments, &mut last)?;
        self.commit(segments, *last)
    }

    /// Merges what [`merge_plan`] says, until it says nothing.
    fn merge(
        &self,
        mut segments: Vec<LiveSegment>,
        last: &mut u64,
    ) -> Result<Vec<LiveSegment>, StoreError> {
        loop {
            let sizes: Vec<(u64, u64, u64)> = segments
                .iter()
                .map(|s| {
                    (
                        s.segment.bytes(),
                        s.segment.docs().len() as u64,
                        s.deleted.len(),
                    )
                })
                .collect();
            let Some(group) = merge_plan(&sizes) else {
                return Ok(segments);
            };
            let path = self.dir.join(segment_name(last));
            let inputs: Vec<(&Segment, &RoaringBitmap)> = group
                .iter()
                .map(|&i| (segments[i].segment.as_ref(), &segments[i].deleted))
                .collect();
            segment::merge(&path, &inputs)?;
            let merged = LiveSegment {
                segment: Arc::new(Segment::open(&path)?),
                deleted: RoaringBitmap::new(),
            };
            // The merged segment takes the place of the first of its inputs: the order of
            // segments stays the order of writes.
            let first = group[0];
            let mut kept = Vec::with_capacity(segments.len() - group.len() + 1);
            for (i, s) in segments.into_iter().enumerate() {
                if i == first {
                    kept.push(merged.clone());
                } else if !group.contains(&i) {
                    kept.push(s);
                }
            }
            segments = kept;
        }
    }

    /// Records `segments` in the manifest, publishes them to readers and removes segment
    /// files no longer named.
    fn commit(&self, segments: Vec<LiveSegment>, last: u64) -> Result<(), StoreError> {
        let manifest = Manifest {
            last,
            segments: segments
                .iter()
                .map(|s| ManifestSegment {
                    name: s.segment.name().to_string(),
                    deleted: s.deleted.iter().collect(),
                })
                .collect(),
        };
        if let Some(mirror) = &self.mirror {
            // Published before the local manifest changes: a failed publish leaves both
            // copies as they were.
            let before: std::collections::HashSet<String> = self
                .current
                .read()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .segments
                .iter()
                .map(|s| s.segment.name().to_string())
                .collect();
            let after: std::collections::HashSet<&str> =
                manifest.segments.iter().map(|s| s.name.as_str()).collect();
            let added: Vec<&str> = after
                .iter()
                .copied()
                .filter(|n| !before.contains(*n))
                .collect();
            let gone: Vec<&str> = before
                .iter()
                .map(String::as_str)
                .filter(|n| !after.contains(n))
                .collect();
            let tag = mirror.publish(&self.dir, &self.id, &added, &encode(&manifest)?, &gone)?;
            self.remote_state().tag = Some(tag);
        }
        write_manifest(&self.dir, &manifest)?;
        // Only the writer removes files: files no manifest names are what a crashed
        // write left (one writer per repository at a time, whichever process it is).
        let named: std::collections::HashSet<&str> =
            manifest.segments.iter().map(|s| s.name.as_str()).collect();
        remove_unnamed(&self.dir, &named);
        let mut loaded = self
            .loaded
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *self
            .current
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Arc::new(Snapshot::new(segments));
        *loaded = stamp(&self.dir);
        Ok(())
    }
}

/// The name of the next segment file.
fn segment_name(last: &mut u64) -> String {
    *last += 1;
    format!("{last:08}.seg")
}

/// The highest number among the segment files in `dir` (0 when none).
fn highest_segment_number(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.split('.').next()?.parse::<u64>().ok()
        })
        .max()
        .unwrap_or(0)
}

fn read_manifest(dir: &Path) -> Result<Manifest, StoreError> {
    let path = dir.join(MANIFEST);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            StoreError::Invalid(format!(
                "grep index manifest {} is damaged ({e}); it is rebuilt by the next sync",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Manifest::default()),
        Err(e) => Err(io(&path, e)),
    }
}

fn encode(manifest: &Manifest) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(manifest)
        .map_err(|e| StoreError::Invalid(format!("cannot encode the grep manifest: {e}")))
}

fn write_manifest(dir: &Path, manifest: &Manifest) -> Result<(), StoreError> {
    let path = dir.join(MANIFEST);
    let tmp = dir.join("manifest.json.tmp");
    std::fs::write(&tmp, encode(manifest)?).map_err(|e| io(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| io(&path, e))
}

/// Segments the manifest names, opened with their deletions, and the number of the last
/// segment file. Files it does not name (left by a crash mid-write, or being written by
/// another process) stay: the next commit removes the stale ones.
fn load(dir: &Path) -> Result<(Vec<LiveSegment>, u64), StoreError> {
    if !dir.exists() {
        return Ok((Vec::new(), 0));
    }
    let manifest = read_manifest(dir)?;
    let segments = manifest
        .segments
        .iter()
        .map(|s| {
            Ok(LiveSegment {
                segment: Arc::new(Segment::open(&dir.join(&s.name))?),
                deleted: s.deleted.iter().copied().collect(),
            })
        })
        .collect::<Result<_, StoreError>>()?;
    Ok((segments, manifest.last.max(highest_segment_number(dir))))
}

fn remove_unnamed(dir: &Path, named: &std::collections::HashSet<&str>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let segment_file =
            name.ends_with(".seg") || name.ends_with(".tmp") || name.ends_with(".pull");
        if segment_file && !named.contains(name.as_str()) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Segments of at most this many bytes share the lowest tier.
const TIER_BASE: u64 = 1 << 20;
/// Segments of one tier merged at once (and the most one tier keeps).
const TIER_FANOUT: usize = 4;

/// The next merge for segments of these (bytes, documents, deleted documents), in write
/// order: a segment more than half deleted alone (rewritten), or the first
/// [`TIER_FANOUT`] segments of one size tier (tier `n` holds segments of live size
/// within `TIER_BASE × 4ⁿ`). `None` when nothing needs merging.
pub fn merge_plan(sizes: &[(u64, u64, u64)]) -> Option<Vec<usize>> {
    if let Some(i) = sizes
        .iter()
        .position(|&(_, docs, deleted)| docs > 1 && deleted * 2 > docs)
    {
        return Some(vec![i]);
    }
    let tier = |&(bytes, docs, deleted): &(u64, u64, u64)| {
        let live = bytes.saturating_mul(docs.saturating_sub(deleted)) / docs.max(1);
        let mut tier = 0u32;
        let mut limit = TIER_BASE;
        while live > limit {
            tier += 1;
            limit = limit.saturating_mul(TIER_FANOUT as u64);
        }
        tier
    };
    let mut by_tier: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
    for (i, size) in sizes.iter().enumerate() {
        by_tier.entry(tier(size)).or_default().push(i);
    }
    by_tier
        .into_values()
        .find(|members| members.len() >= TIER_FANOUT)
        .map(|members| members.into_iter().take(TIER_FANOUT).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index in a fresh directory with `docs` written to repository `r`.
    fn written(docs: &[NewDoc]) -> (tempfile::TempDir, GrepIndex) {
        let dir = tempfile::tempdir().expect("tempdir");
        let index = GrepIndex::open(dir.path()).expect("open");
        index.replace("r", docs, &[]).expect("write");
        (dir, index)
    }

    pub(super) fn doc(path: &str, content: &str) -> NewDoc {
        NewDoc {
            path: path.into(),
            hash: format!("{path}:{}", content.len()),
            language: "python".into(),
            content: content.as_bytes().to_vec(),
        }
    }

    pub(super) fn found(index: &GrepIndex, repo: &str, word: &str) -> Vec<String> {
        let plan = Plan::Trigrams(trigrams::of_content(word.as_bytes()));
        index
            .snapshot(repo)
            .candidates(&plan)
            .into_iter()
            .filter(|c| String::from_utf8_lossy(&c.content().expect("content")).contains(word))
            .map(|c| c.meta().path.clone())
            .collect()
    }

    /// Chunk rows read their code by version: the live one, one a later version replaced
    /// (still in its segment), not one never written; recently read files come from memory
    /// (at most `RECENT_FILES`).
    #[test]
    fn a_files_versions_are_read_back_by_hash() {
        use crate::store::FileSource;
        let (_dir, index) = written(&[doc("a.py", "alpha"), doc("b.py", "beta")]);
        index
            .replace("r", &[doc("a.py", "gamma!")], &[])
            .expect("write");
        assert_eq!(
            index
                .file_text("r", "a.py", "a.py:6")
                .as_deref()
                .map(FileText::text),
            Some("gamma!")
        );
        assert_eq!(
            index
                .file_text("r", "a.py", "a.py:5")
                .as_deref()
                .map(FileText::text),
            Some("alpha"),
            "the replaced version, still in its segment (half of which is live)"
        );
        assert!(index.file_text("r", "a.py", "a.py:9").is_none());
        assert!(index.file_text("other", "a.py", "a.py:6").is_none());
        let mut recent = RecentFiles::default();
        for i in 0..RECENT_FILES + 3 {
            recent.put(
                "r",
                &format!("{i}.py"),
                "h",
                Arc::new(FileText::new("x".into())),
            );
        }
        assert_eq!(recent.files.len(), RECENT_FILES);
        assert!(
            recent.get("r", "0.py", "h").is_none(),
            "the oldest went first"
        );
        assert!(recent.get("r", "3.py", "h").is_some());
        assert!(recent.get("r", "3.py", "other").is_none());
    }

    #[test]
    fn replaced_and_removed_files_are_no_longer_found() {
        let (_dir, index) = written(&[doc("a.py", "alpha"), doc("b.py", "beta alpha")]);
        assert_eq!(found(&index, "r", "alpha"), ["a.py", "b.py"]);
        index
            .replace("r", &[doc("a.py", "gamma")], &[])
            .expect("write");
        assert_eq!(found(&index, "r", "alpha"), ["b.py"]);
        assert_eq!(found(&index, "r", "gamma"), ["a.py"]);
        index
            .replace("r", &[], &["b.py".to_string()])
            .expect("remove");
        assert!(found(&index, "r", "alpha").is_empty());
        assert!(
            found(&index, "other", "alpha").is_empty(),
            "repositories are apart"
        );
    }

    #[test]
    fn the_index_survives_a_restart_and_stray_files_go() {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let index = GrepIndex::open(dir.path()).expect("open");
            index
                .replace("r", &[doc("a.py", "alpha")], &[])
                .expect("write");
            index
                .replace("r", &[doc("a.py", "delta")], &[])
                .expect("write");
        }
        // A segment written by a crashed sync, never named in the manifest.
        std::fs::write(dir.path().join("r/99999999.seg"), b"partial").expect("write");
        let index = GrepIndex::open(dir.path()).expect("reopen");
        assert_eq!(found(&index, "r", "delta"), ["a.py"]);
        assert!(found(&index, "r", "alpha").is_empty());
        assert_eq!(index.snapshot("r").files()["a.py"], "a.py:5");
        assert_eq!(index.snapshot("r").hash_of("a.py"), Some("a.py:5"));
        assert_eq!(index.snapshot("r").hash_of("b.py"), None);
        // The next write removes it (a reader never does: it may be another process's
        // write in progress).
        index
            .replace("r", &[doc("b.py", "beta")], &[])
            .expect("write");
        assert!(!dir.path().join("r/99999999.seg").exists());
        assert_eq!(found(&index, "r", "beta"), ["b.py"]);
    }

    #[test]
    fn two_processes_sharing_the_directory_see_each_others_writes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (
            GrepIndex::open(dir.path()).expect("open"),
            GrepIndex::open(dir.path()).expect("open"),
        );
        assert!(found(&b, "r", "alpha").is_empty());
        a.replace("r", &[doc("a.py", "alpha")], &[]).expect("write");
        std::thread::sleep(std::time::Duration::from_millis(10));
        assert_eq!(found(&b, "r", "alpha"), ["a.py"], "b reads a's commit");
        // The writer moves: b writes next, from what a left, and a reads it.
        b.replace("r", &[doc("c.py", "gamma")], &["a.py".to_string()])
            .expect("write");
        std::thread::sleep(std::time::Duration::from_millis(10));
        assert!(found(&a, "r", "alpha").is_empty());
        assert_eq!(found(&a, "r", "gamma"), ["c.py"]);
        for _ in 0..12 {
            a.replace("r", &[doc("d.py", "delta")], &[]).expect("write");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
        assert_eq!(found(&b, "r", "delta"), ["d.py"], "after a's merges");
        assert_eq!(found(&b, "r", "gamma"), ["c.py"]);
    }

    #[test]
    fn many_small_writes_are_merged_and_keep_every_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let index = GrepIndex::open(dir.path()).expect("open");
        for i in 0..40 {
            let path = format!("f{}.py", i % 13);
            index
                .replace("r", &[doc(&path, &format!("version {i} needle{i}"))], &[])
                .expect("write");
        }
        let snapshot = index.snapshot("r");
        assert!(
            snapshot.segment_count() < TIER_FANOUT,
            "{} segments",
            snapshot.segment_count()
        );
        assert_eq!(snapshot.file_count(), 13);
        assert_eq!(found(&index, "r", "needle39"), ["f0.py"]);
        assert!(found(&index, "r", "needle0 ").is_empty());
        let files = std::fs::read_dir(dir.path().join("r"))
            .expect("dir")
            .count();
        assert_eq!(
            files,
            snapshot.segment_count() + 1,
            "old segment files are removed"
        );
    }

    #[test]
    fn merge_plan_merges_a_full_tier_and_rewrites_mostly_deleted_segments() {
        let small = (1000, 10, 0);
        assert_eq!(merge_plan(&[small, small, small]), None);
        assert_eq!(
            merge_plan(&[small, small, small, small]),
            Some(vec![0, 1, 2, 3])
        );
        let big = (TIER_BASE * 3, 10, 0);
        assert_eq!(merge_plan(&[big, small, small, big, small]), None);
        assert_eq!(merge_plan(&[big, (500, 10, 6)]), Some(vec![1]));
    }
}
