//! Indexing: turns a registered repository into stored chunks, symbols, vectors and file
//! records, and keeps them in sync with the files.
//!
//! - [`scan`]: enumerate a working tree (ignore files, skipped folders, filters, limits).
//! - [`engine`]: [`Indexer`] registers and removes repositories and runs [`Indexer::sync`]:
//!   the blueprint's two-phase change check (mtime trigger, SHA-256 confirmation),
//!   re-parse/re-chunk/re-embed of changed files only, deletion of removed files, one
//!   sync per repository at a time, per-file errors recorded and never fatal.
//! - [`git`]: bare mirrors fetched with git2; tree-to-tree diffs, blob ids as hashes.
//! - [`source`]: what a git source string means (transport, host, credentials taken out
//!   of the URL) and which addresses a fetch may reach ([`GitPolicy`]).
//! - [`jobs`]: durable sync jobs in the jobs table, a runner with a concurrency limit,
//!   re-queueing of jobs a crash left running.
//! - [`watch`]: optional debounced file watching of working trees → sync jobs.
//! - [`progress`]: phase/count/rate/ETA events on a broadcast channel.
//!
//! Embedding goes through whatever [`crate::embed::Embedder`] the caller passes; pass a
//! [`crate::embed::CachedEmbedder`] so identical text is never embedded twice (the CLI
//! does, over the SQL store). Calls `parse` and `chunk`; writes through the `store`
//! traits. Must not depend on `search`, `render` or `api`.
//!
//! # Design notes
//!
//! - `scan::scan_tree`: `ignore`'s walker with `.gitignore` honoured outside git too,
//!   `.sextantignore`, never entering `SKIPPED_DIRS` (node_modules, dist, build, vendor, …),
//!   not following symlinks; `FileFilter` applies include/exclude globs (globset), languages,
//!   minified names, size and file-count limits, each with a recorded reason.
//!   `scan::read_scanned` reads what the scan listed only if it is still a regular file
//!   under the real root (opened with `O_NOFOLLOW | O_NONBLOCK`, checked through
//!   `/proc/self/fd`), never past the size limit, again when it changed while read; the
//!   recorded size and mtime are those of what was read.
//! - `Indexer::sync` builds a `Plan` from the source, then applies it:
//!   - working tree: mtime + size match → untouched (not read); else SHA-256 of the bytes:
//!     same hash → only the mtime is updated ("touched"); different → pending.
//!   - git (`index::git`): a bare mirror per repository in `<data-dir>/repos/<id>`, fetched
//!     with git2 (stored credentials offered through the credential callback; the transfer
//!     abandoned past `GitPolicy::fetch_deadline`; every network fetch reaches its server
//!     through `index::fetch_proxy`, a loopback proxy per fetch: `https://` tunnels through
//!     it with `CONNECT` (bytes unchanged), `http://` and `git://` are pointed at it as a
//!     relay for their one server (hyper on both sides with the server's `Host`, redirects
//!     kept on that server; the `git://` request's `host=` restored). It judges every
//!     server it connects to by `restricted_address` again (redirects, re-resolved names)
//!     and closes every connection at the deadline, so the deadline holds in every phase
//!     (ref advertisement included) and the blocking thread returns; libgit2's
//!     connect/read timeouts set in `main`); `diff_tree_to_tree(indexed commit, tracked ref)` with rename detection;
//!     the blob id is the content hash, so unchanged files are never read; a branch switch
//!     is just another diff; `.sextantignore` is read from the new tree.
//!   - apply: removals (chunks, then symbols/edges/file rows), skip records, then batches of
//!     256 files: parse + chunk on the blocking pool → the vectors the embedding cache
//!     already has (`Embedder::lookup`; the model is not run here) → one LanceDB
//!     `replace_files` commit (rows without a cached vector go in unembedded) → one SQL
//!     transaction for the batch's symbols and file rows. The SQL write carries the new hash and comes last, so
//!     a crash anywhere leaves files at their old or new state and the next sync converges
//!     (`tests/it/crash.rs` and `e2e.rs` kill a real process to check this, held after its
//!     first batch by the fail point `sync-after-batch`, named by the `SEXTANT_FAILPOINT`
//!     variable, which parks the sync on an await that never ends).
//! - Embedding stage (`Indexer::embed_pending`, the end of `Indexer::sync`, after the
//!   repository lock is released and its status is `ready`): the repository's unembedded
//!   rows, read 16 slices of `embed_slice` (256) at a time, through the cached embedder;
//!   while the model runs, what has landed is stored (`set_vectors`: one write for every
//!   slice embedded since the last write began, so a slow model's slices go one by one and
//!   a fast model's many at once, and writes, each a pass over the table, do not grow
//!   with the rows), with `embed` progress. Searches use text for every row at once and
//!   vectors as they land; a crash loses what was not stored yet, and the next sync (or
//!   server start: `repos_to_complete`) resumes. One stage per repository runs at a time
//!   (a per-repository lock, apart from the sync lock so syncs of changed files go on
//!   meanwhile; rows they write join the running stage): `sync` waits for a running stage,
//!   so a finished sync job means every vector is in; the freshness sync before a search
//!   (`sync_unless_running`, then `embed_pending_unless_running`) runs the stage within the
//!   search's bound and lets it go on in the background past it; it skips repositories
//!   never synced (status `registered`), whose first sync is queued as a job. A stage that
//!   stored a slice or more ends with store maintenance: stored vectors are rewritten rows,
//!   which the text index would otherwise scan until the periodic maintenance.
//! - A sync that finds nothing to do writes nothing (files skipped for the same reason as
//!   before are not rewritten; the status goes to `indexing` only once the plan has work),
//!   so the freshness check before searches takes no write lock.
//! - Signature cascade: a chunk's embedding text quotes the signatures of the same-file
//!   symbols it references, so re-chunking a changed file regenerates exactly the texts that
//!   quoted a changed signature; the cache keyed by text hash means only texts that actually
//!   changed reach the model. Cross-file quoting (and so a cross-file cascade) is not done.
//! - Graph stage (see `graph` below): changed files and their transitive importers get their
//!   edges re-resolved; `SyncReport::graph_edges` counts what was written.
//! - After a bulk change (≥ `maintain_after_files` files) a sync ends with store maintenance
//!   so new rows are in the FTS/ANN indexes; `Indexer::update_settings` validates and saves
//!   settings (the next sync applies them); git sources apply `max_files` to new files.
//! - `watch`: `notify` (debounced) on working trees with `settings.watch`; relevant changes
//!   queue a sync job through the `JobRunner` (wired into `sextant serve` by the server
//!   issue).
//! - `source::GitLocation` (pure) parses a git source: URL schemes, git's scp-like
//!   `user@host:path` (only when a `:` precedes any `/`), local paths and `file://`;
//!   credentials in the URL come out (stored in `repo_credentials`, never shown). The
//!   `GitPolicy` check (registration and every fetch): local forms under the allowed roots;
//!   `http://`/`git://` only when allowed; every address the host resolves to must be public
//!   (`source::restricted_address`) unless private hosts are allowed.
//! - `JobRunner::run_forever` starts a queued job whenever a slot is free (never waiting for
//!   a batch), and stops a job at its deadline (marked failed, the repository's status set
//!   to error; the next sync converges from what was written). A job's outcome is written
//!   even across a database outage (retried with back-off); a sync that failed because a
//!   store did not answer (the database, object storage) is re-queued, not to be claimed
//!   by any process before its back-off (`retry_delay`: 2 s, 8 s, 30 s) has passed, up to
//!   `MAX_ATTEMPTS` (4) tries. While a sync
//!   runs, `record_progress` copies its progress events into the job's row (at most once a
//!   second and at each phase, the latest always written), so `GET /jobs/{id}` shows
//!   `embed: 1200 of 2472 (about 11 s left)` during a cold embedding stage.
//! - `Indexer::audit` compares the two stores per repository (indexed files without chunks,
//!   chunks of unknown files) and with repair drops the first's file records (the next sync
//!   re-indexes them) and deletes the second; `sextant doctor [--repair]` (`cli::doctor`)
//!   runs it, moving the chunk store aside only when the store itself cannot be read
//!   (LanceDB/Arrow errors, never a model or width mismatch).
//! - `Indexer::adopt_model` records the embedding model's id in `store_settings` on first
//!   use. Under another model it forgets every vector (`forget_vectors`: never compared with
//!   the new model's), re-indexes files whose rows are gone (`audit(true)`, after
//!   `cli::index::rebuild_if_width_changed` dropped a chunk store of another width) and sets
//!   a durable flag; `sextant serve` then queues a sync of every repository
//!   (`repos_to_complete`, `resync_queued`), which re-embeds it (a model used before is
//!   answered by its cache).
//! - `Indexer::adopt_format` does the same for `chunk::FORMAT`: under another format every
//!   file record forgets its hash and time (`MetaStore::forget_file_contents`), so the next
//!   sync reads and chunks every file again (a git source diffs against nothing), and the
//!   same durable flag queues those syncs.
//! - One sync per repository at a time (a per-repo async mutex); per-file read/parse errors
//!   become skip reasons and never stop a sync; progress is a broadcast of `ProgressEvent`s
//!   (phase, done/total, rate, ETA, messages) drawn by `indicatif` in the CLI.

pub mod engine;
mod error;
pub mod fetch_proxy;
pub mod git;
mod graph;
pub mod jobs;
pub mod journal;
pub mod progress;
pub mod scan;
pub mod source;
pub mod watch;

pub use engine::{
    DEFAULT_BATCH_FILES, DELETED_ON_REF, FormatChange, GitPolicy, IndexOptions, Indexer, MAX_REFS,
    MODEL_KEY, ModelChange, RepoAudit, SyncReport,
};
pub use error::IndexError;
pub use jobs::{JobOutcome, JobRunner};
pub use progress::{Phase, Progress, ProgressEvent};
pub use scan::{CONFIG_FILES, FileFilter, Scan, ScannedFile, read_sources, scan_tree};
