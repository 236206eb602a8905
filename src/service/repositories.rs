//! Repositories: register, inspect, change, remove, sync; their files and symbols.

use std::path::PathBuf;

use super::{Service, ServiceError, require_admin};
use crate::auth::Principal;
use crate::index::{Progress, ProgressEvent, SyncReport};
use crate::store::{Enqueued, FileCounts, FileRecord, Job, RepoSettings, Repository, SymbolRecord};

/// Where a new repository's files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A directory on the server (under its allowed roots, if set).
    Path(PathBuf),
    /// A git URL (https, ssh or file), tracking a branch, tag or commit (default: the
    /// remote's HEAD).
    Git {
        /// The URL.
        url: String,
        /// What to track.
        tracked_ref: Option<String>,
    },
}

impl Source {
    /// The source of a request that names it with optional fields (`path`, or `git` and
    /// `ref`), as REST bodies and MCP arguments do: exactly one of `path` and `git`.
    pub fn from_fields(
        path: Option<String>,
        git: Option<String>,
        tracked_ref: Option<String>,
    ) -> Result<Self, ServiceError> {
        match (path, git) {
            (Some(_), _) if tracked_ref.is_some() => Err(ServiceError::invalid(
                "ref",
                "`ref` applies to `git` repositories only",
            )),
            (Some(path), None) => Ok(Self::Path(PathBuf::from(path))),
            (None, Some(url)) => Ok(Self::Git { url, tracked_ref }),
            _ => Err(ServiceError::invalid(
                "source",
                "give exactly one of `path` (a directory on the server) or `git` (a URL)",
            )),
        }
    }
}

/// A repository to register.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// Its source.
    pub source: Source,
    /// Display name (default: the directory or repository name).
    pub name: Option<String>,
    /// Include/exclude globs, limits, languages, watch, fetch interval.
    pub settings: RepoSettings,
}

/// What to change of a repository; `None` keeps the current value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RepositoryChange {
    /// New settings, replacing the current ones as a whole.
    pub settings: Option<RepoSettings>,
    /// Git repositories: the branch, tag or commit to track.
    pub tracked_ref: Option<String>,
}

/// A repository with its counts and recent jobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepositoryStatus {
    /// The repository (status, indexed commit, last error, settings).
    pub repository: Repository,
    /// Files indexed and skipped, symbols.
    pub counts: FileCounts,
    /// The most recent jobs, newest first.
    pub recent_jobs: Vec<Job>,
    /// The refs it tracks beyond its default one (each with its status and commit).
    pub refs: Vec<Repository>,
}

impl Service {
    /// Registered repositories the caller may see.
    pub async fn list_repositories(
        &self,
        caller: &Principal,
    ) -> Result<Vec<Repository>, ServiceError> {
        let mut repositories = self.indexer.meta().list_repositories().await?;
        repositories.retain(|r| r.parent_id.is_none() && caller.sees(&r.id));
        Ok(repositories)
    }

    /// Registers a repository and queues its first sync (an admin token that is not
    /// limited to some repositories).
    #[tracing::instrument(name = "service.register", skip_all, fields(enduser.id = caller.name(), sextant.repository = new.name.as_deref()))]
    pub async fn register(
        &self,
        caller: &Principal,
        new: Registration,
    ) -> Result<(Repository, Job), ServiceError> {
        let repo = self.add(caller, new).await?;
        let job = self.jobs.enqueue_sync(&repo.id).await?;
        Ok((repo, job))
    }

    /// Registers a repository without queuing a sync (same rights as
    /// [`Service::register`]), for callers that sync it themselves with
    /// [`Service::sync_now`]; a source registered already is returned as it is.
    pub async fn add(
        &self,
        caller: &Principal,
        new: Registration,
    ) -> Result<Repository, ServiceError> {
        require_admin(caller)?;
        if !caller.sees_all() {
            return Err(ServiceError::Forbidden(
                "this token is limited to some repositories and cannot register new ones".into(),
            ));
        }
        let name = new.name.as_deref();
        Ok(match new.source {
            Source::Path(path) => {
                self.indexer
                    .register_path(&path, name, new.settings)
                    .await?
            }
            Source::Git { url, tracked_ref } => {
                self.indexer
                    .register_git(&url, name, tracked_ref.as_deref(), new.settings)
                    .await?
            }
        })
    }

    /// Syncs a repository now, in the caller's task, sending its progress to `events`
    /// (admin): the local CLI's `index`, `repo sync` and `eval`, which show the progress
    /// themselves. A server queues syncs instead ([`Service::sync`]).
    #[tracing::instrument(name = "service.sync_now", skip_all, fields(enduser.id = caller.name(), sextant.repository = name))]
    pub async fn sync_now(
        &self,
        caller: &Principal,
        name: &str,
        events: tokio::sync::broadcast::Sender<ProgressEvent>,
    ) -> Result<(Repository, SyncReport), ServiceError> {
        let repo = self.visible_repo(caller, name).await?;
        require_admin(caller)?;
        let report = self
            .indexer
            .sync(&repo, &mut Progress::new(&repo.id, events))
            .await?;
        // Refs its globs now match are tracked (indexed by their own syncs).
        self.indexer.reconcile_refs(&repo).await?;
        Ok((repo, report))
    }

    /// One repository with its counts and five most recent jobs.
    pub async fn repository(
        &self,
        caller: &Principal,
        name: &str,
    ) -> Result<RepositoryStatus, ServiceError> {
        self.repository_with(caller, name, 5).await
    }

    /// One repository with its counts and `jobs` most recent jobs.
    pub async fn repository_with(
        &self,
        caller: &Principal,
        name: &str,
        jobs: i64,
    ) -> Result<RepositoryStatus, ServiceError> {
        let repository = self.visible_repo(caller, name).await?;
        let meta = self.indexer.meta();
        let counts = meta.file_counts(&repository.id).await?;
        let recent_jobs = meta.list_jobs(Some(&repository.id), jobs).await?;
        let refs = meta.list_refs(&repository.id).await?;
        Ok(RepositoryStatus {
            repository,
            counts,
            recent_jobs,
            refs,
        })
    }

    /// Changes a repository's settings or tracked ref (admin); the next sync applies them.
    #[tracing::instrument(name = "service.update", skip_all, fields(enduser.id = caller.name(), sextant.repository = name))]
    pub async fn update(
        &self,
        caller: &Principal,
        name: &str,
        change: RepositoryChange,
    ) -> Result<Repository, ServiceError> {
        let repo = self.visible_repo(caller, name).await?;
        require_admin(caller)?;
        let settings = change.settings.unwrap_or(repo.settings);
        Ok(self
            .indexer
            .update_settings(&repo.id, change.tracked_ref, settings)
            .await?)
    }

    /// Removes a repository and everything indexed for it (admin).
    #[tracing::instrument(name = "service.remove", skip_all, fields(enduser.id = caller.name(), sextant.repository = name))]
    pub async fn remove(&self, caller: &Principal, name: &str) -> Result<Repository, ServiceError> {
        let repo = self.visible_repo(caller, name).await?;
        require_admin(caller)?;
        Ok(self.indexer.remove_repo(&repo.id).await?)
    }

    /// Queues a sync (admin). A conflict while one is queued or running: the check and
    /// the enqueue are one store operation, so of two callers at once exactly one queues.
    #[tracing::instrument(name = "service.sync", skip_all, fields(enduser.id = caller.name(), sextant.repository = name))]
    pub async fn sync(&self, caller: &Principal, name: &str) -> Result<Job, ServiceError> {
        let repo = self.visible_repo(caller, name).await?;
        require_admin(caller)?;
        match self.jobs.enqueue_sync_unless_active(&repo.id).await? {
            Enqueued::Queued(job) => Ok(job),
            Enqueued::Active(job) => Err(ServiceError::Conflict(format!(
                "a sync of `{}` is already {} (job {}); follow it at /api/v1/jobs/{}",
                repo.name, job.state, job.id, job.id
            ))),
        }
    }

    /// The files of a repository (only those skipped, with the reason, when
    /// `skipped_only`).
    pub async fn files(
        &self,
        caller: &Principal,
        name: &str,
        skipped_only: bool,
    ) -> Result<Vec<FileRecord>, ServiceError> {
        let repo = self.visible_repo(caller, name).await?;
        let mut files = self.indexer.meta().list_files(&repo.id).await?;
        if skipped_only {
            files.retain(|f| f.skip_reason.is_some());
        }
        Ok(files)
    }

    /// The symbols of one indexed file, in source order, on `git_ref` (default: the
    /// repository's default ref; a `REPO@REF` name gives one too).
    pub async fn file_symbols(
        &self,
        caller: &Principal,
        name: &str,
        path: &str,
        git_ref: Option<&str>,
    ) -> Result<Vec<SymbolRecord>, ServiceError> {
        let (repo, side) = self.named_side(caller, name, git_ref).await?;
        let meta = self.indexer.meta();
        let holder = side.holder(path);
        let record = meta.get_file(holder, path).await?;
        if record.is_none_or(|f| f.skip_reason.as_deref() == Some(crate::index::DELETED_ON_REF)) {
            let on = match &side.view {
                Some(_) => format!(" on `{}`", side.name),
                None => String::new(),
            };
            return Err(ServiceError::NotFound(format!(
                "`{path}` is not indexed in `{}`{on} (paths are relative to the repository root)",
                repo.name
            )));
        }
        Ok(meta.file_symbols(holder, path).await?)
    }
}
