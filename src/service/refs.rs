//! Tracked refs: the branches, tags and commits of a git repository indexed beside its
//! default ref. Each is stored as what differs from the repository's indexed commit
//! (see `index::engine`), so searching a ref reads the ref's own files and the
//! repository's others.
//!
//! # Design notes
//!
//! A repository may track refs besides its default one (`Service::add_ref`): branches,
//! tags or commits of a git repository, or the linked worktrees of a local one
//! (`index::git::worktrees`). Each is a repository row of its own with `parent_id` set
//! and an id under its repository's (`REPO_ID@…`, so a token that sees the repository
//! sees the ref, its jobs and progress), holding only what differs from the repository:
//! for git, `engine::plan` diffs the repository's indexed commit against the ref's (in
//! the repository's mirror); for a worktree, `plan_worktree` scans the worktree against
//! the repository's file records by content hash (`overlay_base`). Either way the ref
//! indexes the files it changes or adds, records a `DELETED_ON_REF` file for each it
//! deletes, and removes what no longer differs. A repository's successful sync queues
//! its refs' syncs; the job queue keeps the watches of watched working trees and
//! worktrees (`index::watch::Watches`). Every read on a ref goes through a
//! `service::refs::Side` (the repository, and the ref's `store::RefView` over it:
//! `holder(path)` says whose rows show a path): search (`Service::scope_refs` turns the
//! sides into the chunk filter; a search without `ref` excludes every ref's rows), file
//! symbols, Scout (its graph reads each symbol's neighbours from the side's rows) and
//! `Service::compare`, which diffs two sides file by file and chunk by chunk (chunk ids
//! are stable across edits) and lists the unchanged code whose edges reach what
//! changed; grep reads a `search::grep::TrackedScope` the same way. A ref's graph stage
//! (`index::graph::GraphView`) resolves over its files and its repository's others.
//! Listings show repositories only; `repo show` lists their refs.

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

    /// Brings a repository and every ref it tracks up to date (admin): a sync of each is
    /// queued unless one is queued or running already, whose job is returned instead.
    /// Meant for CI bots and push webhooks: calling it again is harmless.
    pub async fn refresh(
        &self,
        caller: &Principal,
        repository: &str,
    ) -> Result<Vec<Job>, ServiceError> {
        let repo = self.visible_repo(caller, repository).await?;
        require_admin(caller)?;
        let mut ids = vec![repo.id.clone()];
        ids.extend(self.indexer.refs(&repo.id).await?.into_iter().map(|r| r.id));
        let mut jobs = Vec::with_capacity(ids.len());
        for id in ids {
            jobs.push(match self.jobs.enqueue_sync_unless_active(&id).await? {
                crate::store::Enqueued::Queued(job) | crate::store::Enqueued::Active(job) => job,
            });
        }
        Ok(jobs)
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

    /// A tracked ref named as a repository (`REPO@REF`) in `repositories` stands for its
    /// repository on that ref: the name becomes the repository's id and the ref
    /// `git_ref` (one ref per request: naming two, or another than `git_ref`, is refused).
    pub(super) async fn read_ref_names(
        &self,
        caller: &Principal,
        repositories: &mut [String],
        git_ref: &mut Option<String>,
    ) -> Result<(), ServiceError> {
        for name in repositories.iter_mut() {
            if !name.contains('@') {
                continue;
            }
            let repo = self.visible_repo(caller, name).await?;
            let (Some(parent), Some(tracked)) = (repo.parent_id, repo.tracked_ref) else {
                continue;
            };
            match git_ref {
                Some(other) if *other != tracked => {
                    return Err(ServiceError::invalid(
                        "ref",
                        format!(
                            "`{name}` names ref `{tracked}` but the request asks for `{other}`: \
                             search one ref at a time"
                        ),
                    ));
                }
                _ => *git_ref = Some(tracked),
            }
            *name = parent;
        }
        Ok(())
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
        let sides = self.sides(scope, Some(&git_ref)).await?;
        let mut repositories = Vec::new();
        let mut views = Vec::new();
        for side in sides {
            repositories.push(side.repo_id);
            if let Some(view) = side.view {
                repositories.push(view.tracked.clone());
                views.push(view);
            }
        }
        filter.repositories = repositories;
        filter.views = views;
        Ok(())
    }
}

/// Most callers a comparison lists as affected.
const MAX_IMPACT: usize = 200;

/// How a file or symbol differs from one ref to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// Only in `head`.
    Added,
    /// Only in `base`.
    Removed,
    /// In both, with other content.
    Modified,
}

/// A file that differs between two refs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct ChangedFile {
    /// Path relative to the repository root.
    pub path: String,
    /// What happened to it.
    pub change: Change,
}

/// A symbol that differs between two refs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct ChangedSymbol {
    /// Its file.
    pub path: String,
    /// `Parent > name`.
    pub breadcrumb: String,
    /// Node kind.
    pub kind: String,
    /// What happened to it.
    pub change: Change,
}

/// A symbol `head` leaves unchanged that uses one it changes or removes: what may break
/// when `head` merges.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct Affected {
    /// The caller's file.
    pub path: String,
    /// The caller (`Parent > name`).
    pub breadcrumb: String,
    /// What it uses (`Parent > name` of the changed symbol).
    pub uses: String,
    /// How (`calls`, `references`, `extends`…).
    pub kind: String,
    /// Line of the use.
    pub line: Option<i64>,
}

/// What differs between two refs of a repository.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
pub struct Comparison {
    /// The repository's name.
    pub repository: String,
    /// The base ref (the default ref when none was given).
    pub base: String,
    /// The head ref.
    pub head: String,
    /// Files added, removed or modified from base to head, by path.
    pub files: Vec<ChangedFile>,
    /// Symbols added, removed or modified, by path and position.
    pub symbols: Vec<ChangedSymbol>,
    /// Unchanged symbols (on head) that use a modified or removed one, at most 200.
    pub affected: Vec<Affected>,
}

/// A repository as one of its refs shows it: its own rows, or a tracked ref's over
/// them.
pub(super) struct Side {
    /// The ref's name (the repository's default ref: its name, or `default`).
    pub name: String,
    /// The repository's id.
    pub repo_id: String,
    /// The tracked ref read over the repository (None: the default ref).
    pub view: Option<RefView>,
}

impl Side {
    /// Where `path` is read on this side: the ref's own row, else the repository's.
    pub fn holder(&self, path: &str) -> &str {
        match &self.view {
            Some(view) if view.hidden.contains(path) => &view.tracked,
            _ => &self.repo_id,
        }
    }

    /// The rows this side reads: the repository's, then the ref's.
    pub fn holders(&self) -> Vec<&str> {
        let mut out = vec![self.repo_id.as_str()];
        out.extend(self.view.as_ref().map(|v| v.tracked.as_str()));
        out
    }
}

/// The sides a read sees, by the row ids they read.
#[derive(Default)]
pub(super) struct Sides(Vec<Side>);

impl Sides {
    /// Every row id the sides read.
    pub fn ids(&self) -> Vec<String> {
        self.0
            .iter()
            .flat_map(Side::holders)
            .map(str::to_string)
            .collect()
    }

    /// The repositories' ids.
    pub fn repositories(&self) -> Vec<String> {
        self.0.iter().map(|s| s.repo_id.clone()).collect()
    }

    /// The side that reads row `holder`, if any.
    pub fn of(&self, holder: &str) -> Option<&Side> {
        self.0.iter().find(|s| s.holders().contains(&holder))
    }

    /// Whether `path` read from row `holder` is what its side shows (a ref hides the
    /// repository's copy of a file it holds; rows no side reads show everything).
    pub fn shows(&self, holder: &str, path: &str) -> bool {
        self.of(holder).is_none_or(|s| s.holder(path) == holder)
    }
}

impl IntoIterator for Sides {
    type Item = Side;
    type IntoIter = std::vec::IntoIter<Side>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl Service {
    /// The repositories of `scope` (ids; empty: every repository) seen on `git_ref`
    /// (None: each on its default ref). Naming a ref, the repositories in an unnamed
    /// scope that do not track it are left out; one in a named scope that does not is
    /// an error, as is a ref not indexed yet or a ref no repository tracks.
    pub(super) async fn sides(
        &self,
        scope: Vec<String>,
        git_ref: Option<&str>,
    ) -> Result<Sides, ServiceError> {
        let named = !scope.is_empty();
        let bases: Vec<Repository> = if named {
            let mut bases = Vec::with_capacity(scope.len());
            for id in &scope {
                bases.push(self.indexer.find_repo(id).await?);
            }
            bases
        } else {
            self.indexer
                .meta()
                .list_repositories()
                .await?
                .into_iter()
                .filter(|r| r.parent_id.is_none())
                .collect()
        };
        let mut sides = Vec::with_capacity(bases.len());
        for base in &bases {
            sides.extend(self.side_if_tracked(base, git_ref, named).await?);
        }
        if let (Some(git_ref), true) = (git_ref, sides.is_empty()) {
            return Err(ServiceError::NotFound(format!(
                "no repository in scope tracks `{git_ref}` (add it with `sextant repo ref add \
                 REPOSITORY {git_ref}` or POST /api/v1/repositories/REPOSITORY/refs)"
            )));
        }
        Ok(Sides(sides))
    }

    /// The repository seen on `git_ref` (its default ref for `None` or the default's
    /// name). A tracked ref not indexed yet is a conflict (retry later).
    pub(super) async fn side(
        &self,
        repo: &Repository,
        git_ref: Option<&str>,
    ) -> Result<Side, ServiceError> {
        let side = self.side_if_tracked(repo, git_ref, true).await?;
        side.ok_or_else(|| ServiceError::Internal("a required ref went missing".into()))
    }

    /// [`Service::side`], or `None` when `repo` does not track `git_ref` and it is not
    /// `required`.
    async fn side_if_tracked(
        &self,
        repo: &Repository,
        git_ref: Option<&str>,
        required: bool,
    ) -> Result<Option<Side>, ServiceError> {
        let default = repo.tracked_ref.clone().unwrap_or_else(|| "default".into());
        let view = match git_ref {
            None => None,
            Some(r) if Some(r) == repo.tracked_ref.as_deref() => None,
            Some(r) => {
                let tracked = match self.indexer.find_ref(&repo.id, r).await {
                    Ok(tracked) => tracked,
                    Err(IndexError::UnknownRef { .. }) if !required => return Ok(None),
                    Err(e) => return Err(e.into()),
                };
                if tracked.indexed_commit.is_none() {
                    return Err(ServiceError::Conflict(format!(
                        "`{r}` of `{}` is not indexed yet ({}): retry once its sync is done",
                        repo.name,
                        tracked
                            .last_error
                            .as_deref()
                            .unwrap_or("its sync is queued")
                    )));
                }
                let hidden = self
                    .indexer
                    .meta()
                    .list_files(&tracked.id)
                    .await?
                    .into_iter()
                    .map(|f| f.path)
                    .collect();
                Some(RefView {
                    repository: repo.id.clone(),
                    tracked: tracked.id,
                    hidden,
                })
            }
        };
        Ok(Some(Side {
            name: git_ref.map_or(default, str::to_string),
            repo_id: repo.id.clone(),
            view,
        }))
    }

    /// The repository `name` names (a repository, or `REPO@REF` for one of its refs) on
    /// `git_ref`, or on the ref the name gives.
    pub(super) async fn named_side(
        &self,
        caller: &Principal,
        name: &str,
        git_ref: Option<&str>,
    ) -> Result<(Repository, Side), ServiceError> {
        let mut names = [name.to_string()];
        let mut git_ref = git_ref.map(str::to_string);
        self.read_ref_names(caller, &mut names, &mut git_ref)
            .await?;
        let [name] = names;
        let repo = self.visible_repo(caller, &name).await?;
        let side = self.side(&repo, git_ref.as_deref()).await?;
        Ok((repo, side))
    }
}

impl Service {
    /// What differs between refs `base` (default: the default ref) and `head` of
    /// `repository`: files, symbols, and the unchanged code on `head` that uses what it
    /// changes or removes.
    pub async fn compare(
        &self,
        caller: &Principal,
        repository: &str,
        base: Option<&str>,
        head: &str,
    ) -> Result<Comparison, ServiceError> {
        let repo = self.visible_repo(caller, repository).await?;
        let base_side = self.side(&repo, base).await?;
        let head_side = self.side(&repo, Some(head)).await?;
        let mut paths: Vec<String> = [&base_side, &head_side]
            .iter()
            .filter_map(|s| s.view.as_ref())
            .flat_map(|v| v.hidden.iter().cloned())
            .collect();
        paths.sort();
        paths.dedup();
        let mut out = Comparison {
            repository: repo.name.clone(),
            base: base_side.name.clone(),
            head: head_side.name.clone(),
            files: Vec::new(),
            symbols: Vec::new(),
            affected: Vec::new(),
        };
        let mut touched = Vec::new();
        for path in &paths {
            let before = self.chunks_on(&base_side, path).await?;
            let after = self.chunks_on(&head_side, path).await?;
            let change = match (before.is_some(), after.is_some()) {
                (false, false) => continue,
                (false, true) => Change::Added,
                (true, false) => Change::Removed,
                (true, true) if before == after => continue,
                (true, true) => Change::Modified,
            };
            out.files.push(ChangedFile {
                path: path.clone(),
                change,
            });
            let (before, after) = (before.unwrap_or_default(), after.unwrap_or_default());
            for (id, (breadcrumb, kind, content)) in &before {
                let change = match after.get(id) {
                    None => Change::Removed,
                    Some((_, _, now)) if now != content => Change::Modified,
                    Some(_) => continue,
                };
                touched.push((id.clone(), breadcrumb.clone()));
                out.symbols.push(ChangedSymbol {
                    path: path.clone(),
                    breadcrumb: breadcrumb.clone(),
                    kind: kind.clone(),
                    change,
                });
            }
            for (id, (breadcrumb, kind, _)) in &after {
                if !before.contains_key(id) {
                    out.symbols.push(ChangedSymbol {
                        path: path.clone(),
                        breadcrumb: breadcrumb.clone(),
                        kind: kind.clone(),
                        change: Change::Added,
                    });
                }
            }
        }
        let changed: HashSet<&str> = out.files.iter().map(|f| f.path.as_str()).collect();
        out.affected = self.affected(&head_side, &touched, &changed).await?;
        Ok(out)
    }

    /// A file's chunks on one side by chunk id (breadcrumb, kind, content); `None` when
    /// the file is not indexed there.
    async fn chunks_on(
        &self,
        side: &Side,
        path: &str,
    ) -> Result<Option<std::collections::BTreeMap<String, (String, String, String)>>, ServiceError>
    {
        let holder = side.holder(path);
        let record = self.indexer.meta().get_file(holder, path).await?;
        if record.is_none_or(|r| r.skip_reason.is_some()) {
            return Ok(None);
        }
        self.pull_repos(&[holder.to_string()]).await;
        let rows = self.indexer.vectors().file_chunks(holder, path).await?;
        Ok(Some(
            rows.into_iter()
                .filter(|r| r.chunk.node_kind != crate::parse::SymbolKind::File)
                .map(|r| {
                    let c = r.chunk;
                    (
                        c.id,
                        (c.breadcrumb, c.node_kind.as_str().to_string(), c.content),
                    )
                })
                .collect(),
        ))
    }

    /// Symbols on `head`, in files it leaves unchanged, with an edge to one of `touched`.
    async fn affected(
        &self,
        head: &Side,
        touched: &[(String, String)],
        changed: &HashSet<&str>,
    ) -> Result<Vec<Affected>, ServiceError> {
        let meta = self.indexer.meta();
        let ids: Vec<String> = touched.iter().map(|(id, _)| id.clone()).collect();
        let names: std::collections::HashMap<&str, &str> = touched
            .iter()
            .map(|(id, b)| (id.as_str(), b.as_str()))
            .collect();
        let mut out = Vec::new();
        for holder in head.holders() {
            let edges = meta.edges_to_any(holder, &ids).await?;
            let callers: Vec<String> = edges.iter().map(|e| e.from_chunk.clone()).collect();
            let symbols: std::collections::HashMap<String, (String, String)> = meta
                .symbol_names(holder, &callers)
                .await?
                .into_iter()
                .map(|s| (s.chunk_id, (s.path, s.breadcrumb)))
                .collect();
            for edge in edges {
                let Some((path, breadcrumb)) = symbols.get(&edge.from_chunk).cloned() else {
                    continue;
                };
                // Only what head reads from this holder, and leaves as it is.
                if head.holder(&path) != holder || changed.contains(path.as_str()) {
                    continue;
                }
                out.push(Affected {
                    path,
                    breadcrumb,
                    uses: edge
                        .to_chunk
                        .as_deref()
                        .and_then(|id| names.get(id))
                        .map_or(edge.to_name.clone(), |b| b.to_string()),
                    kind: edge.kind.as_str().to_string(),
                    line: edge.line,
                });
            }
        }
        out.truncate(MAX_IMPACT);
        out.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
        Ok(out)
    }
}
