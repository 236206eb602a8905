//! Git sources: clone/fetch into a bare mirror, tree-to-tree diffs between the indexed
//! commit and the new one (modify, add, delete, rename), branch switches, and the blob
//! id as the content hash. The upstream is a real repository made with git2 in a temp dir.

use std::path::Path;
use std::sync::Arc;

use crate::support;

use git2::{Repository, Signature};
use sextant::index::{IndexOptions, Indexer, Progress, SyncReport};
use sextant::store::{
    LanceStore, MetaStore, RepoSettings, Repository as Repo, SqlMetaStore, VectorStore,
};
use support::embedders::{DIMS, Recorder};

/// Commits `files` (`None`: delete) on `branch` of `repo` (its work tree and index too).
pub(crate) fn commit(
    repo: &Repository,
    files: &[(&str, Option<&str>)],
    message: &str,
    branch: &str,
) {
    let workdir = repo.workdir().unwrap().to_path_buf();
    let mut index = repo.index().unwrap();
    for (rel, content) in files {
        let path = workdir.join(rel);
        match content {
            Some(text) => {
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, text).unwrap();
                index.add_path(Path::new(rel)).unwrap();
            }
            None => {
                std::fs::remove_file(&path).unwrap();
                index.remove_path(Path::new(rel)).unwrap();
            }
        }
    }
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = Signature::now("Test", "test@example.com").unwrap();
    let parent = repo
        .find_reference(&format!("refs/heads/{branch}"))
        .ok()
        .and_then(|r| r.peel_to_commit().ok());
    let parents: Vec<&git2::Commit> = parent.iter().collect();
    repo.commit(
        Some(&format!("refs/heads/{branch}")),
        &sig,
        &sig,
        message,
        &tree,
        &parents,
    )
    .unwrap();
}

struct World {
    _tmp: tempfile::TempDir,
    upstream: Repository,
    meta: Arc<SqlMetaStore>,
    vectors: Arc<LanceStore>,
    counter: Arc<Recorder>,
    indexer: Indexer,
}

async fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let upstream = Repository::init(tmp.path().join("upstream")).unwrap();
    upstream.set_head("refs/heads/main").unwrap();
    commit(
        &upstream,
        &[
            ("src/a.ts", Some("export function a() { return 1; }\n")),
            ("src/b.ts", Some("export function b() { return 2; }\n")),
            ("src/c.ts", Some("export function c() { return 3; }\n")),
            ("docs/notes.txt", Some("not code\n")),
            ("node_modules/x/index.js", Some("module.exports = 1;\n")),
        ],
        "initial",
        "main",
    );
    let (meta, vectors) = support::stores(tmp.path(), DIMS).await;
    let counter = Arc::new(Recorder::default());
    let indexer = Indexer::new(
        meta.clone(),
        vectors.clone(),
        counter.clone(),
        IndexOptions {
            checkout_dir: tmp.path().join("repos"),
            ..IndexOptions::default()
        },
    )
    .unwrap();
    World {
        _tmp: tmp,
        upstream,
        meta,
        vectors,
        counter,
        indexer,
    }
}

impl World {
    fn url(&self) -> String {
        self.upstream
            .workdir()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }
    async fn sync(&self, repo: &Repo) -> SyncReport {
        self.indexer
            .sync(repo, &mut Progress::silent(&repo.id))
            .await
            .unwrap()
    }
    async fn reload(&self, repo: &Repo) -> Repo {
        self.indexer.find_repo(&repo.id).await.unwrap()
    }
    async fn paths(&self, repo: &Repo) -> Vec<String> {
        support::indexed_paths(self.meta.as_ref(), &repo.id).await
    }
    fn head(&self, branch: &str) -> String {
        self.upstream
            .find_reference(&format!("refs/heads/{branch}"))
            .unwrap()
            .peel_to_commit()
            .unwrap()
            .id()
            .to_string()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commits_are_synced_by_tree_diff() {
    let w = world().await;
    let repo = w
        .indexer
        .register_git(&w.url(), Some("up"), None, RepoSettings::default())
        .await
        .unwrap();
    let first = w.sync(&repo).await;
    assert_eq!(
        first.indexed, 3,
        "three TypeScript files; plain text and node_modules ignored"
    );
    let repo = w.reload(&repo).await;
    assert_eq!(
        repo.indexed_commit.as_deref(),
        Some(w.head("main").as_str())
    );
    assert_eq!(w.paths(&repo).await, ["src/a.ts", "src/b.ts", "src/c.ts"]);
    let blob = w
        .meta
        .get_file(&repo.id, "src/a.ts")
        .await
        .unwrap()
        .unwrap();
    let expected = w
        .upstream
        .revparse_single("main:src/a.ts")
        .unwrap()
        .id()
        .to_string();
    assert_eq!(
        blob.content_hash.as_deref(),
        Some(expected.as_str()),
        "blob id is the hash"
    );

    // No new commit: nothing to do.
    let again = w.sync(&repo).await;
    assert_eq!((again.indexed, again.removed), (0, 0));

    // An index built at another index format: the same commit is read in full again
    // (diffed against nothing), keeping every file; then nothing to do again.
    w.meta.set_setting("index_format", "0").await.unwrap();
    assert!(matches!(
        w.indexer.adopt_format().await.unwrap(),
        sextant::index::FormatChange::Changed { files: 3, .. }
    ));
    let reread = w.sync(&repo).await;
    assert_eq!((reread.indexed, reread.added, reread.removed), (3, 0, 0));
    assert_eq!(w.paths(&repo).await, ["src/a.ts", "src/b.ts", "src/c.ts"]);
    let again = w.sync(&repo).await;
    assert_eq!((again.indexed, again.removed), (0, 0));

    // Modify a, add d, delete b, rename c → e.
    let c_text = "export function c() { return 3; }\n";
    commit(
        &w.upstream,
        &[
            ("src/a.ts", Some("export function a() { return 10; }\n")),
            ("src/d.ts", Some("export function d() { return 4; }\n")),
            ("src/b.ts", None),
            ("src/c.ts", None),
            ("src/e.ts", Some(c_text)),
        ],
        "change",
        "main",
    );
    let before = w.counter.texts.lock().unwrap().len();
    let report = w.sync(&repo).await;
    assert_eq!(report.indexed, 3, "a (modified), d (added), e (renamed)");
    assert_eq!(report.added, 2);
    assert_eq!(report.removed, 2, "b (deleted) and c (renamed away)");
    assert!(w.counter.texts.lock().unwrap().len() > before);
    let repo = w.reload(&repo).await;
    assert_eq!(w.paths(&repo).await, ["src/a.ts", "src/d.ts", "src/e.ts"]);
    assert!(
        w.vectors
            .file_chunks(&repo.id, "src/c.ts")
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        w.vectors
            .file_chunks(&repo.id, "src/e.ts")
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        repo.indexed_commit.as_deref(),
        Some(w.head("main").as_str())
    );

    // A script without an extension comes in by its shebang (a shell's too); one in a
    // language Sextant does not read does not.
    commit(
        &w.upstream,
        &[
            (
                "bin/tool",
                Some("#!/usr/bin/env python3\ndef main():\n    return 1\n"),
            ),
            ("bin/run", Some("#!/bin/sh\necho hi\n")),
            ("bin/data", Some("#!/usr/bin/perl\nprint 1;\n")),
        ],
        "scripts",
        "main",
    );
    let report = w.sync(&repo).await;
    assert_eq!(report.indexed, 2, "bin/tool and bin/run");
    let repo = w.reload(&repo).await;
    assert_eq!(
        w.paths(&repo).await,
        ["bin/run", "bin/tool", "src/a.ts", "src/d.ts", "src/e.ts"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_branches_diffs_the_two_trees() {
    let w = world().await;
    // A feature branch off main with one changed file and one new one.
    let main_head = w
        .upstream
        .find_reference("refs/heads/main")
        .unwrap()
        .peel_to_commit()
        .unwrap();
    w.upstream.branch("feature", &main_head, false).unwrap();
    commit(
        &w.upstream,
        &[
            (
                "src/a.ts",
                Some("export function a(x: number) { return x; }\n"),
            ),
            ("src/f.ts", Some("export const f = 'feature';\n")),
        ],
        "feature work",
        "feature",
    );
    let repo = w
        .indexer
        .register_git(&w.url(), Some("up"), Some("main"), RepoSettings::default())
        .await
        .unwrap();
    w.sync(&repo).await;
    let repo = w
        .meta
        .update_repository_settings(&repo.id, Some("feature".into()), &RepoSettings::default())
        .await
        .unwrap();
    let report = w.sync(&repo).await;
    assert_eq!((report.indexed, report.added, report.removed), (2, 1, 0));
    let repo = w.reload(&repo).await;
    assert_eq!(
        repo.indexed_commit.as_deref(),
        Some(w.head("feature").as_str())
    );
    assert_eq!(
        w.paths(&repo).await,
        ["src/a.ts", "src/b.ts", "src/c.ts", "src/f.ts"]
    );

    // And back: f goes, a returns to main's version.
    let repo = w
        .meta
        .update_repository_settings(&repo.id, Some("main".into()), &RepoSettings::default())
        .await
        .unwrap();
    let report = w.sync(&repo).await;
    assert_eq!((report.indexed, report.removed), (1, 1));
    let repo = w.reload(&repo).await;
    assert_eq!(w.paths(&repo).await, ["src/a.ts", "src/b.ts", "src/c.ts"]);

    // Removal deletes the mirror too.
    w.indexer.remove_repo("up").await.unwrap();
    assert!(!w.indexer.checkout_dir(&repo.id).exists());
    let err = w
        .indexer
        .register_git("/definitely/not/here", None, None, RepoSettings::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("not an existing path"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_repositories_are_fetched_periodically() {
    use sextant::index::JobRunner;
    let w = world().await;
    let url = w.url();
    let settings = RepoSettings {
        fetch_interval_secs: 1,
        ..RepoSettings::default()
    };
    let repo = w
        .indexer
        .register_git(&url, Some("up"), None, settings)
        .await
        .unwrap();
    let (events, _rx) = tokio::sync::broadcast::channel(16);
    let indexer = Arc::new(w.indexer);
    let runner = Arc::new(JobRunner::new(indexer.clone(), 1, events));
    // Just registered: not due yet.
    assert!(runner.enqueue_due_fetches().await.unwrap().is_empty());
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let due = runner.enqueue_due_fetches().await.unwrap();
    assert_eq!(due.len(), 1);
    // Already queued: not queued twice.
    assert!(runner.enqueue_due_fetches().await.unwrap().is_empty());
    let outcomes = runner.run_queued().await.unwrap();
    assert_eq!(outcomes[0].result.as_ref().unwrap().indexed, 3);
    // A new upstream commit is picked up by the next due fetch.
    commit(
        &w.upstream,
        &[("src/z.ts", Some("export const z = 26;\n"))],
        "z",
        "main",
    );
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(runner.enqueue_due_fetches().await.unwrap().len(), 1);
    let outcomes = runner.run_queued().await.unwrap();
    assert_eq!(outcomes[0].result.as_ref().unwrap().added, 1);
    let repo = indexer.find_repo(&repo.id).await.unwrap();
    let head = w
        .upstream
        .find_reference("refs/heads/main")
        .unwrap()
        .peel_to_commit()
        .unwrap()
        .id()
        .to_string();
    assert_eq!(repo.indexed_commit.as_deref(), Some(head.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_file_limit_applies_to_git_sources_and_settings_can_change() {
    let w = world().await;
    // The upstream has three source files.
    let settings = RepoSettings {
        max_files: 2,
        ..RepoSettings::default()
    };
    let repo = w
        .indexer
        .register_git(&w.url(), Some("limited"), Some("main"), settings)
        .await
        .unwrap();
    w.sync(&repo).await;
    let files = w.meta.list_files(&repo.id).await.unwrap();
    let indexed: Vec<&str> = files
        .iter()
        .filter(|f| f.skip_reason.is_none())
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(indexed.len(), 2, "{files:?}");
    let over: Vec<_> = files
        .iter()
        .filter(|f| {
            f.skip_reason
                .as_deref()
                .is_some_and(|r| r.contains("limit of 2 files"))
        })
        .collect();
    assert_eq!(over.len(), 1, "{files:?}");

    // Settings are validated, then saved.
    let bad = RepoSettings {
        include: vec!["[".into()],
        ..RepoSettings::default()
    };
    assert!(
        w.indexer
            .update_settings("limited", None, bad)
            .await
            .is_err()
    );
    let raised = RepoSettings {
        max_files: 10,
        ..RepoSettings::default()
    };
    let updated = w
        .indexer
        .update_settings("limited", None, raised)
        .await
        .unwrap();
    assert_eq!(updated.settings.max_files, 10);
    assert_eq!(updated.tracked_ref.as_deref(), Some("main"));
}

/// An indexer that may fetch from loopback over every transport, `http://` and `git://`
/// included, each fetch abandoned after `deadline`.
async fn insecure_indexer(
    tmp: &Path,
    deadline: std::time::Duration,
) -> (Arc<SqlMetaStore>, Indexer) {
    let git = sextant::index::GitPolicy {
        allow_insecure: true,
        allow_private_hosts: true,
        fetch_deadline: deadline,
    };
    indexer_with(
        tmp,
        IndexOptions {
            git,
            ..IndexOptions::default()
        },
    )
    .await
}

async fn indexer_with(tmp: &Path, options: IndexOptions) -> (Arc<SqlMetaStore>, Indexer) {
    let (meta, vectors) = support::stores(tmp, DIMS).await;
    let indexer = Indexer::new(
        meta.clone(),
        vectors,
        Arc::new(Recorder::default()),
        IndexOptions {
            checkout_dir: tmp.join("repos"),
            ..options
        },
    )
    .unwrap();
    (meta, indexer)
}

/// Regressions (security review, findings 4 and 7): git sources went around
/// `--allowed-roots` (`file://`, local paths containing `@`) and reached loopback and
/// private addresses. Both are refused by default, with what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_sources_respect_the_roots_and_stay_off_private_addresses() {
    let tmp = tempfile::tempdir().unwrap();
    let allowed = tmp.path().join("allowed");
    std::fs::create_dir_all(&allowed).unwrap();
    let outside = tmp.path().join("out@side").join("repo");
    let upstream = Repository::init(&outside).unwrap();
    commit(
        &upstream,
        &[("a.ts", Some("export const a = 1;\n"))],
        "a",
        "main",
    );
    let inside = Repository::init(allowed.join("repo")).unwrap();
    commit(
        &inside,
        &[("a.ts", Some("export const a = 1;\n"))],
        "a",
        "main",
    );
    let (_meta, indexer) = indexer_with(
        tmp.path(),
        IndexOptions {
            allowed_roots: vec![allowed.clone()],
            ..IndexOptions::default()
        },
    )
    .await;
    let refused = |e: sextant::index::IndexError| e.to_string();
    let outside_path = outside.to_string_lossy().into_owned();
    for source in [
        outside_path.clone(),
        format!("file://{outside_path}"),
        format!("{}/../out@side/repo", allowed.display()),
    ] {
        let e = refused(
            indexer
                .register_git(&source, None, None, RepoSettings::default())
                .await
                .unwrap_err(),
        );
        assert!(e.contains("allowed roots"), "{source}: {e}");
    }
    // Issue 37, finding 7: a `.git` file, or an alternates file, inside a root that leads
    // to a repository outside it is refused, at registration (and before each fetch).
    let linked = allowed.join("linked");
    std::fs::create_dir_all(&linked).unwrap();
    std::fs::write(
        linked.join(".git"),
        format!("gitdir: {}\n", outside.join(".git").display()),
    )
    .unwrap();
    let borrowing = allowed.join("borrowing");
    Repository::init_bare(&borrowing).unwrap();
    std::fs::write(
        borrowing.join("objects/info/alternates"),
        format!("{}\n", outside.join(".git/objects").display()),
    )
    .unwrap();
    for source in [&linked, &borrowing] {
        let e = refused(
            indexer
                .register_git(
                    &source.to_string_lossy(),
                    None,
                    None,
                    RepoSettings::default(),
                )
                .await
                .unwrap_err(),
        );
        assert!(
            e.contains("objects/info/alternates") && e.contains("allowed roots"),
            "{}: {e}",
            source.display()
        );
    }
    // Inside the roots, both forms work.
    let inside_path = allowed.join("repo").to_string_lossy().into_owned();
    indexer
        .register_git(&inside_path, Some("in1"), None, RepoSettings::default())
        .await
        .unwrap();
    indexer
        .register_git(
            &format!("file://{inside_path}"),
            Some("in2"),
            None,
            RepoSettings::default(),
        )
        .await
        .unwrap();
    for (source, expected) in [
        ("http://example.com/r.git", "--allow-insecure-git"),
        ("git://example.com/r.git", "--allow-insecure-git"),
        ("https://127.0.0.1/r.git", "loopback"),
        ("https://localhost:8443/r.git", "loopback"),
        ("https://10.1.2.3/r.git", "private"),
        ("git@192.168.1.10:org/r.git", "private"),
        ("https://169.254.169.254/latest", "link-local"),
        ("https://[::1]/r.git", "loopback"),
        ("ftp://example.com/r.git", "not supported"),
    ] {
        let e = refused(
            indexer
                .register_git(source, None, None, RepoSettings::default())
                .await
                .unwrap_err(),
        );
        assert!(e.contains(expected), "{source}: {e}");
    }
}

/// Regression (finding 6): credentials in a git URL were shown to every read token (the
/// repository's `source`, progress messages, MCP). They are stored apart; the source is
/// the URL without them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_in_git_urls_are_kept_apart_and_never_shown() {
    let tmp = tempfile::tempdir().unwrap();
    let (meta, indexer) = indexer_with(
        tmp.path(),
        IndexOptions {
            git: sextant::index::GitPolicy {
                allow_private_hosts: true,
                ..Default::default()
            },
            ..IndexOptions::default()
        },
    )
    .await;
    let repo = indexer
        .register_git(
            "https://ci-bot:ghp_0123secret@127.0.0.1:9/org/r.git",
            None,
            None,
            RepoSettings::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        repo.source,
        sextant::store::RepoSource::Git("https://127.0.0.1:9/org/r.git".into())
    );
    assert_eq!(repo.name, "r");
    // What the API shows of it, and what a debug log would.
    let shown = meta.list_repositories().await.unwrap();
    let listed = format!(
        "{} {:?}",
        serde_json::to_string(&shown).unwrap(),
        meta.list_repositories().await.unwrap()
    );
    assert!(
        !listed.contains("ghp_0123secret") && !listed.contains("ci-bot"),
        "{listed}"
    );
    let stored = meta.credentials(&repo.id).await.unwrap().unwrap();
    assert_eq!(stored.username, "ci-bot");
    assert_eq!(stored.password.as_deref(), Some("ghp_0123secret"));
    // A failed fetch's error (stored as the repository's last error) names no secret.
    let err = indexer
        .sync(&repo, &mut Progress::silent(&repo.id))
        .await
        .unwrap_err()
        .to_string();
    assert!(!err.contains("ghp_0123secret"), "{err}");
    // Removing the repository removes its credentials.
    indexer.remove_repo(&repo.id).await.unwrap();
    assert!(meta.credentials(&repo.id).await.unwrap().is_none());
}

/// Issue 37, finding 5: a git source registered before credentials were kept apart still
/// carried them in its stored URL, shown to read tokens. Every start moves them out (one
/// transaction per source); sources without credentials, ssh account names and path
/// repositories are left as they are; a second run changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_stored_in_old_urls_are_moved_out() {
    use sextant::store::{NewRepository, RepoSource};
    let tmp = tempfile::tempdir().unwrap();
    let (meta, indexer) = indexer_with(tmp.path(), IndexOptions::default()).await;
    let old = |name: &str, source: RepoSource| NewRepository {
        name: name.into(),
        source,
        tracked_ref: None,
        settings: RepoSettings::default(),
    };
    let leaky = meta
        .create_repository(old(
            "leaky",
            RepoSource::Git("https://ci-bot:ghp_0ld5ecret@git.example/org/r.git".into()),
        ))
        .await
        .unwrap();
    let clean_urls = [
        (
            "plain",
            RepoSource::Git("https://git.example/org/p.git".into()),
        ),
        (
            "ssh",
            RepoSource::Git("ssh://git@git.example/org/s.git".into()),
        ),
        ("dir", RepoSource::Path(tmp.path().display().to_string())),
    ];
    for (name, source) in clean_urls.clone() {
        meta.create_repository(old(name, source)).await.unwrap();
    }
    assert_eq!(indexer.move_stored_credentials().await.unwrap(), 1);
    let moved = meta.get_repository(&leaky.id).await.unwrap().unwrap();
    assert_eq!(
        moved.source,
        RepoSource::Git("https://git.example/org/r.git".into())
    );
    let stored = meta.credentials(&leaky.id).await.unwrap().unwrap();
    assert_eq!(
        (stored.username.as_str(), stored.password.as_deref()),
        ("ci-bot", Some("ghp_0ld5ecret"))
    );
    for (name, source) in clean_urls {
        let repo = meta.get_repository_by_name(name).await.unwrap().unwrap();
        assert_eq!(repo.source, source, "{name}");
        assert!(
            meta.credentials(&repo.id).await.unwrap().is_none(),
            "{name}"
        );
    }
    let listed = format!("{:?}", meta.list_repositories().await.unwrap());
    assert!(!listed.contains("ghp_0ld5ecret"), "{listed}");
    assert_eq!(indexer.move_stored_credentials().await.unwrap(), 0);
}

/// Regression (finding 5): a git server that accepts and never answers held its job, and
/// the runner waited for its whole batch before claiming more, so path repositories
/// queued behind it never ran. Now the others run as slots free, and the stuck job fails
/// at its deadline with a message that says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_silent_git_server_holds_back_no_other_sync() {
    use sextant::index::JobRunner;
    use std::time::Duration;
    let tmp = tempfile::tempdir().unwrap();
    // Accepts connections and says nothing (for 8 s, after which the blocked fetch ends).
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        silent.set_nonblocking(true).unwrap();
        let until = std::time::Instant::now() + Duration::from_secs(8);
        while std::time::Instant::now() < until {
            if let Ok((conn, _)) = silent.accept() {
                held.push(conn);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    let (meta, indexer) = insecure_indexer(tmp.path(), std::time::Duration::from_secs(2)).await;
    let stuck = indexer
        .register_git(
            &format!("http://127.0.0.1:{port}/r.git"),
            Some("stuck"),
            None,
            RepoSettings::default(),
        )
        .await
        .unwrap();
    let mut paths = Vec::new();
    for i in 0..4 {
        let dir = tmp.path().join(format!("p{i}"));
        support::write(&dir, "a.ts", &format!("export const v{i} = {i};\n"));
        paths.push(
            indexer
                .register_path(&dir, None, RepoSettings::default())
                .await
                .unwrap(),
        );
    }
    let (events, _rx) = tokio::sync::broadcast::channel(256);
    let runner = Arc::new(
        JobRunner::new(Arc::new(indexer), 2, events).with_deadline(Duration::from_secs(3)),
    );
    let stuck_job = runner.enqueue_sync(&stuck.id).await.unwrap();
    let mut path_jobs = Vec::new();
    for repo in &paths {
        path_jobs.push(runner.enqueue_sync(&repo.id).await.unwrap());
    }
    tokio::spawn(runner.clone().run_forever(Duration::from_millis(100)));
    let started = std::time::Instant::now();
    let state = |id: String| {
        let meta = meta.clone();
        async move { meta.get_job(&id).await.unwrap().unwrap() }
    };
    loop {
        let mut done = 0;
        for job in &path_jobs {
            let j = state(job.id.clone()).await;
            if j.state == sextant::store::JobState::Succeeded {
                done += 1;
            }
        }
        if done == path_jobs.len() {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{done} of {} path syncs finished while the git server stayed silent",
            path_jobs.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    loop {
        let j = state(stuck_job.id.clone()).await;
        if j.state == sextant::store::JobState::Failed {
            let message = j.error.clone().or(j.message.clone()).unwrap_or_default();
            assert!(message.contains("deadline"), "{message}");
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "{j:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Issue 37, finding 3 (the deadline) for the insecure transports: `http://` and `git://`
/// fetches are pointed at a loopback relay (libgit2 does not route plain HTTP through a
/// proxy). Against the machine's real `git http-backend` and `git daemon`, the fetch
/// works through it, incrementally, and the server sees its own name: the `Host` header,
/// and the `git://` request's virtual host (the daemon serves `root/<host>/r.git`, so a
/// relay that forwarded its own address would find no repository).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_and_git_fetches_reach_their_server_through_the_relay() {
    use support::git_servers::{GitDaemon, GitHttp, git_available};
    if !git_available("http_and_git_fetches_reach_their_server_through_the_relay") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let served = tmp.path().join("served");
    let upstream = Repository::init(served.join("localhost").join("r.git")).unwrap();
    upstream.set_head("refs/heads/main").unwrap();
    commit(
        &upstream,
        &[("src/a.ts", Some("export function a() { return 1; }\n"))],
        "initial",
        "main",
    );
    let http = GitHttp::start(&served).await;
    let daemon = GitDaemon::start(&served);
    let (meta, indexer) = insecure_indexer(tmp.path(), std::time::Duration::from_secs(60)).await;
    let urls = [
        format!("http://localhost:{}/localhost/r.git", http.port),
        format!("git://localhost:{}/r.git", daemon.port),
    ];
    let mut repos = Vec::new();
    for (url, name) in urls.iter().zip(["over-http", "over-git"]) {
        let repo = indexer
            .register_git(url, Some(name), None, RepoSettings::default())
            .await
            .unwrap();
        indexer
            .sync(&repo, &mut Progress::silent(&repo.id))
            .await
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        repos.push(repo);
    }
    commit(
        &upstream,
        &[("src/b.ts", Some("export function b() { return 2; }\n"))],
        "second",
        "main",
    );
    for (url, repo) in urls.iter().zip(&repos) {
        let repo = indexer.find_repo(&repo.id).await.unwrap();
        let report = indexer
            .sync(&repo, &mut Progress::silent(&repo.id))
            .await
            .unwrap_or_else(|e| panic!("{url}, second sync: {e}"));
        assert_eq!(report.added, 1, "{url}: {report:?}");
        assert_eq!(
            support::indexed_paths(meta.as_ref(), &repo.id).await,
            ["src/a.ts", "src/b.ts"],
            "{url}"
        );
        // The stored remote is the registered URL, not the relay's.
        let mirror = Repository::open_bare(tmp.path().join("repos").join(&repo.id)).unwrap();
        let origin = mirror.find_remote("origin").unwrap();
        assert_eq!(origin.url().unwrap(), url.as_str());
    }
    let hosts = http.hosts.lock().unwrap().clone();
    assert!(hosts.len() >= 4, "{hosts:?}");
    assert!(
        hosts
            .iter()
            .all(|h| *h == format!("localhost:{}", http.port)),
        "the server saw another Host than its own: {hosts:?}"
    );
}

/// A redirect off the relayed server is not followed: libgit2 would follow it directly,
/// around the deadline and the address check. The sync says where it was sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_redirect_off_the_server_is_refused_with_its_reason() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new().fallback(|| async {
        axum::http::Response::builder()
            .status(302)
            .header(
                "location",
                "http://git.elsewhere.example/r.git/info/refs?service=git-upload-pack",
            )
            .body(axum::body::Body::empty())
            .unwrap()
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    let tmp = tempfile::tempdir().unwrap();
    let (_meta, indexer) = insecure_indexer(tmp.path(), std::time::Duration::from_secs(30)).await;
    let repo = indexer
        .register_git(
            &format!("http://127.0.0.1:{port}/r.git"),
            None,
            None,
            RepoSettings::default(),
        )
        .await
        .unwrap();
    let error = indexer
        .sync(&repo, &mut Progress::silent(&repo.id))
        .await
        .expect_err("a redirect to another host is not followed")
        .to_string();
    assert!(
        error.contains("redirected") && error.contains("git.elsewhere.example"),
        "{error}"
    );
}

/// Issue 37, finding 3 (the deadline): libgit2 checked the fetch deadline only while
/// objects arrived, so a server trickling its first bytes held the fetch, its thread and
/// its connection past the deadline, for as long as it liked. Now every network fetch
/// goes through a proxy of its own that closes it at the deadline in whatever phase: here
/// the first answer of each transport arrives a byte every 200 ms (for `https://` the TLS
/// handshake, whose first record announces 16 KiB; for `http://` a status line; for
/// `git://` a packet line). Each sync fails with a message naming the deadline soon after
/// it, and the server sees its connection closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickling_git_server_loses_the_fetch_at_its_deadline() {
    use std::time::{Duration, Instant};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (closed_tx, mut closed_rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let closed = closed_tx.clone();
            tokio::spawn(async move {
                let mut request = [0u8; 512];
                let n = stream.read(&mut request).await.unwrap_or(0);
                if n == 0 {
                    return;
                }
                // Every read of libgit2's gets something long before its own timeout:
                // 16,384 bytes take 55 minutes.
                let answer: &[u8] = match request[0] {
                    0x16 => &[0x16, 0x03, 0x03, 0x40, 0x00], // a TLS ClientHello
                    b'G' => b"HTTP/1.1 200 OK\r\nx-slow: ",
                    _ => b"00ff",
                };
                let bytes = answer.iter().copied().chain(std::iter::repeat(b'a'));
                for byte in bytes.take(16_384) {
                    if stream.write_all(&[byte]).await.is_err() {
                        let _ = closed.send(Instant::now());
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            });
        }
    });
    for scheme in ["https", "http", "git"] {
        let tmp = tempfile::tempdir().unwrap();
        let (_meta, indexer) =
            insecure_indexer(tmp.path(), std::time::Duration::from_secs(2)).await;
        let repo = indexer
            .register_git(
                &format!("{scheme}://127.0.0.1:{port}/r.git"),
                None,
                None,
                RepoSettings::default(),
            )
            .await
            .unwrap();
        let started = Instant::now();
        let outcome = tokio::time::timeout(
            Duration::from_secs(60),
            indexer.sync(&repo, &mut Progress::silent(&repo.id)),
        )
        .await
        .unwrap_or_else(|_| panic!("{scheme}: the sync is still fetching a minute later"));
        let waited = started.elapsed();
        let error = outcome
            .expect_err("a trickled answer cannot succeed")
            .to_string();
        assert!(error.contains("deadline"), "{scheme}: {error}");
        assert!(
            waited < Duration::from_secs(10),
            "{scheme}: failed after {waited:?}"
        );
        let closed = tokio::time::timeout(Duration::from_secs(10), closed_rx.recv())
            .await
            .unwrap_or_else(|_| panic!("{scheme}: the connection is open 10 s after the deadline"))
            .unwrap();
        assert!(
            closed.duration_since(started) < Duration::from_secs(12),
            "{scheme}"
        );
    }
}

/// Issue 37, finding 3 (the stop): a git server that trickles its answer a byte at a
/// time keeps a fetch inside libgit2 for as long as it likes; SIGTERM used to wait for
/// that fetch (> 90 s). Now `sextant serve` stops within its grace (5 s) whatever a sync
/// is blocked on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_the_server_during_a_hung_fetch() {
    use std::process::Command;
    use std::time::{Duration, Instant};
    use tokio::io::AsyncWriteExt;
    // Reads the request, then sends an HTTP answer one byte every two seconds (each read
    // of libgit2's finishes well inside its 60 s timeout).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = [0u8; 1024];
                if tokio::io::AsyncReadExt::read(&mut stream, &mut request)
                    .await
                    .unwrap_or(0)
                    == 0
                {
                    return;
                }
                for byte in b"HTTP/1.1 200 OK\r\ncontent-type: application/x-git-upload-pack-advertisement\r\n\r\n".iter().cycle().take(10_000) {
                    if stream.write_all(&[*byte]).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_secs(2)).await;
                }
            });
        }
    });
    let mock = support::mock_http::MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_sextant"));
    command
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .args(["--embed-provider", "openai", "--embed-model", "m"])
        .args(["--embed-dims", "8", "--embed-url"])
        .arg(format!("{}/v1", mock.url))
        .args(["--allow-insecure-git", "--allow-private-git-hosts"])
        .args(["serve", "--bind", "127.0.0.1:0"])
        .env_remove("SEXTANT_ADMIN_TOKEN_FILE");
    let mut server = support::process::Served::start(command);
    let http = reqwest::Client::new();
    let job = support::process::register_job(
        &http,
        &server.url,
        &serde_json::json!({ "git": format!("http://127.0.0.1:{port}/r.git"), "name": "slow" }),
    )
    .await;
    support::process::wait_job(&http, &server.url, &job, |s| s == "running").await;
    // Well into the fetch: the answer's first bytes have been read.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let term = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let asked = Instant::now();
    let status = loop {
        if let Some(status) = server.try_wait() {
            break status;
        }
        assert!(
            asked.elapsed() < Duration::from_secs(10),
            "still running 10 s after SIGTERM: {:?}",
            server.lines()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(status.success(), "{status:?}: {:?}", server.lines());
}
