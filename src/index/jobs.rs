//! Durable sync jobs: requests to sync a repository are rows in the jobs table, run by a
//! [`JobRunner`] with a global limit on concurrent syncs. Any process on the same
//! database may run any job: a claim is a lease in the jobs table (owner, expiry) that
//! the runner renews while the job runs, and one job of a repository runs at a time,
//! whichever process runs it (the claim checks it). A job whose lease runs out (its
//! process died) goes back to the queue and another process takes it; on a database
//! only one process uses (SQLite), jobs left `running` by a crash are re-queued at
//! start. A sync converges from any interrupted state, so a job taken over resumes.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, broadcast};
use tokio::task::JoinSet;

use super::{IndexError, Indexer, Phase, Progress, ProgressEvent, SyncReport};
use crate::store::{Enqueued, Job, JobState, Lease, NewJob, StoreError};

/// The job kind of a repository sync.
pub const SYNC_JOB: &str = "sync";

/// Runs queued sync jobs.
pub struct JobRunner {
    pub(super) indexer: Arc<Indexer>,
    permits: Arc<Semaphore>,
    events: broadcast::Sender<ProgressEvent>,
    wake: Notify,
    /// When the earliest job this runner put back for a retry may be claimed again.
    retry_due: std::sync::Mutex<Option<tokio::time::Instant>>,
    deadline: Duration,
    lease: Lease,
}

/// How long a claim on a job lasts without a renewal, by default; the runner renews it
/// every third of that while the job runs.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// A name for this process's leases, unique among the processes that share a database:
/// the host's name and the process id.
pub fn process_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string());
    format!("{host}:{}", std::process::id())
}

/// Times a job is tried when its sync fails because a store (the metadata database, or
/// object storage) did not answer.
pub const MAX_ATTEMPTS: i64 = 4;

/// How long a job that failed on its `attempt`-th try because a store did not answer
/// waits before it is claimed again: 2 s, 8 s, then 30 s, so that the tries span an
/// outage of most of a minute (a restarting database or object store) instead of being
/// spent within a second.
pub fn retry_delay(attempt: i64) -> Duration {
    let exponent = u32::try_from(attempt.clamp(1, 8) - 1).unwrap_or(0);
    Duration::from_secs(2u64.saturating_mul(4u64.saturating_pow(exponent)).min(30))
}

/// Renews `lease` on job `id` every third of its time to live; says on `lost` when it
/// is lost (another process took the job after this one failed to renew it in time)
/// and ends. A renewal that fails (the database does not answer) is tried again at the
/// next turn: the lease lasts three turns.
async fn hold_lease(
    meta: Arc<dyn crate::store::MetaStore>,
    id: String,
    lease: Lease,
    lost: tokio::sync::oneshot::Sender<()>,
) {
    let every = lease.ttl / 3;
    loop {
        tokio::time::sleep(every).await;
        match meta.renew_job_lease(&id, &lease).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::warn!(job = %id, "{LEASE_LOST}");
                let _ = lost.send(());
                return;
            }
            Err(e) => tracing::warn!(job = %id, error = %e, "renewing a job's lease"),
        }
    }
}

/// Relays the progress that other processes record on the jobs they run (every
/// `every`, when it changed) as events on `events`, and a `done` event once such a job
/// ends: the server-sent events of this process show syncs that run on another replica.
/// Runs for the life of the process.
pub async fn relay_progress(
    meta: Arc<dyn crate::store::MetaStore>,
    own: String,
    events: broadcast::Sender<ProgressEvent>,
    every: Duration,
) {
    // Per job relayed: its repository and the last (done, total, message) sent.
    type Relayed = (String, (i64, i64, Option<String>));
    let mut seen: std::collections::HashMap<String, Relayed> = Default::default();
    loop {
        tokio::time::sleep(every).await;
        let running = match meta.running_jobs().await {
            Ok(jobs) => jobs,
            Err(e) => {
                tracing::debug!(error = %e, "reading other processes' jobs");
                continue;
            }
        };
        let mut still = std::collections::HashSet::new();
        for job in running {
            let (Some(repo_id), Some(owner)) = (&job.repo_id, &job.lease_owner) else {
                continue;
            };
            if *owner == own {
                continue;
            }
            still.insert(job.id.clone());
            let now = (job.progress_done, job.progress_total, job.message.clone());
            if seen.get(&job.id).is_some_and(|(_, last)| *last == now) {
                continue;
            }
            // The recorded message starts with the phase (`parse: 12 of 40`).
            let phase = job
                .message
                .as_deref()
                .and_then(|m| m.split(':').next())
                .and_then(|p| p.parse().ok())
                .unwrap_or(Phase::Scan);
            let event = ProgressEvent {
                repo_id: repo_id.clone(),
                phase,
                done: job.progress_done.max(0) as u64,
                total: job.progress_total.max(0) as u64,
                rate: 0.0,
                eta_secs: None,
                message: job.message.clone(),
            };
            seen.insert(job.id.clone(), (repo_id.clone(), now));
            // An error only says that no one listens now.
            let _ = events.send(event);
        }
        let ended: Vec<String> = seen
            .keys()
            .filter(|id| !still.contains(*id))
            .cloned()
            .collect();
        for id in ended {
            if let Some((repo_id, _)) = seen.remove(&id) {
                let _ = events.send(ProgressEvent {
                    repo_id,
                    phase: Phase::Done,
                    done: 0,
                    total: 0,
                    rate: 0.0,
                    eta_secs: None,
                    message: Some(format!("job {id} finished")),
                });
            }
        }
    }
}

/// Why a sync stopped when its job's lease was lost.
const LEASE_LOST: &str = "this process lost the job's lease (it did not renew it in time) \
     and another process took the job over; the sync stopped here";

/// How long a job's outcome keeps being written while the database does not answer.
const PERSIST_PATIENCE: Duration = Duration::from_secs(600);

/// How often a running job's row takes its sync's latest progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// Copies the progress of `repo_id`'s sync into job `job_id`'s row (at most every
/// [`PROGRESS_EVERY`], and at each new phase), so that `GET /jobs/{id}` and `sextant jobs`
/// show how far a long sync (a cold embedding stage) has come. Best effort: a write that
/// fails is tried again a turn later (unless newer progress replaces it). Runs until
/// told to `stop` (once a write in flight has landed: a write cut off mid-way may still
/// land later, over the job's outcome) or the channel closes.
async fn record_progress(
    meta: Arc<dyn crate::store::MetaStore>,
    job_id: String,
    repo_id: String,
    mut events: broadcast::Receiver<ProgressEvent>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    // The latest event not yet written, and when the last write was.
    let mut unwritten: Option<ProgressEvent> = None;
    let mut written: Option<(tokio::time::Instant, Phase)> = None;
    loop {
        let due_at = written.map(|(at, _)| at + PROGRESS_EVERY);
        let received = tokio::select! {
            _ = &mut stop => return,
            received = events.recv() => Some(received),
            // A throttled event is written once its turn comes, even if none follows.
            _ = tokio::time::sleep_until(due_at.unwrap_or_else(tokio::time::Instant::now)),
                if unwritten.is_some() && due_at.is_some() => None,
        };
        match received {
            Some(Ok(event)) if event.repo_id == repo_id && event.phase != Phase::Done => {
                let due = written.is_none_or(|(at, phase)| {
                    phase != event.phase
                        || at.elapsed() >= PROGRESS_EVERY
                        || event.done == event.total
                });
                unwritten = Some(event);
                if !due {
                    continue;
                }
            }
            Some(Ok(_)) | Some(Err(broadcast::error::RecvError::Lagged(_))) => continue,
            Some(Err(broadcast::error::RecvError::Closed)) => return,
            None => {}
        }
        let Some(event) = unwritten.take() else {
            continue;
        };
        written = Some((tokio::time::Instant::now(), event.phase));
        let mut message = format!(
            "{}: {} of {}",
            <&str>::from(event.phase),
            event.done,
            event.total
        );
        if let Some(eta) = event.eta_secs.filter(|_| event.done < event.total) {
            message.push_str(&format!(" (about {} s left)", eta.ceil() as u64));
        }
        if let Err(e) = meta
            .update_job_progress(
                &job_id,
                event.done as i64,
                event.total as i64,
                Some(&message),
            )
            .await
        {
            tracing::debug!(job = %job_id, error = %e, "cannot record the job's progress");
            // Tried again at its next turn rather than lost: the sync may send nothing
            // more for a long while (a slow embedding slice).
            unwritten.get_or_insert(event);
        }
    }
}

/// Runs `write` until it succeeds, retrying (with back-off up to 30 s, for at most
/// [`PERSIST_PATIENCE`]) while the database does not answer.
async fn persist<F, Fut>(mut write: F) -> Result<(), crate::store::StoreError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), crate::store::StoreError>>,
{
    let started = tokio::time::Instant::now();
    let mut pause = Duration::from_millis(250);
    loop {
        match write().await {
            // A database that does not answer, or a full disk: worth waiting for.
            Err(e)
                if (e.is_unavailable() || e.is_disk_full())
                    && started.elapsed() < PERSIST_PATIENCE =>
            {
                tracing::warn!(error = %e, "recording a job's outcome; retrying");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_secs(30));
            }
            other => return other,
        }
    }
}

/// How long one sync job may run by default before it is stopped (and marked failed; the
/// next sync resumes from what was written).
pub const DEFAULT_JOB_DEADLINE: Duration = Duration::from_secs(6 * 3600);

/// The outcome of one job.
#[derive(Debug)]
pub struct JobOutcome {
    /// The job as claimed.
    pub job: Job,
    /// Its sync report, or the error it failed with.
    pub result: Result<SyncReport, String>,
}

impl JobRunner {
    /// A runner allowing `max_concurrent` syncs at once; progress of every job is
    /// broadcast on `events`.
    pub fn new(
        indexer: Arc<Indexer>,
        max_concurrent: usize,
        events: broadcast::Sender<ProgressEvent>,
    ) -> Self {
        Self {
            indexer,
            permits: Arc::new(Semaphore::new(max_concurrent.max(1))),
            events,
            wake: Notify::new(),
            retry_due: std::sync::Mutex::new(None),
            deadline: DEFAULT_JOB_DEADLINE,
            lease: Lease {
                owner: process_name(),
                ttl: DEFAULT_LEASE,
            },
        }
    }

    /// Claims jobs for `owner` (see [`process_name`]) for `ttl` at a time.
    pub fn with_lease(mut self, owner: impl Into<String>, ttl: Duration) -> Self {
        self.lease = Lease {
            owner: owner.into(),
            ttl: ttl.max(Duration::from_millis(300)),
        };
        self
    }

    /// The name this runner claims jobs under.
    pub fn owner(&self) -> &str {
        &self.lease.owner
    }

    /// Stops any job still running after `deadline` (it fails with a message saying so).
    pub fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Re-queues jobs a previous process left running; call once at start. Returns how
    /// many were re-queued. On SQLite (one process runs jobs) every running job; on a
    /// database processes share, only those whose lease ran out: the others' processes
    /// are alive and renewing them.
    pub async fn resume(&self) -> Result<u64, IndexError> {
        let meta = self.indexer.meta();
        Ok(if meta.shared() {
            meta.requeue_expired_jobs().await?
        } else {
            meta.requeue_running_jobs().await?
        })
    }

    /// Hands the jobs this process runs back to the queue (when it stops), so another
    /// process takes them at once instead of when their leases run out. The syncs in
    /// flight stop with the process; what they wrote is kept and the next one continues.
    /// Returns how many.
    pub async fn hand_back(&self) -> Result<u64, IndexError> {
        Ok(self
            .indexer
            .meta()
            .requeue_jobs_held_by(
                &self.lease.owner,
                &format!("handed back by {}, which stopped", self.lease.owner),
            )
            .await?)
    }

    /// Queues a sync of the repository with this name or id and wakes the runner.
    pub async fn enqueue_sync(&self, name_or_id: &str) -> Result<Job, IndexError> {
        let repo = self.indexer.find_repo(name_or_id).await?;
        let job = self
            .indexer
            .meta()
            .enqueue_job(NewJob {
                repo_id: Some(repo.id),
                kind: SYNC_JOB.into(),
            })
            .await?;
        self.wake.notify_one();
        Ok(job)
    }

    /// Queues a sync of the repository with this id unless one is queued or running
    /// (checked and queued atomically), and wakes the runner.
    pub async fn enqueue_sync_unless_active(&self, repo_id: &str) -> Result<Enqueued, IndexError> {
        let enqueued = self
            .indexer
            .meta()
            .enqueue_job_unless_active(NewJob {
                repo_id: Some(repo_id.to_string()),
                kind: SYNC_JOB.into(),
            })
            .await?;
        if matches!(enqueued, Enqueued::Queued(_)) {
            self.wake.notify_one();
        }
        Ok(enqueued)
    }

    /// Claims and runs queued jobs until none is left, up to the concurrency limit at a
    /// time. Returns the outcomes in completion order.
    pub async fn run_queued(self: &Arc<Self>) -> Result<Vec<JobOutcome>, IndexError> {
        let mut tasks = JoinSet::new();
        let mut outcomes = Vec::new();
        loop {
            self.start_claimable(&mut tasks).await?;
            match tasks.join_next().await {
                Some(done) => {
                    outcomes.push(done.map_err(|e| IndexError::Task(e.to_string()))??);
                }
                // A job put back for a retry is still to run: wait out its back-off.
                None => match self.take_retry_due(None) {
                    Some(due) => tokio::time::sleep_until(due).await,
                    None => return Ok(outcomes),
                },
            }
        }
    }

    /// When the earliest retry this runner scheduled is due: taken (cleared) when it is
    /// due by `now`, or always when `now` is `None`; a later one is left in place.
    fn take_retry_due(&self, now: Option<tokio::time::Instant>) -> Option<tokio::time::Instant> {
        let mut due = self.retry_due.lock().unwrap_or_else(|p| p.into_inner());
        match (*due, now) {
            (Some(d), Some(now)) if d > now => Some(d),
            (d, _) => {
                *due = None;
                d
            }
        }
    }

    /// Claims queued jobs while a slot is free, each run in its own task holding its slot.
    async fn start_claimable(
        self: &Arc<Self>,
        tasks: &mut JoinSet<Result<JobOutcome, IndexError>>,
    ) -> Result<(), IndexError> {
        while let Ok(permit) = self.permits.clone().try_acquire_owned() {
            let Some(job) = self.indexer.meta().claim_job(None, &self.lease).await? else {
                break;
            };
            let this = self.clone();
            tasks.spawn(async move {
                let outcome = this.run_one(job).await;
                drop::<OwnedSemaphorePermit>(permit);
                outcome
            });
        }
        Ok(())
    }

    #[tracing::instrument(
        name = "job",
        skip_all,
        fields(sextant.job.id = %job.id, sextant.job.kind = %job.kind, sextant.job.attempt = job.attempts)
    )]
    async fn run_one(&self, job: Job) -> Result<JobOutcome, IndexError> {
        let (result, transient) = match (&job.kind[..], &job.repo_id) {
            (SYNC_JOB, Some(repo_id)) => self.run_sync(&job, repo_id).await?,
            (kind, _) => (Err(format!("unknown job kind `{kind}`")), false),
        };
        let retry = (transient && job.attempts < MAX_ATTEMPTS).then(|| retry_delay(job.attempts));
        if let (Some(delay), Err(e)) = (retry, &result) {
            // Said where it is seen (the server's log, `sextant index` waiting out the
            // back-off), not only on the job's row.
            tracing::warn!(
                job = %job.id,
                attempt = job.attempts,
                error = %e,
                "a store did not answer; the sync is tried again in {} s",
                delay.as_secs()
            );
        }
        self.record_outcome(&job, &result, retry).await?;
        if let (Ok(report), Some(repo_id)) = (&result, &job.repo_id) {
            self.enqueue_refs(repo_id, report.changed_anything())
                .await?;
        }
        if let Some(delay) = retry {
            // A little after the stored time, so the claim at `due` finds it claimable.
            let due = tokio::time::Instant::now() + delay + Duration::from_millis(50);
            let mut earliest = self.retry_due.lock().unwrap_or_else(|p| p.into_inner());
            *earliest = Some(earliest.map_or(due, |e| e.min(due)));
        }
        let _ = self.events.send(ProgressEvent {
            repo_id: job.repo_id.clone().unwrap_or_default(),
            phase: Phase::Done,
            done: 0,
            total: 0,
            rate: 0.0,
            eta_secs: None,
            message: Some(format!("job {} finished", job.id)),
        });
        Ok(JobOutcome { job, result })
    }

    /// After a repository's sync: refs its `refs` globs now match are tracked (and those
    /// whose branch is gone dropped), then a sync is queued for each ref never indexed,
    /// and for every ref when the repository `changed` (a ref holds what differs from the
    /// repository's indexed commit, which may have moved).
    async fn enqueue_refs(&self, repo_id: &str, changed: bool) -> Result<(), IndexError> {
        let repo = self.indexer.find_repo(repo_id).await?;
        if let Err(e) = self.indexer.reconcile_refs(&repo).await {
            tracing::warn!(repo = %repo.name, error = %e, "cannot update the refs its globs match");
        }
        for tracked in self.indexer.meta().list_refs(repo_id).await? {
            if changed || tracked.indexed_commit.is_none() {
                self.enqueue_sync_unless_active(&tracked.id).await?;
            }
        }
        Ok(())
    }

    /// Runs a sync job under the deadline, its progress recorded on the job. Returns
    /// the outcome and whether it failed because the metadata database did not answer
    /// (worth another attempt).
    async fn run_sync(
        &self,
        job: &Job,
        repo_id: &str,
    ) -> Result<(Result<SyncReport, String>, bool), IndexError> {
        let meta = self.indexer.meta().clone();
        let unavailable = |e: &IndexError| matches!(e, IndexError::Store(s) if s.is_unavailable());
        let repo = match self.indexer.find_repo(repo_id).await {
            Ok(repo) => repo,
            // The database may go away between the claim and this read, too.
            Err(e) => return Ok((Err(e.to_string()), unavailable(&e))),
        };
        let mut progress = Progress::new(&repo.id, self.events.clone());
        let (stop_recording, stop) = tokio::sync::oneshot::channel();
        let recorder = tokio::spawn(record_progress(
            meta.clone(),
            job.id.clone(),
            repo.id.clone(),
            self.events.subscribe(),
            stop,
        ));
        // The lease is renewed from a task of its own: a sync busy on its thread must not
        // starve the renewals (its lease would run out and another process take the job).
        let (lost_tx, lost_rx) = tokio::sync::oneshot::channel();
        let heartbeat = tokio::spawn(hold_lease(
            meta.clone(),
            job.id.clone(),
            self.lease.clone(),
            lost_tx,
        ));
        let sync = tokio::time::timeout(self.deadline, self.indexer.sync(&repo, &mut progress));
        let outcome = tokio::select! {
            outcome = sync => Some(outcome),
            Ok(()) = lost_rx => None,
        };
        heartbeat.abort();
        // The outcome written by `record_outcome` is the job's last word: the recorder
        // stops after any write it has in flight.
        let _ = stop_recording.send(());
        let _ = recorder.await;
        let Some(outcome) = outcome else {
            return Ok((Err(LEASE_LOST.to_string()), false));
        };
        match outcome {
            Ok(Ok(report)) => Ok((Ok(report), false)),
            Ok(Err(e)) => Ok((Err(e.to_string()), unavailable(&e))),
            Err(_) => {
                let message = format!(
                    "the sync ran longer than its deadline ({} s) and was stopped; \
                     what it wrote is kept and the next sync continues from there",
                    self.deadline.as_secs()
                );
                // The stopped sync could not record its own end.
                persist(|| {
                    meta.set_repository_status(
                        &repo.id,
                        crate::store::RepoStatus::Error,
                        Some(&message),
                        None,
                    )
                })
                .await?;
                Ok((Err(message), false))
            }
        }
    }

    /// Records a job's outcome: succeeded with its counts, queued again (`retry`), or
    /// failed with the error also on its repository. Recorded even if the database is
    /// still coming back: a job left `running` would make every later sync request a 409.
    /// Nothing is recorded for a job whose lease was lost: it is another process's now.
    async fn record_outcome(
        &self,
        job: &Job,
        result: &Result<SyncReport, String>,
        retry: Option<Duration>,
    ) -> Result<(), IndexError> {
        if matches!(result, Err(e) if e == LEASE_LOST) {
            return Ok(());
        }
        let meta = self.indexer.meta().clone();
        persist(|| async {
            match result {
                Ok(report) => {
                    meta.update_job_progress(
                        &job.id,
                        report.indexed as i64,
                        report.scanned as i64,
                        Some(&report.summary()),
                    )
                    .await?;
                    meta.finish_job(&job.id, JobState::Succeeded, None).await
                }
                Err(e) if let Some(delay) = retry => {
                    let not_before = crate::store::now_ms()
                        .saturating_add(i64::try_from(delay.as_millis()).unwrap_or(i64::MAX));
                    meta.requeue_job(
                        &job.id,
                        &format!(
                            "will be tried again in {} s (attempt {} of {MAX_ATTEMPTS}): {e}",
                            delay.as_secs(),
                            job.attempts + 1
                        ),
                        Some(not_before),
                    )
                    .await
                }
                Err(e) => {
                    // The sync may not have been able to record it (a full disk).
                    if let Some(repo_id) = &job.repo_id {
                        let recorded = meta
                            .set_repository_status(
                                repo_id,
                                crate::store::RepoStatus::Error,
                                Some(e),
                                None,
                            )
                            .await;
                        // A repository removed meanwhile has no status to record.
                        if !matches!(recorded, Ok(()) | Err(StoreError::NotFound(_))) {
                            recorded?;
                        }
                    }
                    meta.finish_job(&job.id, JobState::Failed, Some(e)).await
                }
            }
        })
        .await?;
        Ok(())
    }

    /// Queues a sync for every git repository whose `fetch_interval_secs` has passed
    /// since it last changed state and that has no sync queued or running. Returns the
    /// jobs queued.
    pub async fn enqueue_due_fetches(&self) -> Result<Vec<Job>, IndexError> {
        let meta = self.indexer.meta();
        let now = crate::store::now_ms();
        let mut queued = Vec::new();
        for repo in meta.list_repositories().await? {
            let interval = repo.settings.fetch_interval_secs;
            if interval == 0
                || !matches!(repo.source, crate::store::RepoSource::Git(_))
                || now - repo.updated_at < (interval as i64).saturating_mul(1000)
            {
                continue;
            }
            let busy = meta
                .list_jobs(Some(&repo.id), 1)
                .await?
                .first()
                .is_some_and(|j| matches!(j.state, JobState::Queued | JobState::Running));
            if !busy {
                queued.push(self.enqueue_sync(&repo.id).await?);
            }
        }
        Ok(queued)
    }

    /// Runs jobs forever: a queued job starts as soon as a slot is free (a long or stuck
    /// sync never holds back the others), on [`JobRunner::enqueue_sync`]'s wake-up, and
    /// every `poll` (jobs queued by other processes, periodic fetches of git
    /// repositories, watches of working trees added or removed). Errors of the queue
    /// itself are logged.
    pub async fn run_forever(self: Arc<Self>, poll: Duration) {
        let mut tasks = JoinSet::new();
        let mut next_poll = tokio::time::Instant::now();
        let mut next_lease_check = next_poll;
        let mut watches = super::watch::Watches::default();
        loop {
            if tokio::time::Instant::now() >= next_lease_check {
                // Jobs of processes that stopped renewing their leases come back.
                match self.indexer.meta().requeue_expired_jobs().await {
                    Ok(0) => {}
                    Ok(n) => tracing::warn!(jobs = n, "taking over jobs whose leases ran out"),
                    Err(e) => tracing::error!(error = %e, "job leases"),
                }
                next_lease_check = tokio::time::Instant::now() + self.lease.ttl / 3;
            }
            if tokio::time::Instant::now() >= next_poll {
                if let Err(e) = self.enqueue_due_fetches().await {
                    tracing::error!(error = %e, "periodic fetch");
                }
                let debounce = Duration::from_millis(500);
                if let Err(e) = self.refresh_watches(&mut watches, debounce).await {
                    tracing::error!(error = %e, "watching working trees");
                }
                next_poll = tokio::time::Instant::now() + poll;
            }
            // A retry whose back-off has passed is claimed now; a later one wakes the loop.
            let now = tokio::time::Instant::now();
            let retry = self.take_retry_due(Some(now)).filter(|due| *due > now);
            if let Err(e) = self.start_claimable(&mut tasks).await {
                tracing::error!(error = %e, "job queue");
            }
            let wake_at = retry.map_or(next_poll.min(next_lease_check), |due| {
                due.min(next_poll).min(next_lease_check)
            });
            tokio::select! {
                Some(done) = tasks.join_next(), if !tasks.is_empty() => match done {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => tracing::error!(error = %e, "job bookkeeping"),
                    Err(e) => tracing::error!(error = %e, "job task"),
                },
                () = self.wake.notified() => {}
                () = tokio::time::sleep_until(wake_at) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_to_a_ceiling() {
        let delays: Vec<u64> = (1..=MAX_ATTEMPTS)
            .map(|attempt| retry_delay(attempt).as_secs())
            .collect();
        assert_eq!(delays, [2, 8, 30, 30]);
        // The tries span most of a minute of outage.
        let waited: u64 = delays[..delays.len() - 1].iter().sum();
        assert!(waited >= 40, "{waited}");
        assert_eq!(retry_delay(0), retry_delay(1));
        assert_eq!(retry_delay(i64::MAX).as_secs(), 30);
    }
}
