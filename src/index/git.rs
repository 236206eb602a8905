//! Git sources: a bare mirror per repository under the data directory, fetched with git2;
//! changes come from diffing the indexed commit's tree against the new commit's tree, and
//! a file's blob id is its content hash, so unchanged files are never read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use std::time::Instant;

use git2::{
    Cred, Delta, DiffFindOptions, FetchOptions, ObjectType, Oid, RemoteCallbacks, Repository, Tree,
};

use super::IndexError;
use super::fetch_proxy::Route;
use super::scan::{CONFIG_FILES, FileFilter, SKIPPED_DIRS, ScannedFile};
use crate::parse::Language;
use crate::store::{Credentials, FileRecord};

/// Sets libgit2's process-wide network timeouts: connecting to a git server, and each
/// read or write on the connection once open, so a server that stops answering fails the
/// fetch instead of holding it (and its sync slot) for ever.
///
/// # Safety
/// libgit2 keeps these in unsynchronised globals: call this once, before any thread that
/// may use git is started (at the top of `main`).
pub unsafe fn set_network_timeouts(
    connect: std::time::Duration,
    io: std::time::Duration,
) -> Result<(), IndexError> {
    let ms = |d: std::time::Duration| i32::try_from(d.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: the caller guarantees no other thread uses libgit2 yet.
    unsafe {
        git2::opts::set_server_connect_timeout_in_milliseconds(ms(connect))?;
        git2::opts::set_server_timeout_in_milliseconds(ms(io))?;
    }
    Ok(())
}

/// How one fetch may reach its remote.
#[derive(Debug, Clone)]
pub struct FetchAccess {
    /// Credentials taken out of the URL at registration.
    pub credentials: Option<Credentials>,
    /// The fetch is abandoned (the transfer aborted) once this instant has passed.
    pub deadline: Option<Instant>,
    /// How the fetch goes through the proxy that closes it at the deadline
    /// ([`super::fetch_proxy`]); `None` connects directly (local repositories).
    pub route: Option<Route>,
}

impl From<git2::Error> for IndexError {
    fn from(e: git2::Error) -> Self {
        IndexError::Git(e.message().to_string())
    }
}

/// A file to (re)index, read from a blob.
#[derive(Debug)]
pub struct GitFile {
    /// The file (its `path` is repo-rooted; `mtime_ms` is the commit time).
    pub file: ScannedFile,
    /// Blob id (hex).
    pub blob: String,
    /// Content.
    pub bytes: Vec<u8>,
}

/// What changed between the indexed commit and the tracked ref's commit.
#[derive(Debug, Default)]
pub struct GitPlan {
    /// The commit the index will reflect.
    pub commit: String,
    /// Added or modified files whose blob differs from the stored hash.
    pub changed: Vec<GitFile>,
    /// Paths to remove (deleted, renamed away, or now filtered out).
    pub removed: Vec<String>,
    /// Module-resolution configuration files at the new commit, `(path, text)`.
    pub configs: Vec<(String, String)>,
    /// Files present but not indexed, with the reason.
    pub skipped: Vec<(ScannedFile, String)>,
    /// Files the diff named whose blob matched the stored hash (not read).
    pub unchanged: usize,
    /// Every path the diff named, on either side.
    pub named: std::collections::HashSet<String>,
}

/// Every directory libgit2 reads when it opens the local repository at `path` (a
/// canonical path): its git directory (a `.git` *file*'s `gitdir:` followed), its common
/// directory (worktrees), and each object store its `objects/info/alternates` names,
/// alternates of alternates included (git's own depth, 5). Each is canonical, so it can
/// be judged against the allowed roots: any of them outside would let a file inside a
/// root make Sextant read a repository outside it.
pub fn local_repository_dirs(path: &Path) -> Result<Vec<PathBuf>, String> {
    let repo = Repository::open(path).map_err(|e| {
        format!(
            "{} is not a git repository: {}",
            path.display(),
            e.message()
        )
    })?;
    let canonical = |p: &Path| {
        p.canonicalize()
            .map_err(|e| format!("{} cannot be read: {e}", p.display()))
    };
    let mut dirs = vec![canonical(repo.path())?, canonical(repo.commondir())?];
    let mut stores = vec![(dirs[1].join("objects"), 0)];
    while let Some((objects, depth)) = stores.pop() {
        let Ok(text) = std::fs::read_to_string(objects.join("info/alternates")) else {
            continue;
        };
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let alternate = canonical(&objects.join(line))?;
            if depth < 5 {
                stores.push((alternate.clone(), depth + 1));
            }
            dirs.push(alternate);
        }
    }
    Ok(dirs)
}

/// Opens the mirror at `dir`, cloning `url` into it first when missing, and fetches.
fn open_and_fetch(url: &str, dir: &Path, access: &FetchAccess) -> Result<Repository, IndexError> {
    let repo = if dir.join("HEAD").is_file() {
        Repository::open_bare(dir)?
    } else {
        std::fs::create_dir_all(dir).map_err(|source| IndexError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let repo = Repository::init_bare(dir)?;
        repo.remote("origin", url)?;
        repo
    };
    // The stored URL (never with credentials) is the remote's, even if it changed.
    repo.remote_set_url("origin", url)?;
    // A relayed fetch connects to the relay's URL; its refs still land under `origin`.
    let mut remote = match &access.route {
        Some(Route::Relay(relay)) => repo.remote_anonymous(relay)?,
        _ => repo.find_remote("origin")?,
    };
    let mut callbacks = RemoteCallbacks::new();
    let mut offered = false;
    let credentials = access.credentials.clone();
    callbacks.credentials(move |_url, username, allowed| {
        // Offer the stored credentials once; a second request means they were refused.
        match &credentials {
            Some(c) if !offered && allowed.contains(git2::CredentialType::USER_PASS_PLAINTEXT) => {
                offered = true;
                Cred::userpass_plaintext(&c.username, c.password.as_deref().unwrap_or(""))
            }
            Some(c) if !offered && allowed.contains(git2::CredentialType::SSH_KEY) => {
                offered = true;
                Cred::ssh_key_from_agent(username.unwrap_or(&c.username))
            }
            _ => Err(git2::Error::from_str(
                "the git server asks for credentials that were refused or not given; \
                 register the URL with them (`https://user:token@host/…`: they are stored \
                 apart and never shown)",
            )),
        }
    });
    let deadline = access.deadline;
    let past = move || deadline.is_some_and(|d| Instant::now() >= d);
    callbacks.transfer_progress(move |_| !past());
    callbacks.sideband_progress(move |_| !past());
    let mut options = FetchOptions::new();
    options.remote_callbacks(callbacks);
    if let Some(Route::Proxy(proxy)) = &access.route {
        let mut through = git2::ProxyOptions::new();
        through.url(proxy);
        options.proxy_options(through);
    }
    options.download_tags(git2::AutotagOption::All);
    // Branches deleted on the remote leave the mirror too (their refs are dropped).
    options.prune(git2::FetchPrune::On);
    remote
        .fetch(
            &[
                "+refs/heads/*:refs/remotes/origin/*",
                "+refs/tags/*:refs/tags/*",
            ],
            Some(&mut options),
            None,
        )
        .map_err(|e| {
            if access.deadline.is_some_and(|d| Instant::now() >= d) {
                IndexError::Git(
                    "the fetch took longer than the sync's deadline and was abandoned".into(),
                )
            } else {
                e.into()
            }
        })?;
    // The remote's default branch, for repositories registered without a ref.
    if let Ok(default) = remote.default_branch()
        && let Some(name) = default
            .as_str()
            .ok()
            .and_then(|d| d.strip_prefix("refs/heads/"))
    {
        let target = format!("refs/remotes/origin/{name}");
        if repo.find_reference(&target).is_ok() {
            repo.reference_symbolic("refs/remotes/origin/HEAD", &target, true, "default branch")?;
        }
    }
    drop(remote);
    Ok(repo)
}

/// The commit `tracked` names: a branch of the remote, a tag or a revision; `None` is the
/// remote's default branch.
fn resolve(repo: &Repository, tracked: Option<&str>) -> Result<Oid, IndexError> {
    let candidates: Vec<String> = match tracked {
        None => vec![
            "refs/remotes/origin/HEAD".into(),
            "refs/remotes/origin/main".into(),
            "refs/remotes/origin/master".into(),
        ],
        Some(r) => vec![
            format!("refs/remotes/origin/{r}"),
            format!("refs/tags/{r}"),
            r.to_string(),
        ],
    };
    for name in &candidates {
        if let Ok(object) = repo.revparse_single(name)
            && let Ok(commit) = object.peel_to_commit()
        {
            return Ok(commit.id());
        }
    }
    Err(IndexError::Git(format!(
        "cannot resolve `{}` to a commit (tried {})",
        tracked.unwrap_or("the default branch"),
        candidates.join(", ")
    )))
}

fn sextantignore(repo: &Repository, tree: &Tree<'_>) -> Option<ignore::gitignore::Gitignore> {
    let entry = tree.get_name(".sextantignore")?;
    let blob = repo.find_blob(entry.id()).ok()?;
    let mut builder = ignore::gitignore::GitignoreBuilder::new("");
    for line in String::from_utf8_lossy(blob.content()).lines() {
        let _ = builder.add_line(None, line);
    }
    builder.build().ok()
}

/// Fetches `url` into `dir` and plans the sync from `old_commit` to the tracked ref.
pub fn plan(
    url: &str,
    access: &FetchAccess,
    dir: &Path,
    tracked: Option<&str>,
    old_commit: Option<&str>,
    filter: &FileFilter,
    stored: &HashMap<String, FileRecord>,
) -> Result<GitPlan, IndexError> {
    let repo = open_and_fetch(url, dir, access)?;
    let new_id = resolve(&repo, tracked)?;
    let new_commit = repo.find_commit(new_id)?;
    let new_tree = new_commit.tree()?;
    // A vanished old commit (force-push + gc) means: diff against nothing, and let the
    // stored hashes spare unchanged files.
    let old_tree = old_commit
        .and_then(|c| Oid::from_str(c).ok())
        .and_then(|id| repo.find_commit(id).ok())
        .and_then(|c| c.tree().ok());
    let mut diff = repo.diff_tree_to_tree(old_tree.as_ref(), Some(&new_tree), None)?;
    diff.find_similar(Some(DiffFindOptions::new().renames(true)))?;
    let ignore = sextantignore(&repo, &new_tree);
    let mtime_ms = new_commit.time().seconds() * 1000;
    let mut plan = GitPlan {
        commit: new_id.to_string(),
        configs: config_files(&repo, &new_tree),
        ..GitPlan::default()
    };
    for delta in diff.deltas() {
        let old_path = delta.old_file().path().map(path_string);
        let new_path = delta.new_file().path().map(path_string);
        plan.named.extend(old_path.iter().chain(&new_path).cloned());
        match delta.status() {
            Delta::Deleted => plan.removed.extend(old_path),
            Delta::Added | Delta::Modified | Delta::Renamed | Delta::Copied | Delta::Typechange => {
                if delta.status() == Delta::Renamed
                    && let Some(old) = old_path
                {
                    plan.removed.push(old);
                }
                let Some(rel) = new_path else { continue };
                // By extension here; a file without one by its shebang once read.
                let by_extension = Language::from_path(Path::new(&rel));
                if by_extension.is_none() && Path::new(&rel).extension().is_some() {
                    continue;
                }
                if rel.split('/').any(|part| SKIPPED_DIRS.contains(&part)) {
                    continue;
                }
                let blob_id = delta.new_file().id();
                let Ok(object) = repo.find_object(blob_id, Some(ObjectType::Blob)) else {
                    continue; // submodule commits and the like
                };
                let Some(blob) = object.as_blob() else {
                    continue;
                };
                let Some(language) =
                    by_extension.or_else(|| Language::detect(Path::new(&rel), blob.content()))
                else {
                    continue;
                };
                let file = ScannedFile {
                    path: PathBuf::from(&rel),
                    rel: rel.clone(),
                    language,
                    size: blob.size() as u64,
                    mtime_ms,
                };
                let ignored = ignore
                    .as_ref()
                    .is_some_and(|g| g.matched_path_or_any_parents(&rel, false).is_ignore());
                let reason = if ignored {
                    Some("matched by .sextantignore".to_string())
                } else {
                    filter
                        .reason(&rel, language)
                        .or_else(|| filter.size_reason(file.size, language))
                };
                if let Some(reason) = reason {
                    plan.skipped.push((file, reason));
                    continue;
                }
                let blob_hex = blob_id.to_string();
                if stored.get(&rel).is_some_and(|f| {
                    f.skip_reason.is_none() && f.content_hash.as_deref() == Some(&blob_hex)
                }) {
                    plan.unchanged += 1;
                    continue;
                }
                plan.changed.push(GitFile {
                    file,
                    blob: blob_hex,
                    bytes: blob.content().to_vec(),
                });
            }
            _ => {}
        }
    }
    Ok(plan)
}

/// The branches (of `origin`, without `HEAD`) and tags the bare mirror at `dir` holds, by
/// name.
pub fn mirror_refs(dir: &Path) -> Result<Vec<String>, IndexError> {
    let repo = Repository::open_bare(dir)?;
    let mut out = Vec::new();
    for reference in repo.references()? {
        let reference = reference?;
        let Ok(name) = reference.name() else {
            continue;
        };
        if let Some(branch) = name.strip_prefix("refs/remotes/origin/") {
            if branch != "HEAD" {
                out.push(branch.to_string());
            }
        } else if let Some(tag) = name.strip_prefix("refs/tags/") {
            out.push(tag.to_string());
        }
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// A linked worktree of a local repository (`git worktree add`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    /// The name git knows it by (`git worktree list`'s last path component by default).
    pub name: String,
    /// Its directory, canonical.
    pub path: PathBuf,
    /// The branch checked out in it (`None`: a detached head).
    pub branch: Option<String>,
}

impl Worktree {
    /// The name a tracked ref of the worktree goes by: its branch, else its name.
    pub fn ref_name(&self) -> &str {
        self.branch.as_deref().unwrap_or(&self.name)
    }
}

/// The linked worktrees of the git repository whose working tree is `root`, by name
/// (none when `root` is not a git working tree). Worktrees whose directory is gone are
/// left out.
pub fn worktrees(root: &Path) -> Result<Vec<Worktree>, IndexError> {
    let Ok(repo) = Repository::open(root) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    let names = repo.worktrees()?;
    for name in names.iter().filter_map(|n| n.ok().flatten()) {
        let Ok(worktree) = repo.find_worktree(name) else {
            continue;
        };
        if worktree.validate().is_err() {
            continue;
        }
        let Ok(path) = worktree.path().canonicalize() else {
            continue;
        };
        let branch = Repository::open_from_worktree(&worktree)
            .ok()
            .and_then(|r| {
                let head = r.head().ok()?;
                if head.is_branch() {
                    head.shorthand().ok().map(str::to_string)
                } else {
                    None
                }
            });
        out.push(Worktree {
            name: name.to_string(),
            path,
            branch,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The commit checked out in the working tree at `dir` (`None`: not a git working tree,
/// or a branch without commits).
pub fn head_commit(dir: &Path) -> Option<String> {
    let repo = Repository::open(dir).ok()?;
    let head = repo.head().ok()?.target()?;
    Some(head.to_string())
}

/// The module-resolution configuration files of a tree (outside dependency folders).
fn config_files(repo: &Repository, tree: &Tree<'_>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let _ = tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
        let name = entry.name().unwrap_or("");
        if entry.kind() == Some(ObjectType::Tree) {
            return if SKIPPED_DIRS.contains(&name) {
                git2::TreeWalkResult::Skip
            } else {
                git2::TreeWalkResult::Ok
            };
        }
        if CONFIG_FILES.contains(&name)
            && let Ok(blob) = repo.find_blob(entry.id())
            && blob.size() <= 1 << 20
        {
            out.push((
                format!("{dir}{name}"),
                String::from_utf8_lossy(blob.content()).into_owned(),
            ));
        }
        git2::TreeWalkResult::Ok
    });
    out
}

fn path_string(p: &Path) -> String {
    p.to_string_lossy().replace('\\', "/")
}
