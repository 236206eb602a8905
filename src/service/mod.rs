//! What a caller can do, whatever protocol it speaks: register, change, remove and sync
//! repositories, follow their indexing, list their files and symbols, search, look a
//! symbol up.
//!
//! Every operation takes the authenticated [`Principal`] and decides there, once, what it
//! may see and do: a repository it may not see reads exactly like one that does not exist,
//! and changing anything needs the `admin` scope. Results are domain types; failures are a
//! [`ServiceError`]. The adapters — REST ([`crate::api`]), MCP ([`crate::mcp`]) and the
//! CLI — only translate their protocol into these calls and the answers back.
//!
//! # Design notes
//!
//! - `Service::new(indexer, searcher, jobs, events)` with `with_search_defaults`,
//!   `with_max_searches` (searches at once; beyond, `ServiceError::Busy`) and
//!   `with_embed_cache`. Each operation takes the caller's `auth::Principal`:
//!   `list_repositories`, `register(Registration)`, `scout(ScoutRequest)`, `repository`, `update(RepositoryChange)`,
//!   `remove`, `sync`, `files`, `file_symbols`, `jobs`, `job`, `progress` (a `ProgressFeed`
//!   of the events the caller may see; slow subscribers skip, never stall a sync), `search`,
//!   `symbol`, `grep` (exact and regex search over the grep index), `stats` (for `/metrics`), plus `authenticate` (bearer header → principal)
//!   and `ready`.
//! - Authorization is decided here and only here, through two questions to the principal:
//!   `is_admin` (`Forbidden`) and `sees(repo)` (an invisible repository answers exactly like
//!   an unknown one, `NotFound`). Searches are checked (`search::validate_request`: query
//!   ≤ 8 KiB, option ranges, filter sizes, globs) before their repository names are looked
//!   up, then scoped to the visible repositories; rendering runs on the blocking pool.
//! - A registration is one tagged type: `Source::Path(dir)` or `Source::Git { url, ref }`;
//!   `Source::from_fields` reads the flat form REST bodies and MCP arguments share (exactly
//!   one of `path` and `git`; `ref` only with `git`). Search options are the server's
//!   defaults with the request's `search::SearchOverrides` applied (`apply`), for REST and
//!   MCP alike.
//! - `sync` is atomic: `MetaStore::enqueue_job_unless_active` takes the repository's row
//!   lock (Postgres; the write lock on SQLite), checks for a queued or running job of the
//!   same kind and inserts in one transaction, so of racing callers exactly one queues and
//!   the others get `Conflict` naming the job that won (tested on both backends, and
//!   over HTTP with six clients at once).
//! - `ServiceError`: `Unauthenticated`, `Forbidden`, `NotFound`, `Conflict`, `Invalid {
//!   field, message }`, `Busy`, `Unavailable` (a store that does not answer), `Internal`.
//!   Each adapter maps it to its own form: REST to an `ErrorCode` and status, MCP to a tool
//!   result with `isError`.

mod error;
mod grep;
mod refs;
mod repositories;
mod scout;
mod search;
mod stats;
mod tokens;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Semaphore, broadcast};

use crate::auth::{Principal, ScopeError, bearer, hash_secret};
use crate::embed::CachedEmbedder;
use crate::index::{IndexError, Indexer, JobRunner, ProgressEvent};
use crate::search::{SearchOptions, Searcher};
use crate::store::{Job, Repository};

pub use error::ServiceError;
pub use refs::{Affected, Change, ChangedFile, ChangedSymbol, Comparison};
pub use repositories::{Registration, RepositoryChange, RepositoryStatus, Source};
pub use scout::{MAX_TAGS, ScoutRequest};
pub use search::SearchAnswer;
pub use stats::ServerStats;
pub use tokens::{
    CreatedToken, MIN_DISTINCT_CHARS, MIN_SECRET_CHARS, Tokens, Whoami, check_secret,
};

/// The records the operations take and return, defined where they live (the store, the
/// indexer, the searcher) and named here, so that the adapters depend on the service
/// alone (the architecture test holds them to it).
pub mod records {
    pub use crate::index::jobs::{DEFAULT_JOB_DEADLINE, DEFAULT_LEASE};
    pub use crate::index::{DEFAULT_BATCH_FILES, Phase, ProgressEvent, SyncReport};
    pub use crate::search::grep::{GrepMatch, GrepMode, GrepRequest, GrepResponse, GrepStop};
    pub use crate::search::{
        Fusion, Priors, Retrieval, SearchHit, SearchOptions, SearchOverrides, SearchResponse,
        StageTimings,
    };
    pub use crate::store::{
        ApiToken, FileCounts, FileRecord, Job, JobState, RepoSettings, RepoSource, RepoStatus,
        Repository, SymbolRecord,
    };
    pub use crate::text::Tokenizer;
}

/// Searches run at once by default.
pub const DEFAULT_MAX_SEARCHES: usize = 32;

/// Longest a readiness check waits for the metadata store.
const READY_TIMEOUT: Duration = Duration::from_secs(3);

/// The operations, over the indexer, the searcher and the sync queue.
pub struct Service {
    indexer: Arc<Indexer>,
    searcher: Arc<Searcher>,
    jobs: Arc<JobRunner>,
    events: broadcast::Sender<ProgressEvent>,
    search_slots: Arc<Semaphore>,
    search_defaults: SearchOptions,
    embed_cache: Option<Arc<CachedEmbedder>>,
    scout_model: Option<Arc<dyn crate::scout::Chat>>,
    scout_rule: crate::scout::ExpandRule,
}

impl Service {
    /// A service over these parts; progress of every sync is published on `events`.
    pub fn new(
        indexer: Arc<Indexer>,
        searcher: Arc<Searcher>,
        jobs: Arc<JobRunner>,
        events: broadcast::Sender<ProgressEvent>,
    ) -> Self {
        Self {
            indexer,
            searcher,
            jobs,
            events,
            search_slots: Arc::new(Semaphore::new(DEFAULT_MAX_SEARCHES)),
            search_defaults: SearchOptions::default(),
            embed_cache: None,
            scout_model: None,
            scout_rule: crate::scout::ExpandRule::default(),
        }
    }

    /// Server-wide search defaults: what a request does not set comes from here (checked
    /// by the caller with [`SearchOptions::validate`]).
    pub fn with_search_defaults(mut self, defaults: SearchOptions) -> Self {
        self.search_defaults = defaults;
        self
    }

    /// At most `n` searches at once (at least 1); beyond, [`ServiceError::Busy`].
    pub fn with_max_searches(mut self, n: usize) -> Self {
        self.search_slots = Arc::new(Semaphore::new(n.max(1)));
        self
    }

    /// Reports this embedding cache's counters in [`Service::stats`].
    pub fn with_embed_cache(mut self, cache: Arc<CachedEmbedder>) -> Self {
        self.embed_cache = Some(cache);
        self
    }

    /// Rates Scout's links and writes its summaries with this chat model (the structural
    /// rater and the deterministic summary otherwise, and whenever the model fails).
    pub fn with_scout_model(mut self, chat: Arc<dyn crate::scout::Chat>) -> Self {
        self.scout_model = Some(chat);
        self
    }

    /// Scout expands links by this rule (default: the seed's coefficients and threshold).
    pub fn with_scout_rule(mut self, rule: crate::scout::ExpandRule) -> Self {
        self.scout_rule = rule;
        self
    }

    /// The searches that may run at once (tests hold them to see the server refuse).
    pub fn search_slots(&self) -> &Arc<Semaphore> {
        &self.search_slots
    }

    /// The principal of a bearer token's secret (`Authorization: Bearer <secret>`, the
    /// header's value as given, or `None` when there is none).
    pub async fn authenticate(&self, header: Option<&str>) -> Result<Principal, ServiceError> {
        let header = header.ok_or_else(|| {
            ServiceError::Unauthenticated(
                "this server requires an API token: send `Authorization: Bearer <token>` \
                 (an administrator creates one with `sextant token create`)"
                    .into(),
            )
        })?;
        let secret = bearer(header).ok_or_else(|| {
            ServiceError::Unauthenticated(
                "the Authorization header must be `Bearer <token>`".into(),
            )
        })?;
        let token = self
            .indexer
            .meta()
            .token_by_hash(&hash_secret(secret))
            .await?
            .ok_or_else(|| ServiceError::Unauthenticated("unknown or revoked API token".into()))?;
        Ok(Principal::token(
            &token.id,
            token.scope,
            &token.repositories,
        ))
    }

    /// Ends a one-shot command (nothing in this process reads the index after it): the
    /// chunk store drops at once the old versions it keeps for readers in flight, which
    /// a bulk sync leaves many times the index's size of. The command's work is done
    /// either way, so a failure here is a warning: the next maintenance drops them.
    pub async fn finish(&self) {
        if let Err(e) = self.indexer.vectors().finish().await {
            tracing::warn!(error = %e, "old chunk-store versions were not removed; the next sync's maintenance removes them (`sextant doctor` shows what they take)");
        }
    }

    /// Whether the metadata store and the chunk store answer, within a few seconds each
    /// even while one hangs.
    pub async fn ready(&self) -> Result<(), ServiceError> {
        let unavailable = |store: &str, why: String| {
            ServiceError::Unavailable(format!("the {store} does not answer: {why}"))
        };
        let late = || format!("no answer within {} s", READY_TIMEOUT.as_secs());
        match tokio::time::timeout(READY_TIMEOUT, self.indexer.meta().ping()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(unavailable("metadata store", e.to_string())),
            Err(_) => return Err(unavailable("metadata store", late())),
        }
        match tokio::time::timeout(READY_TIMEOUT, self.indexer.vectors().ping()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(unavailable("chunk store", e.to_string())),
            Err(_) => Err(unavailable("chunk store", late())),
        }
    }

    /// Ends a server: the jobs it runs go back to the queue for the processes that share
    /// its database (a failure is logged: their leases run out anyway).
    pub async fn stop(&self) {
        match self.jobs.hand_back().await {
            Ok(0) => {}
            Ok(n) => {
                crate::telemetry::notice(&format!("handed {n} running job(s) back to the queue"))
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot hand the running jobs back; their leases run out instead")
            }
        }
    }

    /// Recent jobs (most recent first, at most `limit`, 1–500), of one repository or of
    /// every one the caller sees.
    pub async fn jobs(
        &self,
        caller: &Principal,
        repository: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Job>, ServiceError> {
        if !(1..=500).contains(&limit) {
            return Err(ServiceError::invalid(
                "limit",
                "`limit` must be between 1 and 500",
            ));
        }
        let repo = match repository {
            Some(name) => Some(self.visible_repo(caller, name).await?.id),
            None => None,
        };
        let mut jobs = self
            .indexer
            .meta()
            .list_jobs(repo.as_deref(), i64::from(limit))
            .await?;
        jobs.retain(|j| job_visible(caller, j));
        Ok(jobs)
    }

    /// One job, when the caller may see it.
    pub async fn job(&self, caller: &Principal, id: &str) -> Result<Job, ServiceError> {
        match self.indexer.meta().get_job(id).await? {
            Some(job) if job_visible(caller, &job) => Ok(job),
            _ => Err(ServiceError::NotFound(format!("no job `{id}`"))),
        }
    }

    /// Progress of the syncs the caller sees (of one repository, when named), from now on.
    pub async fn progress(
        &self,
        caller: &Principal,
        repository: Option<&str>,
    ) -> Result<ProgressFeed, ServiceError> {
        let only = match repository {
            Some(name) => Some(self.visible_repo(caller, name).await?.id),
            None => None,
        };
        Ok(ProgressFeed {
            receiver: self.events.subscribe(),
            caller: caller.clone(),
            only,
        })
    }

    /// The repository named `name` (name or id) as `caller` sees it: one it may not see
    /// is reported exactly like one that does not exist.
    pub async fn visible_repo(
        &self,
        caller: &Principal,
        name: &str,
    ) -> Result<Repository, ServiceError> {
        let repo = self.indexer.find_repo(name).await?;
        if caller.sees(&repo.id) {
            Ok(repo)
        } else {
            Err(IndexError::UnknownRepo(name.to_string()).into())
        }
    }

    /// Brings the grep index of the repositories `filter` reads (every one when it names
    /// none) and of the refs it sees through, up to the copy another replica published
    /// on object storage: chunk rows read their code there. At most one look per
    /// repository per the mirror's interval, side by side; nothing without a mirror. A
    /// look that fails is logged and the last copy read (`GrepIndex::pull`).
    pub(super) async fn pull_contents(&self, filter: &crate::store::ChunkFilter) {
        if self.indexer.grep().is_none_or(|g| g.mirror().is_none()) {
            return;
        }
        let mut ids = filter.repositories.clone();
        if ids.is_empty() {
            match self.indexer.meta().list_repositories().await {
                Ok(all) => ids.extend(all.into_iter().map(|r| r.id)),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot list repositories to refresh their contents")
                }
            }
        }
        ids.extend(filter.views.iter().map(|v| v.tracked.clone()));
        self.pull_repos(&ids).await;
    }

    /// [`Service::pull_contents`] for the repositories (or tracked refs) `ids`.
    pub(super) async fn pull_repos(&self, ids: &[String]) {
        let Some(grep) = self.indexer.grep().filter(|g| g.mirror().is_some()) else {
            return;
        };
        let pulls = ids.iter().map(|id| grep.pull(id, false));
        for (id, pulled) in ids.iter().zip(futures::future::join_all(pulls).await) {
            if let Err(e) = pulled {
                tracing::warn!(repository = %id, error = %e, "contents not refreshed from object storage");
            }
        }
    }

    /// Repository names or ids resolved to the ids a search may cover for `caller`
    /// (every visible repository when `names` is empty and the caller is restricted).
    async fn search_scope(
        &self,
        caller: &Principal,
        names: &[String],
    ) -> Result<Vec<String>, ServiceError> {
        let mut ids = Vec::with_capacity(names.len());
        for name in names {
            ids.push(self.visible_repo(caller, name).await?.id);
        }
        caller.scope_search(ids).map_err(|e| match e {
            ScopeError::Invisible(id) => IndexError::UnknownRepo(id).into(),
            ScopeError::Nothing => {
                ServiceError::Forbidden("this token may not see any repository".into())
            }
        })
    }
}

/// `Ok` when `caller` may change things.
fn require_admin(caller: &Principal) -> Result<(), ServiceError> {
    if caller.is_admin() {
        Ok(())
    } else {
        Err(ServiceError::Forbidden(
            "this needs a token with the `admin` scope; yours is `read`".into(),
        ))
    }
}

fn job_visible(caller: &Principal, job: &Job) -> bool {
    match &job.repo_id {
        Some(id) => caller.sees(id),
        None => caller.sees_all(),
    }
}

/// Sync progress as it happens, limited to what one caller sees.
pub struct ProgressFeed {
    receiver: broadcast::Receiver<ProgressEvent>,
    caller: Principal,
    only: Option<String>,
}

impl ProgressFeed {
    /// The next event, or `None` once the server stops publishing. A subscriber too slow
    /// to keep up skips what it missed rather than stalling the sync.
    pub async fn next(&mut self) -> Option<ProgressEvent> {
        loop {
            match self.receiver.recv().await {
                Ok(event) if self.keeps(&event) => return Some(event),
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    fn keeps(&self, event: &ProgressEvent) -> bool {
        self.caller.sees(&event.repo_id) && self.only.as_ref().is_none_or(|id| *id == event.repo_id)
    }
}
