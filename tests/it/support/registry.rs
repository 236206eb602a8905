//! Crate sources cargo has already unpacked for this build (`$CARGO_HOME/registry/src`):
//! real Rust code nobody here wrote, with no download. Shared by the corpora test and the
//! parse bench (`#[path]`).

use std::path::PathBuf;

/// The newest unpacked version of the crate whose directory starts with `prefix`
/// (`regex-syntax-`).
pub fn unpacked_crate(prefix: &str) -> Result<PathBuf, String> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .ok_or("neither CARGO_HOME nor HOME is set")?;
    let registry = home.join("registry/src");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&registry)
        .map_err(|e| format!("{}: {e}", registry.display()))?
        .flatten()
        .flat_map(|index| {
            std::fs::read_dir(index.path())
                .into_iter()
                .flatten()
                .flatten()
        })
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_prefix(prefix))
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        })
        .collect();
    found.sort();
    found
        .pop()
        .ok_or_else(|| format!("no {prefix}* crate under {}", registry.display()))
}
