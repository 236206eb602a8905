//! `sextant index` and `sextant repo …`: one-shot indexing with progress bars, and the
//! repository registry.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use clap::Subcommand;
use indicatif::{ProgressBar, ProgressStyle};

use super::{CliError, out, write_err};
use crate::app::{open_meta, runtime};
use crate::config::Config;
use crate::index::{Indexer, Phase, Progress, ProgressEvent};
use crate::service::RepositoryStatus;
use crate::store::{MetaStore, RepoSettings, SqlMetaStore};

/// `sextant repo` actions.
#[derive(Debug, Subcommand)]
pub enum RepoCommand {
    /// List registered repositories with their status and file counts.
    List,
    /// Register a directory or git repository (indexed by the next sync: at once with
    /// `--server`, by `sextant repo sync` or `sextant serve` locally).
    Add(RepoAddArgs),
    /// Sync a repository now and wait for it (with `--no-wait`, only queue it on the
    /// server).
    Sync {
        /// Name or id.
        name: String,
        /// With --server: return once queued.
        #[arg(long)]
        no_wait: bool,
    },
    /// Remove a repository and everything indexed for it.
    Remove {
        /// Name or id.
        name: String,
    },
    /// Show one repository: source, status, indexed commit, settings, file counts (JSON).
    Show {
        /// Name or id.
        name: String,
    },
    /// Change a repository's settings; the next sync applies them.
    Set(RepoSetArgs),
    /// List a repository's files; with --skipped only those not indexed, with the reason.
    Files {
        /// Name or id.
        name: String,
        /// Only skipped files.
        #[arg(long)]
        skipped: bool,
    },
}

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
    /// Registers the source with `indexer` (or returns it when already registered).
    pub(super) async fn register(
        &self,
        indexer: &Indexer,
    ) -> Result<crate::store::Repository, CliError> {
        let settings = RepoSettings {
            include: self.include.clone(),
            exclude: self.exclude.clone(),
            ..RepoSettings::default()
        };
        if self.git {
            indexer
                .register_git(
                    &self.source,
                    self.name.as_deref(),
                    self.tracked_ref.as_deref(),
                    settings,
                )
                .await
        } else {
            indexer
                .register_path(&PathBuf::from(&self.source), self.name.as_deref(), settings)
                .await
        }
        .map_err(fail)
    }
}

/// Options of `sextant repo add`.
#[derive(Debug, clap::Args)]
pub struct RepoAddArgs {
    /// What to register.
    #[command(flatten)]
    pub source: SourceArgs,
    /// With --server: return once registered, without waiting for the first sync.
    #[arg(long)]
    pub no_wait: bool,
}

/// Options of `sextant repo set`: each given flag replaces that setting.
#[derive(Debug, clap::Args)]
pub struct RepoSetArgs {
    /// Name or id.
    pub name: String,
    /// Include globs (repeatable; replaces the list). `--include ''` clears it.
    #[arg(long)]
    pub include: Option<Vec<String>>,
    /// Exclude globs (repeatable; replaces the list). `--exclude ''` clears it.
    #[arg(long)]
    pub exclude: Option<Vec<String>>,
    /// Largest file indexed, in bytes (`--max-file-size`: the global `--max-file-bytes`
    /// is the parser's own limit).
    #[arg(long = "max-file-size", id = "repo_max_file_bytes")]
    pub max_file_bytes: Option<u64>,
    /// Most files indexed.
    #[arg(long)]
    pub max_files: Option<u64>,
    /// Language ids to index (`typescript`, `tsx`, `javascript`; comma-separated; empty: all).
    #[arg(long, value_delimiter = ',')]
    pub languages: Option<Vec<String>>,
    /// Watch the working tree for changes (`sextant serve`).
    #[arg(long)]
    pub watch: Option<bool>,
    /// Seconds between fetches of a git repository (0: never).
    #[arg(long)]
    pub fetch_interval: Option<u64>,
    /// Git repositories: the branch, tag or commit to track.
    #[arg(long = "ref")]
    pub tracked_ref: Option<String>,
    /// Ranking role of paths, `ROLE=GLOB` (repeatable; replaces the list; roles: source,
    /// test, fixture, example, declaration, generated), e.g. `--path-role
    /// 'source=test/helpers/**'`. `--path-role ''` clears it.
    #[arg(long = "path-role")]
    pub path_roles: Option<Vec<String>>,
}

/// `ROLE=GLOB` flags as the `pathRoles` setting (checked when the settings are saved).
fn path_roles(
    rules: &[String],
) -> Result<std::collections::BTreeMap<String, Vec<String>>, CliError> {
    let mut out: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for rule in non_empty(rules.to_vec()) {
        let (role, glob) = rule.split_once('=').ok_or_else(|| {
            CliError::Output(format!(
                "--path-role {rule:?}: write ROLE=GLOB, e.g. 'source=test/helpers/**'"
            ))
        })?;
        out.entry(role.trim().to_string())
            .or_default()
            .push(glob.trim().to_string());
    }
    Ok(out)
}

fn non_empty(list: Vec<String>) -> Vec<String> {
    list.into_iter().filter(|s| !s.trim().is_empty()).collect()
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

async fn open_indexer(config: &Config, meta: Arc<SqlMetaStore>) -> Result<Indexer, CliError> {
    Ok(crate::app::open_indexer(config, meta).await?.indexer)
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

/// Syncs `repo`, drawing progress bars on stderr.
pub(super) async fn sync_with_bars(
    indexer: &Indexer,
    repo: &crate::store::Repository,
) -> Result<crate::index::SyncReport, CliError> {
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
    let mut progress = Progress::new(&repo.id, sender);
    let report = indexer.sync(repo, &mut progress).await;
    drop(progress);
    let _ = drawer.await;
    bar.finish_and_clear();
    report.map_err(fail)
}

/// Indexes a directory once, with progress bars on stderr.
pub fn index(args: IndexArgs, config: &Config) -> Result<(), CliError> {
    runtime()?.block_on(async {
        let meta = open_meta(config).await?;
        let indexer = open_indexer(config, meta).await?;
        let repo = args.source.register(&indexer).await?;
        let report = sync_with_bars(&indexer, &repo).await?;
        let mut w = out();
        if args.json {
            serde_json::to_writer_pretty(&mut w, &report).map_err(fail)?;
            writeln!(w).map_err(write_err)?;
        } else {
            writeln!(
                w,
                "{}: {} files ({} indexed, {} unchanged, {} touched, {} removed, {} skipped, {} failed), {} chunks, {} lines in {:.1} s",
                repo.name,
                report.scanned,
                report.indexed,
                report.unchanged,
                report.touched,
                report.removed,
                report.skipped,
                report.failed.len(),
                report.chunks,
                report.lines,
                report.duration.as_secs_f64()
            )
            .map_err(write_err)?;
            for (path, why) in &report.failed {
                writeln!(w, "  failed: {path}: {why}").map_err(write_err)?;
            }
        }
        Ok(())
    })
}

/// Runs a `sextant repo` action.
pub fn repo(action: RepoCommand, config: &Config) -> Result<(), CliError> {
    runtime()?.block_on(async {
        let meta = open_meta(config).await?;
        let mut w = out();
        match action {
            RepoCommand::List => {
                for r in meta.list_repositories().await.map_err(fail)? {
                    let files = meta.file_counts(&r.id).await.map_err(fail)?;
                    let location = match &r.source {
                        crate::store::RepoSource::Path(p) | crate::store::RepoSource::Git(p) => p,
                    };
                    writeln!(
                        w,
                        "{}\t{}\t{} files ({} skipped)\t{}{}",
                        r.name,
                        r.status.as_str(),
                        files.indexed,
                        files.skipped,
                        location,
                        r.last_error
                            .map(|e| format!("\terror: {e}"))
                            .unwrap_or_default()
                    )
                    .map_err(write_err)?;
                }
            }
            RepoCommand::Add(args) => {
                let indexer = open_indexer(config, meta).await?;
                let repo = args.source.register(&indexer).await?;
                writeln!(
                    w,
                    "registered {} ({}); index it with `sextant repo sync {}` or let `sextant serve` do it",
                    repo.name, repo.id, repo.name
                )
                .map_err(write_err)?;
            }
            RepoCommand::Sync { name, .. } => {
                let indexer = open_indexer(config, meta).await?;
                let repo = indexer.find_repo(&name).await.map_err(fail)?;
                let report = sync_with_bars(&indexer, &repo).await?;
                writeln!(
                    w,
                    "{}: {} indexed, {} unchanged, {} removed, {} failed in {:.1} s",
                    repo.name,
                    report.indexed,
                    report.unchanged,
                    report.removed,
                    report.failed.len(),
                    report.duration.as_secs_f64()
                )
                .map_err(write_err)?;
            }
            RepoCommand::Remove { name } => {
                let indexer = open_indexer(config, meta).await?;
                let repo = indexer.remove_repo(&name).await.map_err(fail)?;
                writeln!(w, "removed {} ({})", repo.name, repo.id).map_err(write_err)?;
            }
            RepoCommand::Show { name } => {
                let indexer = open_indexer(config, meta.clone()).await?;
                let repo = indexer.find_repo(&name).await.map_err(fail)?;
                let counts = meta.file_counts(&repo.id).await.map_err(fail)?;
                let recent_jobs = meta.list_jobs(Some(&repo.id), 5).await.map_err(fail)?;
                // The same document as `GET /api/v1/repositories/{repo}`.
                let shown = crate::api::RepositoryDetail::from(RepositoryStatus {
                    repository: repo,
                    counts,
                    recent_jobs,
                });
                serde_json::to_writer_pretty(&mut w, &shown).map_err(fail)?;
                writeln!(w).map_err(write_err)?;
            }
            RepoCommand::Set(args) => {
                let indexer = open_indexer(config, meta).await?;
                let mut settings = indexer.find_repo(&args.name).await.map_err(fail)?.settings;
                if let Some(v) = args.include {
                    settings.include = non_empty(v);
                }
                if let Some(v) = args.exclude {
                    settings.exclude = non_empty(v);
                }
                if let Some(v) = args.languages {
                    settings.languages = non_empty(v);
                }
                settings.max_file_bytes = args.max_file_bytes.unwrap_or(settings.max_file_bytes);
                settings.max_files = args.max_files.unwrap_or(settings.max_files);
                settings.watch = args.watch.unwrap_or(settings.watch);
                settings.fetch_interval_secs =
                    args.fetch_interval.unwrap_or(settings.fetch_interval_secs);
                if let Some(rules) = args.path_roles {
                    settings.path_roles = path_roles(&rules)?;
                }
                let repo = indexer
                    .update_settings(&args.name, args.tracked_ref, settings)
                    .await
                    .map_err(fail)?;
                let shown = crate::api::wire::Settings::from(repo.settings);
                serde_json::to_writer_pretty(&mut w, &shown).map_err(fail)?;
                writeln!(
                    w,
                    "\n{}: settings saved; run `sextant index` or wait for the next sync",
                    repo.name
                )
                .map_err(write_err)?;
            }
            RepoCommand::Files { name, skipped } => {
                let repo = match meta.get_repository_by_name(&name).await.map_err(fail)? {
                    Some(r) => r,
                    None => meta
                        .get_repository(&name)
                        .await
                        .map_err(fail)?
                        .ok_or_else(|| fail(crate::index::IndexError::UnknownRepo(name.clone())))?,
                };
                for f in meta.list_files(&repo.id).await.map_err(fail)? {
                    match (&f.skip_reason, skipped) {
                        (Some(why), _) => writeln!(w, "{}\tskipped: {why}", f.path),
                        (None, false) => writeln!(w, "{}\t{} symbols", f.path, f.symbol_count),
                        (None, true) => continue,
                    }
                    .map_err(write_err)?;
                }
            }
        }
        Ok(())
    })
}
