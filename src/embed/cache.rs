//! Content-addressed embedding cache: (model id, hash of input kind + text) → vector.
//!
//! [`CachedEmbedder`] wraps any [`Embedder`]: texts already seen by the same model are
//! answered from the cache, repeated texts within one call are embedded once, and only
//! the rest reach the model. The cache itself is a [`VectorCache`]: [`MemoryCache`] here,
//! the SQL metadata store for a persistent one.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use sha2::{Digest, Sha256};

use super::{BatchLimits, EmbedError, Embedder, InputKind};

/// A store of vectors keyed by model id and text hash.
#[async_trait]
pub trait VectorCache: Send + Sync {
    /// Looks up `keys` for `model`: one entry per key, `None` where absent.
    async fn get_vectors(
        &self,
        model: &str,
        keys: &[String],
    ) -> Result<Vec<Option<Vec<f32>>>, EmbedError>;
    /// Stores vectors for `model` (an existing key is left as it is).
    async fn put_vectors(
        &self,
        model: &str,
        entries: &[(String, Vec<f32>)],
    ) -> Result<(), EmbedError>;
    /// Drops `model`'s vectors but the `keep` most recently written; returns how many
    /// were dropped. A cache bounded otherwise (as [`MemoryCache`]) keeps what it has.
    async fn trim(&self, model: &str, keep: u64) -> Result<u64, EmbedError> {
        let _ = (model, keep);
        Ok(0)
    }
    /// `vector` as [`VectorCache::get_vectors`] returns it once stored (a cache that keeps
    /// fewer bits rounds it). [`CachedEmbedder`] returns fresh vectors in this form, so a
    /// text's vector is the same whether it was just computed or read back.
    fn as_stored(&self, vector: Vec<f32>) -> Vec<f32> {
        vector
    }
}

/// The cache key of a text: hex SHA-256 of the input kind and the text.
pub fn cache_key(kind: InputKind, text: &str) -> String {
    let mut h = Sha256::new();
    h.update(kind.as_str().as_bytes());
    h.update([0]);
    h.update(text.as_bytes());
    format!("{:x}", h.finalize())
}

/// An in-process cache with a size bound (cleared whole when full: simple and enough for
/// a query cache; the persistent cache is the SQL one).
#[derive(Debug, Default)]
pub struct MemoryCache {
    map: Mutex<HashMap<(String, String), Vec<f32>>>,
    capacity: usize,
}

impl MemoryCache {
    /// A cache holding up to `capacity` vectors.
    pub fn new(capacity: usize) -> Self {
        Self {
            map: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    /// Vectors held.
    pub fn len(&self) -> usize {
        self.map.lock().map(|m| m.len()).unwrap_or(0)
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn poisoned<T>(_: T) -> EmbedError {
    EmbedError::Cache("memory cache lock poisoned".into())
}

#[async_trait]
impl VectorCache for MemoryCache {
    async fn get_vectors(
        &self,
        model: &str,
        keys: &[String],
    ) -> Result<Vec<Option<Vec<f32>>>, EmbedError> {
        let map = self.map.lock().map_err(poisoned)?;
        Ok(keys
            .iter()
            .map(|k| map.get(&(model.to_string(), k.clone())).cloned())
            .collect())
    }

    async fn put_vectors(
        &self,
        model: &str,
        entries: &[(String, Vec<f32>)],
    ) -> Result<(), EmbedError> {
        let mut map = self.map.lock().map_err(poisoned)?;
        if map.len() + entries.len() > self.capacity {
            map.clear();
        }
        for (k, v) in entries {
            map.entry((model.to_string(), k.clone()))
                .or_insert_with(|| v.clone());
        }
        Ok(())
    }
}

/// Counters of a [`CachedEmbedder`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    /// Texts answered from the cache (or repeated within a call).
    pub hits: u64,
    /// Texts sent to the model.
    pub misses: u64,
}

/// An embedder that consults a [`VectorCache`] before its inner model.
pub struct CachedEmbedder {
    inner: Arc<dyn Embedder>,
    cache: Arc<dyn VectorCache>,
    hits: AtomicU64,
    misses: AtomicU64,
    /// `misses` when the cache was last trimmed ([`NEVER_TRIMMED`] before the first).
    trimmed_at: AtomicU64,
}

/// [`CachedEmbedder::trimmed_at`] before the first trim.
const NEVER_TRIMMED: u64 = u64::MAX;

impl CachedEmbedder {
    /// Wraps `inner` with `cache`.
    pub fn new(inner: Arc<dyn Embedder>, cache: Arc<dyn VectorCache>) -> Self {
        Self {
            inner,
            cache,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            trimmed_at: AtomicU64::new(NEVER_TRIMMED),
        }
    }

    /// Hits and misses so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }
}

#[async_trait]
impl Embedder for CachedEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dims(&self) -> usize {
        self.inner.dims()
    }

    fn limits(&self) -> BatchLimits {
        self.inner.limits()
    }

    fn score_spread(&self) -> f32 {
        self.inner.score_spread()
    }

    fn worth_caching(&self) -> bool {
        self.inner.worth_caching()
    }

    async fn bound_kept(&self, keep: u64) -> Result<u64, EmbedError> {
        if !self.inner.worth_caching() {
            return Ok(0);
        }
        // The cache grows only by misses: trim (a scan of the model's rows) once per
        // process, then when the misses since could have taken it a sixteenth over its
        // bound, not after every small sync.
        let misses = self.misses.load(Ordering::Relaxed);
        let last = self.trimmed_at.load(Ordering::Relaxed);
        if last != NEVER_TRIMMED && misses.saturating_sub(last) < (keep / 16).max(1) {
            return Ok(0);
        }
        self.trimmed_at.store(misses, Ordering::Relaxed);
        self.cache.trim(self.inner.model_id(), keep).await
    }

    async fn lookup(
        &self,
        texts: &[String],
        kind: InputKind,
    ) -> Result<Vec<Option<Vec<f32>>>, EmbedError> {
        if !self.inner.worth_caching() {
            return self.inner.lookup(texts, kind).await;
        }
        let keys: Vec<String> = texts.iter().map(|t| cache_key(kind, t)).collect();
        let mut found = Vec::with_capacity(keys.len());
        // In slices, so that one lookup never builds a huge SQL statement.
        for slice in keys.chunks(512) {
            found.extend(self.cache.get_vectors(self.inner.model_id(), slice).await?);
        }
        let dims = self.inner.dims();
        Ok(found
            .into_iter()
            .map(|v| v.filter(|v| v.len() == dims))
            .collect())
    }

    async fn embed(&self, texts: &[String], kind: InputKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        if !self.inner.worth_caching() {
            let vectors = self.inner.embed(texts, kind).await?;
            self.misses.fetch_add(texts.len() as u64, Ordering::Relaxed);
            return Ok(vectors);
        }
        let model = self.inner.model_id().to_string();
        let keys: Vec<String> = texts.iter().map(|t| cache_key(kind, t)).collect();
        let mut found = self.cache.get_vectors(&model, &keys).await?;
        // Texts to embed, each once, with the positions that need its vector.
        let mut todo: Vec<(String, String)> = Vec::new();
        let mut positions: HashMap<&str, usize> = HashMap::new();
        for (i, key) in keys.iter().enumerate() {
            if found[i].is_none() && !positions.contains_key(key.as_str()) {
                positions.insert(key, todo.len());
                todo.push((key.clone(), texts[i].clone()));
            }
        }
        let fresh = if todo.is_empty() {
            Vec::new()
        } else {
            let batch: Vec<String> = todo.iter().map(|(_, t)| t.clone()).collect();
            let vectors: Vec<Vec<f32>> = self
                .inner
                .embed(&batch, kind)
                .await?
                .into_iter()
                .map(|v| self.cache.as_stored(v))
                .collect();
            if vectors.len() != batch.len() {
                return Err(EmbedError::BadResponse {
                    provider: model.clone(),
                    reason: format!("{} vectors for {} texts", vectors.len(), batch.len()),
                });
            }
            let entries: Vec<(String, Vec<f32>)> = todo
                .iter()
                .map(|(k, _)| k.clone())
                .zip(vectors.iter().cloned())
                .collect();
            self.cache.put_vectors(&model, &entries).await?;
            vectors
        };
        self.misses.fetch_add(todo.len() as u64, Ordering::Relaxed);
        self.hits
            .fetch_add((texts.len() - todo.len()) as u64, Ordering::Relaxed);
        for (i, key) in keys.iter().enumerate() {
            if found[i].is_none() {
                found[i] = Some(fresh[positions[key.as_str()]].clone());
            }
        }
        Ok(found.into_iter().flatten().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts calls and texts; vector = [len, first byte].
    #[derive(Default)]
    struct Counting {
        texts: AtomicU64,
        /// Plays a model cheaper than the cache (the static one).
        cheap: bool,
    }

    #[async_trait]
    impl Embedder for Counting {
        fn model_id(&self) -> &str {
            "counting"
        }
        fn dims(&self) -> usize {
            2
        }
        fn worth_caching(&self) -> bool {
            !self.cheap
        }
        fn limits(&self) -> BatchLimits {
            BatchLimits {
                max_texts: 10,
                max_tokens: 1000,
                max_text_tokens: 100,
            }
        }
        async fn embed(
            &self,
            texts: &[String],
            _kind: InputKind,
        ) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.texts.fetch_add(texts.len() as u64, Ordering::Relaxed);
            Ok(texts
                .iter()
                .map(|t| vec![t.len() as f32, f32::from(t.bytes().next().unwrap_or(0))])
                .collect())
        }
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    /// A memory cache that counts its trims.
    #[derive(Default)]
    struct Trims {
        inner: MemoryCache,
        trims: AtomicU64,
    }

    #[async_trait]
    impl VectorCache for Trims {
        async fn get_vectors(
            &self,
            model: &str,
            keys: &[String],
        ) -> Result<Vec<Option<Vec<f32>>>, EmbedError> {
            self.inner.get_vectors(model, keys).await
        }
        async fn put_vectors(
            &self,
            model: &str,
            entries: &[(String, Vec<f32>)],
        ) -> Result<(), EmbedError> {
            self.inner.put_vectors(model, entries).await
        }
        async fn trim(&self, _: &str, _: u64) -> Result<u64, EmbedError> {
            self.trims.fetch_add(1, Ordering::Relaxed);
            Ok(0)
        }
    }

    #[tokio::test]
    async fn the_cache_is_trimmed_once_then_when_it_could_be_over_its_bound() {
        let cache = Arc::new(Trims {
            inner: MemoryCache::new(1_000),
            ..Trims::default()
        });
        let trims = || cache.trims.load(Ordering::Relaxed);
        let cached = CachedEmbedder::new(Arc::new(Counting::default()), cache.clone());
        cached.bound_kept(32).await.unwrap();
        assert_eq!(trims(), 1, "the first time");
        cached.bound_kept(32).await.unwrap();
        assert_eq!(trims(), 1, "nothing new since");
        cached.embed(&s(&["a"]), InputKind::Document).await.unwrap();
        cached.bound_kept(32).await.unwrap();
        assert_eq!(trims(), 1, "one new vector is under a sixteenth of 32");
        cached.embed(&s(&["b"]), InputKind::Document).await.unwrap();
        cached.bound_kept(32).await.unwrap();
        assert_eq!(trims(), 2, "two are not");
        // A model not worth caching keeps nothing to trim.
        let cheap = CachedEmbedder::new(
            Arc::new(Counting {
                cheap: true,
                ..Counting::default()
            }),
            cache.clone(),
        );
        cheap.bound_kept(0).await.unwrap();
        assert_eq!(trims(), 2);
    }

    #[tokio::test]
    async fn identical_text_is_embedded_once() {
        let inner = Arc::new(Counting::default());
        let cached = CachedEmbedder::new(inner.clone(), Arc::new(MemoryCache::new(100)));
        let a = cached
            .embed(&s(&["alpha", "beta", "alpha"]), InputKind::Document)
            .await
            .unwrap();
        assert_eq!(a, vec![vec![5.0, 97.0], vec![4.0, 98.0], vec![5.0, 97.0]]);
        assert_eq!(inner.texts.load(Ordering::Relaxed), 2);
        let b = cached
            .embed(&s(&["beta", "gamma"]), InputKind::Document)
            .await
            .unwrap();
        assert_eq!(b, vec![vec![4.0, 98.0], vec![5.0, 103.0]]);
        assert_eq!(inner.texts.load(Ordering::Relaxed), 3);
        // A query with the same text is a different input.
        cached.embed(&s(&["beta"]), InputKind::Query).await.unwrap();
        assert_eq!(inner.texts.load(Ordering::Relaxed), 4);
        assert_eq!(cached.stats(), CacheStats { hits: 2, misses: 4 });
    }

    #[tokio::test]
    async fn a_model_cheaper_than_the_cache_is_neither_stored_nor_read() {
        let inner = Arc::new(Counting {
            cheap: true,
            ..Counting::default()
        });
        let cache = Arc::new(MemoryCache::new(100));
        let cached = CachedEmbedder::new(inner.clone(), cache.clone());
        let texts = s(&["alpha", "beta"]);
        let looked = cached.lookup(&texts, InputKind::Document).await.unwrap();
        assert_eq!(looked, vec![Some(vec![5.0, 97.0]), Some(vec![4.0, 98.0])]);
        cached.embed(&texts, InputKind::Document).await.unwrap();
        cached.embed(&texts, InputKind::Document).await.unwrap();
        assert!(cache.is_empty(), "{} vectors stored", cache.len());
        assert_eq!(
            inner.texts.load(Ordering::Relaxed),
            6,
            "the model runs every time"
        );
    }

    #[tokio::test]
    async fn models_do_not_share_entries() {
        let cache = MemoryCache::new(10);
        cache
            .put_vectors("m1", &[("k".into(), vec![1.0])])
            .await
            .unwrap();
        let got = cache.get_vectors("m2", &s(&["k"])).await.unwrap();
        assert_eq!(got, vec![None]);
        let got = cache.get_vectors("m1", &s(&["k", "x"])).await.unwrap();
        assert_eq!(got, vec![Some(vec![1.0]), None]);
    }
}
