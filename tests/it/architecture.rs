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

/// The most lines a function outside tests may take: a longer one is split into named
/// stages (issue 38).
const MAX_FUNCTION_LINES: usize = 100;

/// The name of the function a trimmed line declares (`pub(in crate::x) async fn name(`),
/// if it declares one.
fn declared_fn(line: &str) -> Option<&str> {
    let mut tokens = line.split_whitespace();
    let mut open_visibility = false;
    while let Some(token) = tokens.next() {
        if open_visibility {
            open_visibility = !token.ends_with(')');
            continue;
        }
        match token {
            "pub" | "async" | "const" | "unsafe" | "extern" | "\"C\"" => {}
            "fn" => {
                return tokens
                    .next()
                    .map(|n| n.split(['(', '<']).next().unwrap_or(n));
            }
            t if t.starts_with("pub(") => open_visibility = !t.ends_with(')'),
            _ => return None,
        }
    }
    None
}

/// Each function of `text` over [`MAX_FUNCTION_LINES`] as (name, first line, lines),
/// read from rustfmt's layout: a function runs from its `fn` line to the `}` at the same
/// indent. Test modules (`#[cfg(test)] mod …`) are skipped.
fn long_functions(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = text.lines().collect();
    let indent_of = |l: &str| l.len() - l.trim_start().len();
    let mut long = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        let close = format!("{}}}", &line[..indent_of(line)]);
        if trimmed == "#[cfg(test)]"
            && lines
                .get(i + 1)
                .is_some_and(|l| l.trim_start().starts_with("mod ") && l.ends_with('{'))
        {
            i = (i + 1..lines.len())
                .find(|&j| lines[j] == close)
                .map_or(lines.len(), |j| j + 1);
            continue;
        }
        let one_line = trimmed.contains('{') && trimmed.ends_with('}');
        if let Some(name) = declared_fn(trimmed).filter(|_| !one_line) {
            for (j, body) in lines.iter().enumerate().skip(i) {
                if *body == close {
                    if j - i + 1 > MAX_FUNCTION_LINES {
                        long.push((name.to_string(), i + 1, j - i + 1));
                    }
                    break;
                }
                // A declaration without a body (a trait's) ends at its `;`.
                if body.ends_with(';') && !lines[i..=j].iter().any(|l| l.ends_with('{')) {
                    break;
                }
            }
        }
        i += 1;
    }
    long
}

#[test]
fn the_function_reader_measures_what_it_should() {
    let short = "pub(in crate::a) async fn short(\n    x: u8,\n) -> u8 {\n    x\n}\n";
    assert!(long_functions(short).is_empty());
    let body = "    let _ = 1;\n".repeat(MAX_FUNCTION_LINES);
    let long = format!("impl A {{\n    pub fn long() {{\n{body}    }}\n    fn one() {{ 1 }}\n}}\n");
    assert_eq!(
        long_functions(&long),
        [("long".to_string(), 2, MAX_FUNCTION_LINES + 2)]
    );
    let tested = format!("#[cfg(test)]\nmod tests {{\n    fn long() {{\n{body}    }}\n}}\n");
    assert!(long_functions(&tested).is_empty());
    let declared = "trait T {\n    fn declared(&self);\n}\n";
    assert!(long_functions(declared).is_empty());
    assert_eq!(declared_fn("pub(crate) const fn f<T>(x: T)"), Some("f"));
    assert_eq!(declared_fn("let fn_name = 1;"), None);
}

#[test]
fn no_function_outside_tests_is_over_100_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(files.len() > 50, "only {} files found", files.len());
    let mut long = Vec::new();
    for file in files.iter().filter(|f| !f.ends_with("tests.rs")) {
        let text = std::fs::read_to_string(file).unwrap();
        for (name, line, lines) in long_functions(&text) {
            let file = file.strip_prefix(&src).unwrap().display();
            long.push(format!("{file}:{line} `{name}` is {lines} lines"));
        }
    }
    assert!(
        long.is_empty(),
        "split these into named stages of at most {MAX_FUNCTION_LINES} lines:\n{}",
        long.join("\n")
    );
}
