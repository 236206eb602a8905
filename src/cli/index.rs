//! `sextant index`: one-shot indexing with progress bars (also what `repo sync` and
//! `eval` show), through the service as a local admin.

use std::io::Write;
use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressStyle};

use super::{CliError, out, write_err};
use crate::app::{Background, runtime};
use crate::auth::Principal;
use crate::config::Config;
use crate::service::records::{Phase, ProgressEvent, RepoSettings, Repository, SyncReport};
use crate::service::{Registration, Service, Source};

/// What to register: shared by `sextant index` and `sextant repo add`.
#[derive(Debug, clap::Args)]
pub struct SourceArgs {
    /// A directory (on the machine that indexes it), or with --git a repository URL.
    pub source: String,
    /// SOURCE is a git URL (or a local git repository): cloned into a bare mirror in the
    /// data directory and synced by commit diffs.
    #[arg(long)]
    pub git: bool,
    /// With --git: the branch, tag or commit to track (default: the remote's default branch).
    #[arg(long = "ref")]
    pub tracked_ref: Option<String>,
    /// Repository name (default: the directory's or repository's name).
    #[arg(long)]
    pub name: Option<String>,
    /// Only index files matching these globs (repeatable).
    #[arg(long)]
    pub include: Vec<String>,
    /// Never index files matching these globs (repeatable).
    #[arg(long)]
    pub exclude: Vec<String>,
}

impl SourceArgs {
    /// The registration these flags ask for.
    pub(super) fn registration(&self) -> Registration {
        let source = if self.git {
            Source::Git {
                url: self.source.clone(),
                tracked_ref: self.tracked_ref.clone(),
            }
        } else {
            Source::Path(PathBuf::from(&self.source))
        };
        Registration {
            source,
            name: self.name.clone(),
            settings: RepoSettings {
                include: self.include.clone(),
                exclude: self.exclude.clone(),
                ..RepoSettings::default()
            },
        }
    }
}

/// Options of `sextant index`.
#[derive(Debug, clap::Args)]
pub struct IndexArgs {
    /// What to index (registered on first use).
    #[command(flatten)]
    pub source: SourceArgs,
    /// Print the sync report as JSON instead of a summary line.
    #[arg(long)]
    pub json: bool,
}

pub(super) fn fail(e: impl std::fmt::Display) -> CliError {
    CliError::Failed(e.to_string())
}

fn draw(bar: &ProgressBar, event: &ProgressEvent) {
    let phase = match event.phase {
        Phase::Scan => "scan",
        Phase::Parse => "parse",
        Phase::Embed => "embed",
        Phase::Write => "write",
        Phase::Graph => "graph",
        Phase::Done => "done",
    };
    bar.set_length(event.total.max(event.done));
    bar.set_position(event.done);
    bar.set_message(phase);
    if let Some(m) = &event.message {
        bar.println(format!("{phase}: {m}"));
    }
}

/// Syncs repository `name` through the service, drawing progress bars on stderr.
pub(super) async fn sync_with_bars(
    service: &Service,
    name: &str,
) -> Result<(Repository, SyncReport), CliError> {
    let (sender, mut receiver) = tokio::sync::broadcast::channel(1024);
    let bar = ProgressBar::new(0).with_style(
        ProgressStyle::with_template(
            "{spinner} {msg:>6} [{bar:30}] {pos}/{len} {per_sec} eta {eta}",
        )
        .map_err(fail)?
        .progress_chars("=> "),
    );
    let drawer = {
        let bar = bar.clone();
        tokio::spawn(async move {
            loop {
                match receiver.recv().await {
                    Ok(event) => draw(&bar, &event),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(_) => break,
                }
            }
        })
    };
    let synced = service.sync_now(&Principal::local(), name, sender).await;
    let _ = drawer.await;
    bar.finish_and_clear();
    synced.map_err(fail)
}

/// Indexes a directory once, with progress bars on stderr.
pub fn index(args: IndexArgs, config: &Config) -> Result<(), CliError> {
    runtime()?.block_on(async {
        let service = crate::app::start(config, Background::None, |s| s)
            .await?
            .service;
        let repo = service
            .add(&Principal::local(), args.source.registration())
            .await
            .map_err(fail)?;
        let (repo, report) = sync_with_bars(&service, &repo.id).await?;
        service.finish().await;
        let mut w = out();
        if args.json {
            serde_json::to_writer_pretty(&mut w, &report).map_err(fail)?;
            writeln!(w).map_err(write_err)?;
        } else {
            writeln!(
                w,
                "{}: {} files ({} indexed, {} unchanged, {} touched, {} removed, {} skipped, {} failed), {} chunks, {} embedded, {} lines in {:.1} s",
                repo.name,
                report.scanned,
                report.indexed,
                report.unchanged,
                report.touched,
                report.removed,
                report.skipped,
                report.failed.len(),
                report.chunks,
                report.vectors(),
                report.lines,
                report.duration.as_secs_f64()
            )
            .map_err(write_err)?;
            writeln!(w, "  time: {}", report.phases).map_err(write_err)?;
            for (path, why) in &report.failed {
                writeln!(w, "  failed: {path}: {why}").map_err(write_err)?;
            }
        }
        Ok(())
    })
}
