//! Tracked refs (issue 40): a git repository's other branches are indexed as what differs
//! from its indexed commit. Tested on a real repository made in the test: a branch that
//! changes four files costs four files; a search on each ref reads that ref's code; a
//! rename on the branch moves its callers in the ref's graph only; dropping the ref frees
//! its rows and nothing of the repository's.

use std::sync::Arc;

use git2::Repository;
use sextant::auth::Principal;
use sextant::index::{DELETED_ON_REF, IndexOptions, Indexer, JobRunner, Progress};
use sextant::search::{SearchOverrides, Searcher};
use sextant::service::{Change, ScoutRequest, Service};
use sextant::store::{ChunkFilter, LanceStore, MetaStore, RepoSettings, SqlMetaStore, VectorStore};

use crate::git_sync::commit;
use crate::support::embedders::{BOW_DIMS, BagOfWords};

struct World {
    _tmp: tempfile::TempDir,
    upstream: Repository,
    meta: Arc<SqlMetaStore>,
    vectors: Arc<LanceStore>,
    indexer: Arc<Indexer>,
    service: Service,
}

/// The commit `branch` of `repo` points at.
fn head_of<'r>(repo: &'r Repository, branch: &str) -> git2::Commit<'r> {
    repo.find_reference(&format!("refs/heads/{branch}"))
        .unwrap()
        .peel_to_commit()
        .unwrap()
}

/// A repository at `dir/upstream`: `main` with six files, and `feature`, which renames a
/// function and updates its caller, adds a file calling an unchanged one, and deletes a
/// file that an unchanged one calls.
fn upstream(dir: &std::path::Path) -> Repository {
    let upstream = Repository::init(dir.join("upstream")).unwrap();
    upstream.set_head("refs/heads/main").unwrap();
    commit(&upstream, MAIN, "initial", "main");
    {
        let main = head_of(&upstream, "main");
        upstream.branch("feature", &main, false).unwrap();
    }
    commit(&upstream, FEATURE, "feature work", "feature");
    upstream
}

/// The six files of `main`.
const MAIN: &[(&str, Option<&str>)] = &[
    (
        "src/a.ts",
        Some("export function parseHeader(s: string) { return s.trim(); }\n"),
    ),
    (
        "src/b.ts",
        Some("export function checkQuota(n: number) { return n > 3; }\n"),
    ),
    (
        "src/c.ts",
        Some("export function legacyRetry() { return 'again'; }\n"),
    ),
    (
        "src/d.ts",
        Some("export function formatDate(d: Date) { return d.toISOString(); }\n"),
    ),
    (
        "src/f.ts",
        Some(
            "import { parseHeader } from './a';\n\
             export function readRequest(s: string) { return parseHeader(s); }\n",
        ),
    ),
    (
        "src/g.ts",
        Some(
            "import { legacyRetry } from './c';\n\
             export function retryLater() { return legacyRetry(); }\n",
        ),
    ),
];

/// What `feature` changes in four files: a function renamed, its caller following, one
/// file added (calling an unchanged one), one deleted.
const FEATURE: &[(&str, Option<&str>)] = &[
    (
        "src/a.ts",
        Some("export function parseHeaderStrict(s: string) { return s.trim(); }\n"),
    ),
    (
        "src/e.ts",
        Some(
            "import { formatDate } from './d';\n\
             export function exportCsvReport(rows: string[]) { return rows.join(formatDate(new Date())); }\n",
        ),
    ),
    (
        "src/f.ts",
        Some(
            "import { parseHeaderStrict } from './a';\n\
             export function readRequest(s: string) { return parseHeaderStrict(s); }\n",
        ),
    ),
    ("src/c.ts", None),
];

async fn world() -> World {
    let tmp = tempfile::tempdir().unwrap();
    let upstream = upstream(tmp.path());
    let meta = Arc::new(
        SqlMetaStore::open(&tmp.path().join("db.sqlite").to_string_lossy())
            .await
            .unwrap(),
    );
    let vectors = Arc::new(
        LanceStore::open(sextant::store::LanceStoreOptions::new(
            tmp.path().join("lance").to_string_lossy(),
            BOW_DIMS,
        ))
        .await
        .unwrap(),
    );
    let indexer = Arc::new(
        Indexer::new(
            meta.clone(),
            vectors.clone(),
            Arc::new(BagOfWords),
            IndexOptions {
                checkout_dir: tmp.path().join("repos"),
                ..IndexOptions::default()
            },
        )
        .unwrap(),
    );
    let searcher = Searcher::new(meta.clone(), vectors.clone(), Arc::new(BagOfWords), None);
    let (events, _) = tokio::sync::broadcast::channel(64);
    let jobs = Arc::new(JobRunner::new(indexer.clone(), 1, events.clone()));
    let service = Service::new(indexer.clone(), Arc::new(searcher), jobs, events);
    World {
        _tmp: tmp,
        upstream,
        meta,
        vectors,
        indexer,
        service,
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

    /// `(path, ref)` of an exact lookup's results on `git_ref`.
    async fn looked_up(&self, name: &str, git_ref: Option<&str>) -> Vec<(String, Option<String>)> {
        let answer = self
            .service
            .symbol(&Principal::local(), name, None, git_ref.map(str::to_string))
            .await
            .unwrap();
        answer
            .response
            .results
            .into_iter()
            .map(|h| (h.path, h.git_ref))
            .collect()
    }

    /// Paths of the search's results for `query` (on `git_ref` when given), with the
    /// repository id and ref each names.
    async fn found(
        &self,
        query: &str,
        git_ref: Option<&str>,
    ) -> Vec<(String, String, Option<String>)> {
        let request = SearchOverrides {
            git_ref: git_ref.map(str::to_string),
            ..SearchOverrides::default()
        };
        let answer = self
            .service
            .search(&Principal::local(), query, request)
            .await
            .unwrap();
        answer
            .response
            .results
            .into_iter()
            .map(|h| (h.path, h.repo_id, h.git_ref))
            .collect()
    }

    /// Registers the upstream as `up`, tracking `main`.
    async fn register(&self) -> sextant::store::Repository {
        self.indexer
            .register_git(
                &self.url(),
                Some("up"),
                Some("main"),
                RepoSettings::default(),
            )
            .await
            .unwrap()
    }

    /// What a scout of `query` on `git_ref` took it to mean, and the (path, name) of
    /// every neighbour it rated.
    async fn scouted(&self, query: &str, git_ref: Option<&str>) -> (String, Vec<(String, String)>) {
        let request = ScoutRequest {
            query: query.to_string(),
            git_ref: git_ref.map(str::to_string),
            ..ScoutRequest::default()
        };
        let mut visited = Vec::new();
        let answer = self
            .service
            .scout(&Principal::local(), request, |v, _| {
                visited.push((v.link.neighbour.path.clone(), v.link.neighbour.name.clone()))
            })
            .await
            .unwrap();
        (answer.meta.interpretation, visited)
    }

    /// The names of the symbols of `path` in `repository` on `git_ref`, or the error.
    async fn symbols_of(
        &self,
        repository: &str,
        path: &str,
        git_ref: Option<&str>,
    ) -> Result<Vec<String>, String> {
        self.service
            .file_symbols(&Principal::local(), repository, path, git_ref)
            .await
            .map(|symbols| symbols.into_iter().map(|s| s.name).collect())
            .map_err(|e| e.to_string())
    }

    /// The refs `repository` tracks, by name.
    async fn tracked(&self, repository: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .indexer
            .refs(repository)
            .await
            .unwrap()
            .into_iter()
            .filter_map(|r| r.tracked_ref)
            .collect();
        names.sort();
        names
    }

    /// `main`'s files committed in a local git repository at `local`, with a worktree
    /// (`feature-wt`) on a new branch `feature` at `local-feature`: the repository and the
    /// worktree's directory.
    fn local_with_worktree(&self) -> (Repository, std::path::PathBuf) {
        let git = local_repository(&self._tmp.path().join("local"));
        let feature_dir = self._tmp.path().join("local-feature");
        add_worktree(&git, "feature-wt", "feature", &feature_dir);
        (git, feature_dir)
    }

    /// Registers the directory of [`World::local_with_worktree`] as `loc` and indexes it.
    async fn register_local(
        &self,
        settings: RepoSettings,
    ) -> (sextant::store::Repository, sextant::index::SyncReport) {
        let root = self._tmp.path().join("local");
        let local = self
            .indexer
            .register_path(&root, Some("loc"), settings)
            .await
            .unwrap();
        let report = self.synced(&local).await;
        (local, report)
    }

    /// Syncs `repo` (a repository or a ref) now.
    async fn synced(&self, repo: &sextant::store::Repository) -> sextant::index::SyncReport {
        self.indexer
            .sync(repo, &mut Progress::silent(&repo.id))
            .await
            .unwrap()
    }

    async fn chunks_of(&self, repo_id: &str) -> usize {
        let filter = ChunkFilter {
            repositories: vec![repo_id.to_string()],
            ..ChunkFilter::default()
        };
        self.vectors.count(&filter).await.unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_costs_the_files_it_changes_and_is_searched_on_its_own() {
    let w = world().await;
    let repo = w.register().await;
    let base = w.synced(&repo).await;
    assert_eq!(base.indexed, 6);
    let base_chunks = w.chunks_of(&repo.id).await;
    let base_files = w.meta.list_files(&repo.id).await.unwrap();

    let (tracked, job) = w
        .service
        .add_ref(&Principal::local(), "up", "feature")
        .await
        .unwrap();
    assert_eq!(tracked.parent_id.as_deref(), Some(repo.id.as_str()));
    // A token limited to the repository sees its ref and the ref's job; one limited to
    // another repository sees neither.
    let mine = Principal::token(
        "t1",
        sextant::auth::Scope::Read,
        std::slice::from_ref(&repo.id),
    );
    let other = Principal::token("t2", sextant::auth::Scope::Read, &["elsewhere".to_string()]);
    assert!(w.service.job(&mine, &job.id).await.is_ok());
    assert!(w.service.job(&other, &job.id).await.is_err());
    assert_eq!(w.service.refs(&mine, "up").await.unwrap().len(), 1);
    assert_eq!(tracked.name, "up@feature");
    let report = w.synced(&tracked).await;
    // Three files read (two modified, one added), one deletion recorded: nothing else of
    // the repository is read again.
    assert_eq!((report.indexed, report.removed), (3, 1), "{report:?}");
    let mut held: Vec<(String, Option<String>)> = w
        .meta
        .list_files(&tracked.id)
        .await
        .unwrap()
        .into_iter()
        .map(|f| (f.path, f.skip_reason))
        .collect();
    held.sort();
    assert_eq!(
        held,
        [
            ("src/a.ts".to_string(), None),
            ("src/c.ts".to_string(), Some(DELETED_ON_REF.to_string())),
            ("src/e.ts".to_string(), None),
            ("src/f.ts".to_string(), None),
        ]
    );
    // The rename moves the caller's edge in the ref's graph only; the ref's new file
    // resolves its call into a file it shares with the repository.
    let calls = |repo_id: String, path: &'static str| {
        let meta = w.meta.clone();
        async move {
            let mut out = Vec::new();
            for symbol in meta.file_symbols(&repo_id, path).await.unwrap() {
                for e in meta.edges_from(&repo_id, &symbol.chunk_id).await.unwrap() {
                    if e.kind == sextant::store::EdgeKind::Calls {
                        out.push((e.to_name, e.to_chunk.is_some()));
                    }
                }
            }
            out
        }
    };
    assert_eq!(
        calls(tracked.id.clone(), "src/f.ts").await,
        [("parseHeaderStrict".to_string(), true)]
    );
    assert_eq!(
        calls(repo.id.clone(), "src/f.ts").await,
        [("parseHeader".to_string(), true)]
    );
    assert!(
        calls(tracked.id.clone(), "src/e.ts")
            .await
            .contains(&("formatDate".to_string(), true)),
        "a call into the repository's files resolves on the ref"
    );
    // The comparison names the files and symbols, and the unchanged code that uses a
    // symbol the branch removes.
    let c = w
        .service
        .compare(&Principal::local(), "up", None, "feature")
        .await
        .unwrap();
    assert_eq!((c.base.as_str(), c.head.as_str()), ("main", "feature"));
    let files: Vec<(String, Change)> = c.files.iter().map(|f| (f.path.clone(), f.change)).collect();
    assert_eq!(
        files,
        [
            ("src/a.ts".to_string(), Change::Modified),
            ("src/c.ts".to_string(), Change::Removed),
            ("src/e.ts".to_string(), Change::Added),
            ("src/f.ts".to_string(), Change::Modified),
        ]
    );
    let symbols: Vec<(String, Change)> = c
        .symbols
        .iter()
        .map(|s| (s.breadcrumb.clone(), s.change))
        .collect();
    for expected in [
        ("parseHeader", Change::Removed),
        ("parseHeaderStrict", Change::Added),
        ("readRequest", Change::Modified),
        ("legacyRetry", Change::Removed),
        ("exportCsvReport", Change::Added),
    ] {
        assert!(
            symbols.contains(&(expected.0.to_string(), expected.1)),
            "{expected:?} in {symbols:?}"
        );
    }
    assert!(
        c.symbols
            .iter()
            .all(|s| s.path != "src/b.ts" && s.path != "src/d.ts"),
        "unchanged files have no changed symbols"
    );
    let affected: Vec<(String, String, String)> = c
        .affected
        .iter()
        .map(|a| (a.path.clone(), a.breadcrumb.clone(), a.uses.clone()))
        .collect();
    assert_eq!(
        affected,
        [(
            "src/g.ts".to_string(),
            "retryLater".to_string(),
            "legacyRetry".to_string()
        )]
    );
    // Refs the repository does not track are named as such.
    let unknown = w
        .service
        .compare(&Principal::local(), "up", None, "nope")
        .await
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("repo ref add"), "{unknown}");

    // A second sync of an unchanged ref reads nothing.
    let again = w.synced(&tracked).await;
    assert_eq!((again.indexed, again.removed), (0, 0), "{again:?}");

    // Each ref answers with its own code, in the repository's name.
    let on_feature = w
        .found("parseHeaderStrict exportCsvReport", Some("feature"))
        .await;
    assert!(
        on_feature
            .iter()
            .any(|(p, r, g)| p == "src/e.ts" && *r == repo.id && g.as_deref() == Some("feature")),
        "{on_feature:?}"
    );
    assert!(
        on_feature.iter().all(|(p, _, _)| p != "src/c.ts"),
        "deleted on the ref: {on_feature:?}"
    );
    let a_hits: Vec<_> = on_feature
        .iter()
        .filter(|(p, _, _)| p == "src/a.ts")
        .collect();
    assert!(
        a_hits.len() <= 1,
        "one version of a.ts per ref: {on_feature:?}"
    );
    let on_main = w.found("legacyRetry exportCsvReport", None).await;
    assert!(
        on_main.iter().any(|(p, _, _)| p == "src/c.ts"),
        "{on_main:?}"
    );
    assert!(
        on_main
            .iter()
            .all(|(p, r, g)| p != "src/e.ts" && *r == repo.id && g.is_none()),
        "the default search never reads a ref's rows: {on_main:?}"
    );
    assert!(
        w.looked_up("parseHeaderStrict", None).await.is_empty(),
        "renamed on the branch only"
    );
    assert_eq!(
        w.looked_up("parseHeaderStrict", Some("feature")).await,
        [("src/a.ts".to_string(), Some("feature".to_string()))]
    );
    assert!(
        w.looked_up("parseHeader", Some("feature")).await.is_empty(),
        "the old name is gone on the ref"
    );
    let legacy = w.found("legacyRetry", Some("feature")).await;
    assert!(legacy.iter().all(|(p, _, _)| p != "src/c.ts"), "{legacy:?}");

    // `REPO@REF` as a repository name reads the repository on that ref.
    let by_name = w
        .service
        .search(
            &Principal::local(),
            "exportCsvReport",
            SearchOverrides {
                repositories: Some(vec!["up@feature".into()]),
                ..SearchOverrides::default()
            },
        )
        .await
        .unwrap();
    assert!(
        by_name
            .response
            .results
            .iter()
            .any(|h| h.path == "src/e.ts" && h.git_ref.as_deref() == Some("feature")),
        "{:?}",
        by_name.response.results
    );

    // Refs are listed with their repository, not as repositories.
    let listed = w
        .service
        .list_repositories(&Principal::local())
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    let refs = w.service.refs(&Principal::local(), "up").await.unwrap();
    assert_eq!(refs.len(), 1);
    assert!(refs[0].indexed_commit.is_some());

    // An unknown ref is named with what to do.
    let unknown = w
        .service
        .search(
            &Principal::local(),
            "parse",
            SearchOverrides {
                repositories: Some(vec!["up".into()]),
                git_ref: Some("nope".into()),
                ..SearchOverrides::default()
            },
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("repo ref add"), "{unknown}");

    // Dropping the ref frees its rows and nothing of the repository's.
    assert!(w.chunks_of(&tracked.id).await > 0);
    w.service
        .drop_ref(&Principal::local(), "up", "feature")
        .await
        .unwrap();
    assert_eq!(w.chunks_of(&tracked.id).await, 0);
    assert!(w.meta.list_files(&tracked.id).await.unwrap().is_empty());
    // A sync that was waiting for the ref when it was dropped writes nothing.
    let late = w
        .indexer
        .sync(&tracked, &mut Progress::silent(&tracked.id))
        .await;
    assert!(late.is_err(), "{late:?}");
    assert_eq!(w.chunks_of(&tracked.id).await, 0);
    assert_eq!(w.chunks_of(&repo.id).await, base_chunks);
    assert_eq!(w.meta.list_files(&repo.id).await.unwrap(), base_files);
    assert!(
        w.service
            .refs(&Principal::local(), "up")
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ref_follows_its_repository_and_refuses_what_it_cannot_track() {
    let w = world().await;
    let repo = w.register().await;
    let tracked = w.indexer.add_ref("up", "feature").await.unwrap();
    // Before its repository is indexed, a ref cannot be diffed against it.
    let early = w
        .indexer
        .sync(&tracked, &mut Progress::silent(&tracked.id))
        .await;
    assert!(
        early
            .unwrap_err()
            .to_string()
            .contains("not been indexed yet")
    );
    w.synced(&repo).await;
    let tracked = w.indexer.find_repo(&tracked.id).await.unwrap();
    w.synced(&tracked).await;

    // main catches up with feature's change to a.ts: the ref no longer holds a.ts.
    {
        let main = head_of(&w.upstream, "main");
        // The work tree and index hold feature's files since its commit.
        w.upstream
            .reset(main.as_object(), git2::ResetType::Hard, None)
            .unwrap();
    }
    commit(
        &w.upstream,
        &[(
            "src/a.ts",
            Some("export function parseHeaderStrict(s: string) { return s.trim(); }\n"),
        )],
        "main catches up",
        "main",
    );
    let repo = w.indexer.find_repo(&repo.id).await.unwrap();
    w.synced(&repo).await;
    let tracked = w.indexer.find_repo(&tracked.id).await.unwrap();
    let report = w.synced(&tracked).await;
    assert_eq!(report.indexed, 0, "{report:?}");
    let mut held: Vec<String> = w
        .meta
        .list_files(&tracked.id)
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.path)
        .collect();
    held.sort();
    assert_eq!(held, ["src/c.ts", "src/e.ts", "src/f.ts"]);

    // Refused: the default ref again, a ref of a ref, a bad name, twice the same ref.
    for (name, git_ref, says) in [
        ("up", "main", "default ref"),
        ("up@feature", "x", "itself a ref"),
        ("up", "a b", "not a ref name"),
        ("up", "feature", "feature"),
    ] {
        let refused = w
            .indexer
            .add_ref(name, git_ref)
            .await
            .unwrap_err()
            .to_string();
        assert!(refused.contains(says), "{name} {git_ref}: {refused}");
    }
    // Removing the repository removes its refs.
    w.indexer.remove_repo("up").await.unwrap();
    assert!(w.indexer.find_repo(&tracked.id).await.is_err());
    assert_eq!(w.chunks_of(&tracked.id).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refs_are_tracked_searched_compared_and_dropped_over_http() {
    use crate::support::process::{json_of, register_job, wait_job};
    use serde_json::json;

    let server = crate::support::app::start(true).await;
    let up = upstream(server.tmp.path());
    let (http, base) = (reqwest::Client::new(), server.base.as_str());
    let url = up.workdir().unwrap().to_string_lossy().into_owned();
    let job = register_job(
        &http,
        base,
        &json!({"git": url, "ref": "main", "name": "up"}),
    )
    .await;
    wait_job(&http, base, &job, |s| s == "succeeded").await;

    let created = json_of(
        http.post(format!("{base}/api/v1/repositories/up/refs"))
            .json(&json!({"ref": "feature"})),
    )
    .await;
    assert_eq!(created["repository"]["name"], "up@feature", "{created}");
    let job = created["job"]["id"].as_str().unwrap();
    wait_job(&http, base, job, |s| s == "succeeded").await;
    let refs = json_of(http.get(format!("{base}/api/v1/repositories/up/refs"))).await;
    assert_eq!(refs["refs"].as_array().unwrap().len(), 1, "{refs}");
    let shown = json_of(http.get(format!("{base}/api/v1/repositories/up"))).await;
    assert_eq!(shown["refs"][0]["status"], "ready", "{shown}");
    let listed = json_of(http.get(format!("{base}/api/v1/repositories"))).await;
    assert_eq!(
        listed["repositories"].as_array().unwrap().len(),
        1,
        "{listed}"
    );

    let search = |git_ref: Option<&str>| {
        let mut body = json!({"query": "exportCsvReport rows", "repositories": ["up"]});
        if let Some(r) = git_ref {
            body["ref"] = json!(r);
        }
        http.post(format!("{base}/api/v1/search"))
            .json(&body)
            .send()
    };
    let on_ref: serde_json::Value = search(Some("feature")).await.unwrap().json().await.unwrap();
    let results = on_ref["response"]["results"].as_array().unwrap();
    assert!(
        results
            .iter()
            .any(|r| r["path"] == "src/e.ts" && r["ref"] == "feature"),
        "{on_ref}"
    );
    let on_main: serde_json::Value = search(None).await.unwrap().json().await.unwrap();
    assert!(
        on_main["response"]["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["path"] != "src/e.ts" && r.get("ref").is_none()),
        "{on_main}"
    );

    let grep = |pattern: &str, git_ref: Option<&str>| {
        let mut body = json!({"pattern": pattern});
        if let Some(r) = git_ref {
            body["ref"] = json!(r);
        }
        json_of(http.post(format!("{base}/api/v1/grep")).json(&body))
    };
    let paths = |answer: &serde_json::Value| -> Vec<String> {
        answer["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["path"].as_str().unwrap().to_string())
            .collect()
    };
    let legacy = grep("legacyRetry", Some("feature")).await;
    assert_eq!(paths(&legacy), ["src/g.ts", "src/g.ts"], "{legacy}");
    assert!(
        legacy["matches"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["ref"] == "feature")
    );
    assert_eq!(
        paths(&grep("legacyRetry", None).await),
        ["src/c.ts", "src/g.ts", "src/g.ts"]
    );
    let by_name = json_of(
        http.post(format!("{base}/api/v1/grep"))
            .json(&json!({"pattern": "legacyRetry", "repositories": ["up@feature"]})),
    )
    .await;
    assert_eq!(paths(&by_name), ["src/g.ts", "src/g.ts"], "{by_name}");
    assert_eq!(
        paths(&grep("parseHeaderStrict", Some("feature")).await),
        ["src/a.ts", "src/f.ts", "src/f.ts"]
    );
    assert!(
        paths(&grep("exportCsvReport", None).await).is_empty(),
        "a ref's files stay out of the default grep"
    );

    let compared = json_of(http.get(format!(
        "{base}/api/v1/repositories/up/compare?base=main&head=feature"
    )))
    .await;
    assert_eq!(compared["files"].as_array().unwrap().len(), 4, "{compared}");
    assert_eq!(compared["affected"][0]["path"], "src/g.ts", "{compared}");

    // A push webhook refreshes the repository and its ref: a job each.
    let refreshed = json_of(http.post(format!("{base}/api/v1/repositories/up/refresh"))).await;
    let jobs = refreshed["jobs"].as_array().unwrap().clone();
    assert_eq!(jobs.len(), 2, "{refreshed}");
    for job in &jobs {
        wait_job(&http, base, job["id"].as_str().unwrap(), |s| {
            s == "succeeded"
        })
        .await;
    }

    // Over MCP: a file's symbols, a scout and a comparison on the ref.
    let mcp = {
        use rmcp::ServiceExt;
        use rmcp::transport::StreamableHttpClientTransport;
        ().serve(StreamableHttpClientTransport::from_uri(format!(
            "{base}/mcp"
        )))
        .await
        .unwrap()
    };
    let tool = |name: &'static str, args: serde_json::Value| {
        let serde_json::Value::Object(args) = args else {
            panic!("tool arguments must be an object")
        };
        let call =
            mcp.call_tool(rmcp::model::CallToolRequestParams::new(name).with_arguments(args));
        async move {
            let result = call.await.unwrap();
            let text: Vec<String> = result
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect();
            (result.is_error == Some(true), text.join("\n"))
        }
    };
    let (failed, symbols) = tool(
        "get_file_symbols",
        json!({"repository": "up", "path": "src/a.ts", "ref": "feature"}),
    )
    .await;
    assert!(
        !failed && symbols.contains("parseHeaderStrict"),
        "{symbols}"
    );
    let (failed, scouted) = tool(
        "scout",
        json!({"query": "parseHeaderStrict", "ref": "feature"}),
    )
    .await;
    assert!(!failed && scouted.contains("Matched"), "{scouted}");
    let (failed, compared) = tool(
        "compare_refs",
        json!({"repository": "up", "head": "feature"}),
    )
    .await;
    assert!(!failed && compared.contains("src/e.ts"), "{compared}");

    let dropped = http
        .delete(format!("{base}/api/v1/repositories/up/refs/feature"))
        .send()
        .await
        .unwrap();
    assert_eq!(dropped.status(), 200);
    let gone = search(Some("feature")).await.unwrap();
    assert_eq!(gone.status(), 404);

    // Tracked and dropped again by an agent.
    let (failed, tracked) = tool("track_ref", json!({"repository": "up", "ref": "feature"})).await;
    assert!(
        !failed && tracked.contains("Tracking `up@feature`"),
        "{tracked}"
    );
    let (failed, again) = tool("track_ref", json!({"repository": "up", "ref": "feature"})).await;
    assert!(failed && again.contains("feature"), "{again}");
    let (failed, untracked) = tool(
        "track_ref",
        json!({"repository": "up", "ref": "feature", "drop": true}),
    )
    .await;
    assert!(
        !failed && untracked.contains("No longer tracking"),
        "{untracked}"
    );
    let refs = json_of(http.get(format!("{base}/api/v1/repositories/up/refs"))).await;
    assert!(refs["refs"].as_array().unwrap().is_empty(), "{refs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ref_globs_track_new_branches_and_drop_deleted_ones() {
    let w = world().await;
    {
        let main = head_of(&w.upstream, "main");
        w.upstream.branch("feat2", &main, false).unwrap();
        w.upstream.branch("other", &main, false).unwrap();
    }
    let settings = RepoSettings {
        refs: vec!["feat*".into()],
        ..RepoSettings::default()
    };
    let repo = w
        .indexer
        .register_git(&w.url(), Some("up"), Some("main"), settings)
        .await
        .unwrap();
    w.synced(&repo).await;
    let added = w.indexer.reconcile_refs(&repo).await.unwrap();
    let mut names: Vec<String> = added.iter().filter_map(|r| r.tracked_ref.clone()).collect();
    names.sort();
    assert_eq!(names, ["feat2", "feature"]);
    for tracked in &added {
        w.synced(tracked).await;
    }
    assert!(
        w.indexer.reconcile_refs(&repo).await.unwrap().is_empty(),
        "nothing new"
    );

    // feature is deleted upstream: the next sync's fetch prunes it and its ref goes, with
    // what it alone held; feat2 (no changes of its own) stays.
    let gone = w.indexer.find_ref("up", "feature").await.unwrap();
    assert!(w.chunks_of(&gone.id).await > 0);
    w.upstream
        .find_branch("feature", git2::BranchType::Local)
        .unwrap()
        .delete()
        .unwrap();
    let repo = w.indexer.find_repo(&repo.id).await.unwrap();
    w.synced(&repo).await;
    w.indexer.reconcile_refs(&repo).await.unwrap();
    assert_eq!(w.tracked("up").await, ["feat2"]);
    assert_eq!(w.chunks_of(&gone.id).await, 0);
    assert!(w.meta.list_files(&gone.id).await.unwrap().is_empty());

    // A bad glob is refused when the settings are saved.
    let bad = RepoSettings {
        refs: vec!["release/[".into()],
        ..RepoSettings::default()
    };
    let refused = w
        .indexer
        .update_settings("up", None, bad)
        .await
        .unwrap_err()
        .to_string();
    assert!(refused.contains("release/["), "{refused}");
}

/// File symbols and Scout read the ref they are given, and a repository's default ref
/// otherwise: its refs' rows never stand beside its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_symbols_and_scout_read_the_ref_they_are_given() {
    let w = world().await;
    let repo = w.register().await;
    w.synced(&repo).await;
    let tracked = w.indexer.add_ref("up", "feature").await.unwrap();
    w.synced(&tracked).await;

    // File symbols: the ref's own files, the repository's others, none of what it deletes.
    let on = |path: &'static str, r: Option<&'static str>| w.symbols_of("up", path, r);
    assert_eq!(
        on("src/a.ts", Some("feature")).await.unwrap(),
        ["parseHeaderStrict"]
    );
    assert_eq!(on("src/a.ts", None).await.unwrap(), ["parseHeader"]);
    assert_eq!(on("src/a.ts", Some("main")).await.unwrap(), ["parseHeader"]);
    assert_eq!(
        on("src/b.ts", Some("feature")).await.unwrap(),
        ["checkQuota"]
    );
    assert!(
        on("src/e.ts", Some("feature"))
            .await
            .unwrap()
            .contains(&"exportCsvReport".into())
    );
    let absent = on("src/e.ts", None).await.unwrap_err();
    assert!(absent.contains("not indexed in `up`"), "{absent}");
    let deleted = w
        .symbols_of("up@feature", "src/c.ts", None)
        .await
        .unwrap_err();
    assert!(deleted.contains("on `feature`"), "{deleted}");
    let untracked = on("src/a.ts", Some("nope")).await.unwrap_err();
    assert!(untracked.contains("repo ref add"), "{untracked}");

    // Scout: the renamed function's caller on the ref, the old one's on the default ref.
    let (how, visited) = w.scouted("parseHeaderStrict", Some("feature")).await;
    assert!(how.starts_with("Matched"), "{how}");
    assert!(
        visited.contains(&("src/f.ts".into(), "readRequest".into())),
        "{visited:?}"
    );
    let (how, _) = w.scouted("parseHeaderStrict", None).await;
    assert!(!how.starts_with("Matched"), "{how}");
    let (_, visited) = w.scouted("parseHeader", None).await;
    assert!(
        visited.contains(&("src/f.ts".into(), "readRequest".into())),
        "{visited:?}"
    );
    // A file the ref adds calls into one it shares with the repository: found from
    // there on the ref only.
    let (_, visited) = w.scouted("formatDate", Some("feature")).await;
    assert!(
        visited.contains(&("src/e.ts".into(), "exportCsvReport".into())),
        "{visited:?}"
    );
    let (_, visited) = w.scouted("formatDate", None).await;
    assert!(visited.iter().all(|(p, _)| p != "src/e.ts"), "{visited:?}");
    // What the ref deletes is not there to scout; a symbol in both is one symbol.
    let (how, _) = w.scouted("legacyRetry", Some("feature")).await;
    assert!(!how.starts_with("Matched"), "{how}");
    let (_, visited) = w.scouted("legacyRetry", None).await;
    assert!(
        visited.contains(&("src/g.ts".into(), "retryLater".into())),
        "{visited:?}"
    );
    for r in [None, Some("feature")] {
        let (how, _) = w.scouted("readRequest", r).await;
        assert!(how.starts_with("Matched"), "{r:?}: {how}");
    }
}

/// Writes (or, for `None`, deletes) files under `dir`.
fn write_files(dir: &std::path::Path, files: &[(&str, Option<&str>)]) {
    for (path, content) in files {
        let at = dir.join(path);
        match content {
            Some(text) => {
                std::fs::create_dir_all(at.parent().unwrap()).unwrap();
                std::fs::write(&at, text).unwrap();
            }
            None => std::fs::remove_file(&at).unwrap(),
        }
    }
}

/// A git working tree at `dir` with `main`'s six files committed on `main`.
fn local_repository(dir: &std::path::Path) -> Repository {
    let repo = Repository::init(dir).unwrap();
    repo.set_head("refs/heads/main").unwrap();
    commit(&repo, MAIN, "initial", "main");
    repo
}

/// `git worktree add DIR -b BRANCH`.
fn add_worktree(repo: &Repository, name: &str, branch: &str, dir: &std::path::Path) {
    let head = repo.head().unwrap().peel_to_commit().unwrap();
    let branch = repo.branch(branch, &head, false).unwrap();
    let mut options = git2::WorktreeAddOptions::new();
    options.reference(Some(branch.get()));
    repo.worktree(name, dir, Some(&options)).unwrap();
}

/// A local directory's git worktrees are its refs: a worktree with uncommitted work
/// costs the files it changes, is read on its own, gives a file back to the repository
/// when it matches again, and globs track worktrees as they come and go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worktrees_of_a_local_repository_are_its_refs() {
    let w = world().await;
    let (git, feature_dir) = w.local_with_worktree();
    // Uncommitted work in the worktree: what `feature` changes.
    write_files(&feature_dir, FEATURE);
    let (local, base) = w.register_local(RepoSettings::default()).await;
    assert_eq!(base.indexed, 6);

    let me = Principal::local();
    let unknown = w
        .service
        .add_ref(&me, "loc", "nope")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        unknown.contains("git worktree add") && unknown.contains("`feature`"),
        "{unknown}"
    );
    // Named by its directory, relative to the repository's.
    let (tracked, _) = w
        .service
        .add_ref(&me, "loc", "../local-feature")
        .await
        .unwrap();
    assert_eq!(tracked.name, "loc@feature");
    let canonical = feature_dir.canonicalize().unwrap();
    assert_eq!(
        tracked.source,
        sextant::store::RepoSource::Path(canonical.to_string_lossy().into_owned())
    );
    let report = w.synced(&tracked).await;
    assert_eq!((report.indexed, report.removed), (3, 1), "{report:?}");
    let held = |id: String| {
        let meta = w.meta.clone();
        async move {
            let mut held: Vec<(String, bool)> = meta
                .list_files(&id)
                .await
                .unwrap()
                .into_iter()
                .map(|f| (f.path, f.skip_reason.is_some()))
                .collect();
            held.sort();
            held
        }
    };
    assert_eq!(
        held(tracked.id.clone()).await,
        [
            ("src/a.ts".to_string(), false),
            ("src/c.ts".to_string(), true),
            ("src/e.ts".to_string(), false),
            ("src/f.ts".to_string(), false),
        ]
    );
    // Each ref answers with its own code.
    assert_eq!(
        w.looked_up("exportCsvReport", Some("feature")).await,
        [("src/e.ts".to_string(), Some("feature".to_string()))]
    );
    assert!(w.looked_up("exportCsvReport", None).await.is_empty());
    assert_eq!(
        w.symbols_of("loc", "src/a.ts", Some("feature"))
            .await
            .unwrap(),
        ["parseHeaderStrict"]
    );
    let (_, visited) = w.scouted("parseHeaderStrict", Some("feature")).await;
    assert!(
        visited.contains(&("src/f.ts".into(), "readRequest".into())),
        "{visited:?}"
    );
    let again = w.synced(&tracked).await;
    assert_eq!((again.indexed, again.removed), (0, 0), "{again:?}");

    // The rename undone and the deleted file back: the ref gives both to the repository.
    let undo: Vec<(&str, Option<&str>)> = MAIN
        .iter()
        .filter(|(path, _)| ["src/a.ts", "src/c.ts"].contains(path))
        .copied()
        .collect();
    write_files(&feature_dir, &undo);
    let undone = w.synced(&tracked).await;
    assert_eq!((undone.indexed, undone.removed), (0, 2), "{undone:?}");
    assert_eq!(
        held(tracked.id.clone()).await,
        [
            ("src/e.ts".to_string(), false),
            ("src/f.ts".to_string(), false)
        ]
    );
    assert_eq!(
        w.symbols_of("loc", "src/a.ts", Some("feature"))
            .await
            .unwrap(),
        ["parseHeader"]
    );

    // A glob tracks a new worktree, and drops it once it is removed; the ref added by
    // hand stays.
    let spike_dir = w._tmp.path().join("local-spike");
    add_worktree(&git, "spike", "spike/one", &spike_dir);
    let mut settings = local.settings.clone();
    settings.refs = vec!["spike/*".into()];
    let local = w
        .indexer
        .update_settings("loc", None, settings)
        .await
        .unwrap();
    let added = w.indexer.reconcile_refs(&local).await.unwrap();
    let names: Vec<String> = added.iter().map(|r| r.name.clone()).collect();
    assert_eq!(names, ["loc@spike/one"]);
    std::fs::remove_dir_all(&spike_dir).unwrap();
    assert!(w.indexer.reconcile_refs(&local).await.unwrap().is_empty());
    assert_eq!(w.tracked("loc").await, ["feature"]);
}

/// A worktree tracked as a ref of a watched local repository is watched too, from the
/// next poll of the job queue: an edit in it queues the ref's sync, and dropping the
/// ref stops the watch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watched_repositorys_worktree_refs_are_watched() {
    let w = world().await;
    let (_git, feature_dir) = w.local_with_worktree();
    let settings = RepoSettings {
        watch: true,
        ..RepoSettings::default()
    };
    w.register_local(settings).await;
    let tracked = w.indexer.add_ref("loc", "feature").await.unwrap();
    w.synced(&tracked).await;

    let (events, _rx) = tokio::sync::broadcast::channel(64);
    let runner = Arc::new(JobRunner::new(w.indexer.clone(), 1, events));
    let mut watches = sextant::index::watch::Watches::default();
    let debounce = std::time::Duration::from_millis(200);
    runner
        .refresh_watches(&mut watches, debounce)
        .await
        .unwrap();
    assert_eq!(watches.len(), 2, "the repository and its worktree");
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    write_files(
        &feature_dir,
        &[(
            "src/h.ts",
            Some("export function onlyOnFeature() { return 1; }\n"),
        )],
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while w
        .meta
        .list_jobs(Some(&tracked.id), 10)
        .await
        .unwrap()
        .is_empty()
    {
        assert!(std::time::Instant::now() < deadline, "no sync was queued");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let outcomes = runner.run_queued().await.unwrap();
    assert_eq!(outcomes[0].result.as_ref().unwrap().indexed, 1);
    assert_eq!(
        w.looked_up("onlyOnFeature", Some("feature")).await,
        [("src/h.ts".to_string(), Some("feature".to_string()))]
    );

    w.indexer.remove_repo(&tracked.id).await.unwrap();
    runner
        .refresh_watches(&mut watches, debounce)
        .await
        .unwrap();
    assert_eq!(watches.len(), 1);
}
