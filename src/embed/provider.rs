//! Provider selection: typed settings and the function that turns them into an
//! [`Embedder`] / [`Reranker`].

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::bert::BertOptions;
use super::http::{HttpClient, RetryPolicy};
use super::manifest::{self, ModelFormat, ModelManifest};
use super::onnx::{OnnxEmbedder, OnnxReranker};
use super::openai::OpenAiOptions;
use super::rerank::RerankStyle;
use super::static_model::{DistillOptions, Teacher, distill};
use super::voyage::{VOYAGE_BASE_URL, VoyageOptions};
use super::{
    BertEmbedder, EmbedError, Embedder, HttpReranker, InputKind, OpenAiEmbedder, Reranker,
    StaticEmbedder, VoyageEmbedder, VoyageReranker, fetch, runtime,
};

/// Which embedding model family to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum EmbedProvider {
    /// A local model from its manifest (default: `sextant-code-small-v1-int8`, shipped
    /// with Sextant and run with ONNX Runtime; `--embed-model all-minilm-l6-v2` runs
    /// MiniLM with candle).
    #[default]
    Local,
    /// A local static (model2vec-format) model: fast, weaker.
    Static,
    /// Voyage AI (`voyage-code-3`); needs `VOYAGE_API_KEY`.
    Voyage,
    /// Any OpenAI-compatible `/v1/embeddings` server; `OPENAI_API_KEY` when it needs one.
    Openai,
}

/// Embedding settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbedConfig {
    /// The provider.
    pub provider: EmbedProvider,
    /// Local model folder (`SEXTANT_MODEL_DIR`): one with a `manifest.json`, or a
    /// BERT-family safetensors folder run with candle. Default: the named built-in model
    /// in `<data-dir>/models/<name>`, fetched on first use.
    pub model_dir: Option<PathBuf>,
    /// Static model folder; default: Sextant's own ([`STATIC_MODEL`]), installed into
    /// `<data-dir>/models/` on first use.
    pub static_model_dir: Option<PathBuf>,
    /// Model name: a built-in local model (`sextant-code-small-v1-int8`, the default;
    /// `bge-small-en-v1.5-int8`;
    /// `all-minilm-l6-v2`) or a remote one (`voyage-code-3`, `text-embedding-3-small`, …).
    pub model: Option<String>,
    /// Remote base URL (`http://localhost:8080/v1`); Voyage defaults to its API.
    pub base_url: Option<String>,
    /// Vector width for remote models (Voyage: 256/512/1024/2048, default 1024; OpenAI-
    /// compatible: asked of the server when unset).
    pub dims: Option<usize>,
    /// Tokens read per text by a local model (default: the model folder's setting).
    pub max_tokens: Option<usize>,
    /// Split code identifiers into words before local models read them.
    pub split_identifiers: bool,
    /// Prefix for queries (instruction-tuned models).
    pub query_prefix: String,
    /// Prefix for documents.
    pub document_prefix: String,
    /// Fetch (and distill) the default model on first use when it is missing.
    pub auto_fetch: bool,
    /// Folder holding `models/` and `runtime/` (default: the data directory).
    pub home: Option<PathBuf>,
}

impl Default for EmbedConfig {
    fn default() -> Self {
        Self {
            provider: EmbedProvider::Local,
            model_dir: None,
            static_model_dir: None,
            model: None,
            base_url: None,
            dims: None,
            max_tokens: None,
            split_identifiers: true,
            query_prefix: String::new(),
            document_prefix: String::new(),
            auto_fetch: true,
            home: None,
        }
    }
}

/// Which reranker to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum RerankProvider {
    /// No reranking (scores come from retrieval fusion).
    #[default]
    None,
    /// Voyage AI (`rerank-2.5`); needs `VOYAGE_API_KEY`.
    Voyage,
    /// text-embeddings-inference `/rerank`.
    Tei,
    /// Cohere-style `/rerank` (Cohere, Jina, compatible servers); `RERANK_API_KEY`.
    Cohere,
    /// A local cross-encoder run with ONNX Runtime (default ms-marco-MiniLM-L-12-v2, int8;
    /// measured to rank code worse than no reranker, see docs/BENCHMARKS.md).
    Local,
}

/// Reranking settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RerankConfig {
    /// The provider.
    pub provider: RerankProvider,
    /// Model name (`rerank-2.5` for Voyage).
    pub model: Option<String>,
    /// Base URL (required for TEI and Cohere-style servers).
    pub base_url: Option<String>,
}

fn env_key(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn required_key(name: &str, what: &str) -> Result<String, EmbedError> {
    env_key(name).ok_or_else(|| {
        EmbedError::Config(format!(
            "{what} needs an API key: set the {name} environment variable"
        ))
    })
}

/// The default static model: a table fitted to Sextant's own model over real code
/// (`tools/train/static_fit.py`, docs/BENCHMARKS.md "A static model fitted to Sextant's
/// own"), shipped in the repository's `models/` and installed from there on first use.
pub const STATIC_MODEL: &str = "sextant-code-static-v1";

/// The shipped static model's files with their SHA-256, checked as it is installed.
const STATIC_FILES: [(&str, &str); 3] = [
    (
        "config.json",
        "ff9824d8f051ad2d72ef779bd7452ca8e71292e761c71217feecccc9b2667dfd",
    ),
    (
        "model.safetensors",
        "16eab79080ddc448bc8e012f3bddddf57e0fdea3d5190b242f8f3f27e319bab7",
    ),
    (
        "tokenizer.json",
        "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
    ),
];

/// [`STATIC_FILES`] as the shipped-model installer takes them.
fn static_files() -> std::collections::BTreeMap<String, String> {
    STATIC_FILES
        .iter()
        .map(|(file, hash)| (file.to_string(), hash.to_string()))
        .collect()
}

/// Where the default static model lives under a model home.
pub fn default_static_dir(home: &Path) -> PathBuf {
    home.join("models").join(STATIC_MODEL)
}

/// Whether the shipped static model is installed under `home`, every file intact.
pub fn static_installed(home: &Path) -> bool {
    super::fetch::files_present(&static_files(), &default_static_dir(home))
}

/// Where `sextant model distill` writes a static model distilled from all-MiniLM-L6-v2.
pub fn distilled_static_dir(home: &Path) -> PathBuf {
    home.join("models").join(format!("{TEACHER}-static"))
}

/// The model the static model is distilled from (run with candle).
const TEACHER: &str = "all-minilm-l6-v2";

/// Where the library of the ONNX Runtime comes from (see [`runtime`]).
pub fn onnx_runtime(
    data_dir: &Path,
    fetch: bool,
    log: &mut dyn FnMut(&str),
) -> Result<PathBuf, EmbedError> {
    runtime::locate(data_dir, fetch, log)
}

impl EmbedConfig {
    /// The configured model in a few words (`local sextant-code-small-v1-int8`, `voyage …`).
    pub fn describe(&self) -> String {
        let model = match (&self.model_dir, &self.model) {
            (Some(dir), _) => dir.display().to_string(),
            (None, Some(name)) => name.clone(),
            (None, None) if self.provider == EmbedProvider::Local => {
                manifest::DEFAULT_EMBEDDING.to_string()
            }
            (None, None) => "its default model".to_string(),
        };
        let provider = match self.provider {
            EmbedProvider::Local => "local",
            EmbedProvider::Static => "static",
            EmbedProvider::Voyage => "voyage",
            EmbedProvider::Openai => "openai",
        };
        format!("{provider} {model}")
    }

    /// Where built-in models and the runtime live: [`EmbedConfig::home`] or `data_dir`.
    pub fn home<'a>(&'a self, data_dir: &'a Path) -> &'a Path {
        self.home.as_deref().unwrap_or(data_dir)
    }

    /// The local model's manifest and folder: the folder's own `manifest.json` when a
    /// folder was given (`None` for a bare safetensors folder), else the named built-in.
    pub fn local_model(
        &self,
        data_dir: &Path,
    ) -> Result<(Option<ModelManifest>, PathBuf), EmbedError> {
        match &self.model_dir {
            Some(dir) if dir.join(manifest::MANIFEST_FILE).is_file() => {
                Ok((Some(ModelManifest::read(dir)?), dir.clone()))
            }
            Some(dir) => Ok((None, dir.clone())),
            None => {
                let m =
                    manifest::find(self.model.as_deref().unwrap_or(manifest::DEFAULT_EMBEDDING))?;
                let dir = m.dir_in(self.home(data_dir));
                Ok((Some(m), dir))
            }
        }
    }

    fn bert_options(&self) -> BertOptions {
        BertOptions {
            max_tokens: self.max_tokens,
            split_identifiers: self.split_identifiers,
            query_prefix: self.query_prefix.clone(),
            document_prefix: self.document_prefix.clone(),
        }
    }

    /// Makes sure a built-in model's files are installed (fetching them when allowed).
    fn ensure_installed(
        &self,
        m: &ModelManifest,
        dir: &Path,
        log: &mut dyn FnMut(&str),
    ) -> Result<(), EmbedError> {
        if self.model_dir.is_none() && self.auto_fetch && !m.is_installed(dir) {
            fetch::ensure_model(m, dir, &mut *log)?;
        }
        Ok(())
    }

    /// Loads the local model (fetching the model and, for ONNX models, the runtime first
    /// when they are missing and fetching is allowed). Blocking (file and CPU work).
    pub fn load_local(
        &self,
        data_dir: &Path,
        log: &mut dyn FnMut(&str),
    ) -> Result<Arc<dyn Embedder>, EmbedError> {
        let (m, dir) = self.local_model(data_dir)?;
        let Some(m) = m else {
            return Ok(Arc::new(BertEmbedder::load(&dir, self.bert_options())?));
        };
        self.ensure_installed(&m, &dir, log)?;
        Ok(match m.format {
            ModelFormat::Onnx => {
                let library = runtime::locate(self.home(data_dir), self.auto_fetch, &mut *log)?;
                Arc::new(OnnxEmbedder::load(&dir, &library, m, self.bert_options())?)
            }
            ModelFormat::Safetensors => {
                m.verify(&dir)?;
                let mut options = self.bert_options();
                if options.query_prefix.is_empty() && options.document_prefix.is_empty() {
                    options.query_prefix = m.query_prefix.clone();
                    options.document_prefix = m.document_prefix.clone();
                }
                Arc::new(BertEmbedder::load(&dir, options)?)
            }
        })
    }

    /// Loads the configured local ONNX model (the default: Sextant's own) as the model a
    /// static model is distilled from, fetching it and the runtime when allowed. Blocking.
    pub fn load_onnx_teacher(
        &self,
        data_dir: &Path,
        log: &mut dyn FnMut(&str),
    ) -> Result<(OnnxEmbedder, PathBuf), EmbedError> {
        let (Some(m), dir) = self.local_model(data_dir)? else {
            return Err(EmbedError::Config(
                "the configured local model is not an ONNX model: leave out --from-local \
                 to distill from all-MiniLM-L6-v2"
                    .into(),
            ));
        };
        if m.format != ModelFormat::Onnx {
            return Err(EmbedError::Config(format!(
                "{} is not an ONNX model: leave out --from-local to distill from \
                 all-MiniLM-L6-v2",
                m.name
            )));
        }
        self.ensure_installed(&m, &dir, log)?;
        let library = runtime::locate(self.home(data_dir), self.auto_fetch, &mut *log)?;
        Ok((
            OnnxEmbedder::load(&dir, &library, m, self.bert_options())?,
            dir,
        ))
    }

    /// Loads the candle model the static model is distilled from (all-MiniLM-L6-v2, or
    /// the safetensors folder given), fetching it when allowed. Blocking.
    pub fn load_teacher(
        &self,
        data_dir: &Path,
        log: &mut dyn FnMut(&str),
    ) -> Result<(BertEmbedder, PathBuf), EmbedError> {
        let dir = match self.local_model(data_dir)? {
            (None, dir) => dir,
            (Some(m), dir) if m.format == ModelFormat::Safetensors => {
                self.ensure_installed(&m, &dir, log)?;
                dir
            }
            _ => {
                let m = manifest::find(TEACHER)?;
                let dir = m.dir_in(self.home(data_dir));
                if self.auto_fetch && !m.is_installed(&dir) {
                    fetch::ensure_model(&m, &dir, &mut *log)?;
                }
                dir
            }
        };
        Ok((BertEmbedder::load(&dir, self.bert_options())?, dir))
    }

    /// Loads the static model: the folder given, or the shipped one ([`STATIC_MODEL`]),
    /// installed into the model home from the repository's `models/` when any of its files
    /// is missing or differs (every hash is checked at each load, as the code model's are;
    /// nothing is downloaded). Blocking.
    pub fn load_static(
        &self,
        data_dir: &Path,
        log: &mut dyn FnMut(&str),
    ) -> Result<StaticEmbedder, EmbedError> {
        if let Some(dir) = &self.static_model_dir {
            return StaticEmbedder::load(dir, self.split_identifiers);
        }
        let dir = default_static_dir(self.home(data_dir));
        let repository = format!("models/{STATIC_MODEL}");
        super::fetch::ensure_shipped(STATIC_MODEL, &repository, &static_files(), &dir, &mut *log)
            .map_err(|e| match e {
            EmbedError::Fetch(reason) => EmbedError::Fetch(format!(
                "{reason}; or give --static-model-dir any model2vec folder (`sextant model \
                     distill` makes one)"
            )),
            other => other,
        })?;
        StaticEmbedder::load(&dir, self.split_identifiers)
    }

    /// Builds the configured embedder. `log` receives progress lines of first-use work
    /// (model download, distillation).
    pub async fn build(
        &self,
        data_dir: &Path,
        mut log: impl FnMut(&str) + Send + 'static,
    ) -> Result<Arc<dyn Embedder>, EmbedError> {
        match self.provider {
            EmbedProvider::Local | EmbedProvider::Static => {
                let (config, data_dir) = (self.clone(), data_dir.to_path_buf());
                super::blocking(move || -> Result<Arc<dyn Embedder>, EmbedError> {
                    Ok(if config.provider == EmbedProvider::Local {
                        config.load_local(&data_dir, &mut log)?
                    } else {
                        Arc::new(config.load_static(&data_dir, &mut log)?)
                    })
                })
                .await
            }
            EmbedProvider::Voyage => {
                let http = HttpClient::new(
                    "voyage",
                    Some(required_key("VOYAGE_API_KEY", "the Voyage provider")?),
                    RetryPolicy::default(),
                )?;
                let defaults = VoyageOptions::default();
                Ok(Arc::new(VoyageEmbedder::new(
                    http,
                    VoyageOptions {
                        base_url: self.base_url.clone().unwrap_or(defaults.base_url),
                        model: self.model.clone().unwrap_or(defaults.model),
                        dims: self.dims.unwrap_or(defaults.dims),
                    },
                )?))
            }
            EmbedProvider::Openai => {
                let base_url = self.base_url.clone().ok_or_else(|| {
                    EmbedError::Config(
                        "the openai provider needs a base URL (--embed-url, e.g. \
                         http://localhost:8080/v1)"
                            .into(),
                    )
                })?;
                let model = self.model.clone().ok_or_else(|| {
                    EmbedError::Config(
                        "the openai provider needs a model name (--embed-model)".into(),
                    )
                })?;
                let http =
                    HttpClient::new("openai", env_key("OPENAI_API_KEY"), RetryPolicy::default())?;
                let mut options = OpenAiOptions {
                    base_url,
                    model,
                    dims: self.dims.unwrap_or(0),
                    send_dimensions: self.dims.is_some(),
                    query_prefix: self.query_prefix.clone(),
                    document_prefix: self.document_prefix.clone(),
                    max_text_tokens: self.max_tokens.unwrap_or(8_000),
                    max_texts: 64,
                    max_batch_tokens: 64_000,
                };
                if options.dims == 0 {
                    options.dims = probe_dims(http.clone(), options.clone()).await?;
                }
                Ok(Arc::new(OpenAiEmbedder::new(http, options)))
            }
        }
    }
}

/// Asks an OpenAI-compatible server for one vector to learn its width.
async fn probe_dims(http: HttpClient, options: OpenAiOptions) -> Result<usize, EmbedError> {
    let probe = OpenAiEmbedder::new(http, OpenAiOptions { dims: 0, ..options });
    let vectors = probe
        .embed(&["dimension probe".to_string()], InputKind::Query)
        .await?;
    match vectors.first().map_or(0, Vec::len) {
        0 => Err(EmbedError::BadResponse {
            provider: "openai".into(),
            reason: "the server returned an empty vector".into(),
        }),
        dims => Ok(dims),
    }
}

/// Runs [`distill`] with progress lines every tenth of the vocabulary.
pub fn distill_into(
    teacher: &dyn Teacher,
    teacher_dir: &Path,
    out: &Path,
    options: DistillOptions,
    log: &mut dyn FnMut(&str),
) -> Result<(), EmbedError> {
    let mut last = 0;
    distill(teacher, teacher_dir, out, options, |done, total| {
        let tenth = done * 10 / total.max(1);
        if tenth > last {
            last = tenth;
            log(&format!("distilling: {done}/{total} vocabulary tokens"));
        }
    })
}

impl RerankConfig {
    /// Builds the configured reranker (`None` when reranking is off). `data_dir` is
    /// where a local cross-encoder and the ONNX Runtime are found (and fetched to when
    /// `fetch`). Blocking for a local model (file and CPU work).
    pub fn build(
        &self,
        data_dir: &Path,
        fetch: bool,
    ) -> Result<Option<Arc<dyn Reranker>>, EmbedError> {
        let url = |what: &str| {
            self.base_url.clone().ok_or_else(|| {
                EmbedError::Config(format!(
                    "the {what} reranker needs a base URL (--rerank-url)"
                ))
            })
        };
        Ok(match self.provider {
            RerankProvider::None => None,
            RerankProvider::Local => {
                let m = manifest::find(
                    self.model
                        .as_deref()
                        .unwrap_or(manifest::DEFAULT_CROSS_ENCODER),
                )?;
                let dir = m.dir_in(data_dir);
                let mut log = |line: &str| tracing::info!("{line}");
                if fetch && !m.is_installed(&dir) {
                    fetch::ensure_model(&m, &dir, &mut log)?;
                }
                let library = runtime::locate(data_dir, fetch, &mut log)?;
                Some(Arc::new(OnnxReranker::load(&dir, &library, &m)?))
            }
            RerankProvider::Voyage => {
                let http = HttpClient::new(
                    "voyage",
                    Some(required_key("VOYAGE_API_KEY", "the Voyage reranker")?),
                    RetryPolicy::default(),
                )?;
                Some(Arc::new(VoyageReranker::new(
                    http,
                    self.base_url.as_deref().unwrap_or(VOYAGE_BASE_URL),
                    self.model.as_deref().unwrap_or("rerank-2.5"),
                )))
            }
            RerankProvider::Tei | RerankProvider::Cohere => {
                let style = if self.provider == RerankProvider::Tei {
                    RerankStyle::Tei
                } else {
                    RerankStyle::Cohere
                };
                let http =
                    HttpClient::new("rerank", env_key("RERANK_API_KEY"), RetryPolicy::default())?;
                Some(Arc::new(HttpReranker::new(
                    http,
                    &url(if style == RerankStyle::Tei {
                        "tei"
                    } else {
                        "cohere"
                    })?,
                    self.model.clone(),
                    style,
                )))
            }
        })
    }
}

/// Scout's optional chat model (an OpenAI-compatible endpoint).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ScoutModelConfig {
    /// Base URL (`http://localhost:11434/v1` for Ollama, `https://api.openai.com/v1`).
    pub base_url: Option<String>,
    /// Model name.
    pub model: Option<String>,
    /// Seconds one request may take.
    pub timeout_secs: u64,
}

impl ScoutModelConfig {
    /// The chat model (`None` when none is configured); its key comes from
    /// `SEXTANT_SCOUT_MODEL_KEY` when set.
    pub fn build(&self) -> Result<Option<Arc<dyn crate::scout::Chat>>, EmbedError> {
        match (&self.base_url, &self.model) {
            (None, None) => Ok(None),
            (Some(url), Some(model)) => Ok(Some(Arc::new(super::OpenAiChat::new(
                url,
                model,
                env_key("SEXTANT_SCOUT_MODEL_KEY"),
                std::time::Duration::from_secs(self.timeout_secs.max(1)),
            )?))),
            _ => Err(EmbedError::Config(
                "Scout's model needs both --scout-model-url and --scout-model".into(),
            )),
        }
    }
}
