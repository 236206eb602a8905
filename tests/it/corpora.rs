//! The ten global rules on real code nobody here wrote: the rxjs 7.8.2 eval corpus
//! (`../shared/eval/get-corpus.sh`) and the `typescript` 5.9.3 npm package's `lib/`
//! (its 9 MB `typescript.js` is the blueprint's "6,000-line class" stress case and more).
//!
//! Both are fetched with npm into a cache directory (`SEXTANT_CORPUS_CACHE`, default
//! `~/.cache/sextant/corpora`) on first run. Without node/npm (or pip, or apt-get) a test
//! fails under `CI=true` naming what to install, and prints a loud SKIPPED banner
//! elsewhere; a registry that cannot be reached is a skip everywhere; a fetch that fails
//! while its registry answers is a failure.
//!
//! The other languages the same way, each from its own registry: Python from a PyPI
//! source distribution (`pip download --no-binary`), Rust from a crate cargo has already
//! unpacked for this build, Go and Java from Debian source packages (`apt-get source`
//! through a private copy of the machine's own package sources, so nothing system-wide
//! changes).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use sextant::cli::source_files;
use sextant::config::Config;
use sextant::conformance::{Summary, validate_source};
use sextant::parse::check_input;
use support::need::{self, Registry, Unavailable};
use support::registry::unpacked_crate;
use support::{available, skip};

const TYPESCRIPT: &str = "typescript@5.9.3";

fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SEXTANT_CORPUS_CACHE") {
        return PathBuf::from(dir);
    }
    let home = std::env::var_os("HOME").map_or_else(std::env::temp_dir, PathBuf::from);
    home.join(".cache/sextant/corpora")
}

fn run(cmd: &mut Command) -> Result<(), String> {
    // Fail fast when the registry cannot be reached instead of npm's minutes of retries.
    cmd.env("npm_config_fetch_retries", "1")
        .env("npm_config_fetch_timeout", "20000");
    match cmd.output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "{:?} failed: {}{}",
            cmd,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )),
        Err(e) => Err(format!("{cmd:?} could not start: {e}")),
    }
}

/// `<cache>/<dir>/package`: the npm package `spec` (`name@version`), fetched with
/// `npm pack` when missing.
pub(crate) fn npm_package(spec: &str, dir: &str) -> Result<PathBuf, Unavailable> {
    // The tool is checked even when the cache holds the package: a run must not pass on
    // one machine only because an earlier run fetched what this one could not.
    need::node_and_npm()?;
    let dest = cached(dir, |tmp| {
        run(Command::new("npm")
            .args(["pack", spec, "--loglevel=error", "--pack-destination"])
            .arg(tmp))
        .map_err(|e| need::fetch_failed(Registry::Npm, e))?;
        untar_all(tmp);
        Ok(())
    })?;
    Ok(dest.join("package"))
}

/// `<cache>/typescript-5.9.3/package`.
fn typescript_package() -> Result<PathBuf, Unavailable> {
    npm_package(TYPESCRIPT, "typescript-5.9.3")
}

/// `<cache>/eval-corpus/rxjs`, built by the shared `get-corpus.sh` when missing.
fn rxjs_corpus() -> Result<PathBuf, Unavailable> {
    need::node_and_npm()?;
    let dest = cache_dir().join("eval-corpus");
    let corpus = dest.join("rxjs");
    if dest.join("rxjs-stripped.files.tsv").is_file() {
        return Ok(corpus);
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/eval/get-corpus.sh");
    assert!(
        script.is_file(),
        "{} not found (the shared/ folder must sit beside the repository)",
        script.display()
    );
    let typescript = typescript_package()?;
    run(Command::new("bash")
        .arg(&script)
        .arg(&dest)
        .env("TS_MODULE", typescript))
    .map_err(|e| need::fetch_failed(Registry::Npm, e))?;
    Ok(corpus)
}

fn validate_tree(root: &Path, subdir: &str) -> Summary {
    let config = Config::default();
    let mut summary = Summary::new();
    let dir = root.join(subdir);
    for path in source_files(&dir) {
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .to_string();
        let bytes = std::fs::read(&path).expect("corpus file readable");
        match check_input(&bytes, &config.parse) {
            Err(e) => summary.skip(rel, e.to_string()),
            Ok(source) => match validate_source(&path, &rel, source, &config) {
                Ok(report) => summary.add(report),
                Err(e) => summary.skip(rel, e.to_string()),
            },
        }
    }
    summary
}

fn assert_clean(name: &str, summary: &Summary, min_files: usize) {
    println!("== {name} ==\n{summary}");
    // Documentation and configuration may be test data on purpose (a TOML parser's
    // invalid inputs: NUL bytes, broken UTF-8); source code is never skipped.
    let skipped: Vec<&(String, String)> = summary
        .skipped
        .iter()
        .filter(|(path, _)| {
            sextant::parse::Language::from_path(std::path::Path::new(path))
                .is_none_or(|l| l.category() == sextant::parse::Category::Code)
        })
        .collect();
    assert!(
        summary.passed >= min_files,
        "{name}: only {} files validated",
        summary.passed
    );
    assert!(skipped.is_empty(), "{name}: skipped files: {skipped:?}");
    let listed: Vec<String> = summary
        .violations
        .iter()
        .take(30)
        .map(|(p, v)| format!("{p}: {v}"))
        .collect();
    assert!(
        summary.violations.is_empty(),
        "{name}: {} violations:\n{}",
        summary.violations.len(),
        listed.join("\n")
    );
    assert!(summary.deterministic);
    assert_eq!(
        summary.code_lines.0, summary.code_lines.1,
        "{name}: full coverage"
    );
}

#[test]
fn global_rules_hold_on_the_typescript_package() {
    let Some(package) = available(typescript_package(), TYPESCRIPT) else {
        return;
    };
    let summary = validate_tree(&package, "lib");
    assert_clean("typescript/lib", &summary, 100);
    assert!(
        summary.chunks > 40_000,
        "typescript/lib should yield tens of thousands of chunks"
    );
}

#[test]
fn global_rules_hold_on_the_rxjs_eval_corpus() {
    let Some(corpus) = available(rxjs_corpus(), "rxjs eval corpus") else {
        return;
    };
    let summary = validate_tree(&corpus, "");
    assert_clean("rxjs", &summary, 250);
}

/// `<cache>/<dir>` holding what `fetch` put there, fetched once: `fetch` fills a
/// temporary directory beside it, renamed into place when it succeeds. The cache's own
/// file operations panic when they fail (the harness's fault, never a skip).
fn cached(
    dir: &str,
    fetch: impl FnOnce(&Path) -> Result<(), Unavailable>,
) -> Result<PathBuf, Unavailable> {
    let dest = cache_dir().join(dir);
    if dest.join(".complete").is_file() {
        return Ok(dest);
    }
    std::fs::create_dir_all(cache_dir()).expect("the corpus cache can be created");
    let tmp = tempfile::tempdir_in(cache_dir()).expect("a folder in the corpus cache");
    fetch(tmp.path())?;
    std::fs::write(tmp.path().join(".complete"), "").expect("the corpus cache is writable");
    let fetched = tmp.keep();
    if std::fs::rename(&fetched, &dest).is_ok() {
        return Ok(dest);
    }
    // Another test finished first (keep its copy), or an unfinished copy is in the way.
    if dest.join(".complete").is_file() {
        let _ = std::fs::remove_dir_all(&fetched);
        return Ok(dest);
    }
    let _ = std::fs::remove_dir_all(&dest);
    std::fs::rename(&fetched, &dest)
        .unwrap_or_else(|e| panic!("cannot move the corpus into {}: {e}", dest.display()));
    Ok(dest)
}

/// Unpacks every tarball in `dir` into `dir`; a download that left none, or one that
/// does not unpack, panics.
fn untar_all(dir: &Path) {
    let tarballs: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the download folder is readable")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            let name = p.to_string_lossy();
            name.contains(".tar.") || name.ends_with(".tgz")
        })
        .collect();
    assert!(
        !tarballs.is_empty(),
        "no tarball was downloaded into {}",
        dir.display()
    );
    for tarball in tarballs {
        run(Command::new("tar")
            .arg("-xf")
            .arg(&tarball)
            .arg("-C")
            .arg(dir))
        .unwrap_or_else(|e| panic!("{e}"));
    }
}

/// A Debian source package's upstream tree, fetched with `apt-get source --download-only`
/// against a private copy of the machine's package sources (as `deb-src`), so neither
/// the system's lists nor its configuration change.
fn debian_source(package: &str) -> Result<PathBuf, Unavailable> {
    need::apt_sources()?;
    cached(&format!("debian-src-{package}"), |tmp| {
        let sources = Path::new("/etc/apt/sources.list.d/debian.sources");
        let text = std::fs::read_to_string(sources)
            .unwrap_or_else(|e| panic!("{} unreadable: {e}", sources.display()));
        let state = tmp.join(".apt");
        for sub in ["sources", "lists/partial", "cache/archives/partial"] {
            std::fs::create_dir_all(state.join(sub)).expect("a private apt state folder");
        }
        let src_text = text.replace("Types: deb\n", "Types: deb-src\n");
        std::fs::write(state.join("sources/src.sources"), src_text)
            .expect("a private apt sources file");
        let options = [
            format!("Dir::Etc::SourceParts={}", state.join("sources").display()),
            "Dir::Etc::SourceList=/dev/null".to_string(),
            format!("Dir::State::Lists={}", state.join("lists").display()),
            format!("Dir::Cache={}", state.join("cache").display()),
        ];
        let apt = |args: &[&str]| {
            let mut cmd = Command::new("apt-get");
            for o in &options {
                cmd.arg("-o").arg(o);
            }
            cmd.args(["-o", "Acquire::Retries=1", "-qq"])
                .args(args)
                .current_dir(tmp);
            run(&mut cmd)
        };
        apt(&["update"]).map_err(|e| need::fetch_failed(Registry::Debian, e))?;
        apt(&["source", "--download-only", package])
            .map_err(|e| need::fetch_failed(Registry::Debian, e))?;
        let _ = std::fs::remove_dir_all(&state);
        // The upstream tarball only (Debian's packaging is not the project's code).
        for entry in std::fs::read_dir(tmp)
            .expect("the download folder")
            .flatten()
        {
            let name = entry.file_name().to_string_lossy().to_string();
            if !name.contains(".orig.tar.") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        untar_all(tmp);
        Ok(())
    })
}

/// A PyPI source distribution, fetched with `pip download --no-binary :all:`.
fn pypi_sdist(requirement: &str) -> Result<PathBuf, Unavailable> {
    need::pip()?;
    cached(&format!("pypi-{}", requirement.replace("==", "-")), |tmp| {
        run(Command::new("python3")
            .args(["-m", "pip", "download", "--no-binary", ":all:", "--no-deps"])
            .args([
                "--disable-pip-version-check",
                "--retries",
                "1",
                "--timeout",
                "20",
            ])
            .arg("-d")
            .arg(tmp)
            .arg(requirement))
        .map_err(|e| need::fetch_failed(Registry::PyPi, e))?;
        untar_all(tmp);
        Ok(())
    })
}

/// The one directory a tarball unpacked into, below `root`.
fn only_dir(root: &Path) -> PathBuf {
    std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .unwrap_or_else(|| root.to_path_buf())
}

#[test]
fn global_rules_hold_on_a_python_source_distribution() {
    let corpus = match pypi_sdist("attrs==24.2.0") {
        Ok(p) => only_dir(&p),
        Err(why) => return skip("Python corpus (attrs 24.2.0 from PyPI)", why),
    };
    let summary = validate_tree(&corpus, "");
    assert_clean("attrs 24.2.0", &summary, 40);
}

#[test]
fn global_rules_hold_on_a_crate_cargo_unpacked() {
    // regex-syntax: a dependency of this build (through regex), so cargo has its source.
    // No network: cargo unpacked it to build this test, so it must be there.
    let corpus = unpacked_crate("regex-syntax-").unwrap_or_else(|why| panic!("{why}"));
    let summary = validate_tree(&corpus, "src");
    assert_clean("regex-syntax", &summary, 25);
}

#[test]
fn global_rules_hold_on_a_debian_go_source_package() {
    let corpus = match debian_source("golang-toml") {
        Ok(p) => only_dir(&p),
        Err(why) => {
            return skip(
                "Go corpus (Debian source golang-toml: BurntSushi/toml)",
                why,
            );
        }
    };
    let summary = validate_tree(&corpus, "");
    assert_clean("BurntSushi/toml", &summary, 25);
}

#[test]
fn global_rules_hold_on_a_debian_java_source_package() {
    let corpus = match debian_source("junit4") {
        Ok(p) => only_dir(&p),
        Err(why) => return skip("Java corpus (Debian source junit4)", why),
    };
    let summary = validate_tree(&corpus, "src/main");
    assert_clean("junit4", &summary, 200);
}
