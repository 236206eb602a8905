//! A read cache for a chunk store on object storage: LanceDB's data and index files are
//! immutable (a write or a compaction makes new files, under new names), so the byte
//! ranges a search reads from them can be kept in memory and served again without a
//! request. Without it, each search on S3 made ~110–130 ranged GETs (LanceDB has no
//! page cache for data files, and reads full-text posting lists afresh for every
//! query); see docs/BENCHMARKS.md, "Replicas on object storage".
//!
//! [`BlockCache`] wraps LanceDB's object store ([`lance::io::WrappingObjectStore`]):
//! reads of `data/` and `_indices/` files are served in aligned blocks of
//! [`BLOCK_BYTES`] from a bounded LRU cache (concurrent misses of one block make one
//! request); everything else (manifests, version listings, writes, conditional reads)
//! goes to the store as it is. The cache holds at most its byte budget; blocks of files
//! that compaction removed are never read again and age out.

use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use futures::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetRange, GetResult, GetResultPayload, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};

/// Size of a cached block: a cold read of one LanceDB page (typically 20–40 KB) fetches
/// the block around it, so neighbouring pages the next search reads are there already.
pub const BLOCK_BYTES: u64 = 256 << 10;

/// Whether reads of `location` may be cached: LanceDB's data files and index files are
/// written once under a fresh name and never changed. Manifests, the latest-version
/// pointer and anything else are always read from the store.
fn immutable(location: &Path) -> bool {
    let path = location.as_ref();
    path.contains("/data/") || path.starts_with("data/") || path.contains("/_indices/")
}

/// A block: its bytes and what the store said of the whole object.
#[derive(Clone)]
struct Block {
    bytes: Bytes,
    meta: ObjectMeta,
}

/// The cache LanceDB's object stores are wrapped with (one per store: see
/// [`BlockCache::new`]).
#[derive(Debug, Clone)]
pub struct BlockCache {
    blocks: moka::future::Cache<(Path, u64), Arc<BlockBytes>>,
}

/// A cached block, weighed by its length.
struct BlockBytes(Block);

impl std::fmt::Debug for BlockBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Block")
            .field("len", &self.0.bytes.len())
            .finish()
    }
}

impl BlockCache {
    /// A cache of at most `capacity_bytes` of blocks.
    pub fn new(capacity_bytes: u64) -> Self {
        Self {
            blocks: moka::future::Cache::builder()
                .max_capacity(capacity_bytes)
                .weigher(|(path, _): &(Path, u64), block: &Arc<BlockBytes>| {
                    let bytes = block.0.bytes.len() + path.as_ref().len() + 64;
                    u32::try_from(bytes).unwrap_or(u32::MAX)
                })
                .build(),
        }
    }

    /// Bytes held now (after pending evictions).
    pub async fn held_bytes(&self) -> u64 {
        self.blocks.run_pending_tasks().await;
        self.blocks.weighted_size()
    }
}

impl lance::io::WrappingObjectStore for BlockCache {
    fn wrap(&self, _prefix: &str, original: Arc<dyn ObjectStore>) -> Arc<dyn ObjectStore> {
        Arc::new(Cached {
            inner: original,
            cache: self.clone(),
        })
    }

    fn wrap_paginated(
        &self,
        _prefix: &str,
        original: Arc<dyn object_store::list::PaginatedListStore>,
    ) -> Option<Arc<dyn object_store::list::PaginatedListStore>> {
        // Listings are not cached: the pushed-down listing stays as it is.
        Some(original)
    }
}

/// An object store whose immutable files are read through a [`BlockCache`].
#[derive(Debug)]
struct Cached {
    inner: Arc<dyn ObjectStore>,
    cache: BlockCache,
}

impl std::fmt::Display for Cached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BlockCache({})", self.inner)
    }
}

/// An error of the wrapped store, as the cache hands it on (a shared one, since
/// concurrent readers of a block share its one request).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct Shared(Arc<object_store::Error>);

fn from_shared(location: &Path, e: Arc<object_store::Error>) -> object_store::Error {
    match &*e {
        object_store::Error::NotFound { .. } => object_store::Error::NotFound {
            path: location.to_string(),
            source: Box::new(Shared(e)),
        },
        _ => object_store::Error::Generic {
            store: "object store (through the block cache)",
            source: Box::new(Shared(e)),
        },
    }
}

/// Whether a read asks for nothing but bytes (no condition, no version, not a HEAD).
fn plain(options: &GetOptions) -> bool {
    options.if_match.is_none()
        && options.if_none_match.is_none()
        && options.if_modified_since.is_none()
        && options.if_unmodified_since.is_none()
        && options.version.is_none()
        && !options.head
}

impl Cached {
    /// Block `index` of `location`, from the cache or (once for concurrent readers) the
    /// store.
    async fn block(&self, location: &Path, index: u64) -> Result<Block, object_store::Error> {
        let inner = self.inner.clone();
        let path = location.clone();
        let loaded = self
            .cache
            .blocks
            .try_get_with((location.clone(), index), async move {
                let start = index * BLOCK_BYTES;
                let got = inner
                    .get_opts(
                        &path,
                        GetOptions {
                            range: Some(GetRange::Bounded(start..start + BLOCK_BYTES)),
                            ..GetOptions::default()
                        },
                    )
                    .await?;
                let meta = got.meta.clone();
                let bytes = got.bytes().await?;
                Ok::<_, object_store::Error>(Arc::new(BlockBytes(Block { bytes, meta })))
            })
            .await
            .map_err(|e| from_shared(location, e))?;
        Ok(loaded.0.clone())
    }

    /// `range` of `location` (clamped to its end) assembled from its blocks, with the
    /// object's metadata.
    async fn read(
        &self,
        location: &Path,
        range: Range<u64>,
    ) -> Result<(Bytes, ObjectMeta, Range<u64>), object_store::Error> {
        let first = self.block(location, range.start / BLOCK_BYTES).await?;
        let size = first.meta.size;
        let end = range.end.min(size);
        if range.start >= end {
            return Ok((Bytes::new(), first.meta, range.start..range.start));
        }
        let last = (end - 1) / BLOCK_BYTES;
        let rest = futures::future::try_join_all(
            (range.start / BLOCK_BYTES + 1..=last).map(|i| self.block(location, i)),
        )
        .await?;
        let mut out = BytesMut::with_capacity(usize::try_from(end - range.start).unwrap_or(0));
        for (i, block) in std::iter::once(&first).chain(rest.iter()).enumerate() {
            let block_start = (range.start / BLOCK_BYTES + i as u64) * BLOCK_BYTES;
            let from = range.start.saturating_sub(block_start);
            let to = (end - block_start).min(block.bytes.len() as u64);
            if from >= to {
                break;
            }
            out.extend_from_slice(&block.bytes[from as usize..to as usize]);
        }
        Ok((out.freeze(), first.meta, range.start..end))
    }
}

/// The [`ObjectStore`] methods a wrapper passes to `self.inner` unchanged: writes,
/// listings, copies and renames (only reads are cached).
///
/// `impl_object_store!(Type { own methods })` is `impl ObjectStore for Type` with the
/// own methods and these (the whole impl, so that `async_trait` sees every method).
macro_rules! impl_object_store {
    ($store:ty { $($own:tt)* }) => {
        #[async_trait]
        impl ObjectStore for $store {
            $($own)*
            async fn put_opts(
                &self,
                location: &Path,
                payload: PutPayload,
                opts: PutOptions,
            ) -> object_store::Result<PutResult> {
                self.inner.put_opts(location, payload, opts).await
            }

            async fn put_multipart_opts(
                &self,
                location: &Path,
                opts: PutMultipartOptions,
            ) -> object_store::Result<Box<dyn MultipartUpload>> {
                self.inner.put_multipart_opts(location, opts).await
            }

            fn delete_stream(
                &self,
                locations: BoxStream<'static, object_store::Result<Path>>,
            ) -> BoxStream<'static, object_store::Result<Path>> {
                self.inner.delete_stream(locations)
            }

            fn list(
                &self,
                prefix: Option<&Path>,
            ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
                self.inner.list(prefix)
            }

            fn list_with_offset(
                &self,
                prefix: Option<&Path>,
                offset: &Path,
            ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
                self.inner.list_with_offset(prefix, offset)
            }

            async fn list_with_delimiter(
                &self,
                prefix: Option<&Path>,
            ) -> object_store::Result<ListResult> {
                self.inner.list_with_delimiter(prefix).await
            }

            async fn copy_opts(
                &self,
                from: &Path,
                to: &Path,
                options: CopyOptions,
            ) -> object_store::Result<()> {
                self.inner.copy_opts(from, to, options).await
            }

            async fn rename_opts(
                &self,
                from: &Path,
                to: &Path,
                options: object_store::RenameOptions,
            ) -> object_store::Result<()> {
                self.inner.rename_opts(from, to, options).await
            }
        }
    };
}

impl_object_store!(Cached {
    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        if !immutable(location) || !plain(&options) {
            return self.inner.get_opts(location, options).await;
        }
        let range = match &options.range {
            None => 0..u64::MAX,
            Some(GetRange::Bounded(r)) => r.clone(),
            Some(GetRange::Offset(o)) => *o..u64::MAX,
            // A read from the end needs the size first: left to the store.
            Some(GetRange::Suffix(_)) => return self.inner.get_opts(location, options).await,
        };
        if range.start >= range.end {
            return self.inner.get_opts(location, options).await;
        }
        let (bytes, meta, range) = self.read(location, range).await?;
        if bytes.is_empty() {
            // Past the end: the store says what is wrong.
            return self.inner.get_opts(location, options).await;
        }
        Ok(GetResult {
            payload: GetResultPayload::Stream(
                futures::stream::once(async move { Ok(bytes) }).boxed(),
            ),
            meta,
            range,
            attributes: Default::default(),
            extensions: Default::default(),
        })
    }

    async fn get_ranges(
        &self,
        location: &Path,
        ranges: &[Range<u64>],
    ) -> object_store::Result<Vec<Bytes>> {
        if !immutable(location) {
            return self.inner.get_ranges(location, ranges).await;
        }
        futures::future::try_join_all(ranges.iter().map(|r| async move {
            let (bytes, _, got) = self.read(location, r.clone()).await?;
            if got != *r {
                return Err(object_store::Error::Generic {
                    store: "object store (through the block cache)",
                    source: format!("range {r:?} of {location} is past its end").into(),
                });
            }
            Ok(bytes)
        }))
        .await
    }
});

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::ObjectStoreExt;
    use object_store::memory::InMemory;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// An in-memory store that counts the reads that reach it.
    #[derive(Debug, Default)]
    struct Counting {
        inner: InMemory,
        gets: AtomicUsize,
    }

    impl std::fmt::Display for Counting {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "Counting")
        }
    }

    impl_object_store!(Counting {
        async fn get_opts(
            &self,
            location: &Path,
            options: GetOptions,
        ) -> object_store::Result<GetResult> {
            self.gets.fetch_add(1, Ordering::SeqCst);
            self.inner.get_opts(location, options).await
        }
    });

    fn content(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 % 251) as u8).collect()
    }

    async fn store_with(path: &Path, bytes: &[u8]) -> (Arc<Counting>, Arc<dyn ObjectStore>) {
        let counting = Arc::new(Counting::default());
        counting
            .put(path, PutPayload::from(bytes.to_vec()))
            .await
            .expect("put");
        let wrapped = lance::io::WrappingObjectStore::wrap(
            &BlockCache::new(64 << 20),
            "mem",
            counting.clone() as Arc<dyn ObjectStore>,
        );
        (counting, wrapped)
    }

    #[tokio::test]
    async fn ranges_of_data_files_are_read_once_and_served_exactly() {
        let len = (BLOCK_BYTES * 3 + 1234) as usize;
        let bytes = content(len);
        let path = Path::from("t/chunks.lance/data/0123.lance");
        let (counting, store) = store_with(&path, &bytes).await;
        // Across a block boundary, at the very end, the whole file, a suffix-free offset.
        let reads: Vec<Range<u64>> = vec![
            10..20,
            BLOCK_BYTES - 5..BLOCK_BYTES + 5,
            len as u64 - 100..len as u64,
            0..len as u64,
            BLOCK_BYTES * 2..BLOCK_BYTES * 2 + 1,
        ];
        for r in &reads {
            let got = store.get_range(&path, r.clone()).await.expect("range");
            assert_eq!(&got[..], &bytes[r.start as usize..r.end as usize], "{r:?}");
        }
        let fetched = counting.gets.load(Ordering::SeqCst);
        assert_eq!(fetched, 4, "each of the 4 blocks fetched once");
        // Everything again, and as one batch of ranges: no request reaches the store.
        let again = store.get_ranges(&path, &reads).await.expect("ranges");
        for (r, got) in reads.iter().zip(again) {
            assert_eq!(&got[..], &bytes[r.start as usize..r.end as usize]);
        }
        let whole = store.get(&path).await.expect("get");
        assert_eq!(whole.meta.size, len as u64);
        assert_eq!(&whole.bytes().await.expect("bytes")[..], &bytes[..]);
        let tail = store
            .get_opts(
                &path,
                GetOptions {
                    range: Some(GetRange::Offset(len as u64 - 3)),
                    ..GetOptions::default()
                },
            )
            .await
            .expect("offset");
        assert_eq!(tail.range, len as u64 - 3..len as u64);
        assert_eq!(&tail.bytes().await.expect("bytes")[..], &bytes[len - 3..]);
        assert_eq!(counting.gets.load(Ordering::SeqCst), fetched);
    }

    #[tokio::test]
    async fn manifests_and_conditional_reads_always_reach_the_store() {
        let path = Path::from("t/chunks.lance/_versions/1.manifest");
        let (counting, store) = store_with(&path, b"first").await;
        for _ in 0..3 {
            assert_eq!(
                &store.get(&path).await.unwrap().bytes().await.unwrap()[..],
                b"first"
            );
        }
        assert_eq!(counting.gets.load(Ordering::SeqCst), 3);
        // A manifest rewritten is read as it is now.
        counting
            .put(&path, PutPayload::from_static(b"second"))
            .await
            .unwrap();
        assert_eq!(
            &store.get(&path).await.unwrap().bytes().await.unwrap()[..],
            b"second"
        );

        let data = Path::from("t/chunks.lance/data/9.lance");
        counting
            .put(&data, PutPayload::from_static(b"abc"))
            .await
            .unwrap();
        let before = counting.gets.load(Ordering::SeqCst);
        let head = store.head(&data).await.expect("head");
        assert_eq!(head.size, 3);
        assert_eq!(
            counting.gets.load(Ordering::SeqCst),
            before + 1,
            "HEAD not cached"
        );
    }

    #[tokio::test]
    async fn a_missing_file_is_not_found_and_not_cached() {
        let (counting, store) = store_with(&Path::from("x"), b"x").await;
        let missing = Path::from("t/chunks.lance/data/gone.lance");
        for _ in 0..2 {
            let e = store.get_range(&missing, 0..10).await.expect_err("missing");
            assert!(matches!(e, object_store::Error::NotFound { .. }), "{e:?}");
        }
        assert_eq!(counting.gets.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn the_cache_keeps_to_its_budget() {
        let len = (BLOCK_BYTES * 8) as usize;
        let path = Path::from("t/chunks.lance/data/big.lance");
        let counting = Arc::new(Counting::default());
        counting
            .put(&path, PutPayload::from(content(len)))
            .await
            .unwrap();
        let cache = BlockCache::new(BLOCK_BYTES * 3);
        let store = lance::io::WrappingObjectStore::wrap(
            &cache,
            "mem",
            counting.clone() as Arc<dyn ObjectStore>,
        );
        store.get_range(&path, 0..len as u64).await.expect("read");
        assert!(cache.held_bytes().await <= BLOCK_BYTES * 3 + 4096);
    }
}
