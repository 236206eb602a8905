//! Enumerating a working tree: which files are candidates for indexing, and why the others
//! are not.
//!
//! `.gitignore` (also outside git), `.ignore` and `.sextantignore` are honoured;
//! dependency and build folders are never entered; symlinks are not followed (so link
//! loops cannot occur); files are filtered by language, include/exclude globs and size,
//! and minified bundles are recognised by their names.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

use super::IndexError;
use crate::parse::Language;
use crate::store::RepoSettings;

/// Folders never entered: dependencies, build output, VCS metadata, caches.
pub const SKIPPED_DIRS: &[&str] = &[
    "node_modules",
    "bower_components",
    "jspm_packages",
    "vendor",
    "dist",
    "build",
    "out",
    "coverage",
    ".git",
    ".hg",
    ".svn",
    ".next",
    ".nuxt",
    ".turbo",
    ".cache",
    ".sextant",
];

/// A file that may be indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedFile {
    /// Path relative to the root, `/`-separated.
    pub rel: String,
    /// Absolute (or root-joined) path.
    pub path: PathBuf,
    /// Language by extension.
    pub language: Language,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, ms since epoch.
    pub mtime_ms: i64,
}

/// The outcome of a scan.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Scan {
    /// Candidates, sorted by path.
    pub files: Vec<ScannedFile>,
    /// Supported files that were left out, with the reason.
    pub skipped: Vec<(ScannedFile, String)>,
    /// Module-resolution configuration files ([`CONFIG_FILES`]), `(path, text)`.
    pub configs: Vec<(String, String)>,
}

/// Largest configuration file read, in bytes.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Compiled include/exclude/language filters of a repository's settings.
#[derive(Debug, Clone)]
pub struct FileFilter {
    include: Option<GlobSet>,
    exclude: GlobSet,
    languages: Vec<String>,
    max_file_bytes: u64,
    max_files: usize,
}

fn globs(patterns: &[String]) -> Result<GlobSet, IndexError> {
    let mut builder = GlobSetBuilder::new();
    for p in patterns {
        let glob = Glob::new(p).map_err(|e| IndexError::Settings(format!("glob `{p}`: {e}")))?;
        builder.add(glob);
    }
    builder
        .build()
        .map_err(|e| IndexError::Settings(e.to_string()))
}

impl FileFilter {
    /// Compiles `settings`' filters (and checks its path roles, which search reads).
    pub fn new(settings: &RepoSettings) -> Result<Self, IndexError> {
        crate::roles::PathRoles::compile(&settings.path_roles).map_err(IndexError::Settings)?;
        for lang in &settings.languages {
            if Language::parse(lang).is_none() {
                let known: Vec<&str> = Language::all().map(Language::id).collect();
                return Err(IndexError::Settings(format!(
                    "unknown language `{lang}` (known: {})",
                    known.join(", ")
                )));
            }
        }
        Ok(Self {
            include: if settings.include.is_empty() {
                None
            } else {
                Some(globs(&settings.include)?)
            },
            exclude: globs(&settings.exclude)?,
            languages: settings.languages.clone(),
            max_file_bytes: settings.max_file_bytes,
            max_files: usize::try_from(settings.max_files).unwrap_or(usize::MAX),
        })
    }

    /// Why a supported file is not indexed (`None`: it is). Size and count limits are
    /// checked by the scan.
    pub fn reason(&self, rel: &str, language: Language) -> Option<String> {
        if self.include.as_ref().is_some_and(|g| !g.is_match(rel)) {
            return Some("not matched by the include globs".into());
        }
        if self.exclude.is_match(rel) {
            return Some("matched by an exclude glob".into());
        }
        if !self.languages.is_empty() && !self.languages.iter().any(|l| l == language.id()) {
            return Some(format!("language {} is not enabled", language.id()));
        }
        if is_minified_name(rel) {
            return Some("minified or bundled file".into());
        }
        None
    }
}

impl FileFilter {
    /// The largest file indexed, in bytes.
    pub fn max_file_bytes(&self) -> u64 {
        self.max_file_bytes
    }

    /// Why a file of `size` bytes is too large (`None`: it is not).
    pub fn size_reason(&self, size: u64) -> Option<String> {
        (size > self.max_file_bytes).then(|| {
            format!(
                "larger than the {} byte limit ({size} bytes)",
                self.max_file_bytes
            )
        })
    }
}

/// `foo.min.js`, `bundle.min.mjs`, `*.bundle.js`, `*-min.js`.
fn is_minified_name(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel).to_ascii_lowercase();
    name.contains(".min.") || name.contains("-min.") || name.contains(".bundle.")
}

fn mtime_ms(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_millis() as i64)
}

/// Ignore files the walker honours.
pub const IGNORE_FILES: &[&str] = &[".gitignore", ".ignore", ".sextantignore"];

/// The walker every scan of a working tree uses: ignore files honoured (`.gitignore`
/// outside git too, `.ignore`, `.sextantignore`), hidden files included, symlinks not
/// followed, [`SKIPPED_DIRS`] never entered.
pub(crate) fn walk(root: &Path) -> ignore::Walk {
    ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        // The registered directory is the repository: ignore files above it do not apply
        // (a corpus under an ignored `target/` of an enclosing checkout is still indexed).
        .parents(false)
        .follow_links(false)
        .add_custom_ignore_filename(".sextantignore")
        .filter_entry(|e| {
            !(e.file_type().is_some_and(|t| t.is_dir())
                && e.depth() > 0
                && SKIPPED_DIRS.iter().any(|d| e.file_name() == *d))
        })
        .build()
}

/// The files [`walk`] finds, with their `/`-separated path relative to `root`.
fn walk_files(root: &Path) -> impl Iterator<Item = (ignore::DirEntry, String)> + '_ {
    walk(root)
        .filter_map(|entry| {
            // A part of the tree that cannot be read (a directory too deep to name,
            // permissions, a file gone since it was listed) is left out and said so.
            entry
                .map_err(|e| tracing::warn!(root = %root.display(), error = %e, "not scanned"))
                .ok()
        })
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(move |entry| {
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .unwrap_or(path)
                .to_string_lossy()
                .replace('\\', "/");
            (entry, rel)
        })
}

/// Walks `root` and sorts supported files into candidates and skipped ones.
pub fn scan_tree(root: &Path, filter: &FileFilter) -> Result<Scan, IndexError> {
    let meta = std::fs::metadata(root).map_err(|source| IndexError::Io {
        path: root.to_path_buf(),
        source,
    })?;
    if !meta.is_dir() {
        return Err(IndexError::Io {
            path: root.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
        });
    }
    let real_root = std::fs::canonicalize(root).map_err(|source| IndexError::Io {
        path: root.to_path_buf(),
        source,
    })?;
    let mut scan = Scan::default();
    for (entry, rel) in walk_files(root) {
        let path = entry.path();
        if CONFIG_FILES.iter().any(|c| entry.file_name() == *c) {
            if let Some(text) = read_config(&real_root, path) {
                scan.configs.push((rel, text));
            }
            continue;
        }
        let Some(language) = language_of(path) else {
            continue;
        };
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        let file = ScannedFile {
            rel,
            path: path.to_path_buf(),
            language,
            size: meta.len(),
            mtime_ms: mtime_ms(&meta),
        };
        let reason = filter
            .reason(&file.rel, language)
            .or_else(|| filter.size_reason(file.size));
        match reason {
            Some(r) => scan.skipped.push((file, r)),
            None => scan.files.push(file),
        }
    }
    scan.files.sort_by(|a, b| a.rel.cmp(&b.rel));
    if scan.files.len() > filter.max_files {
        let limit = filter.max_files;
        for file in scan.files.split_off(limit) {
            scan.skipped.push((
                file,
                format!("over the repository's limit of {limit} files"),
            ));
        }
    }
    scan.skipped.sort_by(|a, b| a.0.rel.cmp(&b.0.rel));
    Ok(scan)
}

/// How often a file that changes while it is read is read again before the sync gives up
/// on it (the next sync tries again).
const READ_ATTEMPTS: usize = 3;

/// Opens `path` for reading only if it is still what the scan saw: a regular file under
/// `root` (canonical). A file swapped since the scan for a symlink, a FIFO or a device, or
/// reached through a directory swapped for a symlink that leads out of the root, is
/// refused; opening never blocks (a FIFO would wait for a writer).
fn open_regular(root: &Path, path: &Path) -> Result<(std::fs::File, std::fs::Metadata), String> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(|e| match e.raw_os_error() {
        #[cfg(unix)]
        Some(libc::ELOOP) => "replaced by a symlink since the scan (not followed)".to_string(),
        _ => e.to_string(),
    })?;
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("no longer a regular file".into());
    }
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // Where the open file really is: a directory on the way may have been swapped.
        // (Without /proc mounted this cannot be asked; the file is read as opened.)
        if let Ok(real) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
            && !real.starts_with(root)
        {
            return Err(format!(
                "now resolves outside the repository ({}); a directory was replaced by a symlink",
                real.display()
            ));
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = root;
    Ok((file, meta))
}

/// A configuration file's text, when it is a regular UTF-8 file under `root` of at most
/// [`MAX_CONFIG_BYTES`].
fn read_config(root: &Path, path: &Path) -> Option<String> {
    use std::io::Read;
    let (handle, meta) = open_regular(root, path).ok()?;
    if meta.len() > MAX_CONFIG_BYTES {
        return None;
    }
    let mut text = String::new();
    handle
        .take(MAX_CONFIG_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

/// Reads a file a scan listed, as it is now, and updates `file`'s size and mtime to what
/// was read, so a file rewritten since the scan is recorded with the content it has.
///
/// `root` is the canonical repository root. A file that changes while it is read (its
/// size or mtime differ before and after, or fewer bytes come than its size says) is read
/// again, up to `READ_ATTEMPTS` times; at most `max_bytes` are ever read. The error is
/// the reason the sync records (vanished, swapped for a symlink or a FIFO, grown past the
/// limit, still changing).
pub fn read_scanned(
    root: &Path,
    file: &mut ScannedFile,
    max_bytes: u64,
) -> Result<Vec<u8>, String> {
    use std::io::Read;
    for _ in 0..READ_ATTEMPTS {
        let (handle, before) = open_regular(root, &file.path)?;
        if before.len() > max_bytes {
            return Err(format!(
                "grew past the {max_bytes} byte limit since the scan ({} bytes)",
                before.len()
            ));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(before.len()).unwrap_or(0));
        (&handle)
            .take(max_bytes + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| e.to_string())?;
        let after = handle.metadata().map_err(|e| e.to_string())?;
        let steady = bytes.len() as u64 == before.len()
            && after.len() == before.len()
            && mtime_ms(&after) == mtime_ms(&before);
        if steady {
            file.size = before.len();
            file.mtime_ms = mtime_ms(&before);
            return Ok(bytes);
        }
    }
    Err(format!(
        "kept changing while being read ({READ_ATTEMPTS} attempts); the next sync reads it again"
    ))
}

/// Files as repository-relative `(path, text)` pairs.
pub type TextFiles = Vec<(String, String)>;

/// Names of the configuration files module resolution reads ([`crate::graph::ModuleResolver`]).
/// The language of a file on disk: by extension, or for a file without one by the
/// shebang on its first line (only those files' first bytes are read).
pub(crate) fn language_of(path: &Path) -> Option<Language> {
    if let Some(language) = Language::from_path(path) {
        return Some(language);
    }
    if path.extension().is_some() {
        return None;
    }
    let mut head = [0u8; 128];
    let read = std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
        .ok()?;
    Language::detect(path, &head[..read])
}

pub const CONFIG_FILES: &[&str] = &["tsconfig.json", "jsconfig.json", "package.json"];

/// Sources and module-resolution configuration files under `root` (dependency and build
/// folders skipped, ignore files honoured), as repository-relative `(path, text)`.
pub fn read_sources(root: &Path) -> std::io::Result<(TextFiles, TextFiles)> {
    let mut files = Vec::new();
    let mut configs = Vec::new();
    for (entry, rel) in walk_files(root) {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy();
        let is_config = CONFIG_FILES.contains(&name.as_ref());
        if !is_config && language_of(path).is_none() {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        if is_config {
            configs.push((rel, text));
        } else {
            files.push((rel, text));
        }
    }
    files.sort();
    configs.sort();
    Ok((files, configs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn rels(scan: &Scan) -> Vec<&str> {
        scan.files.iter().map(|f| f.rel.as_str()).collect()
    }

    #[test]
    fn ignores_dependencies_build_output_and_ignore_files() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        write(root, "src/a.ts", "export const a = 1;");
        write(root, "src/b.tsx", "export const B = () => <b/>;");
        write(root, "node_modules/x/index.js", "x");
        write(root, "dist/a.js", "x");
        write(root, "src/gen/out.ts", "x");
        write(root, "src/secret.ts", "x");
        write(root, "lib/jquery.min.js", "x");
        write(root, "README.md", "x");
        write(root, "bin/tool", "#!/usr/bin/env python3\nprint(1)\n");
        write(root, "bin/run", "#!/bin/sh\necho\n");
        write(root, ".gitignore", "src/gen/\n");
        write(root, ".sextantignore", "secret.ts\n");
        let filter = FileFilter::new(&RepoSettings::default()).unwrap();
        let scan = scan_tree(root, &filter).unwrap();
        // An extensionless script is indexed by its shebang; a shell script is not.
        assert_eq!(rels(&scan), ["bin/tool", "src/a.ts", "src/b.tsx"]);
        assert_eq!(scan.files[0].language, Language::Python);
        assert_eq!(scan.skipped.len(), 1);
        assert_eq!(scan.skipped[0].0.rel, "lib/jquery.min.js");
        assert!(scan.skipped[0].1.contains("minified"));
    }

    #[test]
    fn settings_filter_and_limit() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        write(root, "src/a.ts", "export const a = 1;");
        write(root, "src/a.test.ts", "test()");
        write(root, "src/big.ts", &"x".repeat(2000));
        write(root, "scripts/c.js", "c()");
        write(root, "src/d.ts", "d()");
        let settings = RepoSettings {
            include: vec!["src/**".into()],
            exclude: vec!["**/*.test.ts".into()],
            max_file_bytes: 1000,
            max_files: 1,
            ..RepoSettings::default()
        };
        let scan = scan_tree(root, &FileFilter::new(&settings).unwrap()).unwrap();
        assert_eq!(rels(&scan), ["src/a.ts"]);
        let reasons: Vec<(&str, &str)> = scan
            .skipped
            .iter()
            .map(|(f, r)| (f.rel.as_str(), r.as_str()))
            .collect();
        assert_eq!(reasons.len(), 4);
        assert!(
            reasons
                .iter()
                .any(|(p, r)| *p == "src/a.test.ts" && r.contains("exclude"))
        );
        assert!(
            reasons
                .iter()
                .any(|(p, r)| *p == "src/big.ts" && r.contains("larger"))
        );
        assert!(
            reasons
                .iter()
                .any(|(p, r)| *p == "scripts/c.js" && r.contains("include"))
        );
        assert!(
            reasons
                .iter()
                .any(|(p, r)| *p == "src/d.ts" && r.contains("limit of 1 files"))
        );

        let langs = RepoSettings {
            languages: vec!["javascript".into()],
            ..RepoSettings::default()
        };
        let scan = scan_tree(root, &FileFilter::new(&langs).unwrap()).unwrap();
        assert_eq!(rels(&scan), ["scripts/c.js"]);
        let bad = RepoSettings {
            languages: vec!["cobol".into()],
            ..RepoSettings::default()
        };
        assert!(FileFilter::new(&bad).is_err());
        let bad = RepoSettings {
            exclude: vec!["[".into()],
            ..RepoSettings::default()
        };
        assert!(FileFilter::new(&bad).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn symlink_loops_do_not_hang() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "src/a.ts", "a");
        std::os::unix::fs::symlink(tmp.path(), tmp.path().join("src/loop")).unwrap();
        let scan = scan_tree(
            tmp.path(),
            &FileFilter::new(&RepoSettings::default()).unwrap(),
        )
        .unwrap();
        assert_eq!(rels(&scan), ["src/a.ts"]);
    }

    /// The one file a scan of `root` lists, and the canonical root.
    fn scanned(root: &Path) -> (PathBuf, ScannedFile) {
        let scan = scan_tree(root, &FileFilter::new(&RepoSettings::default()).unwrap()).unwrap();
        assert_eq!(scan.files.len(), 1, "{scan:?}");
        (root.canonicalize().unwrap(), scan.files[0].clone())
    }

    #[test]
    fn a_file_gone_since_the_scan_is_a_reason_not_a_failure_of_the_sync() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "src/a.ts", "export const a = 1;");
        let (root, mut file) = scanned(tmp.path());
        std::fs::remove_file(&file.path).unwrap();
        let reason = read_scanned(&root, &mut file, 1 << 20).unwrap_err();
        assert!(reason.contains("No such file"), "{reason}");
    }

    #[test]
    fn a_file_rewritten_since_the_scan_is_read_as_it_is_now() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "src/a.ts", "export const a = 1;");
        let (root, mut file) = scanned(tmp.path());
        std::fs::write(&file.path, "export const a = 1234567;").unwrap();
        let now = std::fs::metadata(&file.path).unwrap();
        let bytes = read_scanned(&root, &mut file, 1 << 20).unwrap();
        assert_eq!(bytes, b"export const a = 1234567;");
        // Recorded with what was read, so the next sync does not see a stale mtime/size.
        assert_eq!(file.size, now.len());
        assert_eq!(file.mtime_ms, mtime_ms(&now));
    }

    #[test]
    fn a_file_grown_past_the_limit_is_not_read_into_memory() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "src/a.ts", "export const a = 1;");
        let (root, mut file) = scanned(tmp.path());
        std::fs::write(&file.path, vec![b'x'; 5000]).unwrap();
        let reason = read_scanned(&root, &mut file, 1000).unwrap_err();
        assert!(reason.contains("grew past the 1000 byte limit"), "{reason}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn files_swapped_for_links_or_fifos_since_the_scan_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "a.ts", "const SECRET = 'outside';");
        write(outside.path(), "secret.ts", "const SECRET = 'outside';");

        // The file itself becomes a symlink out of the root.
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "src/a.ts", "export const a = 1;");
        let (root, mut file) = scanned(tmp.path());
        std::fs::remove_file(&file.path).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.ts"), &file.path).unwrap();
        let reason = read_scanned(&root, &mut file, 1 << 20).unwrap_err();
        assert!(reason.contains("symlink"), "{reason}");

        // A directory on the way becomes a symlink out of the root.
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "src/a.ts", "export const a = 1;");
        let (root, mut file) = scanned(tmp.path());
        std::fs::rename(tmp.path().join("src"), tmp.path().join("old")).unwrap();
        std::os::unix::fs::symlink(outside.path(), tmp.path().join("src")).unwrap();
        let reason = read_scanned(&root, &mut file, 1 << 20).unwrap_err();
        assert!(reason.contains("outside the repository"), "{reason}");

        // The file becomes a FIFO nobody writes to: refused at once, no hang.
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "src/a.ts", "export const a = 1;");
        let (root, mut file) = scanned(tmp.path());
        std::fs::remove_file(&file.path).unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(&file.path)
            .status()
            .unwrap();
        assert!(status.success());
        let reason = read_scanned(&root, &mut file, 1 << 20).unwrap_err();
        assert!(reason.contains("no longer a regular file"), "{reason}");
    }

    #[cfg(unix)]
    #[test]
    fn configuration_files_are_read_only_inside_the_root() {
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "tsconfig.json", "{\"secret\": true}");
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "src/a.ts", "a");
        write(tmp.path(), "tsconfig.json", "{}");
        let root = tmp.path().canonicalize().unwrap();
        assert_eq!(
            read_config(&root, &root.join("tsconfig.json")).as_deref(),
            Some("{}")
        );
        std::fs::remove_file(root.join("tsconfig.json")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("tsconfig.json"),
            root.join("tsconfig.json"),
        )
        .unwrap();
        assert_eq!(read_config(&root, &root.join("tsconfig.json")), None);
    }
}
