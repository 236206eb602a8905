//! Static embeddings: a model2vec-format table of one vector per vocabulary token.
//!
//! A text's vector is the mean of its tokens' rows, L2-normalised: ~0.01 ms a snippet,
//! weaker alone than BM25 but a useful dense signal where a transformer is too slow
//! (tests, CI, very large repositories). [`distill`] builds the table from a
//! [`Teacher`] (MiniLM under candle, or an ONNX model) the way model2vec does: embed every
//! vocabulary token on its own,
//! reduce with PCA, weight by estimated token frequency (Zipf's law + SIF).
//!
//! The folder layout is model2vec's (`model.safetensors` with an `embeddings` tensor,
//! `tokenizer.json`, `config.json`), so a distilled folder also loads in model2vec's own
//! libraries. The loader is written here rather than taken from `model2vec-rs` because
//! that crate pins an older `tokenizers` (a second copy of the crate plus a C++ build
//! step) while the format itself is three files.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use candle_core::{DType, Device, Tensor};
use serde::{Deserialize, Serialize};
use tokenizers::Tokenizer;

use super::{BatchLimits, EmbedError, Embedder, InputKind, l2_normalize, split_identifiers};

/// Tokens of one text that a static model reads.
const MAX_TOKENS: usize = 2048;

/// `config.json` of a model2vec folder (the fields Sextant reads and writes).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StaticConfig {
    /// Always `model2vec`.
    #[serde(default)]
    pub model_type: Option<String>,
    /// L2-normalise output vectors.
    #[serde(default = "yes")]
    pub normalize: bool,
    /// Width of the vectors.
    #[serde(default)]
    pub hidden_dim: Option<usize>,
    /// The transformer this table was distilled from.
    #[serde(default)]
    pub base_model_name: Option<String>,
    /// PCA width used at distillation.
    #[serde(default)]
    pub apply_pca: Option<usize>,
    /// SIF coefficient used at distillation.
    #[serde(default)]
    pub sif_coefficient: Option<f64>,
}

fn yes() -> bool {
    true
}

/// A static (lookup-table) embedder.
#[derive(Clone)]
pub struct StaticEmbedder {
    inner: Arc<Inner>,
}

struct Inner {
    table: Vec<f32>,
    dims: usize,
    vocab: usize,
    tokenizer: Tokenizer,
    normalize: bool,
    split_identifiers: bool,
    model_id: String,
}

impl StaticEmbedder {
    /// Loads a model2vec-format folder.
    pub fn load(dir: &Path, split_identifiers: bool) -> Result<Self, EmbedError> {
        let model_err = |reason: String| EmbedError::Model {
            dir: dir.to_path_buf(),
            reason,
        };
        for needed in ["model.safetensors", "tokenizer.json"] {
            if !dir.join(needed).is_file() {
                return Err(EmbedError::ModelMissing {
                    dir: dir.to_path_buf(),
                    hint: format!(
                        "{needed} is missing; run `sextant model distill` (it fetches the default \
                         model if needed) or point --static-model-dir at a model2vec folder"
                    ),
                });
            }
        }
        let config_path = dir.join("config.json");
        let config: StaticConfig = if config_path.is_file() {
            let bytes = std::fs::read(&config_path).map_err(|e| EmbedError::io(&config_path, e))?;
            serde_json::from_slice(&bytes).map_err(|e| model_err(format!("config.json: {e}")))?
        } else {
            StaticConfig {
                model_type: None,
                normalize: true,
                hidden_dim: None,
                base_model_name: None,
                apply_pca: None,
                sif_coefficient: None,
            }
        };
        let tensors = candle_core::safetensors::load(dir.join("model.safetensors"), &Device::Cpu)
            .map_err(|e| model_err(format!("model.safetensors: {e}")))?;
        let embeddings = tensors
            .get("embeddings")
            .ok_or_else(|| model_err("model.safetensors has no `embeddings` tensor".into()))?;
        let (vocab, dims) = embeddings
            .dims2()
            .map_err(|e| model_err(format!("`embeddings` is not a matrix: {e}")))?;
        let table: Vec<f32> = embeddings
            .to_dtype(DType::F32)?
            .flatten_all()?
            .to_vec1()
            .map_err(|e| model_err(e.to_string()))?;
        let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
            .map_err(|e| model_err(format!("tokenizer.json: {e}")))?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(None)
            .map_err(|e| model_err(format!("truncation: {e}")))?;
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "static".into());
        Ok(Self {
            inner: Arc::new(Inner {
                table,
                dims,
                vocab,
                tokenizer,
                normalize: config.normalize,
                split_identifiers,
                model_id: format!(
                    "static:{name}:{dims}{}",
                    if split_identifiers { ":split" } else { "" }
                ),
            }),
        })
    }

    /// Embeds texts on the calling thread.
    pub fn embed_blocking(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        texts.iter().map(|t| self.inner.embed_one(t)).collect()
    }

    /// The table rows a text's vector is the mean of, in order (repeats included): what
    /// a table is fitted on (`tools/train/static_fit.py`).
    pub fn token_ids(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        self.inner.token_ids(text)
    }
}

impl Inner {
    fn token_ids(&self, text: &str) -> Result<Vec<u32>, EmbedError> {
        let text = crate::text::truncate_chars(text, MAX_TOKENS * 8);
        let text = if self.split_identifiers {
            split_identifiers(&text)
        } else {
            text
        };
        let encoding = self
            .tokenizer
            .encode(text, false)
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        Ok(encoding
            .get_ids()
            .iter()
            .take(MAX_TOKENS)
            .copied()
            .filter(|&id| (id as usize) < self.vocab)
            .collect())
    }

    fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut v = vec![0f32; self.dims];
        let mut n = 0usize;
        for id in self.token_ids(text)? {
            let id = id as usize;
            let row = &self.table[id * self.dims..(id + 1) * self.dims];
            v.iter_mut().zip(row).for_each(|(a, b)| *a += b);
            n += 1;
        }
        if n > 0 {
            v.iter_mut().for_each(|x| *x /= n as f32);
        }
        if self.normalize {
            l2_normalize(&mut v);
        }
        Ok(v)
    }
}

#[async_trait]
impl Embedder for StaticEmbedder {
    fn model_id(&self) -> &str {
        &self.inner.model_id
    }

    fn dims(&self) -> usize {
        self.inner.dims
    }

    fn limits(&self) -> BatchLimits {
        BatchLimits::texts_of(1024, MAX_TOKENS)
    }

    /// A table lookup per token: cheaper than reading a cached vector back. So every
    /// vector is computed with its row (`lookup`), and the embedding stage (a second
    /// write of each row) has nothing to do.
    fn worth_caching(&self) -> bool {
        false
    }

    async fn embed(&self, texts: &[String], _kind: InputKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        // Microseconds per text: no need to leave the async thread for small batches.
        if texts.len() <= 64 {
            return self.embed_blocking(texts);
        }
        let this = self.clone();
        let texts = texts.to_vec();
        super::blocking(move || this.embed_blocking(&texts)).await
    }
}

/// Distillation settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DistillOptions {
    /// Output width after PCA (capped at the teacher's width).
    pub pca_dims: usize,
    /// SIF coefficient for the Zipf-estimated frequency weighting.
    pub sif_coefficient: f64,
    /// Vocabulary tokens run through the teacher per forward pass.
    pub batch: usize,
}

impl Default for DistillOptions {
    fn default() -> Self {
        Self {
            pca_dims: 256,
            sif_coefficient: 1e-4,
            batch: 512,
        }
    }
}

/// A model a static model can be distilled from: a transformer whose tokenizer names the
/// vocabulary and which embeds already-tokenized inputs.
pub trait Teacher: Embedder {
    /// The tokenizer whose vocabulary becomes the static model's rows.
    fn tokenizer(&self) -> &Tokenizer;
    /// One pooled, normalised vector per input (token ids, special tokens included),
    /// each independent of the others.
    fn embed_token_ids(&self, inputs: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, EmbedError>;
}

/// Distills a static model from `teacher` into `out_dir` (created; files replaced), the
/// model2vec recipe: every vocabulary token is embedded alone (`[CLS] token [SEP]`), the
/// table is centred and projected on its top `pca_dims` principal components, and each
/// row is weighted by `sif / (sif + p(token))`, with `p` estimated from the token's rank
/// (its id) by Zipf's law. `progress` is called with (tokens done, total).
pub fn distill(
    teacher: &dyn Teacher,
    teacher_dir: &Path,
    out_dir: &Path,
    options: DistillOptions,
    mut progress: impl FnMut(usize, usize),
) -> Result<(), EmbedError> {
    let tokenizer = teacher.tokenizer();
    let mut vocab: Vec<(String, u32)> = tokenizer.get_vocab(false).into_iter().collect();
    vocab.sort_by_key(|(_, id)| *id);
    let n = vocab
        .iter()
        .map(|(_, id)| *id as usize + 1)
        .max()
        .unwrap_or(0);
    let special = |t: &str| tokenizer.token_to_id(t);
    let (cls, sep) = match (special("[CLS]"), special("[SEP]")) {
        (Some(c), Some(s)) => (vec![c], vec![s]),
        _ => (Vec::new(), Vec::new()),
    };
    let dims = teacher.dims();
    let mut table = vec![0f32; n * dims];
    for (done, group) in vocab.chunks(options.batch.max(1)).enumerate() {
        let inputs: Vec<Vec<u32>> = group
            .iter()
            .map(|(_, id)| [cls.as_slice(), &[*id], sep.as_slice()].concat())
            .collect();
        for ((_, id), v) in group.iter().zip(teacher.embed_token_ids(&inputs)?) {
            let id = *id as usize;
            table[id * dims..(id + 1) * dims].copy_from_slice(&v);
        }
        progress(((done + 1) * options.batch).min(vocab.len()), vocab.len());
    }
    let k = options.pca_dims.clamp(1, dims);
    let reduced = pca(&table, n, dims, k)?;
    let weighted = sif_weight(reduced, n, k, options.sif_coefficient);

    std::fs::create_dir_all(out_dir).map_err(|e| EmbedError::io(out_dir, e))?;
    let tensor = Tensor::from_vec(weighted, (n, k), &Device::Cpu)?;
    let mut tensors = HashMap::new();
    tensors.insert("embeddings".to_string(), tensor);
    candle_core::safetensors::save(&tensors, out_dir.join("model.safetensors"))?;
    let tok_src = teacher_dir.join("tokenizer.json");
    let tok_dst = out_dir.join("tokenizer.json");
    std::fs::copy(&tok_src, &tok_dst).map_err(|e| EmbedError::io(&tok_dst, e))?;
    let config = serde_json::json!({
        "model_type": "model2vec",
        "architectures": ["StaticModel"],
        "tokenizer_name": teacher.model_id(),
        "base_model_name": teacher.model_id(),
        "apply_pca": k,
        "sif_coefficient": options.sif_coefficient,
        "hidden_dim": k,
        "normalize": true,
    });
    let config_path = out_dir.join("config.json");
    std::fs::write(
        &config_path,
        serde_json::to_vec_pretty(&config).unwrap_or_default(),
    )
    .map_err(|e| EmbedError::io(&config_path, e))?;
    Ok(())
}

/// Projects the rows of `table` (n × d, row-major) on their top `k` principal components.
fn pca(table: &[f32], n: usize, d: usize, k: usize) -> Result<Vec<f32>, EmbedError> {
    let x = Tensor::from_slice(table, (n, d), &Device::Cpu)?;
    let centred = x.broadcast_sub(&x.mean_keepdim(0)?)?;
    let cov: Vec<f32> = (centred.t()?.matmul(&centred)? / (n.max(2) - 1) as f64)?
        .flatten_all()?
        .to_vec1()?;
    let cov = nalgebra::DMatrix::from_row_slice(d, d, &cov).map(f64::from);
    let eigen = nalgebra::SymmetricEigen::new(cov);
    let mut order: Vec<usize> = (0..d).collect();
    order.sort_by(|&a, &b| eigen.eigenvalues[b].total_cmp(&eigen.eigenvalues[a]));
    let mut components = vec![0f32; d * k];
    for (j, &col) in order.iter().take(k).enumerate() {
        for i in 0..d {
            components[i * k + j] = eigen.eigenvectors[(i, col)] as f32;
        }
    }
    let components = Tensor::from_vec(components, (d, k), &Device::Cpu)?;
    Ok(centred.matmul(&components)?.flatten_all()?.to_vec1()?)
}

/// Weights row `i` by `sif / (sif + p_i)`, `p_i ∝ 1 / (i + 2)` (Zipf's law over token ids,
/// which WordPiece vocabularies roughly order by frequency).
fn sif_weight(mut table: Vec<f32>, n: usize, k: usize, sif: f64) -> Vec<f32> {
    let total: f64 = (0..n).map(|i| 1.0 / (i as f64 + 2.0)).sum();
    for i in 0..n {
        let p = (1.0 / (i as f64 + 2.0)) / total;
        let w = (sif / (sif + p)) as f32;
        table[i * k..(i + 1) * k].iter_mut().for_each(|x| *x *= w);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pca_keeps_the_dominant_direction() {
        // Points spread along (1, 1, 0) with small noise on the other axes.
        let mut table = Vec::new();
        for i in 0..200 {
            let t = i as f32 / 10.0 - 10.0;
            let noise = ((i * 7919) % 13) as f32 / 100.0;
            table.extend([t + noise, t - noise, noise]);
        }
        let reduced = pca(&table, 200, 3, 1).unwrap();
        assert_eq!(reduced.len(), 200);
        // Projection on the first component is ±(x + y)/√2 after centring.
        let first = reduced[0].abs();
        let expected = ((table[0] + table[1]) / 2f32.sqrt() - 0.0).abs();
        assert!((first - expected).abs() < 0.2, "{first} vs {expected}");
    }

    #[test]
    fn sif_downweights_frequent_tokens() {
        let w = sif_weight(vec![1.0; 1000], 1000, 1, 1e-3);
        assert!(w[0] < w[10] && w[10] < w[999]);
        assert!(w[999] <= 1.0 && w[0] > 0.0);
    }
}
