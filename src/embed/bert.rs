//! Local transformer embeddings: any BERT-family model folder run with candle on the CPU.
//!
//! A model folder holds `config.json`, `tokenizer.json` and `model.safetensors` (the
//! sentence-transformers layout; `sentence_bert_config.json` and `1_Pooling/config.json`
//! are read when present). The default is all-MiniLM-L6-v2 (384 dims), fetched by
//! [`super::fetch`]. Output: mean-pooled (or CLS-pooled, when the pooling config says so)
//! and L2-normalised vectors.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig};
use serde::Deserialize;
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

use super::{BatchLimits, EmbedError, Embedder, InputKind, l2_normalize, split_identifiers};

/// Texts run through the model together; sorted by length first so padding stays small.
const MICRO_BATCH: usize = 16;

/// How a local model is run.
#[derive(Debug, Clone, PartialEq)]
pub struct BertOptions {
    /// Tokens read per text (longer input is truncated). `None`: the folder's
    /// `sentence_bert_config.json` `max_seq_length`, else the model's position limit.
    pub max_tokens: Option<usize>,
    /// Split code identifiers into words before tokenizing (see [`split_identifiers`]).
    pub split_identifiers: bool,
    /// Prefix put before queries (instruction-tuned models, e.g. `search_query: `).
    pub query_prefix: String,
    /// Prefix put before documents.
    pub document_prefix: String,
}

impl Default for BertOptions {
    fn default() -> Self {
        Self {
            max_tokens: None,
            split_identifiers: true,
            query_prefix: String::new(),
            document_prefix: String::new(),
        }
    }
}

/// A BERT-family sentence embedder running locally with candle.
#[derive(Clone)]
pub struct BertEmbedder {
    inner: Arc<Inner>,
}

struct Inner {
    model: BertModel,
    tokenizer: Tokenizer,
    device: Device,
    model_id: String,
    dims: usize,
    max_tokens: usize,
    cls_pooling: bool,
    options: BertOptions,
}

#[derive(Deserialize)]
struct SentenceBertConfig {
    max_seq_length: Option<usize>,
}

#[derive(Deserialize)]
struct PoolingConfig {
    #[serde(default)]
    pooling_mode_cls_token: bool,
}

#[derive(Deserialize)]
struct ModelType {
    model_type: Option<String>,
}

fn read_json<T: for<'de> Deserialize<'de>>(dir: &Path, path: &Path) -> Result<T, EmbedError> {
    let bytes = std::fs::read(path).map_err(|e| EmbedError::io(path, e))?;
    serde_json::from_slice(&bytes).map_err(|e| EmbedError::Model {
        dir: dir.to_path_buf(),
        reason: format!("{}: {e}", path.display()),
    })
}

impl BertEmbedder {
    /// Loads the model in `dir`.
    pub fn load(dir: &Path, options: BertOptions) -> Result<Self, EmbedError> {
        let model_err = |reason: String| EmbedError::Model {
            dir: dir.to_path_buf(),
            reason,
        };
        let weights = dir.join("model.safetensors");
        for needed in ["config.json", "tokenizer.json", "model.safetensors"] {
            if !dir.join(needed).is_file() {
                return Err(EmbedError::ModelMissing {
                    dir: dir.to_path_buf(),
                    hint: format!(
                        "{needed} is missing; run `sextant model fetch`, or point SEXTANT_MODEL_DIR at a \
                         folder with config.json, tokenizer.json and model.safetensors"
                    ),
                });
            }
        }
        let config_path = dir.join("config.json");
        let kind: ModelType = read_json(dir, &config_path)?;
        match kind.model_type.as_deref() {
            Some("bert") | None => {}
            Some(other) => {
                return Err(model_err(format!(
                    "model_type `{other}` is not supported yet (supported: bert)"
                )));
            }
        }
        let config: BertConfig = read_json(dir, &config_path)?;
        let device = Device::Cpu;
        // SAFETY: the weights file is memory-mapped read-only; Sextant never writes to
        // model folders while a model is loaded.
        let vb = unsafe { VarBuilder::from_mmaped_safetensors(&[&weights], DType::F32, &device) }
            .map_err(|e| model_err(e.to_string()))?;
        let model = BertModel::load(vb, &config).map_err(|e| model_err(e.to_string()))?;

        let st_config = dir.join("sentence_bert_config.json");
        let folder_max = if st_config.is_file() {
            read_json::<SentenceBertConfig>(dir, &st_config)?.max_seq_length
        } else {
            None
        };
        let max_tokens = options
            .max_tokens
            .or(folder_max)
            .unwrap_or(config.max_position_embeddings)
            .clamp(8, config.max_position_embeddings);
        let pooling = dir.join("1_Pooling").join("config.json");
        let cls_pooling =
            pooling.is_file() && read_json::<PoolingConfig>(dir, &pooling)?.pooling_mode_cls_token;

        let tokenizer = batch_tokenizer(dir, max_tokens)?;

        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".into());
        let model_id = model_id(&name, max_tokens, &options);
        Ok(Self {
            inner: Arc::new(Inner {
                model,
                tokenizer,
                device,
                model_id,
                dims: config.hidden_size,
                max_tokens,
                cls_pooling,
                options,
            }),
        })
    }

    /// Tokens read per text.
    pub fn max_tokens(&self) -> usize {
        self.inner.max_tokens
    }

    /// Embeds texts on the calling thread (CPU-bound: call from a blocking context).
    pub fn embed_blocking(
        &self,
        texts: &[String],
        kind: InputKind,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let inner = &self.inner;
        let prepared = prepare_texts(texts, kind, &inner.options, inner.max_tokens);
        in_length_order(&prepared, MICRO_BATCH, |batch| inner.forward_strs(batch))
    }
}

impl super::static_model::Teacher for BertEmbedder {
    /// The tokenizer with Sextant's padding and truncation.
    fn tokenizer(&self) -> &Tokenizer {
        &self.inner.tokenizer
    }

    /// Padded to the longest input and masked (f32 under candle: no batch effect).
    fn embed_token_ids(&self, inputs: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let len = inputs.iter().map(Vec::len).max().unwrap_or(0);
        let mut ids = Vec::with_capacity(inputs.len() * len);
        let mut mask = Vec::with_capacity(inputs.len() * len);
        for input in inputs {
            ids.extend(
                input
                    .iter()
                    .copied()
                    .chain(std::iter::repeat_n(0, len - input.len())),
            );
            mask.extend(
                std::iter::repeat_n(1u32, input.len())
                    .chain(std::iter::repeat_n(0, len - input.len())),
            );
        }
        self.inner.forward_ids(ids, mask, inputs.len(), len)
    }
}

impl Inner {
    fn forward_strs(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        let len = encodings.first().map_or(0, |e| e.get_ids().len());
        let mut ids = Vec::with_capacity(texts.len() * len);
        let mut mask = Vec::with_capacity(texts.len() * len);
        for e in &encodings {
            ids.extend_from_slice(e.get_ids());
            mask.extend_from_slice(e.get_attention_mask());
        }
        self.forward_ids(ids, mask, texts.len(), len)
    }

    fn forward_ids(
        &self,
        ids: Vec<u32>,
        mask: Vec<u32>,
        n: usize,
        len: usize,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let ids = Tensor::from_vec(ids, (n, len), &self.device)?;
        let mask = Tensor::from_vec(mask, (n, len), &self.device)?;
        let type_ids = ids.zeros_like()?;
        let hidden = self.model.forward(&ids, &type_ids, Some(&mask))?;
        let pooled = if self.cls_pooling {
            hidden.narrow(1, 0, 1)?.squeeze(1)?
        } else {
            let m = mask.to_dtype(DType::F32)?.unsqueeze(2)?;
            let summed = hidden.broadcast_mul(&m)?.sum(1)?;
            let counts = m.sum(1)?.clamp(1e-9f32, f32::MAX)?;
            summed.broadcast_div(&counts)?
        };
        let mut vectors: Vec<Vec<f32>> = pooled.to_vec2()?;
        vectors.iter_mut().for_each(|v| l2_normalize(v));
        Ok(vectors)
    }
}

#[async_trait]
impl Embedder for BertEmbedder {
    fn model_id(&self) -> &str {
        &self.inner.model_id
    }

    fn dims(&self) -> usize {
        self.inner.dims
    }

    fn limits(&self) -> BatchLimits {
        BatchLimits::texts_of(64, self.inner.max_tokens)
    }

    async fn embed(&self, texts: &[String], kind: InputKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        super::embed_on_pool(self, texts, kind, Self::embed_blocking).await
    }
}

/// The cache identity of a local model run with `options` (`local:NAME:TOKENS[:split][:prefixes]`).
/// The model folder's `tokenizer.json`, set to pad each micro-batch to its longest text
/// and truncate at `max_tokens` (packaged tokenizers often pad and truncate to a fixed
/// 128 instead).
pub(crate) fn batch_tokenizer(dir: &Path, max_tokens: usize) -> Result<Tokenizer, EmbedError> {
    let model_err = |reason: String| EmbedError::Model {
        dir: dir.to_path_buf(),
        reason,
    };
    let mut tokenizer = Tokenizer::from_file(dir.join("tokenizer.json"))
        .map_err(|e| model_err(format!("tokenizer.json: {e}")))?;
    let pad_id = tokenizer.token_to_id("[PAD]").unwrap_or(0);
    tokenizer.with_padding(Some(PaddingParams {
        strategy: PaddingStrategy::BatchLongest,
        pad_id,
        ..PaddingParams::default()
    }));
    tokenizer
        .with_truncation(Some(TruncationParams {
            max_length: max_tokens,
            ..TruncationParams::default()
        }))
        .map_err(|e| model_err(format!("truncation: {e}")))?;
    Ok(tokenizer)
}

pub(crate) fn model_id(name: &str, max_tokens: usize, options: &BertOptions) -> String {
    format!(
        "local:{name}:{max_tokens}{}{}",
        if options.split_identifiers {
            ":split"
        } else {
            ""
        },
        if options.query_prefix.is_empty() && options.document_prefix.is_empty() {
            String::new()
        } else {
            format!(":{}|{}", options.query_prefix, options.document_prefix)
        }
    )
}

/// [`prepare_text`] for each of `texts`.
pub(crate) fn prepare_texts(
    texts: &[String],
    kind: InputKind,
    options: &BertOptions,
    max_tokens: usize,
) -> Vec<String> {
    texts
        .iter()
        .map(|t| prepare_text(t, kind, options, max_tokens))
        .collect()
}

/// What a local model reads for `text`: its prefix, then the text cut near the model's
/// input length and (optionally) with identifiers split into words.
pub(crate) fn prepare_text(
    text: &str,
    kind: InputKind,
    options: &BertOptions,
    max_tokens: usize,
) -> String {
    let prefix = match kind {
        InputKind::Query => &options.query_prefix,
        InputKind::Document => &options.document_prefix,
    };
    // Cut long inputs early: the tokenizer truncates anyway, but normalising and
    // splitting megabytes of text it will drop costs time. ~8 chars per token is
    // above what code averages, so nothing the model would read is lost.
    let text = crate::text::truncate_chars(text, max_tokens * 8);
    let body = if options.split_identifiers {
        split_identifiers(&text)
    } else {
        text
    };
    format!("{prefix}{body}")
}

/// Runs `run` over `texts` in groups of `group` texts of similar length (padding stays
/// small) and returns its vectors in the texts' original order.
pub(crate) fn in_length_order(
    texts: &[String],
    group: usize,
    mut run: impl FnMut(&[&str]) -> Result<Vec<Vec<f32>>, EmbedError>,
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let mut order: Vec<usize> = (0..texts.len()).collect();
    order.sort_by_key(|&i| texts[i].len());
    let mut out = vec![Vec::new(); texts.len()];
    for ids in order.chunks(group.max(1)) {
        let batch: Vec<&str> = ids.iter().map(|&i| texts[i].as_str()).collect();
        let vectors = run(&batch)?;
        if vectors.len() != ids.len() {
            return Err(EmbedError::Inference(format!(
                "{} vectors for {} texts",
                vectors.len(),
                ids.len()
            )));
        }
        for (&i, v) in ids.iter().zip(vectors) {
            out[i] = v;
        }
    }
    Ok(out)
}
