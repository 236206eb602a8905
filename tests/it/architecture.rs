//! The module graph as docs/ARCHITECTURE.md draws it, checked from the `use` lines and
//! paths of the sources: lower layers never reach up, and the protocol adapters (`api`,
//! `mcp`) never reach each other; only `server` (which mounts both) and `cli` (the
//! composition root) see more than one.

use std::path::{Path, PathBuf};

/// What each module may not name, and why.
const RULES: &[(&str, &[&str], &str)] = &[
    (
        "api",
        &["mcp", "server", "cli"],
        "REST is an adapter beside MCP",
    ),
    (
        "mcp",
        &["api", "server", "cli"],
        "MCP is an adapter beside REST",
    ),
    (
        "service",
        &["api", "mcp", "server", "cli"],
        "the domain API knows no protocol",
    ),
    (
        "index",
        &["service", "api", "mcp", "server", "cli"],
        "pipeline below the service",
    ),
    (
        "search",
        &["service", "api", "mcp", "server", "cli"],
        "pipeline below the service",
    ),
    (
        "store",
        &["service", "api", "mcp", "server", "cli"],
        "pipeline below the service",
    ),
    (
        "render",
        &["service", "api", "mcp", "server", "cli"],
        "pipeline below the service",
    ),
    (
        "graph",
        &["service", "api", "mcp", "server", "cli"],
        "pipeline below the service",
    ),
    (
        "embed",
        &["service", "api", "mcp", "server", "cli"],
        "pipeline below the service",
    ),
    (
        "parse",
        &["service", "api", "mcp", "server", "cli", "index", "store"],
        "pure",
    ),
    (
        "chunk",
        &["service", "api", "mcp", "server", "cli", "index", "store"],
        "pure",
    ),
];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without its comments (doc links may name any module).
fn code(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn no_module_reaches_up_or_sideways() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut broken = Vec::new();
    let mut checked = 0;
    for (module, forbidden, why) in RULES {
        let root = src.join(module);
        let mut files = Vec::new();
        if root.is_dir() {
            sources(&root, &mut files);
        }
        let single = src.join(format!("{module}.rs"));
        if single.is_file() {
            files.push(single);
        }
        assert!(!files.is_empty(), "module `{module}` has no sources");
        for file in files {
            checked += 1;
            let code = code(&file);
            for other in *forbidden {
                if code.contains(&format!("crate::{other}::"))
                    || code.contains(&format!("crate::{other}}}"))
                    || code.contains(&format!("crate::{other};"))
                    || code.contains(&format!("crate::{{{other}"))
                {
                    broken.push(format!(
                        "{} names `crate::{other}` ({why})",
                        file.strip_prefix(&src).unwrap().display()
                    ));
                }
            }
        }
    }
    assert!(checked > 50, "only {checked} files checked");
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}
