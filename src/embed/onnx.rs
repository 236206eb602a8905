//! Local models run with ONNX Runtime: [`OnnxEmbedder`] (bi-encoders such as
//! bge-small-en-v1.5, int8) and [`OnnxReranker`] (cross-encoders such as
//! ms-marco-MiniLM-L-12-v2). Both read a model folder described by a
//! [`ModelManifest`] and run on the CPU through the library [`super::runtime`] loads.
//!
//! Questions run on their own session with half the cores, so a question never waits
//! behind an indexing job and the rest of its search runs beside it; documents, a
//! reranker's pairs and a distillation's tokens run side by side on a pool of sessions
//! with a share of the cores each, which does more texts a second than one session's
//! threads splitting each small run (measured in
//! docs/BENCHMARKS.md, "Side by side"). Each text (each query-document pair) runs alone:
//! the int8 models quantize activations per run, so a text's vector must not depend on
//! its batch-mates (see `MICRO_BATCH`); the model id says so (`:solo`), so that vectors
//! of batched runs from an older index are not compared with these.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use ort::session::Session;
use ort::session::builder::{GraphOptimizationLevel, PrepackedWeights};
use ort::value::Tensor;
use tokenizers::{EncodeInput, Encoding, Tokenizer};

use super::bert::{BertOptions, batch_tokenizer, prepare_texts};
use super::manifest::{ModelKind, ModelManifest, Pooling};
use super::{BatchLimits, EmbedError, Embedder, InputKind, Reranker, l2_normalize};

/// Texts run through the model together: one. The int8 models quantize their
/// activations per tensor at run time (`DynamicQuantizeLinear`), so a text run beside
/// others (and their padding) gets another vector than alone: a cosine of 0.96 to its own
/// vector beside a short text, 0.99 beside one of its length. A query is always embedded
/// alone; a document must be too, or its vector depends on the texts it was batched with
/// (measured in docs/BENCHMARKS.md, "One text per run").
const MICRO_BATCH: usize = 1;

fn inference(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Inference(e.to_string())
}

/// The cores a model may use (2 on the reference machine).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Most sessions run side by side: each holds its own copy of the model's weights.
const MAX_SIDE_BY_SIDE: usize = 4;

/// The threads of the session that embeds questions, for `cores`: half of them, so that
/// the rest of a search (its full-text leg, read meanwhile) is not crowded out.
fn question_threads(cores: usize) -> usize {
    (cores / 2).max(1)
}

/// How many sessions run texts side by side, and the threads each uses, for `cores`.
fn side_by_side(cores: usize) -> (usize, usize) {
    let sessions = cores.clamp(1, MAX_SIDE_BY_SIDE);
    (sessions, (cores / sessions).max(1))
}

/// Opens sessions of one model folder: all of them share the weights their kernels pack
/// at load (one copy, not one a session).
struct Opener {
    env: &'static ort::environment::Environment,
    dir: std::path::PathBuf,
    packed: PrepackedWeights,
}

impl Opener {
    /// A session of the model with `threads` intra-op threads.
    fn open(&self, threads: usize) -> Result<Session, EmbedError> {
        let model_err = |reason: String| EmbedError::Model {
            dir: self.dir.clone(),
            reason,
        };
        let options = |e: String| model_err(format!("session options: {e}"));
        Session::builder(self.env)
            .map_err(|e| options(e.to_string()))?
            .with_prepacked_weights(&self.packed)
            .map_err(|e| options(e.to_string()))?
            .with_optimization_level(GraphOptimizationLevel::Level3)
            .map_err(|e| options(e.to_string()))?
            .with_intra_threads(threads)
            .map_err(|e| options(e.to_string()))?
            // Inputs vary in length: per-shape memory plans only hold memory.
            .with_memory_pattern(false)
            .map_err(|e| options(e.to_string()))?
            .commit_from_file(self.dir.join("model.onnx"))
            .map_err(|e| model_err(format!("model.onnx: {e}")))
    }
}

/// A model folder opened for inference: sessions, tokenizer and input names.
struct Loaded {
    opener: Opener,
    /// The session for a text run alone: every core.
    lone: Mutex<Session>,
    /// The sessions for many texts, run side by side (see [`side_by_side`]); opened at
    /// the first call with many texts, so that a process that only asks questions never
    /// holds their weights. An error opening them is kept and answered again.
    pool: OnceLock<Result<Vec<Mutex<Session>>, String>>,
    tokenizer: Tokenizer,
    /// Whether the graph takes `token_type_ids`.
    token_types: bool,
    max_tokens: usize,
}

impl Loaded {
    fn open(
        dir: &Path,
        runtime: &Path,
        manifest: &ModelManifest,
        max_tokens: Option<usize>,
    ) -> Result<Self, EmbedError> {
        manifest.verify(dir)?;
        let opener = Opener {
            env: super::runtime::environment(runtime)?,
            dir: dir.to_path_buf(),
            packed: PrepackedWeights::new(),
        };
        // Half the cores: the search reads its text leg on the others while the question
        // is embedded (docs/BENCHMARKS.md, "BM25 held in memory").
        let lone = Mutex::new(opener.open(question_threads(cores()))?);
        let token_types = lone
            .lock()
            .map_err(inference)?
            .inputs()
            .iter()
            .any(|i| i.name() == "token_type_ids");
        let max_tokens = max_tokens
            .unwrap_or(manifest.max_tokens)
            .clamp(8, manifest.token_limit());
        let tokenizer = batch_tokenizer(dir, max_tokens)?;
        Ok(Self {
            opener,
            lone,
            pool: OnceLock::new(),
            tokenizer,
            token_types,
            max_tokens,
        })
    }

    /// The side-by-side sessions, opened at the first call.
    fn pool(&self) -> Result<&[Mutex<Session>], EmbedError> {
        let (count, threads) = side_by_side(cores());
        self.pool
            .get_or_init(|| {
                (0..count)
                    .map(|_| self.opener.open(threads).map(Mutex::new))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| e.to_string())
            })
            .as_deref()
            .map_err(inference)
    }

    /// Runs `work` on each of `items` and returns the results in order: on the lone
    /// session one after the other when `side_by_side` is false (questions), else on the
    /// pool, each session taking the next item when it is done (the first error ends the
    /// run). Indexing work always goes to the pool, so a question never queues behind it
    /// for the lone session, even on one core.
    fn each<T: Sync, R: Send>(
        &self,
        items: &[T],
        side_by_side: bool,
        work: impl Fn(&Mutex<Session>, &T) -> Result<R, EmbedError> + Sync,
    ) -> Result<Vec<R>, EmbedError> {
        if !side_by_side {
            return items.iter().map(|item| work(&self.lone, item)).collect();
        }
        let pool = self.pool()?;
        let next = AtomicUsize::new(0);
        let workers = pool.len().min(items.len());
        let done: Vec<Result<Vec<(usize, R)>, EmbedError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = pool[..workers]
                .iter()
                .map(|session| {
                    let (next, work) = (&next, &work);
                    scope.spawn(move || {
                        let mut out = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(item) = items.get(i) else {
                                return Ok(out);
                            };
                            match work(session, item) {
                                Ok(r) => out.push((i, r)),
                                Err(e) => {
                                    next.store(items.len(), Ordering::Relaxed);
                                    return Err(e);
                                }
                            }
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(inference("a model thread panicked")))
                })
                .collect()
        });
        let mut slots: Vec<Option<R>> = std::iter::repeat_with(|| None).take(items.len()).collect();
        for part in done {
            for (i, r) in part? {
                slots[i] = Some(r);
            }
        }
        slots
            .into_iter()
            .map(|r| r.ok_or_else(|| inference("a text was not run")))
            .collect()
    }

    /// Runs one padded batch; returns the first output's values and its shape.
    fn run(
        &self,
        session: &Mutex<Session>,
        encodings: &[Encoding],
    ) -> Result<(Vec<usize>, Vec<f32>), EmbedError> {
        let n = encodings.len();
        let len = encodings.first().map_or(0, |e| e.get_ids().len());
        let mut ids = Vec::with_capacity(n * len);
        let mut mask = Vec::with_capacity(n * len);
        let mut types = Vec::with_capacity(n * len);
        for e in encodings {
            ids.extend(e.get_ids().iter().map(|&x| i64::from(x)));
            mask.extend(e.get_attention_mask().iter().map(|&x| i64::from(x)));
            types.extend(e.get_type_ids().iter().map(|&x| i64::from(x)));
        }
        self.run_ids(session, [n, len], ids, mask, types)
    }

    /// Runs one batch of `shape` (texts, tokens) given as its token ids, attention mask
    /// and token types, each flattened text after text.
    fn run_ids(
        &self,
        session: &Mutex<Session>,
        shape: [usize; 2],
        ids: Vec<i64>,
        mask: Vec<i64>,
        types: Vec<i64>,
    ) -> Result<(Vec<usize>, Vec<f32>), EmbedError> {
        let tensor = |v: Vec<i64>| Tensor::from_array((shape, v)).map_err(inference);
        let mut inputs = vec![
            ("input_ids", tensor(ids)?.into_dyn()),
            ("attention_mask", tensor(mask)?.into_dyn()),
        ];
        if self.token_types {
            inputs.push(("token_type_ids", tensor(types)?.into_dyn()));
        }
        let mut session = session.lock().map_err(inference)?;
        let outputs = session.run(inputs).map_err(inference)?;
        let (shape, values) = outputs[0].try_extract_tensor::<f32>().map_err(inference)?;
        let shape = shape.iter().map(|&d| d.max(0) as usize).collect();
        Ok((shape, values.to_vec()))
    }
}

/// A bi-encoder run with ONNX Runtime.
#[derive(Clone)]
pub struct OnnxEmbedder {
    inner: Arc<EmbedInner>,
}

struct EmbedInner {
    loaded: Loaded,
    manifest: ModelManifest,
    options: BertOptions,
    model_id: String,
}

impl OnnxEmbedder {
    /// Opens the embedding model in `dir` (described by `manifest`, every file's hash
    /// checked) with the ONNX Runtime library at `runtime`. `options` override the
    /// manifest's input length and prefixes where set.
    pub fn load(
        dir: &Path,
        runtime: &Path,
        manifest: ModelManifest,
        mut options: BertOptions,
    ) -> Result<Self, EmbedError> {
        if manifest.kind != ModelKind::Embedding {
            return Err(EmbedError::Config(format!(
                "{} is a {} model, not an embedding model",
                manifest.name, manifest.kind
            )));
        }
        let loaded = Loaded::open(dir, runtime, &manifest, options.max_tokens)?;
        if options.query_prefix.is_empty() && options.document_prefix.is_empty() {
            options.query_prefix = manifest.query_prefix.clone();
            options.document_prefix = manifest.document_prefix.clone();
        }
        let model_id = format!(
            "{}:solo",
            super::bert::model_id(&manifest.name, loaded.max_tokens, &options)
        );
        Ok(Self {
            inner: Arc::new(EmbedInner {
                loaded,
                manifest,
                options,
                model_id,
            }),
        })
    }

    /// Tokens read per text.
    pub fn max_tokens(&self) -> usize {
        self.inner.loaded.max_tokens
    }

    /// Embeds texts on the calling thread (CPU-bound: call from a blocking context).
    pub fn embed_blocking(
        &self,
        texts: &[String],
        kind: InputKind,
    ) -> Result<Vec<Vec<f32>>, EmbedError> {
        let inner = &self.inner;
        let prepared = prepare_texts(texts, kind, &inner.options, inner.loaded.max_tokens);
        let groups: Vec<&[String]> = prepared.chunks(MICRO_BATCH).collect();
        let many = kind == InputKind::Document;
        let vectors = inner.loaded.each(&groups, many, |session, group| {
            let encodings = inner
                .loaded
                .tokenizer
                .encode_batch(group.to_vec(), true)
                .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
            let (shape, values) = inner.loaded.run(session, &encodings)?;
            let masks: Vec<&[u32]> = encodings.iter().map(Encoding::get_attention_mask).collect();
            pool(&shape, &values, &masks, inner.manifest.pooling)
        })?;
        Ok(vectors.into_iter().flatten().collect())
    }
}

/// Pools `[n, len, dims]` token vectors into `n` normalised text vectors (`masks`: each
/// text's attention mask).
fn pool(
    shape: &[usize],
    values: &[f32],
    masks: &[&[u32]],
    pooling: Pooling,
) -> Result<Vec<Vec<f32>>, EmbedError> {
    let [n, len, dims] = shape else {
        return Err(inference(format!(
            "expected [batch, tokens, dims] from the model, got {shape:?}"
        )));
    };
    let (n, len, dims) = (*n, *len, *dims);
    if values.len() != n * len * dims || masks.len() != n {
        return Err(inference(format!(
            "the model returned {} values for shape {shape:?} and {} texts",
            values.len(),
            masks.len()
        )));
    }
    let mut out = Vec::with_capacity(n);
    for (i, mask) in masks.iter().enumerate().take(n) {
        let token = |t: usize| &values[(i * len + t) * dims..(i * len + t + 1) * dims];
        let mut v = match pooling {
            Pooling::Cls | Pooling::None => token(0).to_vec(),
            Pooling::Mean => {
                let mut sum = vec![0f32; dims];
                let mut count = 0f32;
                for (t, &m) in mask.iter().enumerate().take(len) {
                    if m != 0 {
                        sum.iter_mut().zip(token(t)).for_each(|(s, x)| *s += x);
                        count += 1.0;
                    }
                }
                sum.iter_mut().for_each(|s| *s /= count.max(1.0));
                sum
            }
        };
        l2_normalize(&mut v);
        out.push(v);
    }
    Ok(out)
}

impl super::static_model::Teacher for OnnxEmbedder {
    fn tokenizer(&self) -> &Tokenizer {
        &self.inner.loaded.tokenizer
    }

    /// Each input alone (see `MICRO_BATCH`), side by side.
    fn embed_token_ids(&self, inputs: &[Vec<u32>]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let loaded = &self.inner.loaded;
        let vectors = loaded.each(inputs, true, |session, input| {
            let ids: Vec<i64> = input.iter().map(|&x| i64::from(x)).collect();
            let len = ids.len();
            let (shape, values) =
                loaded.run_ids(session, [1, len], ids, vec![1; len], vec![0; len])?;
            let mask = vec![1u32; len];
            pool(&shape, &values, &[&mask], self.inner.manifest.pooling)
        })?;
        Ok(vectors.into_iter().flatten().collect())
    }
}

#[async_trait]
impl Embedder for OnnxEmbedder {
    fn model_id(&self) -> &str {
        &self.inner.model_id
    }

    fn dims(&self) -> usize {
        self.inner.manifest.dims
    }

    fn score_spread(&self) -> f32 {
        self.inner.manifest.score_spread
    }

    fn limits(&self) -> BatchLimits {
        BatchLimits::texts_of(64, self.inner.loaded.max_tokens)
    }

    async fn embed(&self, texts: &[String], kind: InputKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        super::embed_on_pool(self, texts, kind, Self::embed_blocking).await
    }
}

/// A cross-encoder run with ONNX Runtime: one relevance logit per (query, document).
#[derive(Clone)]
pub struct OnnxReranker {
    inner: Arc<RerankInner>,
}

struct RerankInner {
    loaded: Loaded,
    model_id: String,
}

impl OnnxReranker {
    /// Opens the cross-encoder in `dir` (described by `manifest`) with the library at
    /// `runtime`.
    pub fn load(dir: &Path, runtime: &Path, manifest: &ModelManifest) -> Result<Self, EmbedError> {
        if manifest.kind != ModelKind::CrossEncoder {
            return Err(EmbedError::Config(format!(
                "{} is a {} model, not a cross-encoder",
                manifest.name, manifest.kind
            )));
        }
        let loaded = Loaded::open(dir, runtime, manifest, None)?;
        Ok(Self {
            inner: Arc::new(RerankInner {
                loaded,
                model_id: format!("local:{}", manifest.name),
            }),
        })
    }

    /// Scores documents against a query on the calling thread.
    pub fn rerank_blocking(
        &self,
        query: &str,
        documents: &[String],
    ) -> Result<Vec<f32>, EmbedError> {
        let loaded = &self.inner.loaded;
        let query = crate::text::truncate_chars(query, loaded.max_tokens * 4);
        let groups: Vec<&[String]> = documents.chunks(MICRO_BATCH).collect();
        let scores = loaded.each(&groups, groups.len() > 1, |session, group| {
            let pairs: Vec<EncodeInput> = group
                .iter()
                .map(|d| {
                    let d = crate::text::truncate_chars(d, loaded.max_tokens * 8);
                    EncodeInput::Dual(query.clone().into(), d.into())
                })
                .collect();
            let encodings = loaded
                .tokenizer
                .encode_batch(pairs, true)
                .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
            let (shape, values) = loaded.run(session, &encodings)?;
            let width = shape.get(1).copied().unwrap_or(1).max(1);
            Ok(values.chunks(width).map(|row| row[0]).collect::<Vec<f32>>())
        })?;
        Ok(scores.into_iter().flatten().collect())
    }
}

#[async_trait]
impl Reranker for OnnxReranker {
    fn model_id(&self) -> &str {
        &self.inner.model_id
    }

    async fn rerank(&self, query: &str, documents: &[String]) -> Result<Vec<f32>, EmbedError> {
        let (this, query, documents) = (self.clone(), query.to_string(), documents.to_vec());
        super::blocking(move || this.rerank_blocking(&query, &documents)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_run_side_by_side_on_a_few_sessions_that_share_the_cores() {
        assert_eq!(side_by_side(1), (1, 1));
        assert_eq!(side_by_side(2), (2, 1));
        assert_eq!(side_by_side(4), (4, 1));
        assert_eq!(
            side_by_side(16),
            (4, 4),
            "weights are copied per session: at most 4"
        );
        assert_eq!(side_by_side(6), (4, 1));
    }

    #[test]
    fn questions_take_half_the_cores() {
        assert_eq!(question_threads(1), 1);
        assert_eq!(question_threads(2), 1);
        assert_eq!(question_threads(16), 8);
    }

    #[test]
    fn mean_pooling_ignores_padding_and_cls_takes_the_first_token() {
        let tokenizer = {
            let vocab = [("[PAD]", 0), ("a", 1), ("b", 2)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
            let model = tokenizers::models::wordlevel::WordLevel::builder()
                .vocab(vocab)
                .unk_token("[PAD]".into())
                .build()
                .unwrap();
            let mut t = Tokenizer::new(model);
            t.with_pre_tokenizer(Some(tokenizers::pre_tokenizers::whitespace::Whitespace {}));
            t.with_padding(Some(tokenizers::PaddingParams::default()));
            t
        };
        let encodings = tokenizer.encode_batch(vec!["a b", "a"], true).unwrap();
        assert_eq!(encodings[1].get_attention_mask(), &[1, 0]);
        let masks: Vec<&[u32]> = encodings.iter().map(Encoding::get_attention_mask).collect();
        // [2 texts, 2 tokens, 2 dims]
        let values = [3.0, 0.0, 0.0, 4.0, 1.0, 0.0, 9.0, 9.0];
        let mean = pool(&[2, 2, 2], &values, &masks, Pooling::Mean).unwrap();
        assert!((mean[0][0] - 0.6).abs() < 1e-6 && (mean[0][1] - 0.8).abs() < 1e-6);
        assert_eq!(
            mean[1],
            vec![1.0, 0.0],
            "the padding token is not averaged in"
        );
        let cls = pool(&[2, 2, 2], &values, &masks, Pooling::Cls).unwrap();
        assert_eq!(cls[0], vec![1.0, 0.0]);
        assert!(pool(&[2, 4], &values, &masks, Pooling::Cls).is_err());
        assert!(pool(&[2, 3, 2], &values, &masks, Pooling::Cls).is_err());
    }
}
