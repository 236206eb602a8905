//! Tracked refs: the branches, tags and commits of a git repository indexed beside its
//! default ref. Each is stored as what differs from the repository's indexed commit
//! (see `index::engine`), so searching a ref reads the ref's own files and the
//! repository's others.

use std::collections::HashSet;

use super::{Service, ServiceError, require_admin};
use crate::auth::Principal;
use crate::index::IndexError;
use crate::store::{ChunkFilter, Job, RefView, Repository};

impl Service {
    /// The refs `repository` tracks beyond its default one, each with its status and
    /// indexed commit.
    pub async fn refs(
        &self,
        caller: &Principal,
        repository: &str,
    ) -> Result<Vec<Repository>, ServiceError> {
        let repo = self.visible_repo(caller, repository).await?;
        Ok(self.indexer.refs(&repo.id).await?)
    }

    /// Tracks `git_ref` on `repository` (admin) and queues its first sync.
    #[tracing::instrument(name = "service.add_ref", skip_all, fields(enduser.id = caller.name(), sextant.repository = repository, sextant.ref = git_ref))]
    pub async fn add_ref(
        &self,
        caller: &Principal,
        repository: &str,
        git_ref: &str,
    ) -> Result<(Repository, Job), ServiceError> {
        let repo = self.visible_repo(caller, repository).await?;
        require_admin(caller)?;
        let tracked = self.indexer.add_ref(&repo.id, git_ref).await?;
        let job = self.jobs.enqueue_sync(&tracked.id).await?;
        Ok((tracked, job))
    }

    /// Stops tracking `git_ref` on `repository` (admin): what the ref alone held is
    /// deleted; the repository's own rows are untouched.
    pub async fn drop_ref(
        &self,
        caller: &Principal,
        repository: &str,
        git_ref: &str,
    ) -> Result<Repository, ServiceError> {
        let repo = self.visible_repo(caller, repository).await?;
        require_admin(caller)?;
        let tracked = self.indexer.find_ref(&repo.id, git_ref).await?;
        Ok(self.indexer.remove_repo(&tracked.id).await?)
    }

    /// Narrows `filter` to what a search may read: its `repositories` (the ids the
    /// caller may search, `scope`), with the tracked refs not asked for excluded, or, when
    /// it names a `ref`, each repository seen through that ref.
    pub(super) async fn scope_refs(
        &self,
        filter: &mut ChunkFilter,
        scope: Vec<String>,
    ) -> Result<(), ServiceError> {
        let meta = self.indexer.meta();
        let Some(git_ref) = filter.git_ref.clone() else {
            if scope.is_empty() {
                filter.excluded = meta
                    .list_repositories()
                    .await?
                    .into_iter()
                    .filter(|r| r.parent_id.is_some())
                    .map(|r| r.id)
                    .collect();
            }
            filter.repositories = scope;
            return Ok(());
        };
        let named = !scope.is_empty();
        let bases: Vec<Repository> = if named {
            let mut bases = Vec::with_capacity(scope.len());
            for id in &scope {
                bases.push(self.indexer.find_repo(id).await?);
            }
            bases
        } else {
            meta.list_repositories()
                .await?
                .into_iter()
                .filter(|r| r.parent_id.is_none())
                .collect()
        };
        let mut repositories = Vec::new();
        let mut views = Vec::new();
        for base in bases {
            let tracked = match self.indexer.find_ref(&base.id, &git_ref).await {
                Ok(tracked) => tracked,
                Err(IndexError::UnknownRepo(_)) if !named => continue,
                Err(e) => return Err(e.into()),
            };
            if tracked.indexed_commit.is_none() {
                return Err(ServiceError::Conflict(format!(
                    "`{git_ref}` of `{}` is not indexed yet ({}): retry once its sync is done",
                    base.name,
                    tracked
                        .last_error
                        .as_deref()
                        .unwrap_or("its sync is queued")
                )));
            }
            let hidden: HashSet<String> = meta
                .list_files(&tracked.id)
                .await?
                .into_iter()
                .map(|f| f.path)
                .collect();
            repositories.push(base.id.clone());
            repositories.push(tracked.id.clone());
            views.push(RefView {
                repository: base.id,
                tracked: tracked.id,
                hidden,
            });
        }
        if views.is_empty() {
            return Err(ServiceError::NotFound(format!(
                "no repository in scope tracks `{git_ref}` (add it with `sextant repo ref add \
                 REPOSITORY {git_ref}` or POST /api/v1/repositories/REPOSITORY/refs)"
            )));
        }
        filter.repositories = repositories;
        filter.views = views;
        Ok(())
    }
}
