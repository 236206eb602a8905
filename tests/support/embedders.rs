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
        BatchLimits {
            max_texts: 32,
            max_tokens: 1_000_000,
            max_text_tokens: 100_000,
        }
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
