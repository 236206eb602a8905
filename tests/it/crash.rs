//! Crash safety of indexing: a real `sextant index` process is killed with SIGKILL in the
//! middle of a sync; the next run must converge to exactly what a clean build produces
//! (same files, hashes, symbols and chunk ids, nothing orphaned).

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use sextant::store::{
    ChunkFilter, LanceStore, LanceStoreOptions, MetaStore, SqlMetaStore, VectorStore,
};
use support::models::static_model;
use support::skip;

/// A workspace of `copies` × the fixture files, each copy with distinct content.
fn workspace(root: &Path, copies: usize) {
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

fn sextant(data: &Path, model: &Path, root: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sextant"));
    cmd.arg("--data-dir")
        .arg(data)
        .args(["--embed-provider", "static", "--static-model-dir"])
        .arg(model)
        .arg("index")
        .arg(root)
        .args(["--name", "ws"])
        .env_remove("SEXTANT_FAILPOINT")
        .env_remove("DATABASE_URL")
        .env_remove("SEXTANT_LANCE_URI");
    cmd
}

/// Everything the index holds, in comparable form.
async fn snapshot(data: &Path) -> BTreeMap<String, (Option<String>, Vec<String>, Vec<String>)> {
    let meta = SqlMetaStore::open_in(data).await.expect("open meta");
    let repo = meta
        .get_repository_by_name("ws")
        .await
        .expect("repo")
        .expect("registered");
    let lance = LanceStore::open(LanceStoreOptions::new(
        data.join("lance").to_string_lossy(),
        256,
    ))
    .await
    .expect("open lance");
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
            repos: vec![repo.id.clone()],
            ..ChunkFilter::default()
        })
        .await
        .expect("count");
    assert_eq!(stored, chunk_total, "chunks that belong to no file record");
    meta.close().await;
    out
}

// `try_wait` returning `Some` has reaped the child; clippy does not count it as a wait.
#[allow(clippy::zombie_processes)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_sync_converges_to_a_clean_build() {
    let model = match static_model() {
        Ok(m) => m,
        Err(why) => return skip("crash convergence (needs the static model)", why),
    };
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().join("ws");
    workspace(&root, 6);
    let crashed = tmp.path().join("crashed");
    let clean = tmp.path().join("clean");

    // Start; the sync holds after its first committed batch (a fail point), so the kill
    // lands mid-sync whatever the machine's speed or load; then SIGKILL.
    let mut child = sextant(&crashed, &model, &root)
        .args(["--batch-files", "8"])
        .env("SEXTANT_FAILPOINT", "sync-after-batch")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let db = crashed.join("sextant.db");
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut killed_mid_sync = false;
    while Instant::now() < deadline {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if db.is_file() {
            let meta = SqlMetaStore::open(&db.to_string_lossy()).await;
            if let Ok(meta) = meta {
                let files = match meta.get_repository_by_name("ws").await {
                    Ok(Some(r)) => meta.list_files(&r.id).await.map(|f| f.len()).unwrap_or(0),
                    _ => 0,
                };
                meta.close().await;
                if files > 0 {
                    child.kill().expect("SIGKILL");
                    child.wait().expect("reaped");
                    killed_mid_sync = true;
                    break;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        killed_mid_sync,
        "the sync never committed a batch (or exited before its fail point held it)"
    );
    let partial = snapshot(&crashed).await;

    // Change the workspace a little while "down", then resume.
    std::fs::write(root.join("pkg0/new-file.ts"), "export const late = 1;\n").unwrap();
    std::fs::remove_file(root.join("pkg1/arrow-functions.ts")).expect("remove a file");
    let status = sextant(&crashed, &model, &root).output().expect("resume");
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let status = sextant(&clean, &model, &root)
        .output()
        .expect("clean build");
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );

    let resumed = snapshot(&crashed).await;
    let reference = snapshot(&clean).await;
    assert!(
        partial.len() < reference.len(),
        "the kill happened mid-sync"
    );
    assert_eq!(resumed.len(), reference.len());
    assert_eq!(resumed, reference);
}
