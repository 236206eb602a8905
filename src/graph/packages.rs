//! Module resolution for Python, Go, Rust and Java: an import as the language writes it
//! → the repository file (or, for Go, the package directory) it names. Pure: it only
//! looks at the set of indexed paths.
//!
//! - Python: relative imports (`.models`, `..util`) from the importing file's package;
//!   absolute ones (`app.models`) from the repository root or any source root under it
//!   (`src/app/models.py`), as `x.py` or `x/__init__.py`.
//! - Java: `com.acme.model.User` → a file ending in `com/acme/model/User.java`.
//! - Rust: `crate::a::b`, `self::…`, `super::…` against the importing file's module path
//!   (`src/a/b.rs` or `src/a/b/mod.rs`); a path whose last segment is an item resolves to
//!   the module that declares it.
//! - Go: an import path → the deepest repository directory its trailing elements name
//!   (`github.com/acme/app/store` → `store/` or `app/store/`), so no `go.mod` is needed.

use std::collections::{BTreeSet, HashMap};

use super::modules::dir_of;
use crate::parse::{Language, ModuleSystem};

/// The indexed paths, in order (for directory listings) and by file name (for suffix
/// lookups, which would otherwise scan every path for every import).
#[derive(Debug, Clone, Default)]
pub(super) struct Paths {
    sorted: BTreeSet<String>,
    by_name: HashMap<String, Vec<String>>,
}

impl Paths {
    /// The index of `files`.
    pub(super) fn new<'a>(files: impl IntoIterator<Item = &'a String>) -> Self {
        let mut paths = Self::default();
        for f in files {
            let name = f.rsplit('/').next().unwrap_or(f);
            paths
                .by_name
                .entry(name.to_string())
                .or_default()
                .push(f.clone());
            paths.sorted.insert(f.clone());
        }
        paths
    }

    fn contains(&self, path: &str) -> bool {
        self.sorted.contains(path)
    }

    /// The path that is `suffix` or ends with `/suffix`; the shortest when several do.
    fn by_suffix(&self, suffix: &str) -> Option<String> {
        let name = suffix.rsplit('/').next().unwrap_or(suffix);
        let slash = format!("/{suffix}");
        self.by_name
            .get(name)?
            .iter()
            .filter(|f| *f == suffix || f.ends_with(&slash))
            .min_by_key(|f| (f.len(), (*f).clone()))
            .cloned()
    }
}

/// The file or package directory (`dir/`, with a trailing slash) `spec` names from
/// `from`, or `None` when it is outside the repository (or `from` is not one of these
/// languages: `Some(None)` means "not mine").
pub(super) fn resolve(files: &Paths, from: &str, spec: &str) -> Option<Option<String>> {
    let language = Language::from_path(std::path::Path::new(from))?;
    Some(match language.def().modules.system {
        ModuleSystem::Python => python(files, from, spec),
        ModuleSystem::Java => java(files, spec),
        ModuleSystem::Rust => rust(files, from, spec),
        ModuleSystem::Go => go(files, spec),
        ModuleSystem::EcmaScript | ModuleSystem::None => return None,
    })
}

/// The files of a repository directory (not below it) with extension `ext` (no dot).
pub(super) fn package_files<'a>(
    files: &'a Paths,
    dir: &'a str,
    ext: &'a str,
) -> impl Iterator<Item = &'a String> + 'a {
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    let len = prefix.len();
    let within = prefix.clone();
    files
        .sorted
        .range(prefix..)
        .take_while(move |f| f.starts_with(&within))
        .filter(move |f| {
            let name = &f[len..];
            !name.contains('/') && name.rsplit_once('.').is_some_and(|(_, e)| e == ext)
        })
}

/// The first of `candidates` that is an indexed file.
fn first(files: &Paths, candidates: &[String]) -> Option<String> {
    candidates.iter().find(|c| files.contains(c)).cloned()
}

fn python(files: &Paths, from: &str, spec: &str) -> Option<String> {
    let dots = spec.chars().take_while(|c| *c == '.').count();
    let rest = spec[dots..].replace('.', "/");
    let module = |base: &str| -> Vec<String> {
        let stem = match (base.is_empty(), rest.is_empty()) {
            (true, _) => rest.clone(),
            (false, true) => base.to_string(),
            (false, false) => format!("{base}/{rest}"),
        };
        if stem.is_empty() {
            return vec!["__init__.py".into()];
        }
        vec![
            format!("{stem}.py"),
            format!("{stem}/__init__.py"),
            format!("{stem}.pyi"),
            format!("{stem}/__init__.pyi"),
        ]
    };
    if dots > 0 {
        let mut base = dir_of(from).to_string();
        for _ in 1..dots {
            base = dir_of(&base).to_string();
        }
        return first(files, &module(&base));
    }
    first(files, &module("")).or_else(|| {
        ["py", "pyi"].iter().find_map(|ext| {
            files
                .by_suffix(&format!("{rest}.{ext}"))
                .or_else(|| files.by_suffix(&format!("{rest}/__init__.{ext}")))
        })
    })
}

fn java(files: &Paths, spec: &str) -> Option<String> {
    let path = spec.replace('.', "/");
    files.by_suffix(&format!("{path}.java")).or_else(|| {
        // `a.b.Outer.Inner`: the outer class's file.
        let (outer, _) = path.rsplit_once('/')?;
        files.by_suffix(&format!("{outer}.java"))
    })
}

/// The module path of a Rust file below its crate's `src/` (`src/a/b.rs` → (`src`, `[a,
/// b]`); `lib.rs`, `main.rs` and `mod.rs` name their directory).
fn rust_module(from: &str) -> (String, Vec<String>) {
    let (root, rel) = match from.rfind("src/") {
        Some(i) if i == 0 || from[..i].ends_with('/') => (&from[..i + 3], &from[i + 4..]),
        _ => (dir_of(from), from.rsplit('/').next().unwrap_or(from)),
    };
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.strip_suffix(".rs").unwrap_or(&last);
    if !matches!(stem, "lib" | "main" | "mod") {
        parts.push(stem.to_string());
    }
    (root.to_string(), parts)
}

fn rust(files: &Paths, from: &str, spec: &str) -> Option<String> {
    let (root, mut module) = rust_module(from);
    let mut segments = spec.split("::").peekable();
    match segments.peek().copied() {
        Some("crate") => {
            segments.next();
            module.clear();
        }
        Some("self") => {
            segments.next();
        }
        Some("super") => {
            while segments.peek() == Some(&"super") {
                segments.next();
                module.pop()?;
            }
        }
        // A path from a crate outside (`std::…`, `serde::…`).
        _ => return None,
    }
    module.extend(segments.map(str::to_string));
    // The longest prefix that is a module file: trailing segments may be items.
    while !module.is_empty() {
        let stem = if root.is_empty() {
            module.join("/")
        } else {
            format!("{root}/{}", module.join("/"))
        };
        if let Some(found) = first(files, &[format!("{stem}.rs"), format!("{stem}/mod.rs")]) {
            return Some(found);
        }
        module.pop();
    }
    let base = if root.is_empty() {
        String::new()
    } else {
        format!("{root}/")
    };
    first(files, &[format!("{base}lib.rs"), format!("{base}main.rs")])
}

fn go(files: &Paths, spec: &str) -> Option<String> {
    let parts: Vec<&str> = spec.split('/').collect();
    // The longest trailing run of the import path that is a directory with Go files.
    for start in 0..parts.len() {
        let dir = parts[start..].join("/");
        if package_files(files, &dir, "go").next().is_some() {
            return Some(format!("{dir}/"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(paths: &[&str]) -> Paths {
        let owned: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
        Paths::new(&owned)
    }

    #[test]
    fn python_relative_and_absolute_imports() {
        let f = files(&[
            "src/app/__init__.py",
            "src/app/models.py",
            "src/app/api/views.py",
            "src/app/util/__init__.py",
        ]);
        let r = |from: &str, spec: &str| resolve(&f, from, spec).flatten();
        assert_eq!(
            r("src/app/api/views.py", "..models").as_deref(),
            Some("src/app/models.py")
        );
        assert_eq!(
            r("src/app/api/views.py", "..util").as_deref(),
            Some("src/app/util/__init__.py")
        );
        assert_eq!(
            r("src/app/models.py", ".").as_deref(),
            Some("src/app/__init__.py")
        );
        assert_eq!(
            r("src/app/api/views.py", "app.models").as_deref(),
            Some("src/app/models.py")
        );
        assert_eq!(r("src/app/api/views.py", "requests"), None);
    }

    #[test]
    fn rust_paths_resolve_to_module_files() {
        let f = files(&[
            "core/src/lib.rs",
            "core/src/store/mod.rs",
            "core/src/store/meta.rs",
            "core/src/api.rs",
        ]);
        let r = |from: &str, spec: &str| resolve(&f, from, spec).flatten();
        assert_eq!(
            r("core/src/api.rs", "crate::store::meta").as_deref(),
            Some("core/src/store/meta.rs")
        );
        // `crate::store::Meta`: `Meta` is an item of the `store` module.
        assert_eq!(
            r("core/src/api.rs", "crate::store").as_deref(),
            Some("core/src/store/mod.rs")
        );
        assert_eq!(
            r("core/src/store/meta.rs", "super").as_deref(),
            Some("core/src/store/mod.rs")
        );
        assert_eq!(
            r("core/src/store/meta.rs", "super::super::api").as_deref(),
            Some("core/src/api.rs")
        );
        assert_eq!(
            r("core/src/api.rs", "crate").as_deref(),
            Some("core/src/lib.rs")
        );
        assert_eq!(r("core/src/api.rs", "std::collections"), None);
    }

    #[test]
    fn java_and_go_resolve_by_path_suffix() {
        let f = files(&[
            "server/src/main/java/com/acme/model/User.java",
            "backend/store/store.go",
            "backend/store/open.go",
            "backend/cmd/main.go",
        ]);
        let r = |from: &str, spec: &str| resolve(&f, from, spec).flatten();
        assert_eq!(
            r(
                "server/src/main/java/com/acme/App.java",
                "com.acme.model.User"
            )
            .as_deref(),
            Some("server/src/main/java/com/acme/model/User.java")
        );
        assert_eq!(
            r("backend/cmd/main.go", "github.com/acme/backend/store").as_deref(),
            Some("backend/store/")
        );
        assert_eq!(r("backend/cmd/main.go", "fmt"), None);
        assert_eq!(package_files(&f, "backend/store", "go").count(), 2);
    }
}
