//! `sextant repo …`: the repository registry, on the local data directory through the
//! service (as a local admin) or on a server over REST (`cli::remote`). Both print
//! through the same functions here, from the REST documents, so they print alike.

use std::io::Write;

use clap::Subcommand;

use super::index::{SourceArgs, fail, sync_with_bars};
use super::{CliError, out, write_err};
use crate::api::RepositoryDetail;
use crate::api::wire;
use crate::app::{Background, runtime};
use crate::auth::Principal;
use crate::config::Config;
use crate::service::RepositoryChange;
use crate::service::records::RepoSettings;

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
    /// Track, list or drop a repository's other refs (branches, tags and commits of a git
    /// repository; worktrees of a local one).
    #[command(subcommand)]
    Ref(RefCommand),
    /// List a repository's files; with --skipped only those not indexed, with the reason.
    Files {
        /// Name or id.
        name: String,
        /// Only skipped files.
        #[arg(long)]
        skipped: bool,
    },
}

/// `sextant repo ref …`: refs a repository tracks beside its default one (branches, tags
/// and commits of a git repository; worktrees of a local one), each indexed as what
/// differs from it and read with `--ref`.
#[derive(Debug, clap::Subcommand)]
pub enum RefCommand {
    /// Track a branch, tag or commit of a git repository, or a worktree of a local one
    /// (and index it: at once with --server, by `sextant repo sync NAME@REF` locally).
    Add {
        /// Repository name or id.
        name: String,
        /// The branch, tag or commit; for a local directory, a worktree's branch, name
        /// or directory (`git worktree list`).
        #[arg(value_name = "REF")]
        git_ref: String,
    },
    /// List the tracked refs with their status.
    List {
        /// Repository name or id.
        name: String,
    },
    /// What differs between two refs (JSON): files, symbols, and the unchanged code
    /// using what changed.
    Compare {
        /// Repository name or id.
        name: String,
        /// The ref compared to.
        #[arg(value_name = "HEAD")]
        head: String,
        /// The ref compared from (default: the default ref).
        #[arg(long)]
        base: Option<String>,
    },
    /// Stop tracking a ref; what it alone held is deleted.
    Drop {
        /// Repository name or id.
        name: String,
        /// The ref.
        #[arg(value_name = "REF")]
        git_ref: String,
    },
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
    /// Git repositories: globs of branches and tags to track as refs (repeatable;
    /// replaces the list), e.g. `--track-refs 'release/*'`; each sync adds the matching
    /// ones and drops those that are gone. `--track-refs ''` clears it.
    #[arg(long = "track-refs")]
    pub refs: Option<Vec<String>>,
}

impl RepoSetArgs {
    /// `current` with each given flag's setting replaced.
    pub(super) fn apply(&self, current: RepoSettings) -> Result<RepoSettings, CliError> {
        let mut settings = current;
        if let Some(v) = &self.include {
            settings.include = non_empty(v.clone());
        }
        if let Some(v) = &self.exclude {
            settings.exclude = non_empty(v.clone());
        }
        if let Some(v) = &self.languages {
            settings.languages = non_empty(v.clone());
        }
        settings.max_file_bytes = self.max_file_bytes.unwrap_or(settings.max_file_bytes);
        settings.max_files = self.max_files.unwrap_or(settings.max_files);
        settings.watch = self.watch.unwrap_or(settings.watch);
        settings.fetch_interval_secs = self.fetch_interval.unwrap_or(settings.fetch_interval_secs);
        if let Some(v) = &self.refs {
            settings.refs = non_empty(v.clone());
        }
        if let Some(rules) = &self.path_roles {
            settings.path_roles = path_roles(rules)?;
        }
        Ok(settings)
    }
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

/// Runs a `sextant repo` action on the local data directory.
pub fn repo(action: RepoCommand, config: &Config) -> Result<(), CliError> {
    runtime()?.block_on(async {
        let service = crate::app::start(config, Background::None, |s| s)
            .await?
            .service;
        let me = Principal::local();
        let mut w = out();
        match action {
            RepoCommand::List => {
                let repositories = service.list_repositories(&me).await.map_err(fail)?;
                print_list(&mut w, &repositories)?;
            }
            RepoCommand::Add(args) => {
                let repo = service
                    .add(&me, args.source.registration())
                    .await
                    .map_err(fail)?;
                writeln!(
                    w,
                    "registered {} ({}); index it with `sextant repo sync {}` or let `sextant serve` do it",
                    repo.name, repo.id, repo.name
                )
                .map_err(write_err)?;
            }
            RepoCommand::Sync { name, .. } => {
                let (_, report) = sync_with_bars(&service, &name).await?;
                service.finish().await;
                writeln!(w, "indexed: {}", report.summary()).map_err(write_err)?;
            }
            RepoCommand::Remove { name } => {
                let repo = service.remove(&me, &name).await.map_err(fail)?;
                writeln!(w, "removed {} ({})", repo.name, repo.id).map_err(write_err)?;
            }
            RepoCommand::Show { name } => {
                let status = service.repository(&me, &name).await.map_err(fail)?;
                print_json(&mut w, &RepositoryDetail::from(status))?;
            }
            RepoCommand::Set(args) => {
                let current = service.repository(&me, &args.name).await.map_err(fail)?;
                let change = RepositoryChange {
                    settings: Some(args.apply(current.repository.settings)?),
                    tracked_ref: args.tracked_ref.clone(),
                };
                let repo = service
                    .update(&me, &args.name, change)
                    .await
                    .map_err(fail)?;
                print_settings(&mut w, &repo.name, &repo.settings)?;
            }
            RepoCommand::Ref(RefCommand::List { name }) => {
                print_refs(&mut w, &service.refs(&me, &name).await.map_err(fail)?)?;
            }
            RepoCommand::Ref(RefCommand::Add { name, git_ref }) => {
                let (tracked, _) = service.add_ref(&me, &name, &git_ref).await.map_err(fail)?;
                writeln!(
                    w,
                    "tracking {} of {name}; index it with `sextant repo sync {}` or let \
                     `sextant serve` do it",
                    tracked.tracked_ref.as_deref().unwrap_or(&git_ref),
                    tracked.name
                )
                .map_err(write_err)?;
            }
            RepoCommand::Ref(RefCommand::Compare { name, head, base }) => {
                let comparison = service
                    .compare(&me, &name, base.as_deref(), &head)
                    .await
                    .map_err(fail)?;
                print_json(&mut w, &comparison)?;
            }
            RepoCommand::Ref(RefCommand::Drop { name, git_ref }) => {
                service.drop_ref(&me, &name, &git_ref).await.map_err(fail)?;
                writeln!(w, "dropped {git_ref} of {name}").map_err(write_err)?;
            }
            RepoCommand::Files { name, skipped } => {
                let files = service.files(&me, &name, skipped).await.map_err(fail)?;
                print_files(&mut w, &files)?;
            }
        }
        Ok(())
    })
}

/// `repo list`: one line per repository: name, status, location, last error.
pub(super) fn print_list(
    w: &mut impl Write,
    repositories: &[wire::Repository],
) -> Result<(), CliError> {
    print_rows(w, repositories, |r| {
        (r.name.clone(), r.source.split().1.to_string())
    })
}

/// `repo ref list`: one line per tracked ref: ref, status, indexed commit, last error.
pub(super) fn print_refs(w: &mut impl Write, refs: &[wire::Repository]) -> Result<(), CliError> {
    print_rows(w, refs, |r| {
        (
            r.tracked_ref.clone().unwrap_or_default(),
            r.indexed_commit.clone().unwrap_or_else(|| "-".into()),
        )
    })
}

/// One line per repository record: what `label` gives (its name, and what to show after
/// its status), the status, and the last error if any.
fn print_rows(
    w: &mut impl Write,
    records: &[wire::Repository],
    label: impl Fn(&wire::Repository) -> (String, String),
) -> Result<(), CliError> {
    for r in records {
        let (name, detail) = label(r);
        let error = r.last_error.as_ref().map(|e| format!("\terror: {e}"));
        writeln!(
            w,
            "{name}\t{}\t{detail}{}",
            r.status,
            error.unwrap_or_default()
        )
        .map_err(write_err)?;
    }
    Ok(())
}

/// `repo files`: one line per file, with its symbol count or why it was skipped.
pub(super) fn print_files(w: &mut impl Write, files: &[wire::File]) -> Result<(), CliError> {
    for f in files {
        match &f.skip_reason {
            Some(why) => writeln!(w, "{}\tskipped: {why}", f.path),
            None => writeln!(w, "{}\t{} symbols", f.path, f.symbol_count),
        }
        .map_err(write_err)?;
    }
    Ok(())
}

/// `repo set`: the saved settings (JSON), then what happens next.
pub(super) fn print_settings(
    w: &mut impl Write,
    name: &str,
    settings: &wire::Settings,
) -> Result<(), CliError> {
    print_json(w, settings)?;
    writeln!(
        w,
        "{name}: settings saved; run `sextant repo sync {name}` or wait for the next sync"
    )
    .map_err(write_err)
}

/// A document as indented JSON and a newline.
pub(super) fn print_json(
    w: &mut impl Write,
    value: &impl serde::Serialize,
) -> Result<(), CliError> {
    serde_json::to_writer_pretty(&mut *w, value).map_err(fail)?;
    writeln!(w).map_err(write_err)
}
