//! The module graph as docs/ARCHITECTURE.md draws it, checked from the `use` lines and
//! paths of the sources: lower layers never reach up, and the protocol adapters (`api`,
//! `mcp`) never reach each other; only `server` (which mounts both) and `cli` see more
//! than one. `app` (the wiring: configuration to service) sits between the service and
//! the adapters. No adapter (REST, MCP, the CLI) names the indexer, the searcher or the
//! stores: their records come through `service::records`. The web console (`console`)
//! serves its page and script and names no other module: it speaks the public API.

use std::path::{Path, PathBuf};

/// What each module may not name, and why.
const RULES: &[(&str, &[&str], &str)] = &[
    (
        "api",
        &["mcp", "server", "cli", "app", "index", "search", "store"],
        "REST is an adapter beside MCP, over the service alone",
    ),
    (
        "mcp",
        &["api", "server", "cli", "app", "index", "search", "store"],
        "MCP is an adapter beside REST, over the service alone",
    ),
    (
        "cli",
        &["index", "search", "store"],
        "the CLI is an adapter over the service (and the wiring, `app`)",
    ),
    (
        "app",
        &["api", "mcp", "server", "cli"],
        "the wiring builds the service; the adapters sit above it",
    ),
    (
        "service",
        &["api", "mcp", "server", "cli", "app"],
        "the domain API knows no protocol",
    ),
    (
        "index",
        &["service", "api", "mcp", "server", "cli", "app"],
        "pipeline below the service",
    ),
    (
        "search",
        &["service", "api", "mcp", "server", "cli", "app"],
        "pipeline below the service",
    ),
    (
        "store",
        &["service", "api", "mcp", "server", "cli", "app"],
        "pipeline below the service",
    ),
    (
        "render",
        &["service", "api", "mcp", "server", "cli", "app"],
        "pipeline below the service",
    ),
    (
        "graph",
        &["service", "api", "mcp", "server", "cli", "app"],
        "pipeline below the service",
    ),
    (
        "embed",
        &["service", "api", "mcp", "server", "cli", "app"],
        "pipeline below the service",
    ),
    (
        "telemetry",
        &[
            "service", "api", "mcp", "server", "cli", "app", "index", "search", "store", "embed",
        ],
        "process plumbing every layer may use, depending on none",
    ),
    (
        "scout",
        &[
            "service", "api", "mcp", "server", "cli", "app", "index", "search", "store", "graph",
            "embed",
        ],
        "Scout's exploration is pure: the service hands it the graph and a model",
    ),
    (
        "roles",
        &[
            "service", "api", "mcp", "server", "cli", "app", "index", "search", "store", "graph",
            "embed", "chunk",
        ],
        "pure: path rules that search and the indexer read",
    ),
    (
        "auth",
        &[
            "service", "api", "mcp", "server", "cli", "app", "index", "search", "store", "graph",
            "embed", "parse", "chunk",
        ],
        "principals and scopes, below the service that checks them",
    ),
    (
        "text",
        &[
            "service",
            "api",
            "mcp",
            "server",
            "cli",
            "app",
            "index",
            "search",
            "store",
            "graph",
            "embed",
            "parse",
            "chunk",
            "render",
            "roles",
            "auth",
            "scout",
            "telemetry",
        ],
        "pure text helpers every layer uses, depending on none",
    ),
    (
        "console",
        &[
            "service", "api", "mcp", "server", "cli", "app", "index", "search", "store", "auth",
        ],
        "the web console is a client of the public API: its page and script, nothing more",
    ),
    (
        "parse",
        &[
            "service", "api", "mcp", "server", "cli", "app", "index", "store",
        ],
        "pure",
    ),
    (
        "chunk",
        &[
            "service", "api", "mcp", "server", "cli", "app", "index", "store",
        ],
        "pure",
    ),
];

/// The top-level modules of `src/` with their sources.
fn modules(src: &Path) -> Vec<(String, Vec<PathBuf>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(src).unwrap().flatten() {
        let path = entry.path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if name == "lib" || name == "main" {
            continue;
        }
        let mut files = Vec::new();
        if path.is_dir() {
            sources(&path, &mut files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path.clone());
        }
        if !files.is_empty() {
            out.push((name, files));
        }
    }
    out.sort();
    out
}

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
    let modules = modules(&src);
    let mut broken = Vec::new();
    let mut checked = 0;
    for (module, forbidden, why) in RULES {
        let files = modules
            .iter()
            .find(|(name, _)| name == module)
            .map(|(_, files)| files.clone())
            .unwrap_or_default();
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

/// `crate::X` paths name module `X`; the graph of top-level modules has no cycle (what
/// a tool such as cargo-modules would report).
#[test]
fn the_module_graph_has_no_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = modules(&src);
    let names: Vec<&str> = modules.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.contains(&"service") && names.contains(&"api"),
        "{names:?}"
    );
    let edges: Vec<Vec<usize>> = modules
        .iter()
        .map(|(name, files)| {
            let code: String = files.iter().map(|f| code(f)).collect();
            (0..names.len())
                .filter(|&i| names[i] != name && code.contains(&format!("crate::{}", names[i])))
                .collect()
        })
        .collect();
    // Depth-first search with colours: reaching a module still on the stack is a cycle.
    fn visit(
        i: usize,
        edges: &[Vec<usize>],
        colour: &mut [u8],
        stack: &mut Vec<usize>,
    ) -> Option<Vec<usize>> {
        colour[i] = 1;
        stack.push(i);
        for &j in &edges[i] {
            if colour[j] == 1 {
                let from = stack.iter().position(|&k| k == j).unwrap();
                return Some(stack[from..].to_vec());
            }
            if colour[j] == 0
                && let Some(cycle) = visit(j, edges, colour, stack)
            {
                return Some(cycle);
            }
        }
        stack.pop();
        colour[i] = 2;
        None
    }
    let mut colour = vec![0u8; names.len()];
    for i in 0..names.len() {
        if colour[i] == 0
            && let Some(cycle) = visit(i, &edges, &mut colour, &mut Vec::new())
        {
            let path: Vec<&str> = cycle.iter().map(|&k| names[k]).collect();
            panic!("import cycle: {} → {}", path.join(" → "), path[0]);
        }
    }
}
