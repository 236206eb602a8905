//! Several `sextant serve` processes ("replicas") on one PostgreSQL database and one
//! chunk store: any replica runs any job under a lease, one job of a repository runs at
//! a time, every replica's event stream shows it, and the job of a replica killed
//! mid-sync is taken over by another and finished, with nothing lost and nothing stored
//! twice; both answer searches and greps alike, and a replica stopped with SIGTERM
//! hands its job back.
//!
//! The scenario runs twice: on one disk (a LanceDB directory both processes open, a grep
//! directory both name with `SEXTANT_GREP_DIR`), and on object storage (LanceDB on a
//! real S3 server, each replica's grep index a cache of the copy beside it, MCP served
//! without sessions so that either replica answers a client's next request). The
//! object-store faults follow: the S3 server killed mid-sync and restarted, and a slow
//! one.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support;
use sextant::store::MetaStore;
use support::models::static_model;
use support::postgres::TestPostgres;
use support::process::{Served, json_of, sextant_static, wait_job};
use support::s3::{SlowProxy, TestS3};
use support::{available, skip};

/// Where the replicas keep the chunk store and the grep index.
#[derive(Clone, Copy)]
enum Storage<'a> {
    /// A LanceDB directory and a grep directory both processes open.
    Disk { lance: &'a Path, grep: &'a Path },
    /// LanceDB on the S3 server at `endpoint` (the server itself, or a proxy before it)
    /// under `uri`; each replica's grep directory is its own.
    Objects { uri: &'a str, endpoint: &'a str },
}

/// What the replicas share.
struct Shared<'a> {
    model: &'a Path,
    database: &'a str,
    storage: Storage<'a>,
}

/// A replica on the shared database and chunk store with a lease of `lease` seconds;
/// `held` parks its syncs after their first batch (the crash tests' fail point).
fn replica(data: &Path, shared: &Shared<'_>, lease: u64, held: bool) -> Served {
    let mut cmd = sextant_static(data, shared.model);
    cmd.env("DATABASE_URL", shared.database);
    match shared.storage {
        Storage::Disk { lance, grep } => {
            cmd.env("SEXTANT_LANCE_URI", lance)
                .env("SEXTANT_GREP_DIR", grep);
        }
        Storage::Objects { uri, endpoint } => {
            cmd.env("SEXTANT_LANCE_URI", uri)
                .env("SEXTANT_MCP_STATELESS", "true");
            for (name, value) in TestS3::env_for(endpoint) {
                cmd.env(name, value);
            }
        }
    }
    cmd.args(["--batch-files", "8", "serve", "--bind", "127.0.0.1:0"])
        .args(["--job-lease", &lease.to_string()]);
    if held {
        cmd.env("SEXTANT_FAILPOINT", "sync-after-batch");
    }
    Served::start(cmd)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replicas_job_is_taken_over_and_finished() {
    let Some(model) = available(static_model(), "replicas (needs the static model)") else {
        return;
    };
    let Some(pg) = available(TestPostgres::start().await, "replicas (needs PostgreSQL)") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let lance = tmp.path().join("lance");
    let grep = tmp.path().join("grep");
    let shared = Shared {
        model: &model,
        database: &pg.url,
        storage: Storage::Disk {
            lance: &lance,
            grep: &grep,
        },
    };
    takeover(tmp.path(), &shared, &lance, &grep).await;
    pg.cleanup().await;
}

/// The same on object storage: LanceDB on a real S3 server, the grep index mirrored
/// there, MCP without sessions. Afterwards the grep copy is on the server and not on
/// any shared disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_on_object_storage_share_everything_through_it() {
    let Some(model) = available(static_model(), "replicas on S3 (needs the static model)") else {
        return;
    };
    let Some(s3) = available(TestS3::start(), "replicas on S3 (needs an S3 server)") else {
        return;
    };
    let Some(pg) = available(
        TestPostgres::start().await,
        "replicas on S3 (needs PostgreSQL)",
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let uri = s3.uri("lance");
    let endpoint = s3.endpoint();
    let shared = Shared {
        model: &model,
        database: &pg.url,
        storage: Storage::Objects {
            uri: &uri,
            endpoint: &endpoint,
        },
    };
    // B finishes the job: its own grep directory holds every file (pulled and written).
    let b_grep = tmp.path().join("b").join("grep");
    let repo_id = takeover(tmp.path(), &shared, &s3.objects("lance"), &b_grep).await;
    let copy = s3
        .objects("lance/grep")
        .join(&repo_id)
        .join("manifest.json");
    assert!(copy.is_file(), "the grep index's copy is on the S3 server");
    assert!(
        !tmp.path().join("grep").exists(),
        "no grep directory is shared on disk"
    );
    pg.cleanup().await;
}

/// Two replicas on `shared` storage: A parks a sync, B relays its progress, A is killed
/// and B finishes the job; no chunk lost or doubled (read from the LanceDB directory
/// `lance_dir`); both answer alike; a replica stopped with SIGTERM hands its job back.
/// Returns the repository's id.
async fn takeover(tmp: &Path, shared: &Shared<'_>, lance_dir: &Path, grep_dir: &Path) -> String {
    let root = tmp.join("ws");
    crate::crash::workspace(&root, 6);
    let http = reqwest::Client::new();

    // A claims the registration's sync and parks it after its first batch; B starts
    // only then (and leaves A's job alone: its lease is alive).
    let mut a = replica(&tmp.join("a"), shared, 3, true);
    let created = json_of(
        http.post(format!("{}/api/v1/repositories", a.url))
            .json(&json!({ "path": root.to_string_lossy(), "name": "ws" })),
    )
    .await;
    let job = created["job"]["id"].as_str().expect("a job").to_string();
    parked(&a).await;
    let b = replica(&tmp.join("b"), shared, 3, false);
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
    let meta = sextant::store::SqlMetaStore::open(shared.database)
        .await
        .expect("open the database");
    let repo = each_chunk_once(&meta, lance_dir, grep_dir, &root).await;

    // Both replicas answer from the same index (A restarted under a new process, with a
    // minute's lease and its syncs parked again).
    let mut a = replica(&tmp.join("a"), shared, 60, true);
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
    if matches!(shared.storage, Storage::Objects { .. }) {
        mcp_across(&http, &a.url, &b.url).await;
    }

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
    let b = replica(&tmp.join("b"), shared, 3, false);
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
    repo.id
}

/// One JSON-RPC message to `base`'s `/mcp`: the session id the answer carries (if any)
/// and the answer.
async fn mcp(
    http: &reqwest::Client,
    base: &str,
    body: serde_json::Value,
) -> (Option<String>, serde_json::Value) {
    let response = http
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .expect("MCP request");
    assert!(response.status().is_success(), "{}", response.status());
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = response.text().await.expect("MCP answer");
    let answer = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain(std::iter::once(text.as_str()))
        .filter_map(|d| serde_json::from_str::<serde_json::Value>(d.trim()).ok())
        .find(|v| v.get("id").is_some())
        .unwrap_or_else(|| panic!("no JSON-RPC answer in {text}"));
    (session, answer)
}

/// An MCP client that starts on `first` and whose next requests the balancer sends to
/// `second`, then to `first` again: without sessions every request stands alone.
async fn mcp_across(http: &reqwest::Client, first: &str, second: &str) {
    let (session, init) = mcp(
        http,
        first,
        json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": { "name": "balanced", "version": "1" } }
        }),
    )
    .await;
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    assert_eq!(session, None, "no session to pin the client to a replica");
    for (id, base) in [(2, second), (3, first)] {
        let (_, call) = mcp(
            http,
            base,
            json!({
                "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": "codebase_search",
                            "arguments": { "query": "symbol = copy3", "repositories": ["ws"] } }
            }),
        )
        .await;
        let text = call["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{call}"));
        assert!(text.contains("copy3"), "{base} answered: {call}");
    }
}

/// Checks that every source file under `root` is indexed once in repository `ws` of
/// `meta`, and that the chunk store in the LanceDB directory `lance_dir` holds each
/// file's chunks once and no chunk outside them. Returns the repository.
async fn each_chunk_once(
    meta: &sextant::store::SqlMetaStore,
    lance_dir: &Path,
    grep_dir: &Path,
    root: &Path,
) -> sextant::store::Repository {
    use sextant::store::VectorStore;
    let repo = meta
        .get_repository_by_name("ws")
        .await
        .expect("read")
        .expect("registered");
    // As the servers open it: rows read their code from the grep index.
    let grep = sextant::store::grep::GrepIndex::open(grep_dir).expect("open the grep index");
    let store = sextant::store::LanceStore::open(sextant::store::LanceStoreOptions::new(
        lance_dir.to_string_lossy(),
        256,
    ))
    .await
    .expect("open the chunk store")
    .with_sources(std::sync::Arc::new(grep));
    let files = meta.list_files(&repo.id).await.expect("files");
    assert_eq!(
        files.len(),
        sextant::cli::source_files(root).len(),
        "every file indexed once"
    );
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
    repo
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

/// One server with its chunk store on an S3 server reached through a proxy: the S3
/// server killed mid-sync and started again (searches meanwhile answer or fail with a
/// 503 that names the store, never a bare 500; the sync finishes, or fails saying why
/// and the next one completes it, with no chunk lost or doubled), then a slow store
/// (every read 20 ms late): syncs and searches still complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_or_slow_object_store_is_ridden_out() {
    let Some(model) = available(
        static_model(),
        "object-store faults (needs the static model)",
    ) else {
        return;
    };
    let mut s3 = match TestS3::start() {
        Ok(s3) => s3,
        Err(why) => return skip("object-store faults (needs an S3 server)", why),
    };
    let proxy = SlowProxy::start(s3.port).await;
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("ws");
    crate::crash::workspace(&root, 3);
    let mut cmd = sextant_static(&tmp.path().join("data"), &model);
    cmd.env("SEXTANT_LANCE_URI", s3.uri("lance"));
    for (name, value) in TestS3::env_for(&proxy.endpoint()) {
        cmd.env(name, value);
    }
    cmd.args(["--batch-files", "4", "serve", "--bind", "127.0.0.1:0"]);
    let server = Served::start(cmd);
    let http = reqwest::Client::new();
    // Slow enough that the sync is still running when the store goes away.
    proxy.set_delay(Duration::from_millis(20));
    let created = json_of(
        http.post(format!("{}/api/v1/repositories", server.url))
            .json(&json!({ "path": root.to_string_lossy(), "name": "ws" })),
    )
    .await;
    let job = created["job"]["id"].as_str().expect("a job").to_string();
    let started = Instant::now();
    loop {
        let state = json_of(http.get(format!("{}/api/v1/jobs/{job}", server.url))).await;
        if state["job"]["progressDone"].as_i64().unwrap_or(0) > 0 {
            assert_eq!(state["job"]["state"], "running", "{state}");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no progress: {state}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    s3.stop();
    proxy.set_delay(Duration::ZERO);
    let during = http
        .post(format!("{}/api/v1/search", server.url))
        .json(&json!({ "query": "copy3", "repositories": ["ws"] }))
        .send()
        .await
        .expect("an answer while the store is down");
    let status = during.status().as_u16();
    let body = during.text().await.unwrap_or_default();
    assert!(
        status == 200 || (status == 503 && body.to_lowercase().contains("store")),
        "a search while the store is down answers or says the store is unavailable: {status} {body}"
    );
    // Down for 5 s: the object store client's own retries, or the job's (back in the
    // queue for 2 s, then 8 s), ride out the outage, and the job finishes.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let waiting = json_of(http.get(format!("{}/api/v1/jobs/{job}", server.url))).await;
    s3.restart();
    let finished = wait_job(&http, &server.url, &job, |s| {
        s == "succeeded" || s == "failed"
    })
    .await;
    assert_eq!(
        finished["state"], "succeeded",
        "the job rides out the outage (while it lasted: {waiting}): {finished}"
    );

    let found = json_of(
        http.post(format!("{}/api/v1/search", server.url))
            .json(&json!({ "query": "symbol = copy2", "repositories": ["ws"] })),
    )
    .await;
    assert!(
        found["response"]["results"]
            .as_array()
            .is_some_and(|r| !r.is_empty()),
        "{found}"
    );

    // Nothing lost or doubled, read from the server's own files.
    let meta =
        sextant::store::SqlMetaStore::open(&tmp.path().join("data/sextant.db").to_string_lossy())
            .await
            .expect("open the database");
    each_chunk_once(
        &meta,
        &s3.objects("lance"),
        &tmp.path().join("data/grep"),
        &root,
    )
    .await;
    meta.close().await;

    // A slow store: every read 20 ms late. A sync and a search still complete.
    proxy.set_delay(Duration::from_millis(20));
    std::fs::write(
        root.join("pkg0/slow.ts"),
        "export function slowStore(): number {\n  return 2;\n}\n",
    )
    .expect("write");
    let queued = json_of(
        http.post(format!("{}/api/v1/repositories/ws/sync", server.url))
            .json(&json!({})),
    )
    .await;
    let job = queued["job"]["id"].as_str().expect("a job").to_string();
    let done = wait_job(&http, &server.url, &job, |s| {
        s == "succeeded" || s == "failed"
    })
    .await;
    assert_eq!(done["state"], "succeeded", "{done}");
    let found = json_of(
        http.post(format!("{}/api/v1/search", server.url))
            .json(&json!({ "query": "symbol = slowStore", "repositories": ["ws"] })),
    )
    .await;
    assert!(
        found["response"]["results"]
            .as_array()
            .is_some_and(|r| r.iter().any(|r| r["path"] == "pkg0/slow.ts")),
        "{found}"
    );
    drop(server);
}

/// Credentials the object store refuses: the command fails saying which settings to
/// check, and does not advise rebuilding a store that is only out of reach.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_object_store_credentials_name_the_settings() {
    let Some(model) = available(
        static_model(),
        "object-store credentials (needs the static model)",
    ) else {
        return;
    };
    let Some(s3) = available(
        TestS3::start(),
        "object-store credentials (needs an S3 server)",
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    for command in [&["doctor"][..], &["search", "anything"][..]] {
        let mut cmd = sextant_static(&tmp.path().join("data"), &model);
        cmd.env("SEXTANT_LANCE_URI", s3.uri("lance"));
        for (name, value) in s3.env() {
            cmd.env(name, value);
        }
        cmd.env("AWS_SECRET_ACCESS_KEY", "not-the-secret")
            .args(command);
        let out = cmd.output().expect("run sextant");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{command:?} fails: {err}");
        assert!(
            err.contains("AWS_SECRET_ACCESS_KEY") && err.contains(&s3.uri("lance")),
            "{command:?} names the store and the settings to check: {err}"
        );
        assert!(
            !err.contains("moves it aside") && !err.contains("--repair` rebuilds"),
            "{command:?} does not advise rebuilding a store out of reach: {err}"
        );
    }
    assert!(
        !s3.objects("lance").exists(),
        "nothing was written with refused credentials"
    );
}
