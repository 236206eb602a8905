//! The metadata store suite, run unchanged against SQLite and against a real PostgreSQL.

use crate::support;

use std::sync::Arc;

use sextant::embed::VectorCache;
use sextant::store::{
    ApiToken, EdgeKind, EdgeRecord, Enqueued, FileRecord, JobState, MetaStore, NewJob,
    NewRepository, RepoSettings, RepoSource, RepoStatus, SqlMetaStore, StoreError, SymbolName,
    SymbolRecord, now_ms,
};
use support::postgres::TestPostgres;

fn new_repo(name: &str) -> NewRepository {
    NewRepository {
        name: name.into(),
        source: RepoSource::Path(format!("/src/{name}")),
        tracked_ref: None,
        settings: RepoSettings::default(),
    }
}

fn file(repo: &str, path: &str) -> FileRecord {
    FileRecord {
        repo_id: repo.into(),
        path: path.into(),
        language: Some("typescript".into()),
        content_hash: Some(format!("hash-of-{path}")),
        mtime_ms: Some(1_700_000_000_000),
        size_bytes: 120,
        line_count: 10,
        symbol_count: 0,
        indexed_at: Some(now_ms()),
        skip_reason: None,
    }
}

/// How many symbols `path` of `repo` has.
async fn symbols_in(store: &dyn MetaStore, repo: &str, path: &str) -> usize {
    store.file_symbols(repo, path).await.expect("symbols").len()
}

fn sym(id: &str, name: &str) -> SymbolRecord {
    SymbolRecord {
        chunk_id: id.into(),
        name: name.into(),
        kind: "function".into(),
        parent_chunk_id: None,
        parent_name: None,
        breadcrumb: name.into(),
        signature: format!("function {name}()"),
        modifiers: "async exported".into(),
        exported: true,
        depth: 0,
        start_line: 1,
        end_line: 3,
    }
}

fn edge(from: &str, to: Option<&str>, name: &str) -> EdgeRecord {
    EdgeRecord {
        from_chunk: from.into(),
        to_chunk: to.map(str::to_string),
        to_name: name.into(),
        kind: EdgeKind::Calls,
        certain: true,
        line: Some(2),
    }
}

async fn repositories(store: &dyn MetaStore) {
    let a = store
        .create_repository(new_repo("alpha"))
        .await
        .expect("create");
    assert_eq!(a.status, RepoStatus::Registered);
    assert_eq!(a.source, RepoSource::Path("/src/alpha".into()));
    assert_eq!(
        store.get_repository(&a.id).await.expect("get"),
        Some(a.clone())
    );
    assert_eq!(
        store
            .get_repository_by_name("alpha")
            .await
            .expect("by name")
            .map(|r| r.id),
        Some(a.id.clone())
    );
    assert!(matches!(
        store.create_repository(new_repo("alpha")).await,
        Err(StoreError::Conflict(_))
    ));

    let settings = RepoSettings {
        exclude: vec!["**/*.test.ts".into()],
        watch: true,
        ..RepoSettings::default()
    };
    let updated = store
        .update_repository_settings(&a.id, Some("main".into()), &settings)
        .await
        .expect("update");
    assert_eq!(updated.settings, settings);
    assert_eq!(updated.tracked_ref.as_deref(), Some("main"));

    store
        .set_repository_status(&a.id, RepoStatus::Ready, None, Some("abc123"))
        .await
        .expect("status");
    store
        .set_repository_status(&a.id, RepoStatus::Error, Some("boom"), None)
        .await
        .expect("status");
    let r = store
        .get_repository(&a.id)
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(
        (
            r.status,
            r.last_error.as_deref(),
            r.indexed_commit.as_deref()
        ),
        (RepoStatus::Error, Some("boom"), Some("abc123"))
    );
    assert!(matches!(
        store
            .set_repository_status("nope", RepoStatus::Ready, None, None)
            .await,
        Err(StoreError::NotFound(_))
    ));

    store
        .create_repository(NewRepository {
            source: RepoSource::Git("https://example.invalid/b.git".into()),
            ..new_repo("beta")
        })
        .await
        .expect("create");
    assert_eq!(repository_names(store).await, ["alpha", "beta"]);
}

async fn files_symbols_edges(store: &dyn MetaStore) {
    let repo = store
        .create_repository(new_repo("files"))
        .await
        .expect("create")
        .id;
    let other = store
        .create_repository(new_repo("files-other"))
        .await
        .expect("create")
        .id;
    let mut f = file(&repo, "src/a.ts");
    f.symbol_count = 3;
    store
        .replace_file_symbols(
            &f,
            &[sym("c1", "alpha"), sym("c2", "beta"), sym("c3", "gamma")],
        )
        .await
        .expect("replace");
    store
        .replace_file_symbols(&file(&other, "src/a.ts"), &[sym("c1", "alpha")])
        .await
        .expect("replace");
    assert_eq!(
        store.get_file(&repo, "src/a.ts").await.expect("get"),
        Some(f.clone())
    );
    let names: Vec<String> = store
        .file_symbols(&repo, "src/a.ts")
        .await
        .expect("symbols")
        .into_iter()
        .map(|s| s.name)
        .collect();
    assert_eq!(names, ["alpha", "beta", "gamma"], "source order is kept");
    let s = &store
        .file_symbols(&repo, "src/a.ts")
        .await
        .expect("symbols")[0];
    assert_eq!(s, &sym("c1", "alpha"), "round-trips every field");

    // A symbol and its members, nothing else of the file, nothing of another repository.
    let member = |id: &str, name: &str, parent: &str| SymbolRecord {
        parent_chunk_id: Some(parent.into()),
        parent_name: Some("Klass".into()),
        ..sym(id, name)
    };
    let class_named = |id: &str, name: &str| SymbolRecord {
        kind: "class".into(),
        ..sym(id, name)
    };
    let class = class_named("k1", "Klass");
    let mut g = file(&repo, "src/k.ts");
    g.symbol_count = 4;
    store
        .replace_file_symbols(
            &g,
            &[
                class,
                member("k2", "one", "k1"),
                member("k3", "two", "k1"),
                sym("k4", "loose"),
            ],
        )
        .await
        .expect("replace");
    let found = store
        .symbols_and_members(
            &repo,
            &["src/k.ts".into(), "src/a.ts".into()],
            &["k1".into(), "c3".into()],
        )
        .await
        .expect("members");
    let found: Vec<(&str, &str)> = found
        .iter()
        .map(|(path, s)| (path.as_str(), s.chunk_id.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            ("src/a.ts", "c3"),
            ("src/k.ts", "k1"),
            ("src/k.ts", "k2"),
            ("src/k.ts", "k3")
        ]
    );
    assert!(
        store
            .symbols_and_members(&other, &["src/k.ts".into()], &["k1".into()])
            .await
            .expect("members")
            .is_empty()
    );
    // More ids than one query binds: a member asked for itself and through its parent in
    // another batch comes back once, in source order.
    let mut many = vec![class_named("m0", "Many")];
    for i in 1..=200 {
        let mut m = member(&format!("m{i}"), &format!("f{i}"), "m0");
        m.start_line = i + 1;
        many.push(m);
    }
    let mut h = file(&repo, "src/many.ts");
    h.symbol_count = many.len() as i64;
    store
        .replace_file_symbols(&h, &many)
        .await
        .expect("replace");
    let mut asked: Vec<String> = (1..=200).map(|i| format!("m{i}")).collect();
    asked.push("m0".into());
    let found = store
        .symbols_and_members(&repo, &["src/many.ts".into()], &asked)
        .await
        .expect("members");
    let ids: Vec<&str> = found.iter().map(|(_, s)| s.chunk_id.as_str()).collect();
    let expected: Vec<String> = (0..=200).map(|i| format!("m{i}")).collect();
    assert_eq!(ids, expected);
    assert!(
        store
            .delete_file(&repo, "src/many.ts")
            .await
            .expect("delete")
    );
    assert!(store.delete_file(&repo, "src/k.ts").await.expect("delete"));

    assert_eq!(
        store
            .symbols_named("alpha", &[])
            .await
            .expect("named")
            .len(),
        2
    );
    let only = store
        .symbols_named("alpha", std::slice::from_ref(&repo))
        .await
        .expect("named");
    assert_eq!(
        (only.len(), only[0].0.as_str(), only[0].1.as_str()),
        (1, repo.as_str(), "src/a.ts")
    );

    // Names a misspelt identifier may mean: by first letter, without case, distinct,
    // in the given repositories; `_` and `%` are letters, not wildcards.
    store
        .replace_file_symbols(
            &file(&other, "src/b.ts"),
            &[
                sym("d1", "Alphabet"),
                sym("d2", "_private"),
                sym("d3", "Beta"),
                sym("d4", "Échelle"),
                sym("d5", "`tick"),
            ],
        )
        .await
        .expect("replace");
    let mut near = store.names_starting_like("ALPHA", &[]).await.expect("near");
    near.sort();
    assert_eq!(near, ["Alphabet", "alpha"]);
    let near = store
        .names_starting_like("alpah", std::slice::from_ref(&repo))
        .await
        .expect("near");
    assert_eq!(near, ["alpha"]);
    // "`tick" begins with the character right after `_`: outside the range.
    let near = store.names_starting_like("_x", &[]).await.expect("near");
    assert_eq!(near, ["_private"]);
    // Either case beyond ASCII too.
    let near = store
        .names_starting_like("échelon", &[])
        .await
        .expect("near");
    assert_eq!(near, ["Échelle"]);
    store
        .replace_file_symbols(&file(&other, "src/b.ts"), &[])
        .await
        .expect("replace");

    // Replacing is complete: symbols that vanished are gone.
    store
        .replace_file_symbols(&f, &[sym("c2", "beta")])
        .await
        .expect("replace");
    assert_eq!(symbols_in(store, &repo, "src/a.ts").await, 1);

    // Atomic: a failing batch (duplicate chunk id) leaves the previous symbols intact.
    let mut changed = f.clone();
    changed.content_hash = Some("new-hash".into());
    let err = store
        .replace_file_symbols(&changed, &[sym("d1", "x"), sym("d1", "y")])
        .await;
    assert!(err.is_err(), "duplicate ids must fail");
    assert_eq!(
        store
            .file_symbols(&repo, "src/a.ts")
            .await
            .expect("symbols"),
        vec![sym("c2", "beta")]
    );
    assert_eq!(
        store
            .get_file(&repo, "src/a.ts")
            .await
            .expect("get")
            .and_then(|f| f.content_hash),
        f.content_hash,
        "file row rolled back too"
    );

    // Skipped files are recorded with their reason.
    let mut skipped = file(&repo, "dist/big.min.js");
    skipped.skip_reason = Some("minified".into());
    store.upsert_file(&skipped).await.expect("upsert");
    assert_eq!(
        store
            .list_files(&repo)
            .await
            .expect("list")
            .iter()
            .map(|f| f.path.as_str())
            .collect::<Vec<_>>(),
        ["dist/big.min.js", "src/a.ts"]
    );
    let listed = store.list_files(&repo).await.expect("list");
    let counts = store.file_counts(&repo).await.expect("counts");
    assert_eq!((counts.indexed, counts.skipped), (1, 1));
    assert_eq!(
        counts.symbols,
        listed.iter().map(|f| f.symbol_count).sum::<i64>()
    );
    assert_eq!(
        store.file_counts("no-such-repo").await.expect("counts"),
        Default::default()
    );

    // Edges.
    store
        .replace_file_symbols(&file(&repo, "src/b.ts"), &[sym("b1", "caller")])
        .await
        .expect("replace");
    store
        .replace_file_edges(
            &repo,
            "src/b.ts",
            &[
                edge("b1", Some("c2"), "beta"),
                edge("b1", None, "jwt.verify"),
            ],
        )
        .await
        .expect("edges");
    assert_eq!(store.edges_from(&repo, "b1").await.expect("from").len(), 2);
    assert_eq!(
        store.edges_to(&repo, "c2").await.expect("to"),
        vec![edge("b1", Some("c2"), "beta")]
    );
    store
        .replace_file_edges(&repo, "src/b.ts", &[edge("b1", None, "other")])
        .await
        .expect("edges");
    assert!(
        store.edges_to(&repo, "c2").await.expect("to").is_empty(),
        "old edges replaced"
    );

    // Deleting a file removes its symbols and edges, nothing else.
    assert!(store.delete_file(&repo, "src/b.ts").await.expect("delete"));
    assert!(
        store
            .file_symbols(&repo, "src/b.ts")
            .await
            .expect("symbols")
            .is_empty()
    );
    assert!(
        store
            .edges_from(&repo, "b1")
            .await
            .expect("from")
            .is_empty()
    );
    assert_eq!(symbols_in(store, &repo, "src/a.ts").await, 1);
    assert!(
        !store.delete_file(&repo, "src/b.ts").await.expect("delete"),
        "second delete finds nothing"
    );

    // Deleting a repository leaves no orphans and does not touch the other one.
    store
        .replace_file_edges(&repo, "src/a.ts", &[edge("c2", None, "x")])
        .await
        .expect("edges");
    store
        .enqueue_job(NewJob {
            repo_id: Some(repo.clone()),
            kind: "sync".into(),
        })
        .await
        .expect("job");
    assert!(store.delete_repository(&repo).await.expect("delete"));
    assert!(store.get_repository(&repo).await.expect("get").is_none());
    assert!(store.list_files(&repo).await.expect("files").is_empty());
    assert!(
        store
            .file_symbols(&repo, "src/a.ts")
            .await
            .expect("symbols")
            .is_empty()
    );
    assert!(
        store
            .edges_from(&repo, "c2")
            .await
            .expect("edges")
            .is_empty()
    );
    assert!(
        store
            .list_jobs(Some(&repo), 10)
            .await
            .expect("jobs")
            .is_empty()
    );
    assert_eq!(symbols_in(store, &other, "src/a.ts").await, 1);

    // A change of index format: every file record forgets its hash and time (so the next
    // sync reads it again) and keeps the rest; its symbols stay until then.
    assert!(store.forget_file_contents().await.expect("forget") >= 1);
    let forgotten = store
        .get_file(&other, "src/a.ts")
        .await
        .expect("get")
        .expect("kept");
    assert_eq!((&forgotten.content_hash, forgotten.mtime_ms), (&None, None));
    assert_eq!(forgotten.size_bytes, 120);
    assert_eq!(
        store.forget_file_contents().await.expect("again"),
        0,
        "nothing left to forget"
    );
    assert_eq!(symbols_in(store, &other, "src/a.ts").await, 1);
}

async fn jobs(store: Arc<dyn MetaStore>) {
    let repo = store
        .create_repository(new_repo("jobs"))
        .await
        .expect("create")
        .id;
    let j1 = store
        .enqueue_job(NewJob {
            repo_id: Some(repo.clone()),
            kind: "sync".into(),
        })
        .await
        .expect("enqueue");
    let j2 = store
        .enqueue_job(NewJob {
            repo_id: None,
            kind: "maintain".into(),
        })
        .await
        .expect("enqueue");
    assert_eq!(j1.state, JobState::Queued);

    let a = support::lease("a");
    let claimed = store
        .claim_job(None, &a)
        .await
        .expect("claim")
        .expect("a job");
    assert_eq!(
        (claimed.id.as_str(), claimed.state, claimed.attempts),
        (j1.id.as_str(), JobState::Running, 1),
        "FIFO"
    );
    assert_eq!(claimed.lease_owner.as_deref(), Some("a"));
    assert!(claimed.lease_until.expect("a lease") > now_ms() + 50_000);
    assert!(
        store
            .claim_job(Some(&repo), &a)
            .await
            .expect("claim")
            .is_none(),
        "repo has nothing queued"
    );
    store
        .update_job_progress(&j1.id, 5, 10, Some("parsing"))
        .await
        .expect("progress");
    store
        .update_job_progress(&j1.id, 7, 10, None)
        .await
        .expect("progress");
    let j = store.get_job(&j1.id).await.expect("get").expect("exists");
    assert_eq!(
        (j.progress_done, j.progress_total, j.message.as_deref()),
        (7, 10, Some("parsing"))
    );

    // A retry's back-off: put back until a time to come, the job is not claimed before
    // then, by anyone; once it has passed, it is.
    store
        .requeue_job(&j1.id, "will be tried again", Some(now_ms() + 600))
        .await
        .expect("requeue");
    let waiting = store.get_job(&j1.id).await.expect("get").expect("exists");
    assert_eq!(
        (waiting.state, waiting.error.as_deref(), waiting.lease_owner),
        (JobState::Queued, Some("will be tried again"), None)
    );
    assert!(
        store
            .claim_job(Some(&repo), &support::lease("b"))
            .await
            .expect("claim")
            .is_none(),
        "not claimed during its back-off"
    );
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    let retried = store
        .claim_job(Some(&repo), &a)
        .await
        .expect("claim")
        .expect("claimed once its back-off passed");
    assert_eq!((retried.id.as_str(), retried.attempts), (j1.id.as_str(), 2));

    // Crash recovery: a running job goes back to the queue and counts another attempt.
    assert_eq!(store.requeue_running_jobs().await.expect("requeue"), 1);
    let again = store
        .claim_job(None, &a)
        .await
        .expect("claim")
        .expect("a job");
    assert_eq!((again.id.as_str(), again.attempts), (j1.id.as_str(), 3));
    store
        .finish_job(&j1.id, JobState::Failed, Some("disk full"))
        .await
        .expect("finish");
    let failed = store.get_job(&j1.id).await.expect("get").expect("exists");
    assert_eq!(
        (failed.state, failed.error.as_deref()),
        (JobState::Failed, Some("disk full"))
    );
    assert!(failed.finished_at.is_some());
    assert!(matches!(
        store.finish_job(&j2.id, JobState::Running, None).await,
        Err(StoreError::Invalid(_))
    ));

    store
        .finish_job(&j2.id, JobState::Cancelled, None)
        .await
        .expect("cancel");

    // Concurrent claimers over four repositories: every job is claimed exactly once,
    // and never two jobs of one repository at the same time.
    let mut repos = vec![repo.clone()];
    for i in 0..3 {
        repos.push(
            store
                .create_repository(new_repo(&format!("jobs-{i}")))
                .await
                .expect("create")
                .id,
        );
    }
    let mut ids = Vec::new();
    for i in 0..20 {
        ids.push(
            store
                .enqueue_job(NewJob {
                    repo_id: Some(repos[i % repos.len()].clone()),
                    kind: "sync".into(),
                })
                .await
                .expect("enqueue")
                .id,
        );
    }
    let running = Arc::new(std::sync::Mutex::new(std::collections::HashSet::new()));
    let mut workers = Vec::new();
    for w in 0..4 {
        let store = store.clone();
        let running = running.clone();
        workers.push(tokio::spawn(async move {
            let lease = support::lease(&format!("worker-{w}"));
            let mut mine = Vec::new();
            while let Some(job) = store.claim_job(None, &lease).await.expect("claim") {
                let repo = job.repo_id.clone().expect("a repository");
                assert!(
                    running.lock().expect("lock").insert(repo.clone()),
                    "two jobs of {repo} running at once"
                );
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                running.lock().expect("lock").remove(&repo);
                store
                    .finish_job(&job.id, JobState::Succeeded, None)
                    .await
                    .expect("finish");
                mine.push(job.id);
            }
            mine
        }));
    }
    let mut claimed: Vec<String> = Vec::new();
    for w in workers {
        claimed.extend(w.await.expect("worker"));
    }
    claimed.sort();
    ids.sort();
    assert_eq!(claimed, ids);
    let listed = store.list_jobs(Some(&repo), 100).await.expect("list");
    assert_eq!(listed.len(), 6);
    assert!(listed.windows(2).all(|w| w[0].id > w[1].id), "newest first");
    let active = |jobs: &[sextant::store::Job]| {
        jobs.iter()
            .filter(|j| matches!(j.state, JobState::Queued | JobState::Running))
            .count()
    };
    assert_eq!(
        active(&store.list_jobs(Some(&repo), 100).await.expect("list")),
        0
    );

    leases(store.as_ref(), &repos[1]).await;
    for extra in &repos[1..] {
        assert!(store.delete_repository(extra).await.expect("delete"));
    }

    // Racing "sync unless one is active": of 8 callers at once exactly one queues, the
    // others get that job back; while it runs, it still blocks; once it ends, a new one
    // may queue.
    let sync = || NewJob {
        repo_id: Some(repo.clone()),
        kind: "sync".into(),
    };
    let racers: Vec<_> = (0..8)
        .map(|_| {
            let store = store.clone();
            let new = sync();
            tokio::spawn(async move { store.enqueue_job_unless_active(new).await })
        })
        .collect();
    let mut queued = Vec::new();
    let mut refused = Vec::new();
    for r in racers {
        match r.await.expect("racer").expect("enqueue") {
            Enqueued::Queued(job) => queued.push(job),
            Enqueued::Active(job) => refused.push(job),
        }
    }
    assert_eq!(queued.len(), 1, "exactly one sync queued: {queued:?}");
    assert_eq!(refused.len(), 7);
    assert!(refused.iter().all(|j| j.id == queued[0].id), "{refused:?}");
    let running = store
        .claim_job(Some(&repo), &a)
        .await
        .expect("claim")
        .expect("job");
    assert_eq!(running.id, queued[0].id);
    assert!(matches!(
        store.enqueue_job_unless_active(sync()).await.expect("enqueue"),
        Enqueued::Active(j) if j.id == running.id
    ));
    // Another kind, or another repository, is not held back.
    assert!(matches!(
        store
            .enqueue_job_unless_active(NewJob {
                repo_id: Some(repo.clone()),
                kind: "maintain".into(),
            })
            .await
            .expect("enqueue"),
        Enqueued::Queued(_)
    ));
    store
        .finish_job(&running.id, JobState::Succeeded, None)
        .await
        .expect("finish");
    assert!(matches!(
        store
            .enqueue_job_unless_active(sync())
            .await
            .expect("enqueue"),
        Enqueued::Queued(_)
    ));
}

/// A lease is the job's lock: its owner renews it, no one else can; once it runs out
/// the job goes back to the queue and another process takes it; meanwhile the
/// repository's other jobs wait.
async fn leases(store: &dyn MetaStore, repo: &str) {
    let sync = || NewJob {
        repo_id: Some(repo.to_string()),
        kind: "sync".into(),
    };
    let first = store.enqueue_job(sync()).await.expect("enqueue");
    let second = store.enqueue_job(sync()).await.expect("enqueue");
    let short = |owner: &str| sextant::store::Lease {
        owner: owner.to_string(),
        ttl: std::time::Duration::from_millis(300),
    };
    let (a, b) = (short("replica-a"), short("replica-b"));
    let held = store
        .claim_job(Some(repo), &a)
        .await
        .expect("claim")
        .expect("a job");
    assert_eq!(held.id, first.id);
    assert!(
        store
            .claim_job(Some(repo), &b)
            .await
            .expect("claim")
            .is_none(),
        "the repository's other job waits while one runs"
    );
    assert!(store.renew_job_lease(&held.id, &a).await.expect("renew"));
    assert!(!store.renew_job_lease(&held.id, &b).await.expect("renew"));
    assert_eq!(store.requeue_expired_jobs().await.expect("requeue"), 0);
    tokio::time::sleep(std::time::Duration::from_millis(450)).await;
    assert_eq!(store.requeue_expired_jobs().await.expect("requeue"), 1);
    let back = store.get_job(&held.id).await.expect("get").expect("job");
    assert_eq!(
        (back.state, back.lease_owner.as_deref()),
        (JobState::Queued, None)
    );
    assert!(
        back.error
            .as_deref()
            .is_some_and(|e| e.contains("replica-a")),
        "{back:?}"
    );
    let taken = store
        .claim_job(Some(repo), &b)
        .await
        .expect("claim")
        .expect("a job");
    assert_eq!(
        (
            taken.id.as_str(),
            taken.attempts,
            taken.lease_owner.as_deref()
        ),
        (first.id.as_str(), 2, Some("replica-b"))
    );
    assert!(
        !store.renew_job_lease(&held.id, &a).await.expect("renew"),
        "the first owner lost it"
    );
    // A process that stops hands its jobs back at once; others' are untouched.
    assert_eq!(
        store
            .requeue_jobs_held_by("replica-a", "stopping")
            .await
            .expect("hand back"),
        0
    );
    assert_eq!(
        store
            .requeue_jobs_held_by("replica-b", "replica-b stopped")
            .await
            .expect("hand back"),
        1
    );
    let handed = store.get_job(&held.id).await.expect("get").expect("job");
    assert_eq!(
        (handed.state, handed.error.as_deref(), handed.lease_owner),
        (JobState::Queued, Some("replica-b stopped"), None)
    );
    for id in [&first.id, &second.id] {
        store
            .finish_job(id, JobState::Cancelled, None)
            .await
            .expect("finish");
    }
}

async fn tokens(store: &dyn MetaStore) {
    let t = ApiToken {
        id: "tok1".into(),
        name: "ci bot".into(),
        token_hash: "ab".repeat(32),
        scope: sextant::auth::Scope::Read,
        repositories: vec!["r1".into(), "r2".into()],
        created_at: now_ms(),
        revoked_at: None,
    };
    store.create_token(&t).await.expect("create");
    assert!(matches!(
        store.create_token(&t).await,
        Err(StoreError::Conflict(_))
    ));
    assert_eq!(
        store.token_by_hash(&t.token_hash).await.expect("by hash"),
        Some(t.clone())
    );
    assert!(store.revoke_token("tok1").await.expect("revoke"));
    assert!(
        store
            .token_by_hash(&t.token_hash)
            .await
            .expect("by hash")
            .is_none(),
        "revoked tokens do not authenticate"
    );
    assert!(!store.revoke_token("tok1").await.expect("revoke twice"));
    assert_eq!(store.list_tokens().await.expect("list").len(), 1);
}

async fn embedding_cache(store: &SqlMetaStore) {
    let keys: Vec<String> = (0..700).map(|i| format!("key{i}")).collect();
    assert!(
        store
            .get_vectors("m", &keys[..3])
            .await
            .expect("get")
            .iter()
            .all(Option::is_none)
    );
    // More keys than one IN-list carries.
    let entries: Vec<(String, Vec<f32>)> = keys
        .iter()
        .enumerate()
        // Values half precision (the cache's) holds exactly.
        .map(|(i, k)| (k.clone(), vec![i as f32, -0.5, 0.125]))
        .collect();
    store.put_vectors("m", &entries).await.expect("put");
    let got = store.get_vectors("m", &keys).await.expect("get");
    assert_eq!(got.len(), 700);
    assert_eq!(got[0], Some(vec![0.0, -0.5, 0.125]));
    assert_eq!(got[699], Some(vec![699.0, -0.5, 0.125]));
    // Another model sees nothing; an existing entry is not overwritten.
    assert_eq!(
        store.get_vectors("other", &keys[..1]).await.expect("get"),
        vec![None]
    );
    store
        .put_vectors("m", &[("key0".into(), vec![9.0])])
        .await
        .expect("put again");
    let again = store
        .get_vectors("m", &["key0".to_string(), "missing".to_string()])
        .await
        .expect("get");
    assert_eq!(again, vec![Some(vec![0.0, -0.5, 0.125]), None]);
    // What the cache holds by model, and dropping one model's vectors.
    store
        .put_vectors("old", &[("key0".into(), vec![1.0, 2.0, 3.0])])
        .await
        .expect("put");
    let models = store.cached_models().await.expect("models");
    assert_eq!(
        models
            .iter()
            .map(|m| (m.model.as_str(), m.vectors))
            .collect::<Vec<_>>(),
        [("m", 700), ("old", 1)]
    );
    assert!(models.iter().all(|m| m.bytes > 0), "{models:?}");
    assert_eq!(store.forget_cached_vectors("old").await.expect("forget"), 1);
    assert_eq!(store.forget_cached_vectors("old").await.expect("again"), 0);
    assert_eq!(
        store.get_vectors("old", &keys[..1]).await.expect("get"),
        vec![None]
    );
    assert_eq!(store.cached_models().await.expect("models").len(), 1);
    // Trimming keeps a model's most recently written vectors, and only its.
    let put = |key: &str, x: f32| {
        let entry = vec![(key.to_string(), vec![x])];
        async move { store.put_vectors("t", &entry).await.expect("put") }
    };
    put("a", 1.0).await;
    put("b", 2.0).await;
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    put("c", 3.0).await;
    assert_eq!(store.trim("t", 3).await.expect("trim"), 0);
    assert_eq!(store.trim("t", 1).await.expect("trim"), 2);
    let abc: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
    assert_eq!(
        store.get_vectors("t", &abc).await.expect("get"),
        [None, None, Some(vec![3.0])]
    );
    assert_eq!(store.trim("t", 0).await.expect("trim"), 1);
    assert_eq!(
        store.get_vectors("m", &keys[..1]).await.expect("get"),
        [Some(vec![0.0, -0.5, 0.125])],
        "another model's vectors stay"
    );
}

/// Symbols and edges stored before migration 10 (by repository id and path) move to the
/// tables keyed by file number at the next open and read back as they were: each in its
/// own repository where two repositories share a path and chunk ids.
/// A pool on `url` with the schema as it was before the migration named `before`: every
/// earlier migration, run from a copy.
async fn old_schema(url: &str, before: &str) -> sqlx::AnyPool {
    let old = tempfile::tempdir().expect("tempdir");
    let migrations = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    for entry in std::fs::read_dir(&migrations).expect("migrations") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.ends_with(".sql") && name < before {
            std::fs::copy(&path, old.path().join(name)).expect("copy migration");
        }
    }
    let pool = store_pool(url).await.expect("connect");
    sqlx::migrate::Migrator::new(old.path())
        .await
        .expect("old migrations")
        .run(&pool)
        .await
        .expect("old schema");
    pool
}

async fn graph_rows_move_to_file_numbers(url: &str) {
    let pool = old_schema(url, "20261127000010").await;
    let statements = [
        "INSERT INTO repositories (id, name, source_kind, source, status, settings, created_at, updated_at) \
         VALUES ('r1', 'one', 'path', '/src/one', 'ready', '{}', 0, 0), \
         ('r2', 'two', 'path', '/src/two', 'ready', '{}', 0, 0)",
        "INSERT INTO files (repo_id, path, size_bytes, line_count, symbol_count) \
         VALUES ('r1', 'src/a.ts', 10, 5, 2), ('r1', 'src/b.ts', 10, 5, 1), ('r2', 'src/a.ts', 10, 5, 1)",
        "INSERT INTO symbols (repo_id, file_path, chunk_id, ordinal, name, kind, breadcrumb, signature, \
         modifiers, exported, depth, start_line, end_line) VALUES \
         ('r1', 'src/a.ts', 'c1', 0, 'alpha', 'function', 'alpha', 'function alpha()', '', 1, 0, 1, 3), \
         ('r1', 'src/a.ts', 'c2', 1, 'beta', 'function', 'beta', 'function beta()', '', 1, 0, 4, 5), \
         ('r1', 'src/b.ts', 'c3', 0, 'gamma', 'function', 'gamma', 'function gamma()', '', 1, 0, 1, 2), \
         ('r2', 'src/a.ts', 'c1', 0, 'other', 'function', 'other', 'function other()', '', 0, 0, 1, 3)",
        "INSERT INTO edges (repo_id, file_path, from_chunk, to_chunk, to_name, kind, certain, line) VALUES \
         ('r1', 'src/a.ts', 'c1', 'c3', 'gamma', 'calls', 1, 2), \
         ('r1', 'src/a.ts', 'c1', NULL, 'src/b.ts', 'imports', 1, 1), \
         ('r2', 'src/a.ts', 'c1', NULL, 'elsewhere', 'calls', 0, 2)",
    ];
    for sql in statements {
        sqlx::query(sql).execute(&pool).await.expect(sql);
    }
    pool.close().await;

    let store = SqlMetaStore::open(url).await.expect("open moves the rows");
    let names =
        |symbols: Vec<SymbolRecord>| symbols.into_iter().map(|s| s.name).collect::<Vec<_>>();
    assert_eq!(
        names(store.file_symbols("r1", "src/a.ts").await.expect("symbols")),
        ["alpha", "beta"]
    );
    assert_eq!(
        names(store.file_symbols("r2", "src/a.ts").await.expect("symbols")),
        ["other"]
    );
    let from = store
        .edges_from_any("r1", &["c1".to_string()])
        .await
        .expect("edges");
    assert_eq!(
        from.iter()
            .map(|e| (e.to_name.as_str(), e.to_chunk.as_deref(), e.kind))
            .collect::<Vec<_>>(),
        [
            ("src/b.ts", None, EdgeKind::Imports),
            ("gamma", Some("c3"), EdgeKind::Calls)
        ]
    );
    let to = store
        .edges_to_any("r1", &["c3".to_string()])
        .await
        .expect("edges");
    assert_eq!(to.len(), 1);
    assert_eq!((to[0].from_chunk.as_str(), to[0].line), ("c1", Some(2)));
    assert_eq!(
        store
            .importers("r1", &["src/b.ts".to_string()])
            .await
            .expect("importers"),
        ["src/a.ts"]
    );
    assert_eq!(
        store.imports_of("r1", "src/b.ts").await.expect("imports")[0].0,
        "src/a.ts"
    );
    let by_id = store
        .symbols_by_id("r2", &["c1".to_string()])
        .await
        .expect("by id");
    assert_eq!(
        by_id
            .iter()
            .map(|(path, s)| (path.as_str(), s.name.as_str()))
            .collect::<Vec<_>>(),
        [("src/a.ts", "other")]
    );
    let named_ids = store
        .symbol_names("r2", &["c1".to_string(), "absent".to_string()])
        .await
        .expect("names");
    assert_eq!(
        named_ids,
        [SymbolName {
            chunk_id: "c1".into(),
            path: "src/a.ts".into(),
            breadcrumb: by_id[0].1.breadcrumb.clone(),
        }]
    );
    let named = store.symbols_named("alpha", &[]).await.expect("named");
    assert_eq!(
        named
            .iter()
            .map(|(repo, path, _)| (repo.as_str(), path.as_str()))
            .collect::<Vec<_>>(),
        [("r1", "src/a.ts")]
    );
    // A file's removal takes its moved rows with it, and only its.
    assert!(store.delete_file("r1", "src/a.ts").await.expect("delete"));
    assert!(
        store
            .edges_from_any("r1", &["c1".to_string()])
            .await
            .expect("edges")
            .is_empty()
    );
    assert_eq!(
        store
            .edges_from_any("r2", &["c1".to_string()])
            .await
            .expect("edges")
            .len(),
        1
    );
    store.close().await;
    // Nothing waits the second time.
    let reopened = SqlMetaStore::open(url).await.expect("reopen");
    assert_eq!(
        names(
            reopened
                .file_symbols("r2", "src/a.ts")
                .await
                .expect("symbols")
        ),
        ["other"]
    );
    reopened.close().await;
}

/// Symbols and edges stored with text chunk ids (before migration 12) move to the tables
/// that store them as bytes at the first open, and read back as they were: chunker ids
/// (32 hex characters) and any other id alike.
async fn graph_chunk_ids_move_to_bytes(url: &str) {
    let pool = old_schema(url, "20261128000012").await;
    let (c1, c2) = (
        "d5626a8ff176d8cd7069d3c6e110a0f6",
        "00b89927eccad48c87bbaa55e9a57e95",
    );
    let file = sextant::store::file_id("r1", "src/a.ts");
    sqlx::query(
        "INSERT INTO repositories (id, name, source_kind, source, status, settings, created_at, updated_at) \
         VALUES ('r1', 'one', 'path', '/src/one', 'ready', '{}', 0, 0)",
    )
    .execute(&pool)
    .await
    .expect("old repository");
    sqlx::query(
        "INSERT INTO files (repo_id, path, size_bytes, line_count, symbol_count, file_id) \
         VALUES ('r1', 'src/a.ts', 10, 5, 3, $1)",
    )
    .bind(file)
    .execute(&pool)
    .await
    .expect("old file");
    let symbols = [
        (0, c1, None, "alpha"),
        (1, c2, Some(c1), "beta"),
        (2, "sixteen-chars-id", Some("c3"), "gamma"),
    ];
    for (ordinal, id, parent, name) in symbols {
        sqlx::query(
            "INSERT INTO symbols (file_id, ordinal, chunk_id, name, kind, parent_chunk_id, breadcrumb, \
             signature, modifiers, exported, depth, start_line, end_line) \
             VALUES ($5, $1, $2, $3, 'function', $4, $3, '', '', 1, 0, $1, $1)",
        )
        .bind(ordinal as i64)
        .bind(id)
        .bind(name)
        .bind(parent)
        .bind(file)
        .execute(&pool)
        .await
        .expect("old symbol");
    }
    for (from, to, name) in [(c1, Some(c2), "beta"), (c2, None, "elsewhere")] {
        sqlx::query(
            "INSERT INTO edges (file_id, from_chunk, to_chunk, to_name, kind, certain, line) \
             VALUES ($4, $1, $2, $3, 'calls', 1, 2)",
        )
        .bind(from)
        .bind(to)
        .bind(name)
        .bind(file)
        .execute(&pool)
        .await
        .expect("old edge");
    }
    pool.close().await;

    let store = SqlMetaStore::open(url).await.expect("open moves the rows");
    let read = store.file_symbols("r1", "src/a.ts").await.expect("symbols");
    assert_eq!(
        read.iter()
            .map(|s| (
                s.chunk_id.as_str(),
                s.parent_chunk_id.as_deref(),
                s.name.as_str()
            ))
            .collect::<Vec<_>>(),
        [
            (c1, None, "alpha"),
            (c2, Some(c1), "beta"),
            ("sixteen-chars-id", Some("c3"), "gamma")
        ]
    );
    let from = store
        .edges_from_any("r1", &[c1.to_string(), c2.to_string()])
        .await
        .expect("edges");
    assert_eq!(
        from.iter()
            .map(|e| (
                e.from_chunk.as_str(),
                e.to_chunk.as_deref(),
                e.to_name.as_str()
            ))
            .collect::<Vec<_>>(),
        [(c2, None, "elsewhere"), (c1, Some(c2), "beta")]
    );
    let to = store
        .edges_to_any("r1", &[c2.to_string()])
        .await
        .expect("edges");
    assert_eq!(to.len(), 1);
    assert_eq!(
        store
            .symbols_by_id("r1", &["sixteen-chars-id".to_string()])
            .await
            .expect("by id")[0]
            .1
            .name,
        "gamma"
    );
    // Names of ids of every form: hex (stored as 16 bytes), short, 16 characters.
    let mut names = store
        .symbol_names(
            "r1",
            &[
                c1.to_string(),
                c2.to_string(),
                "sixteen-chars-id".to_string(),
            ],
        )
        .await
        .expect("names");
    names.sort_by(|a, b| a.chunk_id.cmp(&b.chunk_id));
    let mut want = vec![(c1, "alpha"), (c2, "beta"), ("sixteen-chars-id", "gamma")];
    want.sort();
    assert_eq!(
        names
            .iter()
            .map(|n| (n.chunk_id.as_str(), n.breadcrumb.as_str(), n.path.as_str()))
            .collect::<Vec<_>>(),
        want.into_iter()
            .map(|(id, crumb)| (id, crumb, "src/a.ts"))
            .collect::<Vec<_>>()
    );
    store.close().await;
    let reopened = SqlMetaStore::open(url).await.expect("reopen");
    assert_eq!(
        reopened
            .file_symbols("r1", "src/a.ts")
            .await
            .expect("symbols")
            .len(),
        3
    );
    reopened.close().await;
}

/// Vectors cached as base64 text (before migration 11), in both of its forms, move to
/// the compact table at the first open; one that does not decode is dropped.
async fn text_cache_moves_to_compact_rows(url: &str) {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    let pool = old_schema(url, "20261128000011").await;
    let half = |v: &[f32]| {
        let bytes: Vec<u8> = v
            .iter()
            .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
            .collect();
        format!("h:{}", STANDARD.encode(bytes))
    };
    let single = |v: &[f32]| {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        STANDARD.encode(bytes)
    };
    // More rows than one page of the move; values half precision holds exactly.
    let mut rows: Vec<(String, String, String)> = (0..2_100)
        .map(|i| {
            (
                "m".to_string(),
                format!("k{i:05}"),
                half(&[(i % 1024) as f32, 0.5]),
            )
        })
        .collect();
    rows.push(("old".into(), "k0".into(), single(&[0.25, -3.0, 1e6])));
    rows.push(("old".into(), "broken".into(), "h:not base64!".into()));
    for batch in rows.chunks(300) {
        let sql = format!(
            "INSERT INTO embedding_cache (model, text_hash, dims, vector, created_at) VALUES {}",
            (0..batch.len())
                .map(|i| format!("(${}, ${}, 2, ${}, 7)", 3 * i + 1, 3 * i + 2, 3 * i + 3))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for (model, key, vector) in batch {
            query = query
                .bind(model.clone())
                .bind(key.clone())
                .bind(vector.clone());
        }
        query.execute(&pool).await.expect("old cache rows");
    }
    pool.close().await;

    let store = SqlMetaStore::open(url).await.expect("open moves the cache");
    let keys: Vec<String> = ["k00000", "k02099", "k00001", "nothing"]
        .map(String::from)
        .to_vec();
    assert_eq!(
        store.get_vectors("m", &keys).await.expect("get"),
        [
            Some(vec![0.0, 0.5]),
            Some(vec![51.0, 0.5]),
            Some(vec![1.0, 0.5]),
            None
        ]
    );
    // The f32 form is kept at the cache's half precision.
    assert_eq!(
        store
            .get_vectors("old", &["k0".to_string()])
            .await
            .expect("get"),
        [Some(vec![0.25, -3.0, half::f16::from_f32(1e6).to_f32()])]
    );
    let models = store.cached_models().await.expect("models");
    assert_eq!(
        models
            .iter()
            .map(|m| (m.model.as_str(), m.vectors, m.bytes))
            .collect::<Vec<_>>(),
        [("m", 2_100, 2_100 * 4), ("old", 1, 6)]
    );
    assert!(
        sqlx::query("SELECT COUNT(*) FROM embedding_cache")
            .fetch_one(store_pool(url).await.as_ref().expect("pool"))
            .await
            .is_err(),
        "the text table is dropped"
    );
    store.close().await;
    // Nothing waits the second time, and the vectors stay.
    let reopened = SqlMetaStore::open(url).await.expect("reopen");
    assert_eq!(
        reopened.get_vectors("m", &keys[..1]).await.expect("get"),
        [Some(vec![0.0, 0.5])]
    );
    reopened.close().await;
}

/// A plain pool on the store at `url` (SQLite path, created if missing, or PostgreSQL URL).
async fn store_pool(url: &str) -> Result<sqlx::AnyPool, sqlx::Error> {
    sqlx::any::install_default_drivers();
    let pool_url = if url.starts_with("postgres") {
        url.to_string()
    } else {
        format!("sqlite://{url}?mode=rwc")
    };
    sqlx::AnyPool::connect(&pool_url).await
}

async fn suite(url: &str) {
    let store = Arc::new(SqlMetaStore::open(url).await.expect("open store"));
    store.ping().await.expect("ping");
    repositories(store.as_ref()).await;
    files_symbols_edges(store.as_ref()).await;
    jobs(store.clone()).await;
    tokens(store.as_ref()).await;
    embedding_cache(store.as_ref()).await;
    // What the database takes, table by table (with indexes), largest first.
    let size = store.size().await.expect("size");
    assert!(size.bytes > 0, "{size:?}");
    assert!(
        size.tables
            .iter()
            .any(|(table, bytes)| table == "repositories" && *bytes > 0),
        "{size:?}"
    );
    assert!(size.tables.windows(2).all(|w| w[0].1 >= w[1].1), "{size:?}");
    store.close().await;

    // Reopening (a restart) sees the same data and re-applies no migration.
    let reopened = SqlMetaStore::open(url).await.expect("reopen");
    assert_eq!(
        repository_names(&reopened).await,
        ["alpha", "beta", "files-other", "jobs"]
    );
    assert_eq!(reopened.list_tokens().await.expect("tokens").len(), 1);
    let cached = reopened
        .get_vectors("m", &["key1".to_string()])
        .await
        .expect("cache survives a restart");
    assert_eq!(cached, vec![Some(vec![1.0, -0.5, 0.125])]);
    reopened.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_backend_passes_the_suite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("nested/dir/sextant.db");
    suite(&path.to_string_lossy()).await;
    graph_rows_move_to_file_numbers(&dir.path().join("old.db").to_string_lossy()).await;
    text_cache_moves_to_compact_rows(&dir.path().join("cache.db").to_string_lossy()).await;
    graph_chunk_ids_move_to_bytes(&dir.path().join("ids.db").to_string_lossy()).await;
    assert_eq!(
        SqlMetaStore::open_in(dir.path())
            .await
            .expect("open")
            .backend(),
        "sqlite"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_backend_passes_the_suite() {
    let Some(pg) = crate::support::available(TestPostgres::start().await, "PostgreSQL suite")
    else {
        return;
    };
    suite(&pg.url).await;
    graph_rows_move_to_file_numbers(&pg.another_database().await).await;
    text_cache_moves_to_compact_rows(&pg.another_database().await).await;
    graph_chunk_ids_move_to_bytes(&pg.another_database().await).await;
    assert_eq!(
        SqlMetaStore::open(&pg.url).await.expect("open").backend(),
        "postgres"
    );
    pg.cleanup().await;
}

#[tokio::test]
async fn unsupported_urls_are_refused_with_a_hint() {
    let err = SqlMetaStore::open("mysql://localhost/x")
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("postgres://"), "{err}");
}

/// `sextant model cache` lists the cached vectors by model, marks the index's, and
/// `--prune` drops every other model's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_lists_and_prunes_the_embedding_cache() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_sextant"))
            .arg("--data-dir")
            .arg(dir.path())
            .args(args)
            .env_remove("DATABASE_URL")
            .env("RUST_BACKTRACE", "0")
            .output()
            .expect("run sextant");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    };
    let (ok, text) = run(&["model", "cache"]);
    assert!(
        ok && text.contains("the embedding cache is empty"),
        "{text}"
    );
    let (ok, text) = run(&["model", "cache", "--prune"]);
    assert!(!ok && text.contains("--forget MODEL"), "{text}");
    {
        let store = SqlMetaStore::open(&dir.path().join("sextant.db").to_string_lossy())
            .await
            .expect("open");
        store
            .put_vectors("new model", &[("a".into(), vec![1.0; 8])])
            .await
            .expect("put");
        store
            .put_vectors(
                "old model",
                &[("a".into(), vec![0.5; 8]), ("b".into(), vec![2.0; 8])],
            )
            .await
            .expect("put");
        store
            .set_setting(sextant::index::MODEL_KEY, "new model")
            .await
            .expect("setting");
        store.close().await;
    }
    let (ok, text) = run(&["model", "cache"]);
    assert!(ok, "{text}");
    assert!(
        text.contains("new model\t1 vectors") && text.contains("the index's model"),
        "{text}"
    );
    assert!(
        text.contains("old model\t2 vectors") && text.contains("--prune"),
        "{text}"
    );
    let (ok, text) = run(&["model", "cache", "--prune"]);
    assert!(
        ok && text.contains("dropped 2 cached vector(s) of old model"),
        "{text}"
    );
    let (ok, text) = run(&["model", "cache"]);
    assert!(
        ok && !text.contains("old model") && text.contains("new model"),
        "{text}"
    );
}

/// The names of the repositories `store` lists, in its order.
async fn repository_names(store: &dyn MetaStore) -> Vec<String> {
    let repositories = store.list_repositories().await.expect("list");
    repositories.into_iter().map(|r| r.name).collect()
}
