//! Several `sextant serve` processes ("replicas") on one PostgreSQL database and one
//! chunk store: any replica runs any job under a lease, one job of a repository runs at
//! a time, every replica's event stream shows it, and the job of a replica killed
//! mid-sync is taken over by another and finished, with nothing lost and nothing stored
//! twice; both answer searches and greps alike, and a replica stopped with SIGTERM
//! hands its job back. The chunk store is a local LanceDB directory both processes open
//! and the grep index a directory both name (`SEXTANT_GREP_DIR`).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support;
use support::models::static_model;
use support::postgres::TestPostgres;
use support::process::{Served, json_of, sextant_static, wait_job};
use support::skip;

/// Where the replicas keep what they share.
struct Shared<'a> {
    model: &'a Path,
    database: &'a str,
    lance: &'a Path,
    grep: &'a Path,
}

/// A replica on the shared database and chunk store with a lease of `lease` seconds;
/// `held` parks its syncs after their first batch (the crash tests' fail point).
fn replica(data: &Path, shared: &Shared<'_>, lease: u64, held: bool) -> Served {
    let mut cmd = sextant_static(data, shared.model);
    cmd.env("DATABASE_URL", shared.database)
        .env("SEXTANT_LANCE_URI", shared.lance)
        .env("SEXTANT_GREP_DIR", shared.grep)
        .args(["--batch-files", "8", "serve", "--bind", "127.0.0.1:0"])
        .args(["--job-lease", &lease.to_string()]);
    if held {
        cmd.env("SEXTANT_FAILPOINT", "sync-after-batch");
    }
    Served::start(cmd)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replicas_job_is_taken_over_and_finished() {
    let model = match static_model() {
        Ok(m) => m,
        Err(why) => return skip("replicas (needs the static model)", why),
    };
    let pg = match TestPostgres::start().await {
        Ok(pg) => pg,
        Err(why) => return skip("replicas (needs PostgreSQL)", why),
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("ws");
    crate::crash::workspace(&root, 6);
    let lance = tmp.path().join("lance");
    let http = reqwest::Client::new();
    let grep = tmp.path().join("grep");
    let shared = Shared {
        model: &model,
        database: &pg.url,
        lance: &lance,
        grep: &grep,
    };

    // A claims the registration's sync and parks it after its first batch; B starts
    // only then (and leaves A's job alone: its lease is alive).
    let mut a = replica(&tmp.path().join("a"), &shared, 3, true);
    let created = json_of(
        http.post(format!("{}/api/v1/repositories", a.url))
            .json(&json!({ "path": root.to_string_lossy(), "name": "ws" })),
    )
    .await;
    let job = created["job"]["id"].as_str().expect("a job").to_string();
    parked(&a).await;
    let b = replica(&tmp.path().join("b"), &shared, 3, false);
    let running = wait_job(&http, &b.url, &job, |s| s == "running").await;
    assert!(
        running["leaseOwner"]
            .as_str()
            .is_some_and(|o| o.ends_with(&format!(":{}", a.id()))),
        "A holds it: {running}"
    );

    // B's event stream shows the progress of the sync A runs (A records it on the job;
    // B relays it).
    let repo_id = created["repository"]["id"]
        .as_str()
        .expect("an id")
        .to_string();
    let mut sse = http
        .get(format!("{}/api/v1/events", b.url))
        .send()
        .await
        .expect("B's events");
    let mut seen = String::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !seen.contains(&format!("\"repoId\":\"{repo_id}\"")) {
        assert!(
            Instant::now() < deadline,
            "B relayed no progress of A's job: {seen}"
        );
        if let Ok(Ok(Some(bytes))) = tokio::time::timeout(Duration::from_secs(5), sse.chunk()).await
        {
            seen.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    drop(sse);

    // Kill A (SIGKILL: no goodbye).
    std::process::Command::new("kill")
        .args(["-9", &a.id().to_string()])
        .status()
        .expect("kill");
    assert!(a.try_wait_for(Duration::from_secs(10)).is_some(), "A died");
    // B takes the job over once A's lease runs out, and finishes it.
    let finished = wait_job(&http, &b.url, &job, |s| s == "succeeded" || s == "failed").await;
    assert_eq!(finished["state"], "succeeded", "{finished}");
    let b_name = format!(":{}", b.id());
    assert!(
        finished["leaseOwner"]
            .as_str()
            .is_some_and(|o| o.ends_with(&b_name)),
        "B finished it: {finished}"
    );
    assert_eq!(
        finished["attempts"], 2,
        "claimed by A, then by B: {finished}"
    );

    // Nothing lost, nothing twice: every file's chunks are in the store once, and the
    // store holds no chunk outside them.
    let meta = sextant::store::SqlMetaStore::open(&pg.url)
        .await
        .expect("open the database");
    use sextant::store::{MetaStore, VectorStore};
    let repo = meta
        .get_repository_by_name("ws")
        .await
        .expect("read")
        .expect("registered");
    let store = sextant::store::LanceStore::open(sextant::store::LanceStoreOptions::new(
        lance.to_string_lossy(),
        256,
    ))
    .await
    .expect("open the chunk store");
    let files = meta.list_files(&repo.id).await.expect("files");
    let sources = sextant::cli::source_files(&root).len();
    assert_eq!(files.len(), sources, "every file indexed once");
    let mut total = 0;
    for f in &files {
        let chunks = store.file_chunks(&repo.id, &f.path).await.expect("chunks");
        let mut ids: Vec<&str> = chunks.iter().map(|c| c.chunk.id.as_str()).collect();
        ids.sort_unstable();
        let n = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), n, "{} has a chunk twice", f.path);
        total += n;
    }
    let stored = store
        .count(&sextant::store::ChunkFilter {
            repositories: vec![repo.id.clone()],
            ..Default::default()
        })
        .await
        .expect("count");
    assert_eq!(stored, total, "chunks that belong to no file");
    assert!(total > 0);

    // Both replicas answer from the same index (A restarted under a new process, with a
    // minute's lease and its syncs parked again).
    let mut a = replica(&tmp.path().join("a"), &shared, 60, true);
    let answers: Vec<Vec<String>> = ask_each(
        &http,
        [&a.url, &b.url],
        "search",
        json!({ "query": "symbol = copy3", "repositories": ["ws"] }),
    )
    .await
    .iter()
    .map(|found| {
        found["response"]["results"]
            .as_array()
            .map(|r| r.iter().map(|r| r["path"].to_string()).collect())
            .unwrap_or_default()
    })
    .collect();
    assert!(!answers[0].is_empty(), "no results");
    assert_eq!(answers[0], answers[1], "both replicas give the same answer");
    // And the same grep: the index B's sync wrote, read by A from the shared directory.
    let greps: Vec<usize> = ask_each(
        &http,
        [&a.url, &b.url],
        "grep",
        json!({ "pattern": "copy3 = 3", "repositories": ["ws"] }),
    )
    .await
    .iter()
    .map(|found| {
        found
            .pointer("/matches")
            .or_else(|| found.pointer("/response/matches"))
            .and_then(|m| m.as_array())
            .map_or(0, Vec::len)
    })
    .collect();
    assert!(greps[0] > 0, "grep on A found nothing");
    assert_eq!(greps[0], greps[1], "both replicas grep alike");

    // A replica that is stopped (SIGTERM) hands its job back: another takes it at once,
    // long before its minute's lease would run out.
    drop(b);
    std::fs::write(
        root.join("pkg0/late.ts"),
        "export function lateArrival(): number {\n  return 1;\n}\n",
    )
    .expect("write");
    let queued = json_of(
        http.post(format!("{}/api/v1/repositories/ws/sync", a.url))
            .json(&json!({})),
    )
    .await;
    let job = queued["job"]["id"].as_str().expect("a job").to_string();
    parked(&a).await;
    let b = replica(&tmp.path().join("b"), &shared, 3, false);
    let stopped_at = Instant::now();
    std::process::Command::new("kill")
        .args(["-TERM", &a.id().to_string()])
        .status()
        .expect("kill");
    let exit = a.try_wait_for(Duration::from_secs(30)).expect("A stopped");
    assert!(exit.success(), "A stopped cleanly: {exit:?}");
    assert!(
        a.lines()
            .iter()
            .any(|l| l.contains("handed 1 running job(s) back")),
        "A said it handed its job back"
    );
    let finished = wait_job(&http, &b.url, &job, |s| s == "succeeded" || s == "failed").await;
    assert_eq!(finished["state"], "succeeded", "{finished}");
    assert!(
        stopped_at.elapsed() < Duration::from_secs(45),
        "taken over in {:?}, not after A's 60 s lease",
        stopped_at.elapsed()
    );
    let files = meta.list_files(&repo.id).await.expect("files");
    assert!(
        files.iter().any(|f| f.path == "pkg0/late.ts"),
        "the handed-back sync indexed the new file"
    );
    meta.close().await;
    drop(b);
    pg.cleanup().await;
}

/// The answer of `POST /api/v1/{route}` with `body` from each replica.
async fn ask_each(
    http: &reqwest::Client,
    bases: [&str; 2],
    route: &str,
    body: serde_json::Value,
) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for base in bases {
        out.push(json_of(http.post(format!("{base}/api/v1/{route}")).json(&body)).await);
    }
    out
}

/// Waits until `replica` says its sync is parked at the fail point.
async fn parked(replica: &Served) {
    let started = Instant::now();
    while !replica
        .lines()
        .iter()
        .any(|l| l.contains("fail point sync-after-batch"))
    {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the replica's sync never parked"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
