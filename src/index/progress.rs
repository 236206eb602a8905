//! Progress of a sync as a stream of events: the CLI draws them as progress bars, the
//! HTTP layer will send them as server-sent events.

use std::time::Instant;

use serde::Serialize;
use tokio::sync::broadcast;

/// Phases of a sync, in order.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    utoipa::ToSchema,
    strum::IntoStaticStr,
    strum::EnumString,
)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Phase {
    /// Enumerating files and checking which changed.
    Scan,
    /// Parsing and chunking changed files.
    Parse,
    /// Embedding chunk texts not in the cache.
    Embed,
    /// Writing chunks, symbols and file records.
    Write,
    /// Re-resolving the symbol graph of changed files and the files that import them.
    Graph,
    /// Finished.
    Done,
}

/// One progress report.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProgressEvent {
    /// Repository id.
    pub repo_id: String,
    /// Phase.
    pub phase: Phase,
    /// Units done in this phase (files, or texts for `embed`).
    pub done: u64,
    /// Units in this phase.
    pub total: u64,
    /// Units per second in this phase so far.
    pub rate: f64,
    /// Estimated seconds left in this phase.
    pub eta_secs: Option<f64>,
    /// A human line (`12 files changed`, a per-file error, the final summary).
    pub message: Option<String>,
}

/// Where a sync reports progress: a broadcast channel (lagging receivers miss events,
/// the sync never waits for them).
#[derive(Debug, Clone)]
pub struct Progress {
    repo_id: String,
    sender: Option<broadcast::Sender<ProgressEvent>>,
    phase_started: Instant,
    phase: Phase,
}

impl Progress {
    /// Reports for `repo_id` into `sender`.
    pub fn new(repo_id: &str, sender: broadcast::Sender<ProgressEvent>) -> Self {
        Self {
            repo_id: repo_id.to_string(),
            sender: Some(sender),
            phase_started: Instant::now(),
            phase: Phase::Scan,
        }
    }

    /// Reports nowhere.
    pub fn silent(repo_id: &str) -> Self {
        Self {
            repo_id: repo_id.to_string(),
            sender: None,
            phase_started: Instant::now(),
            phase: Phase::Scan,
        }
    }

    /// Reports `done` of `total` in `phase` (starting the phase's clock when it changes).
    pub fn report(&mut self, phase: Phase, done: u64, total: u64, message: Option<String>) {
        if phase != self.phase {
            self.phase = phase;
            self.phase_started = Instant::now();
        }
        let Some(sender) = &self.sender else {
            return;
        };
        let secs = self.phase_started.elapsed().as_secs_f64();
        let rate = if secs > 0.0 { done as f64 / secs } else { 0.0 };
        let eta_secs = (rate > 0.0 && total >= done).then(|| (total - done) as f64 / rate);
        // No receiver is not an error: nobody is watching.
        let _ = sender.send(ProgressEvent {
            repo_id: self.repo_id.clone(),
            phase,
            done,
            total,
            rate,
            eta_secs,
            message,
        });
    }
}
