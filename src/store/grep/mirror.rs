//! The grep index mirrored to object storage, for replicas that share no disk.
//!
//! When the chunk store lives on object storage (`--lance-uri s3://bucket/prefix`), every
//! replica keeps the grep index in its own directory as a cache of the copy under
//! `<lance-uri>/grep/<repository id>/`: the same segment files and `manifest.json`.
//!
//! - A writer (the one replica holding the repository's job lease) first brings its
//!   directory up to the remote manifest ([`GrepMirror::pull`]), writes as usual, and
//!   publishes before its own manifest changes: new segments, then the manifest (the
//!   commit point), then the segments it merged away ([`GrepMirror::publish`]). A write
//!   that fails to publish leaves the local manifest as it was, so the batch is not
//!   recorded and the next sync writes it again.
//! - A reader checks the remote manifest's tag at most once per interval (one `HEAD`),
//!   and on a change downloads the segments its own manifest does not name, then the
//!   manifest; the local stamp check then loads them. Segment names are never reused
//!   once published (each writer numbers on from the manifest it pulled), so a segment
//!   the local manifest names is the published one.
//!
//! The remote copy is the truth: a local directory newer than it (a publish that failed)
//! is replaced at the next pull.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt;
use object_store::buffered::BufWriter;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tokio::io::AsyncWriteExt;

use super::{MANIFEST, Manifest, io, read_manifest};
use crate::store::StoreError;

/// A grep index's copy on object storage (`s3://bucket/prefix` or `file:///dir`).
#[derive(Debug)]
pub struct GrepMirror {
    uri: String,
    store: Arc<dyn ObjectStore>,
    root: ObjectPath,
    runtime: tokio::runtime::Handle,
    interval: Duration,
}

impl GrepMirror {
    /// The mirror at `uri`; readers look for new versions at most once per `interval`.
    /// S3 settings come from the standard `AWS_*` variables (`AWS_ENDPOINT` for an
    /// S3-compatible store, `AWS_ALLOW_HTTP=true` for plain HTTP). Must be called on a
    /// Tokio runtime (writers, on the blocking pool, publish through it).
    pub fn open(uri: &str, interval: Duration) -> Result<Self, StoreError> {
        let url = url::Url::parse(uri).map_err(|e| {
            StoreError::Invalid(format!("the grep index URI `{uri}` is not a URL: {e}"))
        })?;
        let (store, root): (Arc<dyn ObjectStore>, ObjectPath) = match url.scheme() {
            "s3" | "s3a" => {
                let s3 = object_store::aws::AmazonS3Builder::from_env()
                    .with_url(uri)
                    .build()
                    .map_err(|e| remote(uri, e))?;
                (Arc::new(s3), ObjectPath::from(url.path()))
            }
            "file" => {
                let dir = url.to_file_path().map_err(|()| {
                    StoreError::Invalid(format!("`{uri}` names no local directory"))
                })?;
                std::fs::create_dir_all(&dir).map_err(|e| io(&dir, e))?;
                let local = object_store::local::LocalFileSystem::new_with_prefix(&dir)
                    .map_err(|e| remote(uri, e))?;
                (Arc::new(local), ObjectPath::default())
            }
            other => {
                return Err(StoreError::Invalid(format!(
                    "the grep index cannot be mirrored to `{other}://` storage: use an `s3://` \
                     URI (with AWS_ENDPOINT for an S3-compatible store)"
                )));
            }
        };
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
            StoreError::Invalid("the grep index mirror must be opened on a Tokio runtime".into())
        })?;
        Ok(GrepMirror {
            uri: uri.trim_end_matches('/').to_string(),
            store,
            root,
            runtime,
            interval,
        })
    }

    /// How often readers look for a new version.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    fn key(&self, repo: &str, name: &str) -> ObjectPath {
        self.root.clone().join(repo).join(name)
    }

    fn failed(&self, e: object_store::Error) -> StoreError {
        remote(&self.uri, e)
    }

    /// Brings `dir` (repository `repo`'s local copy) up to the remote manifest unless its
    /// tag is still `tag`; returns the tag now current (`None` when there is no remote
    /// copy yet, and then nothing changes).
    pub async fn pull(
        &self,
        dir: &Path,
        repo: &str,
        tag: Option<&str>,
    ) -> Result<Option<String>, StoreError> {
        let key = self.key(repo, MANIFEST);
        let meta = match self.store.head(&key).await {
            Ok(meta) => meta,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(self.failed(e)),
        };
        let current = version_tag(meta.e_tag.as_deref(), &meta);
        if tag == Some(current.as_str()) {
            return Ok(Some(current));
        }
        let bytes = self
            .store
            .get(&key)
            .await
            .map_err(|e| self.failed(e))?
            .bytes()
            .await
            .map_err(|e| self.failed(e))?;
        let remote: Manifest = serde_json::from_slice(&bytes).map_err(|e| {
            StoreError::Invalid(format!(
                "the grep index manifest at {}/{repo} is damaged ({e}); it is rebuilt by the \
                 repository's next sync",
                self.uri
            ))
        })?;
        let local = read_manifest(dir).unwrap_or_default();
        let had: HashSet<&str> = local.segments.iter().map(|s| s.name.as_str()).collect();
        tokio::fs::create_dir_all(dir)
            .await
            .map_err(|e| io(dir, e))?;
        for segment in &remote.segments {
            if !had.contains(segment.name.as_str()) {
                self.download(&self.key(repo, &segment.name), &dir.join(&segment.name))
                    .await?;
            }
        }
        let tmp = dir.join("manifest.json.pull");
        tokio::fs::write(&tmp, &bytes)
            .await
            .map_err(|e| io(&tmp, e))?;
        let path = dir.join(MANIFEST);
        tokio::fs::rename(&tmp, &path)
            .await
            .map_err(|e| io(&path, e))?;
        // Segments merged away since the local manifest: readers that hold them keep
        // reading their (unlinked) files.
        let named: HashSet<&str> = remote.segments.iter().map(|s| s.name.as_str()).collect();
        for gone in had.difference(&named) {
            let _ = tokio::fs::remove_file(dir.join(gone)).await;
        }
        Ok(Some(current))
    }

    /// [`Self::pull`] from the blocking pool (a writer, before it writes).
    pub fn pull_blocking(
        &self,
        dir: &Path,
        repo: &str,
        tag: Option<&str>,
    ) -> Result<Option<String>, StoreError> {
        self.runtime.block_on(self.pull(dir, repo, tag))
    }

    /// Streams one object into `path` (through a temporary file beside it).
    async fn download(&self, key: &ObjectPath, path: &Path) -> Result<(), StoreError> {
        let tmp = PathBuf::from(format!("{}.pull", path.display()));
        let mut file = tokio::fs::File::create(&tmp)
            .await
            .map_err(|e| io(&tmp, e))?;
        let mut stream = self
            .store
            .get(key)
            .await
            .map_err(|e| self.failed(e))?
            .into_stream();
        while let Some(chunk) = stream.try_next().await.map_err(|e| self.failed(e))? {
            file.write_all(&chunk).await.map_err(|e| io(&tmp, e))?;
        }
        file.flush().await.map_err(|e| io(&tmp, e))?;
        drop(file);
        tokio::fs::rename(&tmp, path).await.map_err(|e| io(path, e))
    }

    /// Publishes a commit of `dir` (blocking: called by the writer on the blocking pool):
    /// uploads the segments in `added`, then `manifest` (the commit point), then deletes
    /// the segments in `removed`. Returns the manifest's new tag.
    pub fn publish(
        &self,
        dir: &Path,
        repo: &str,
        added: &[&str],
        manifest: &[u8],
        removed: &[&str],
    ) -> Result<String, StoreError> {
        self.runtime.block_on(async {
            for name in added {
                let path = dir.join(name);
                let mut file = tokio::fs::File::open(&path)
                    .await
                    .map_err(|e| io(&path, e))?;
                let mut upload = BufWriter::new(self.store.clone(), self.key(repo, name));
                tokio::io::copy(&mut file, &mut upload)
                    .await
                    .map_err(|e| self.upload_failed(name, e))?;
                upload
                    .shutdown()
                    .await
                    .map_err(|e| self.upload_failed(name, e))?;
            }
            let key = self.key(repo, MANIFEST);
            let put = self
                .store
                .put(&key, PutPayload::from(manifest.to_vec()))
                .await
                .map_err(|e| self.failed(e))?;
            for name in removed {
                match self.store.delete(&self.key(repo, name)).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => {
                        tracing::warn!(segment = %name, error = %e, "a merged-away grep segment stays on the object store; the next sync removes it")
                    }
                }
            }
            match put.e_tag {
                Some(tag) => Ok(tag),
                None => {
                    let meta = self.store.head(&key).await.map_err(|e| self.failed(e))?;
                    Ok(version_tag(None, &meta))
                }
            }
        })
    }

    fn upload_failed(&self, name: &str, e: std::io::Error) -> StoreError {
        StoreError::ObjectStore {
            uri: self.uri.clone(),
            message: format!(
                "cannot upload grep segment {name}: {e} (the batch is written again by the next \
                 sync)"
            ),
        }
    }

    /// Every object of repository `repo`.
    async fn list(&self, repo: &str) -> Result<Vec<object_store::ObjectMeta>, StoreError> {
        self.store
            .list(Some(&self.root.clone().join(repo)))
            .try_collect()
            .await
            .map_err(|e| self.failed(e))
    }

    /// Deletes repository `repo`'s objects that its remote manifest does not name (what
    /// a write that failed before its manifest left). Blocking, like [`Self::publish`].
    pub fn sweep(&self, repo: &str) -> Result<usize, StoreError> {
        self.runtime.block_on(async {
            let named: HashSet<String> = match self.store.get(&self.key(repo, MANIFEST)).await {
                Ok(got) => {
                    let bytes = got.bytes().await.map_err(|e| self.failed(e))?;
                    serde_json::from_slice::<Manifest>(&bytes)
                        .map(|m| m.segments.into_iter().map(|s| s.name).collect())
                        .unwrap_or_default()
                }
                Err(object_store::Error::NotFound { .. }) => HashSet::new(),
                Err(e) => return Err(self.failed(e)),
            };
            let objects = self.list(repo).await?;
            let mut removed = 0;
            for object in objects {
                let name = object.location.filename().unwrap_or_default();
                if name.ends_with(".seg") && !named.contains(name) {
                    self.store
                        .delete(&object.location)
                        .await
                        .map_err(|e| self.failed(e))?;
                    removed += 1;
                }
            }
            Ok(removed)
        })
    }

    /// Deletes everything of repository `repo` (blocking, like [`Self::publish`]).
    pub fn drop_repository(&self, repo: &str) -> Result<(), StoreError> {
        self.runtime.block_on(async {
            let objects = self.list(repo).await?;
            // The manifest first: a reader never finds a manifest naming deleted segments
            // it could not download.
            let (manifests, segments): (Vec<_>, Vec<_>) = objects
                .into_iter()
                .partition(|o| o.location.filename() == Some(MANIFEST));
            for object in manifests.into_iter().chain(segments) {
                match self.store.delete(&object.location).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(self.failed(e)),
                }
            }
            Ok(())
        })
    }
}

/// What identifies one version of a remote manifest: its entity tag, or its time and
/// size where the store gives none.
fn version_tag(e_tag: Option<&str>, meta: &object_store::ObjectMeta) -> String {
    e_tag.map_or_else(
        || format!("{}:{}", meta.last_modified.timestamp_micros(), meta.size),
        str::to_string,
    )
}

fn remote(uri: &str, e: object_store::Error) -> StoreError {
    StoreError::ObjectStore {
        uri: uri.to_string(),
        message: format!("the grep index copy: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::GrepMirror;
    use crate::store::grep::GrepIndex;
    use crate::store::grep::tests::{doc, found};

    /// Two replicas' indexes (own directories) over one mirror in `remote`.
    fn replica(dir: &std::path::Path, remote: &std::path::Path) -> Arc<GrepIndex> {
        let uri = url::Url::from_directory_path(remote).expect("a file URL");
        let mirror = GrepMirror::open(uri.as_str(), Duration::ZERO).expect("mirror");
        Arc::new(GrepIndex::open(dir).expect("open").with_mirror(mirror))
    }

    /// `replace` as the indexer calls it: on the blocking pool.
    async fn write(
        index: &Arc<GrepIndex>,
        docs: Vec<crate::store::grep::NewDoc>,
        removed: &[&str],
    ) {
        let index = index.clone();
        let removed: Vec<String> = removed.iter().map(|s| s.to_string()).collect();
        tokio::task::spawn_blocking(move || index.replace("r", &docs, &removed))
            .await
            .expect("joined")
            .expect("written");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn replicas_sharing_no_disk_see_each_others_writes_through_the_mirror() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let remote = tmp.path().join("remote");
        let a = replica(&tmp.path().join("a"), &remote);
        let b = replica(&tmp.path().join("b"), &remote);

        write(&a, vec![doc("x.py", "alpha"), doc("y.py", "beta")], &[]).await;
        assert!(remote.join("r/manifest.json").is_file(), "published");
        b.pull("r", false).await.expect("pull");
        assert_eq!(found(&b, "r", "alpha"), ["x.py"]);

        // B writes next (the lease moved): it starts from A's copy, and A sees B's write.
        write(&b, vec![doc("x.py", "gamma")], &["y.py"]).await;
        a.pull("r", false).await.expect("pull");
        assert!(found(&a, "r", "alpha").is_empty());
        assert!(found(&a, "r", "beta").is_empty());
        assert_eq!(found(&a, "r", "gamma"), ["x.py"]);

        // Many writes by A merge segments; B follows, and neither copy keeps the
        // merged-away files.
        for i in 0..12 {
            write(
                &a,
                vec![doc(&format!("f{i}.py"), &format!("delta{i}"))],
                &[],
            )
            .await;
        }
        b.pull("r", false).await.expect("pull");
        assert_eq!(found(&b, "r", "delta11"), ["f11.py"]);
        assert_eq!(found(&b, "r", "gamma"), ["x.py"]);
        let named = b.snapshot("r").segment_count();
        let files = |dir: &std::path::Path| {
            std::fs::read_dir(dir)
                .expect("dir")
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".seg"))
                .count()
        };
        assert_eq!(
            files(&remote.join("r")),
            named,
            "the mirror holds what is named"
        );
        assert_eq!(
            files(&tmp.path().join("b/r")),
            named,
            "B holds what is named"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_writer_removes_unpublished_segments_and_drop_empties_the_mirror() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let remote = tmp.path().join("remote");
        let a = replica(&tmp.path().join("a"), &remote);
        write(&a, vec![doc("x.py", "alpha")], &[]).await;
        // What a publish that failed before its manifest left on the store.
        std::fs::write(remote.join("r/99999999.seg"), b"partial").expect("write");
        let b = replica(&tmp.path().join("b"), &remote);
        write(&b, vec![doc("z.py", "omega")], &[]).await;
        assert!(!remote.join("r/99999999.seg").exists(), "swept");
        assert_eq!(found(&b, "r", "alpha"), ["x.py"]);

        let dropped = b.clone();
        tokio::task::spawn_blocking(move || dropped.drop_repository("r"))
            .await
            .expect("joined")
            .expect("dropped");
        let left: Vec<_> = std::fs::read_dir(remote.join("r"))
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "the mirror keeps {left:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reader_whose_store_fails_keeps_its_copy() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let remote = tmp.path().join("remote");
        let a = replica(&tmp.path().join("a"), &remote);
        write(&a, vec![doc("x.py", "alpha")], &[]).await;
        let b = replica(&tmp.path().join("b"), &remote);
        b.pull("r", false).await.expect("pull");
        // The published copy becomes unreadable (a damaged manifest): a reader keeps
        // what it has, a writer's pull fails and says where.
        std::fs::write(remote.join("r/manifest.json"), b"{not json").expect("write");
        b.pull("r", false).await.expect("a reader carries on");
        assert_eq!(found(&b, "r", "alpha"), ["x.py"]);
        let error = b.pull("r", true).await.expect_err("a writer stops");
        assert!(error.to_string().contains("damaged"), "{error}");
    }
}
