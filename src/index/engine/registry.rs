//! The registry: registering path and git repositories (each judged against the allowed
//! roots and the private-address rules), their settings, lookup and removal.

use super::*;

impl Indexer {
    /// Registers a local directory (or returns it when already registered at the same
    /// path). `name` defaults to the folder's name.
    pub async fn register_path(
        &self,
        path: &Path,
        name: Option<&str>,
        settings: RepoSettings,
    ) -> Result<Repository, IndexError> {
        let refused = |reason: String| IndexError::PathRefused {
            path: path.to_path_buf(),
            reason,
        };
        let root = match path.canonicalize() {
            Ok(root) => root,
            Err(e) => {
                // Outside the roots a missing path gets the answer an existing one gets:
                // the error must not tell whether something exists there.
                self.check_allowed(&lexically_absolute(path))
                    .map_err(refused)?;
                return Err(refused(format!(
                    "{e} (the path must be an existing directory)"
                )));
            }
        };
        self.check_allowed(&root).map_err(refused)?;
        if !root.is_dir() {
            return Err(refused("not a directory".into()));
        }
        FileFilter::new(&settings)?;
        let location = root.to_string_lossy().into_owned();
        let name = name.map(str::to_string).unwrap_or_else(|| {
            root.file_name()
                .map_or_else(|| "root".to_string(), |n| n.to_string_lossy().into_owned())
        });
        self.create_unless_registered(name, RepoSource::Path(location), None, settings, path)
            .await
    }

    /// Registers a git repository by URL (`https://…`, `ssh://…` or `user@host:path`,
    /// and with [`GitPolicy::allow_insecure`] `http://…` and `git://…`) or by a local path
    /// or `file://` URL (under the allowed roots), tracking `tracked_ref` (a branch, tag
    /// or commit; default: the remote's default branch). Credentials in the URL are
    /// stored apart and never shown. Nothing is fetched until the first sync.
    pub async fn register_git(
        &self,
        url: &str,
        name: Option<&str>,
        tracked_ref: Option<&str>,
        settings: RepoSettings,
    ) -> Result<Repository, IndexError> {
        let location = GitLocation::parse(url);
        // The refusal names the location without its credentials.
        let shown = location
            .as_ref()
            .map_or_else(|_| "the git source".to_string(), |l| l.url.clone());
        let refused = |reason: String| IndexError::PathRefused {
            path: PathBuf::from(&shown),
            reason,
        };
        let location = location.map_err(&refused)?;
        self.check_git_location(&location).await.map_err(&refused)?;
        FileFilter::new(&settings)?;
        let name = name.map(str::to_string).unwrap_or_else(|| {
            location
                .url
                .trim_end_matches('/')
                .rsplit(['/', ':'])
                .next()
                .unwrap_or(&location.url)
                .trim_end_matches(".git")
                .to_string()
        });
        let repo = self
            .create_unless_registered(
                name,
                RepoSource::Git(location.url.clone()),
                tracked_ref.map(str::to_string),
                settings,
                Path::new(&location.url),
            )
            .await?;
        if location.credentials.is_some() {
            self.meta
                .set_credentials(&repo.id, location.credentials.as_ref())
                .await?;
        }
        Ok(repo)
    }

    /// `Err(reason)` when the policy refuses `location`: a local repository outside the
    /// allowed roots, an unencrypted transport, or a host on a non-public address (every
    /// address the name resolves to is checked, at registration and before each fetch).
    pub(super) async fn check_git_location(&self, location: &GitLocation) -> Result<(), String> {
        let policy = &self.options.git;
        let (host, port) = match &location.transport {
            GitTransport::Local(path) => {
                let Ok(real) = path.canonicalize() else {
                    // As for local paths: outside the roots, existence is not told.
                    self.check_allowed(&lexically_absolute(path))?;
                    return Err("not a URL and not an existing path".into());
                };
                self.check_allowed(&real)?;
                if self.options.allowed_roots.is_empty() {
                    return Ok(());
                }
                // A `.git` file or an alternates file inside a root must not lead the
                // fetch to a repository outside it.
                for dir in crate::index::git::local_repository_dirs(&real)? {
                    self.check_allowed(&dir).map_err(|why| {
                        format!(
                            "the repository's data at {} (named by a .git file or \
                             objects/info/alternates) is not allowed: {why}",
                            dir.display()
                        )
                    })?;
                }
                return Ok(());
            }
            GitTransport::Http | GitTransport::Git if !policy.allow_insecure => {
                return Err(
                    "http:// and git:// transfer code unencrypted: use https:// or ssh, or \
                     start the server with --allow-insecure-git"
                        .into(),
                );
            }
            _ => (
                location.host.clone().unwrap_or_default(),
                location.port.unwrap_or(443),
            ),
        };
        if policy.allow_private_hosts {
            return Ok(());
        }
        let addresses: Vec<std::net::IpAddr> = match host.parse::<std::net::IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => tokio::net::lookup_host((host.as_str(), port))
                .await
                .map_err(|e| format!("cannot resolve `{host}`: {e}"))?
                .map(|a| a.ip())
                .collect(),
        };
        if let Some(why) = addresses.into_iter().find_map(restricted_address) {
            return Err(format!(
                "`{host}` is a {why} address: git sources may not reach the server's own \
                 network unless it is started with --allow-private-git-hosts"
            ));
        }
        Ok(())
    }

    /// Creates the repository, or returns the one already registered under `name` with
    /// the same source; a name taken by another source is refused.
    pub(super) async fn create_unless_registered(
        &self,
        name: String,
        source: RepoSource,
        tracked_ref: Option<String>,
        settings: RepoSettings,
        given: &Path,
    ) -> Result<Repository, IndexError> {
        if let Some(existing) = self.meta.get_repository_by_name(&name).await? {
            if existing.source == source {
                return Ok(existing);
            }
            return Err(IndexError::PathRefused {
                path: given.to_path_buf(),
                reason: format!(
                    "the name `{name}` is taken by {:?}; pass another --name",
                    existing.source
                ),
            });
        }
        Ok(self
            .meta
            .create_repository(NewRepository {
                name,
                source,
                tracked_ref,
                settings,
            })
            .await?)
    }

    /// Moves the credentials that git sources registered before they were kept apart
    /// still carry in their stored URL (`https://user:token@host/…`) into the
    /// credentials table, leaving the URL without them, as a registration today does.
    /// Run at every start; returns how many sources were rewritten.
    pub async fn move_stored_credentials(&self) -> Result<usize, IndexError> {
        let mut moved = 0;
        for repo in self.meta.list_repositories().await? {
            let RepoSource::Git(url) = &repo.source else {
                continue;
            };
            let Ok(location) = GitLocation::parse(url) else {
                continue;
            };
            if let Some(credentials) = &location.credentials {
                self.meta
                    .move_source_credentials(&repo.id, &location.url, credentials)
                    .await?;
                moved += 1;
            }
        }
        Ok(moved)
    }

    /// `Err(reason)` when `path` (canonical, or [`lexically_absolute`]) is outside the
    /// allowed roots.
    pub(super) fn check_allowed(&self, path: &Path) -> Result<(), String> {
        let roots = &self.options.allowed_roots;
        if roots.is_empty()
            || roots
                .iter()
                .any(|r| r.canonicalize().is_ok_and(|r| path.starts_with(&r)))
        {
            return Ok(());
        }
        Err(format!(
            "it is outside the allowed roots ({}); add its parent to SEXTANT_ALLOWED_ROOTS",
            roots
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }

    /// The repository with this name or id.
    pub async fn find_repo(&self, name_or_id: &str) -> Result<Repository, IndexError> {
        if let Some(r) = self.meta.get_repository_by_name(name_or_id).await? {
            return Ok(r);
        }
        self.meta
            .get_repository(name_or_id)
            .await?
            .ok_or_else(|| IndexError::UnknownRepo(name_or_id.to_string()))
    }

    /// Changes a repository's settings (and, for git sources, its tracked ref) after
    /// checking them; the next sync applies them (files newly excluded are removed, newly
    /// included ones indexed).
    pub async fn update_settings(
        &self,
        name_or_id: &str,
        tracked_ref: Option<String>,
        settings: RepoSettings,
    ) -> Result<Repository, IndexError> {
        let repo = self.find_repo(name_or_id).await?;
        FileFilter::new(&settings)?;
        if tracked_ref.is_some() && !matches!(repo.source, RepoSource::Git(_)) {
            return Err(IndexError::Settings(format!(
                "`{}` is a local directory: only git repositories track a ref",
                repo.name
            )));
        }
        let tracked_ref = tracked_ref.or(repo.tracked_ref.clone());
        Ok(self
            .meta
            .update_repository_settings(&repo.id, tracked_ref, &settings)
            .await?)
    }

    /// Tracks `ref_name` on the repository `name_or_id` as well as its default ref: a
    /// branch, tag or commit of a git repository's remote, or a linked worktree of a
    /// local directory (`git worktree add`), named by its branch, its name or its path.
    /// The new ref holds only what differs from the repository and is synced like one.
    pub async fn add_ref(
        &self,
        name_or_id: &str,
        ref_name: &str,
    ) -> Result<Repository, IndexError> {
        let parent = self.find_repo(name_or_id).await?;
        if parent.parent_id.is_some() {
            return Err(IndexError::Settings(format!(
                "`{}` is itself a ref; add refs to its repository",
                parent.name
            )));
        }
        let (ref_name, source) = match &parent.source {
            RepoSource::Git(_) => (ref_name.to_string(), parent.source.clone()),
            RepoSource::Path(root) => {
                let worktree = self
                    .find_worktree(&parent, Path::new(root), ref_name)
                    .await?;
                let location = worktree.path.to_string_lossy().into_owned();
                (worktree.ref_name().to_string(), RepoSource::Path(location))
            }
        };
        check_ref_name(&ref_name)?;
        if parent.tracked_ref.as_deref() == Some(ref_name.as_str()) {
            return Err(IndexError::Settings(format!(
                "`{ref_name}` is the default ref of `{}` already",
                parent.name
            )));
        }
        let refs = self.meta.list_refs(&parent.id).await?;
        if refs.len() >= MAX_REFS {
            return Err(IndexError::Settings(format!(
                "`{}` tracks {MAX_REFS} refs, the most a repository may; drop one first \
                 (`sextant repo ref drop`)",
                parent.name
            )));
        }
        Ok(self.meta.create_ref(&parent, &ref_name, &source).await?)
    }

    /// The linked worktree of the local repository at `root` that `wanted` names (its
    /// branch, its name, or its directory, absolute or relative to `root`), under the
    /// allowed roots.
    async fn find_worktree(
        &self,
        parent: &Repository,
        root: &Path,
        wanted: &str,
    ) -> Result<crate::index::git::Worktree, IndexError> {
        let worktrees = self.worktrees_of(root).await?;
        let as_path = root.join(wanted).canonicalize().ok();
        let found = worktrees.iter().find(|w| {
            w.branch.as_deref() == Some(wanted)
                || w.name == wanted
                || as_path.as_deref() == Some(w.path.as_path())
        });
        let Some(found) = found else {
            let known: Vec<String> = worktrees
                .iter()
                .map(|w| format!("`{}` ({})", w.ref_name(), w.path.display()))
                .collect();
            return Err(IndexError::Settings(format!(
                "`{wanted}` is not a worktree of `{}`, a local directory whose refs are its \
                 git worktrees: {} (add one with `git worktree add`)",
                parent.name,
                if known.is_empty() {
                    "it has none".to_string()
                } else {
                    format!("it has {}", known.join(", "))
                }
            )));
        };
        self.check_allowed(&found.path)
            .map_err(|reason| IndexError::PathRefused {
                path: found.path.clone(),
                reason,
            })?;
        Ok(found.clone())
    }

    /// The linked worktrees of the local repository at `root`.
    async fn worktrees_of(
        &self,
        root: &Path,
    ) -> Result<Vec<crate::index::git::Worktree>, IndexError> {
        let root = root.to_path_buf();
        tokio::task::spawn_blocking(move || crate::index::git::worktrees(&root))
            .await
            .map_err(|e| IndexError::Task(e.to_string()))?
    }

    /// Brings a repository's refs in line with its `refs` globs: the branches and tags
    /// a git repository's mirror holds (call after a sync fetched it), or the worktrees
    /// of a local one. Matching ones not yet tracked are added (up to [`MAX_REFS`]), and
    /// tracked refs matching a glob whose branch, tag or worktree is gone are removed
    /// with what they alone held. Refs added by hand and not matching any glob are left
    /// alone. Returns the refs added.
    pub async fn reconcile_refs(&self, repo: &Repository) -> Result<Vec<Repository>, IndexError> {
        if repo.settings.refs.is_empty() || repo.parent_id.is_some() {
            return Ok(Vec::new());
        }
        let mut globs = globset::GlobSetBuilder::new();
        for pattern in &repo.settings.refs {
            let glob = globset::Glob::new(pattern)
                .map_err(|e| IndexError::Settings(format!("ref glob `{pattern}`: {e}")))?;
            globs.add(glob);
        }
        let globs = globs
            .build()
            .map_err(|e| IndexError::Settings(format!("ref globs: {e}")))?;
        // What could be tracked: each with the source its ref row would have.
        let present: Vec<(String, RepoSource)> = match &repo.source {
            RepoSource::Git(_) => {
                let dir = self.checkout_dir(&repo.id);
                tokio::task::spawn_blocking(move || crate::index::git::mirror_refs(&dir))
                    .await
                    .map_err(|e| IndexError::Task(e.to_string()))??
                    .into_iter()
                    .map(|name| (name, repo.source.clone()))
                    .collect()
            }
            RepoSource::Path(root) => self
                .worktrees_of(Path::new(root))
                .await?
                .into_iter()
                .filter(|w| self.check_allowed(&w.path).is_ok())
                .map(|w| {
                    let location = w.path.to_string_lossy().into_owned();
                    (w.ref_name().to_string(), RepoSource::Path(location))
                })
                .collect(),
        };
        let tracked = self.meta.list_refs(&repo.id).await?;
        for gone in tracked.iter().filter(|t| {
            t.tracked_ref.as_deref().is_some_and(|r| {
                globs.is_match(r)
                    && !present
                        .iter()
                        .any(|(p, source)| p == r && *source == t.source)
            })
        }) {
            tracing::info!(repo = %repo.name, r#ref = ?gone.tracked_ref, "dropping a ref that is gone");
            self.remove_stored(gone).await?;
        }
        let mut count = self.meta.list_refs(&repo.id).await?.len();
        let mut added = Vec::new();
        for (name, source) in present.iter().filter(|(p, _)| globs.is_match(p.as_str())) {
            let known = tracked
                .iter()
                .any(|t| t.tracked_ref.as_deref() == Some(name));
            if known || repo.tracked_ref.as_deref() == Some(name) || check_ref_name(name).is_err() {
                continue;
            }
            if count >= MAX_REFS {
                tracing::warn!(repo = %repo.name, "more refs match than the {MAX_REFS} a repository may track; the rest are left out");
                break;
            }
            added.push(self.meta.create_ref(repo, name, source).await?);
            count += 1;
        }
        Ok(added)
    }

    /// The refs a repository tracks beyond its default one.
    pub async fn refs(&self, name_or_id: &str) -> Result<Vec<Repository>, IndexError> {
        let parent = self.find_repo(name_or_id).await?;
        Ok(self.meta.list_refs(&parent.id).await?)
    }

    /// The tracked ref `ref_name` of the repository `name_or_id`.
    pub async fn find_ref(
        &self,
        name_or_id: &str,
        ref_name: &str,
    ) -> Result<Repository, IndexError> {
        let parent = self.find_repo(name_or_id).await?;
        self.meta
            .list_refs(&parent.id)
            .await?
            .into_iter()
            .find(|r| r.tracked_ref.as_deref() == Some(ref_name))
            .ok_or_else(|| IndexError::UnknownRef {
                repository: parent.name.clone(),
                git_ref: ref_name.to_string(),
            })
    }

    /// Removes a repository and everything stored for it, its tracked refs included.
    pub async fn remove_repo(&self, name_or_id: &str) -> Result<Repository, IndexError> {
        let repo = self.find_repo(name_or_id).await?;
        for tracked in self.meta.list_refs(&repo.id).await? {
            self.remove_stored(&tracked).await?;
        }
        self.remove_stored(&repo).await?;
        Ok(repo)
    }

    /// Removes what is stored for one repository row (a repository or a tracked ref).
    async fn remove_stored(&self, repo: &Repository) -> Result<(), IndexError> {
        let lock = self.repo_lock(&repo.id);
        let _held = lock.lock().await;
        // Chunks first: if this is interrupted, the repository row still exists and the
        // removal can be repeated.
        self.vectors.delete_repo(&repo.id).await?;
        self.meta.delete_repository(&repo.id).await?;
        self.forget_journal(&repo.id);
        if let Some(grep) = &self.grep {
            // Best effort too: a left-over index is never read (no repository has its id).
            let (grep, id) = (grep.clone(), repo.id.clone());
            let dropped = tokio::task::spawn_blocking(move || grep.drop_repository(&id)).await;
            if let Ok(Err(e)) = dropped {
                tracing::warn!(repo = %repo.name, error = %e, "cannot remove the repository's grep index");
            }
        }
        let mirror = self.checkout_dir(&repo.id);
        if matches!(repo.source, RepoSource::Git(_)) && mirror.exists() {
            // Best effort: a left-over mirror is re-used or overwritten by nothing. (A
            // tracked ref has none: it reads its repository's.)
            let _ = std::fs::remove_dir_all(&mirror);
        }
        Ok(())
    }
}

/// Most refs one repository may track beyond its default one.
pub const MAX_REFS: usize = 64;

/// A ref name git could resolve: not empty, no whitespace or control characters, no
/// `..`, at most 200 bytes.
fn check_ref_name(name: &str) -> Result<(), IndexError> {
    if name.is_empty()
        || name.len() > 200
        || name.contains("..")
        || name.starts_with('-')
        || name.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(IndexError::Settings(format!(
            "`{name}` is not a ref name: give a branch, tag or commit (no spaces, no `..`, \
             at most 200 bytes)"
        )));
    }
    Ok(())
}
