//! Git sources: clone/fetch into a bare mirror, tree-to-tree diffs between the indexed
//! commit and the new one (modify, add, delete, rename), branch switches, and the blob
//! id as the content hash. The upstream is a real repository made with git2 in a temp dir.

use std::path::Path;
use std::sync::Arc;

mod support;

use git2::{Repository, Signature};
use sextant::index::{IndexOptions, Indexer, Progress, SyncReport};
use sextant::store::{
    LanceStore, MetaStore, RepoSettings, Repository as Repo, SqlMetaStore, VectorStore,
};
use support::embedders::{DIMS, Recorder};

fn commit(repo: &Repository, files: &[(&str, Option<&str>)], message: &str, branch: &str) {
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
            ("docs/readme.md", Some("# not code\n")),
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
        let mut p: Vec<String> = self
            .meta
            .list_files(&repo.id)
            .await
            .unwrap()
            .into_iter()
            .map(|f| f.path)
            .collect();
        p.sort();
        p
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
        "three TypeScript files; markdown and node_modules ignored"
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
