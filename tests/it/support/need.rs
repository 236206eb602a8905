//! What a check needs from the machine, and why it could not run: a missing tool (a
//! failure under `CI=true`), or a package registry that cannot be reached (the only skip
//! CI allows). A fetch that fails while its registry answers is neither: the caller
//! panics, because then the fault is in the fetch (ours, or the pinned package's).

use std::fmt;
use std::process::{Command, Stdio};

/// Why a check could not run.
#[derive(Debug, Clone)]
pub enum Unavailable {
    /// A program, package or privilege the check needs is missing.
    Missing {
        /// What is missing (`node and npm`).
        what: String,
        /// How to get it (`apt-get install nodejs npm`).
        install: String,
        /// What was seen.
        detail: String,
    },
    /// A package registry could not be reached.
    Registry {
        /// Which registry.
        registry: Registry,
        /// The fetch's error.
        detail: String,
    },
}

impl Unavailable {
    /// A [`Unavailable::Missing`].
    pub fn missing(what: &str, install: &str, detail: impl Into<String>) -> Self {
        Self::Missing {
            what: what.into(),
            install: install.into(),
            detail: detail.into(),
        }
    }

    /// Whether CI lets the check skip for this reason (only an unreachable registry).
    pub fn may_skip_in_ci(&self) -> bool {
        matches!(self, Self::Registry { .. })
    }
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing {
                what,
                install,
                detail,
            } => write!(
                f,
                "it needs {what}, not found here ({detail}); install: {install}"
            ),
            Self::Registry { registry, detail } => write!(
                f,
                "the {registry} registry cannot be reached: {}",
                sextant::text::truncate_chars(detail.trim(), 400)
            ),
        }
    }
}

/// The package registries the suite fetches from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registry {
    /// npm (`npm pack`).
    Npm,
    /// PyPI (`pip download`).
    PyPi,
    /// Debian's archive (`apt-get source`).
    Debian,
}

impl fmt::Display for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Npm => "npm",
            Self::PyPi => "PyPI",
            Self::Debian => "Debian package",
        })
    }
}

/// Whether `program ARGS…` runs and exits 0; otherwise what was seen.
fn runs(program: &str, args: &[&str]) -> Result<(), String> {
    match Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
    {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "`{program} {}` exited with {}: {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => Err(format!("`{program}` could not start: {e}")),
    }
}

/// `node` and `npm` (the corpora, the eval corpus, the Helm binary).
pub fn node_and_npm() -> Result<(), Unavailable> {
    runs("node", &["--version"])
        .and_then(|()| runs("npm", &["--version"]))
        .map_err(|e| Unavailable::missing("node and npm", "apt-get install nodejs npm", e))
}

/// The Python interpreter the model installer runs (`SEXTANT_PYTHON`, default `python3`),
/// with pip.
pub fn pip() -> Result<(), Unavailable> {
    let python = std::env::var("SEXTANT_PYTHON").unwrap_or_else(|_| "python3".into());
    runs(&python, &["-m", "pip", "--version"]).map_err(|e| {
        Unavailable::missing(
            "Python 3 with pip",
            "apt-get install python3 python3-pip",
            e,
        )
    })
}

/// Python's virtual environments (`python3 -m venv`, which needs `ensurepip`).
pub fn venv() -> Result<(), Unavailable> {
    runs("python3", &["-c", "import venv, ensurepip"])
        .map_err(|e| Unavailable::missing("Python 3 with venv", "apt-get install python3-venv", e))
}

/// `apt-get` with Debian's package sources (`/etc/apt/sources.list.d/debian.sources`).
pub fn apt_sources() -> Result<(), Unavailable> {
    let sources = std::path::Path::new("/etc/apt/sources.list.d/debian.sources");
    runs("apt-get", &["--version"])
        .and_then(|()| {
            sources
                .is_file()
                .then_some(())
                .ok_or_else(|| format!("{} is not there", sources.display()))
        })
        .map_err(|e| {
            Unavailable::missing(
                "apt-get with Debian's package sources",
                "run the suite on Debian (bookworm or later)",
                e,
            )
        })
}

/// Whether `registry` answers, asked through its own client the way the fetch would be:
/// `npm ping`, `pip index versions` of a small package, `apt-get update` into a private
/// state folder (nothing system-wide changes).
pub fn reachable(registry: Registry) -> bool {
    let quiet = |cmd: &mut Command| {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    match registry {
        Registry::Npm => quiet(
            Command::new("npm")
                .args(["ping", "--loglevel=error"])
                .env("npm_config_fetch_retries", "1")
                .env("npm_config_fetch_timeout", "20000"),
        ),
        Registry::PyPi => {
            let python = std::env::var("SEXTANT_PYTHON").unwrap_or_else(|_| "python3".into());
            quiet(Command::new(python).args([
                "-m",
                "pip",
                "index",
                "versions",
                "six",
                "--disable-pip-version-check",
                "--retries",
                "1",
                "--timeout",
                "20",
            ]))
        }
        Registry::Debian => {
            let Ok(state) = tempfile::tempdir() else {
                return false;
            };
            let (lists, cache) = (state.path().join("lists"), state.path().join("cache"));
            for dir in [lists.join("partial"), cache.join("archives/partial")] {
                if std::fs::create_dir_all(dir).is_err() {
                    return false;
                }
            }
            quiet(
                Command::new("apt-get")
                    .arg("-o")
                    .arg(format!("Dir::State::Lists={}", lists.display()))
                    .arg("-o")
                    .arg(format!("Dir::Cache={}", cache.display()))
                    .args(["-o", "Acquire::Retries=1", "-qq", "update"]),
            )
        }
    }
}

/// What a failed fetch from `registry` means: the registry cannot be reached (a skip), or,
/// when it answers, a real failure, and this panics with `error`.
pub fn fetch_failed(registry: Registry, error: String) -> Unavailable {
    if reachable(registry) {
        panic!(
            "{error}\n(the {registry} registry answers, so this is a real failure of the \
             fetch, not a missing network)"
        );
    }
    Unavailable::Registry {
        registry,
        detail: error,
    }
}

#[test]
fn a_missing_tool_is_named_with_its_install_command() {
    let why = Unavailable::missing("node and npm", "apt-get install nodejs npm", "gone");
    assert!(!why.may_skip_in_ci());
    let text = why.to_string();
    assert!(text.contains("node and npm") && text.contains("apt-get install nodejs npm"));
    assert!(runs("a-program-that-is-not-there", &[]).is_err());
    let unreachable = Unavailable::Registry {
        registry: Registry::Npm,
        detail: "ENOTFOUND".into(),
    };
    assert!(unreachable.may_skip_in_ci());
}
