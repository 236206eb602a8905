//! The ONNX Runtime library: found, fetched and loaded at run time, never linked.
//!
//! Where it comes from, in order: `SEXTANT_ORT_DYLIB` (or `ORT_DYLIB_PATH`) naming any
//! `libonnxruntime` ≥ 1.20 the user already has; else `<data-dir>/runtime/onnxruntime-
//! <version>/`, filled from the pinned PyPI `onnxruntime` wheel (the library checked
//! against its SHA-256) on first use or by `sextant model fetch`. The library is loaded
//! once per process; a missing or unloadable library is an error that names the command
//! that fixes it, never a panic.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::EmbedError;
use super::fetch;
use super::manifest::WheelSource;

/// The pinned ONNX Runtime release.
pub const VERSION: &str = "1.31.1";
/// The library file inside the wheel's `onnxruntime/capi/` folder.
const LIBRARY: &str = "libonnxruntime.so.1.31.1";
/// Its SHA-256 (linux x86_64, manylinux_2_28).
const LIBRARY_SHA256: &str = "fc44112fbe06d7d689c57e11d3862031f64711007e4ee020f8eed5185fd2c1d3";
/// Environment variables that name a library to use instead.
pub const DYLIB_VARS: [&str; 2] = ["SEXTANT_ORT_DYLIB", "ORT_DYLIB_PATH"];

/// The pinned wheel: one platform's build, whatever Python runs pip.
pub fn source() -> WheelSource {
    WheelSource {
        requirement: format!("onnxruntime=={VERSION}"),
        wheel_sha256: "5752bd508126ae7c49894d3b9d2e83f0c3d487319246d04c444b393308d7ad7f".into(),
        prefix: "onnxruntime/capi/".into(),
        pip_args: [
            "--platform",
            "manylinux_2_28_x86_64",
            "--python-version",
            "3.11",
            "--implementation",
            "cp",
            "--abi",
            "cp311",
        ]
        .map(String::from)
        .to_vec(),
    }
}

fn files() -> BTreeMap<String, String> {
    BTreeMap::from([(LIBRARY.to_string(), LIBRARY_SHA256.to_string())])
}

/// Where the pinned runtime is installed inside a data directory.
pub fn dir_in(data_dir: &Path) -> PathBuf {
    data_dir
        .join("runtime")
        .join(format!("onnxruntime-{VERSION}"))
}

/// A library named by the environment, if any.
fn from_env() -> Option<PathBuf> {
    DYLIB_VARS
        .iter()
        .find_map(|v| std::env::var_os(v).filter(|p| !p.is_empty()))
        .map(PathBuf::from)
}

/// Whether this platform has a pinned wheel.
fn platform_supported() -> bool {
    cfg!(all(target_os = "linux", target_arch = "x86_64"))
}

/// Finds (and, when `fetch` allows, installs) the library; returns its path.
pub fn locate(data_dir: &Path, fetch: bool, log: impl FnMut(&str)) -> Result<PathBuf, EmbedError> {
    if let Some(path) = from_env() {
        return Ok(path);
    }
    let dir = dir_in(data_dir);
    let library = dir.join(LIBRARY);
    if fetch::files_present(&files(), &dir) {
        return Ok(library);
    }
    if !platform_supported() {
        return Err(missing(&format!(
            "no pinned ONNX Runtime build for this platform; install ONNX Runtime ≥ 1.20 \
             and set {} to its libonnxruntime library",
            DYLIB_VARS[0]
        )));
    }
    if !fetch {
        return Err(missing(&format!(
            "{} is missing or damaged; run `sextant model fetch` (or set {} to a \
             libonnxruntime you have)",
            library.display(),
            DYLIB_VARS[0]
        )));
    }
    install(data_dir, None, log)?;
    Ok(library)
}

/// Installs the pinned runtime into the data directory, from `wheel` when given (offline
/// installs) or with pip.
pub fn install(
    data_dir: &Path,
    wheel: Option<&Path>,
    log: impl FnMut(&str),
) -> Result<PathBuf, EmbedError> {
    let dir = dir_in(data_dir);
    let source = source();
    match wheel {
        Some(wheel) => fetch::install_wheel(wheel, &source.prefix, &files(), &dir)?,
        None => fetch::ensure_files(&source, &files(), &dir, "ONNX Runtime", log)?,
    }
    Ok(dir.join(LIBRARY))
}

fn missing(hint: &str) -> EmbedError {
    EmbedError::Runtime(hint.to_string())
}

/// The process's ONNX Runtime environment, or why it could not be made.
static ENVIRONMENT: OnceLock<Result<(PathBuf, ort::environment::Environment), String>> =
    OnceLock::new();

/// Loads the library at `path` (once per process) and returns the environment sessions
/// are made in. A later call with another path gets the first library, or its error.
pub fn environment(path: &Path) -> Result<&'static ort::environment::Environment, EmbedError> {
    let loaded = ENVIRONMENT.get_or_init(|| {
        if !path.is_file() {
            return Err(format!("{} does not exist", path.display()));
        }
        let builder = ort::init_from(path).map_err(|e| e.to_string())?;
        builder
            .with_name("sextant")
            .build()
            .map(|env| (path.to_path_buf(), env))
            .map_err(|e| e.to_string())
    });
    match loaded {
        Ok((_, env)) => Ok(env),
        Err(why) => Err(EmbedError::Runtime(format!(
            "cannot load ONNX Runtime: {why}; run `sextant model fetch` to install the pinned \
             runtime, or set {} to a libonnxruntime ≥ 1.20",
            DYLIB_VARS[0]
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_runtime_is_an_error_that_names_the_fix() {
        if from_env().is_some() {
            return; // the environment names a library: nothing to look for
        }
        let tmp = tempfile::tempdir().unwrap();
        let err = locate(tmp.path(), false, |_| {}).unwrap_err().to_string();
        assert!(err.contains("sextant model fetch"), "{err}");
        assert!(err.contains(DYLIB_VARS[0]), "{err}");
    }
}
