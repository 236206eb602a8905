//! Crash safety of indexing: a real `sextant index` process is killed with SIGKILL in the
//! middle of a sync; the next run must converge to exactly what a clean build produces
//! (same files, hashes, symbols and chunk ids, nothing orphaned).

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use sextant::store::{
    ChunkFilter, LanceStore, LanceStoreOptions, MetaStore, SqlMetaStore, VectorStore,
};
use support::available;
use support::models::static_model;
use support::process::sextant_static as sextant_on;

/// A workspace of `copies` × the fixture files, each copy with distinct content.
pub(crate) fn workspace(root: &Path, copies: usize) {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/parser");
    let sources: Vec<PathBuf> = sextant::cli::source_files(&fixtures);
    for copy in 0..copies {
        for src in &sources {
            let rel = src.strip_prefix(&fixtures).unwrap();
            let dest = root.join(format!("pkg{copy}")).join(rel);
            std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
            let text = std::fs::read_to_string(src).unwrap_or_default();
            std::fs::write(
                &dest,
                format!("{text}\nexport const copy{copy} = {copy};\n"),
            )
            .unwrap();
        }
    }
}

/// `sextant index ROOT --name ws`.
fn sextant(data: &Path, model: &Path, root: &Path) -> Command {
    let mut cmd = sextant_on(data, model);
    cmd.arg("index").arg(root).args(["--name", "ws"]);
    cmd
}

/// Runs `cmd` to the end; panics with its stderr unless it succeeds.
fn succeed(mut cmd: Command) {
    let out = cmd.output().expect("run sextant");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Spawns `cmd` with the fail point that holds a sync after its first committed batch,
/// waits until it holds, and kills it (SIGKILL).
fn kill_mid_sync(mut cmd: Command) {
    let mut child = cmd
        .env("SEXTANT_FAILPOINT", "sync-after-batch")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let stderr = child.stderr.take().expect("piped stderr");
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        let mut seen = String::new();
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if line.contains("fail point sync-after-batch") {
                let _ = held_tx.send(Ok(()));
                return;
            }
            seen.push_str(&line);
            seen.push('\n');
        }
        let _ = held_tx.send(Err(seen));
    });
    let held = held_rx
        .recv_timeout(Duration::from_secs(600))
        .expect("the sync neither held at its fail point nor exited within 10 minutes");
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    if let Err(stderr) = held {
        panic!("the sync exited before its fail point held it:\n{stderr}");
    }
}

/// Everything the index holds for `ws`, in comparable form.
async fn snapshot(data: &Path) -> BTreeMap<String, (Option<String>, Vec<String>, Vec<String>)> {
    snapshot_of(data, "ws").await
}

/// Everything the index holds for the repository (or ref) `name`, in comparable form.
async fn snapshot_of(
    data: &Path,
    name: &str,
) -> BTreeMap<String, (Option<String>, Vec<String>, Vec<String>)> {
    let meta = SqlMetaStore::open_in(data).await.expect("open meta");
    let repo = meta
        .get_repository_by_name(name)
        .await
        .expect("repo")
        .expect("registered");
    // As the server opens it: rows read their code from the grep index.
    let grep = std::sync::Arc::new(
        sextant::store::grep::GrepIndex::open(data.join("grep")).expect("open grep"),
    );
    let lance = LanceStore::open(LanceStoreOptions::new(
        data.join("lance").to_string_lossy(),
        256,
    ))
    .await
    .expect("open lance")
    .with_sources(grep.clone());
    let mut out = BTreeMap::new();
    let mut chunk_total = 0;
    for f in meta.list_files(&repo.id).await.expect("files") {
        let symbols: Vec<String> = meta
            .file_symbols(&repo.id, &f.path)
            .await
            .expect("symbols")
            .into_iter()
            .map(|s| s.chunk_id)
            .collect();
        let mut chunks: Vec<String> = lance
            .file_chunks(&repo.id, &f.path)
            .await
            .expect("chunks")
            .into_iter()
            .map(|r| format!("{}@{}", r.chunk.id, r.content_hash))
            .collect();
        chunks.sort();
        chunk_total += chunks.len();
        out.insert(f.path.clone(), (f.content_hash.clone(), symbols, chunks));
    }
    let stored = lance
        .count(&ChunkFilter {
            repositories: vec![repo.id.clone()],
            ..ChunkFilter::default()
        })
        .await
        .expect("count");
    assert_eq!(stored, chunk_total, "chunks that belong to no file record");
    // The grep index holds every indexed file at its recorded hash (and may hold files
    // of a batch whose records a kill prevented: the next sync rewrites those).
    let grepped = grep.snapshot(&repo.id).files();
    for (path, (hash, _, _)) in &out {
        if let Some(hash) = hash {
            assert_eq!(grepped.get(path), Some(hash), "{path} in the grep index");
        }
    }
    meta.close().await;
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_sync_converges_to_a_clean_build() {
    let Some(model) = available(static_model(), "crash convergence (needs the static model)")
    else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("ws");
    workspace(&root, 6);
    let crashed = tmp.path().join("crashed");
    let clean = tmp.path().join("clean");

    // Start; the sync holds after its first committed batch (a fail point), so the kill
    // lands mid-sync whatever the machine's speed or load; the process says so on stderr
    // (read here rather than polling its database, which would race its migrations);
    // then SIGKILL.
    let mut cmd = sextant(&crashed, &model, &root);
    cmd.args(["--batch-files", "8"]);
    kill_mid_sync(cmd);
    let partial = snapshot(&crashed).await;

    // Change the workspace a little while "down", then resume.
    std::fs::write(root.join("pkg0/new-file.ts"), "export const late = 1;\n").unwrap();
    std::fs::remove_file(root.join("pkg1/arrow-functions.ts")).expect("remove a file");
    succeed(sextant(&crashed, &model, &root));
    succeed(sextant(&clean, &model, &root));

    let resumed = snapshot(&crashed).await;
    let reference = snapshot(&clean).await;
    assert!(
        partial.len() < reference.len(),
        "the kill happened mid-sync"
    );
    assert_eq!(resumed.len(), reference.len());
    assert_eq!(resumed, reference);
    let grepped = |data: &Path, id: &str| {
        sextant::store::grep::GrepIndex::open(data.join("grep"))
            .expect("open grep")
            .snapshot(id)
            .files()
    };
    let id = |data: &Path| {
        std::fs::read_dir(data.join("grep"))
            .expect("grep dir")
            .flatten()
            .next()
            .expect("one repository")
            .file_name()
            .to_string_lossy()
            .into_owned()
    };
    assert_eq!(
        grepped(&crashed, &id(&crashed)),
        grepped(&clean, &id(&clean)),
        "the resumed grep index equals a clean build's"
    );
}

/// Commits everything in the working tree at `root` on `main`.
fn commit_all(root: &Path) -> git2::Repository {
    let repo = git2::Repository::init(root).expect("git init");
    repo.set_head("refs/heads/main").expect("main");
    {
        let mut index = repo.index().expect("index");
        index
            .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
            .expect("add");
        index.write().expect("write index");
        let tree = repo
            .find_tree(index.write_tree().expect("tree"))
            .expect("find tree");
        let who = git2::Signature::now("t", "t@example.com").expect("signature");
        repo.commit(Some("HEAD"), &who, &who, "initial", &tree, &[])
            .expect("commit");
    }
    repo
}

/// A tracked ref's sync killed midway (a worktree of a local repository whose
/// uncommitted work changes dozens of files) converges, once resumed, to what a clean
/// build of the same ref holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_ref_sync_converges_to_a_clean_build() {
    let Some(model) = available(
        static_model(),
        "ref crash convergence (needs the static model)",
    ) else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("ws");
    workspace(&root, 2);
    let git = commit_all(&root);
    let feature = tmp.path().join("feature");
    {
        let head = git.head().unwrap().peel_to_commit().unwrap();
        let branch = git.branch("feature", &head, false).unwrap();
        let mut options = git2::WorktreeAddOptions::new();
        options.reference(Some(branch.get()));
        git.worktree("feature", &feature, Some(&options)).unwrap();
    }
    // Work on the worktree: every file of one package changed, one of the other deleted.
    for src in sextant::cli::source_files(&feature.join("pkg0")) {
        let text = std::fs::read_to_string(&src).unwrap_or_default();
        std::fs::write(&src, format!("{text}\nexport const onFeature = 1;\n")).unwrap();
    }
    std::fs::remove_file(feature.join("pkg1/arrow-functions.ts")).expect("remove a file");
    let (crashed, clean) = (tmp.path().join("crashed"), tmp.path().join("clean"));
    let track = |data: &Path| {
        succeed(sextant(data, &model, &root));
        let mut add = sextant_on(data, &model);
        add.args(["repo", "ref", "add", "ws", "feature"]);
        succeed(add);
    };
    let sync_ref = |data: &Path| {
        let mut cmd = sextant_on(data, &model);
        cmd.args(["--batch-files", "8", "repo", "sync", "ws@feature"]);
        cmd
    };

    track(&crashed);
    kill_mid_sync(sync_ref(&crashed));
    let partial = snapshot_of(&crashed, "ws@feature").await;
    // Changed a little while "down", then resumed.
    std::fs::write(feature.join("pkg1/late.ts"), "export const late = 1;\n").unwrap();
    succeed(sync_ref(&crashed));
    track(&clean);
    succeed(sync_ref(&clean));

    let resumed = snapshot_of(&crashed, "ws@feature").await;
    let reference = snapshot_of(&clean, "ws@feature").await;
    assert!(
        partial.len() < reference.len(),
        "the kill happened mid-sync"
    );
    assert!(reference.contains_key("pkg1/late.ts"));
    assert_eq!(
        reference
            .get("pkg1/arrow-functions.ts")
            .map(|(hash, ..)| hash),
        Some(&None),
        "the deletion is recorded"
    );
    assert_eq!(resumed, reference);
}
