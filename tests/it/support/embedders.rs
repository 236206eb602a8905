//! A deterministic stand-in embedder for engine tests.

use std::sync::Mutex;

use async_trait::async_trait;
use sextant::embed::{BatchLimits, EmbedError, Embedder, InputKind};

/// Width of the [`Recorder`]'s vectors.
pub const DIMS: usize = 8;

/// Hash-based vectors; remembers every text embedded.
#[derive(Default)]
pub struct Recorder {
    /// Every text embedded so far.
    pub texts: Mutex<Vec<String>>,
}

impl Recorder {
    /// The texts embedded since the last call.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.texts.lock().unwrap())
    }
}

#[async_trait]
impl Embedder for Recorder {
    fn model_id(&self) -> &str {
        "recorder"
    }
    fn dims(&self) -> usize {
        DIMS
    }
    fn limits(&self) -> BatchLimits {
        BatchLimits::texts_of(32, 100_000)
    }
    async fn embed(&self, texts: &[String], _: InputKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.texts.lock().unwrap().extend(texts.iter().cloned());
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.1f32; DIMS];
                for (i, b) in t.bytes().enumerate() {
                    v[i % DIMS] += f32::from(b) / 255.0;
                }
                v
            })
            .collect())
    }
}

/// Width of the [`BagOfWords`] vectors.
pub const BOW_DIMS: usize = 64;

/// Bag-of-words vectors: each lower-cased identifier part hashed into one of
/// [`BOW_DIMS`] buckets, so texts sharing words are close (a deterministic stand-in whose
/// similarities mean something).
#[derive(Default)]
pub struct BagOfWords;

fn bucket(word: &str) -> usize {
    // FNV-1a.
    let mut h: u64 = 0xcbf29ce484222325;
    for b in word.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    (h % BOW_DIMS as u64) as usize
}

#[async_trait]
impl Embedder for BagOfWords {
    fn model_id(&self) -> &str {
        "bag-of-words"
    }
    fn dims(&self) -> usize {
        BOW_DIMS
    }
    fn limits(&self) -> BatchLimits {
        BatchLimits::texts_of(64, 100_000)
    }
    async fn embed(&self, texts: &[String], _: InputKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0.0f32; BOW_DIMS];
                for word in sextant::text::search_text(t).split(' ') {
                    if word.len() > 2 {
                        v[bucket(word)] += 1.0;
                    }
                }
                v
            })
            .collect())
    }
}

/// A model that embeds only as many batches as it is let through (`gate.add_permits`):
/// rows written ahead of their vectors stay pending until then.
pub struct Gated {
    /// The model that embeds once a batch is let through.
    pub inner: std::sync::Arc<dyn Embedder>,
    /// One permit per batch.
    pub gate: tokio::sync::Semaphore,
}

impl Gated {
    /// `inner` behind a gate that lets nothing through yet.
    pub fn closed(inner: std::sync::Arc<dyn Embedder>) -> Self {
        Self {
            inner,
            gate: tokio::sync::Semaphore::new(0),
        }
    }
}

#[async_trait]
impl Embedder for Gated {
    fn model_id(&self) -> &str {
        "gated"
    }
    fn dims(&self) -> usize {
        self.inner.dims()
    }
    fn limits(&self) -> BatchLimits {
        self.inner.limits()
    }
    async fn embed(&self, texts: &[String], kind: InputKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        let permit = self.gate.acquire().await.expect("the gate is never closed");
        permit.forget();
        self.inner.embed(texts, kind).await
    }
}
