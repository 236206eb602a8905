//! Smart structural snapshots (pure): for the target chunks of one file, the file's
//! relevant imports, the same-file declarations the targets use (constants, variables,
//! type aliases, interfaces, enums; class properties through their wrapper), the wrappers
//! of member targets (class, namespace, object headers), and the targets fully expanded.
//! Everything else is left out, with no collapse markers.

use std::collections::{HashMap, HashSet};

use crate::chunk::CodeChunk;
use crate::parse::SymbolKind;

/// Identifier-like words of `text`.
fn identifiers(text: &str) -> HashSet<&str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Kinds of root-level declarations a snapshot shows when a target uses their name.
fn is_context_declaration(kind: SymbolKind) -> bool {
    matches!(
        kind,
        SymbolKind::Const
            | SymbolKind::Variable
            | SymbolKind::Type
            | SymbolKind::Interface
            | SymbolKind::Enum
    )
}

/// The opening line(s) of a wrapper: its collapsed content up to the line that opens the
/// body (ending in `{`), or its first line.
fn header(chunk: &CodeChunk) -> String {
    let mut out = Vec::new();
    for line in chunk.full_source.lines() {
        out.push(line);
        if line.trim_end().ends_with('{') {
            break;
        }
    }
    out.join("\n")
}

fn indentation(text: &str) -> &str {
    let first = text.lines().next().unwrap_or("");
    &first[..first.len() - first.trim_start().len()]
}

/// Renders the snapshot of `path` for `targets` (ids of chunks in `file_chunks`, all
/// chunks of the file). Targets that are not in `file_chunks` are ignored.
pub fn snapshot(path: &str, targets: &[&str], file_chunks: &[CodeChunk]) -> String {
    let by_id: HashMap<&str, &CodeChunk> = file_chunks.iter().map(|c| (c.id.as_str(), c)).collect();
    let targets: Vec<&CodeChunk> = targets
        .iter()
        .filter_map(|id| by_id.get(id).copied())
        .collect();
    let target_ids: HashSet<&str> = targets.iter().map(|t| t.id.as_str()).collect();
    let encloses_target = |c: &CodeChunk| {
        targets
            .iter()
            .any(|t| c.start_line <= t.start_line && t.end_line <= c.end_line)
    };
    // Chunks shown whole: the targets and the declarations they use, and what those use
    // in turn (a shown `private cache = new Cache(TTL)` brings `TTL`), to a fixed point.
    let mut whole: HashSet<&str> = target_ids.clone();
    loop {
        let mut used: HashSet<&str> = HashSet::new();
        for id in &whole {
            used.extend(identifiers(&by_id[id].full_source));
        }
        for c in file_chunks.iter().filter(|c| encloses_target(c)) {
            used.extend(identifiers(header(c).as_str()).into_iter().map(|w| {
                // `header` returns an owned string; keep the name by looking it up in the
                // file's own text instead.
                file_chunks
                    .iter()
                    .find(|d| d.name == w)
                    .map_or("", |d| d.name.as_str())
            }));
        }
        let before = whole.len();
        for c in file_chunks {
            if whole.contains(c.id.as_str())
                || encloses_target(c)
                || !used.contains(c.name.as_str())
            {
                continue;
            }
            let root_declaration = c.depth == 0 && is_context_declaration(c.node_kind);
            // A property of a class that wraps a target (`this.secret`).
            let wrapped_property = c.node_kind == SymbolKind::Property
                && c.parent_chunk_id
                    .as_deref()
                    .and_then(|p| by_id.get(p))
                    .is_some_and(|p| encloses_target(p));
            if root_declaration || wrapped_property {
                whole.insert(c.id.as_str());
            }
        }
        if whole.len() == before {
            break;
        }
    }
    // Drop whole chunks nested in another whole chunk (a class target holds its methods).
    let nested: Vec<&str> = whole
        .iter()
        .copied()
        .filter(|id| {
            let c = by_id[id];
            whole.iter().any(|other| {
                let o = by_id[other];
                o.id != c.id
                    && o.start_line <= c.start_line
                    && c.end_line <= o.end_line
                    && (o.start_line, o.end_line) != (c.start_line, c.end_line)
            })
        })
        .collect();
    for id in nested {
        whole.remove(id);
    }
    // Wrappers: every ancestor of a whole chunk.
    let mut wrappers: HashSet<&str> = HashSet::new();
    for id in &whole {
        let mut parent = by_id[id].parent_chunk_id.as_deref();
        while let Some(p) = parent.and_then(|p| by_id.get(p)) {
            wrappers.insert(p.id.as_str());
            parent = p.parent_chunk_id.as_deref();
        }
    }
    let mut imports: Vec<&str> = Vec::new();
    for id in &whole {
        for import in &by_id[id].relevant_imports {
            if !imports.contains(&import.as_str()) {
                imports.push(import);
            }
        }
    }
    // Imports a shown wrapper's head uses (`class A extends Base`).
    let heads: HashSet<String> = wrappers
        .iter()
        .flat_map(|id| {
            identifiers(&header(by_id[id]))
                .into_iter()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    for c in file_chunks
        .iter()
        .filter(|c| c.node_kind == SymbolKind::Import)
    {
        let text = c.content.trim();
        let binds = identifiers(text)
            .into_iter()
            .filter(|w| !matches!(*w, "import" | "from" | "as" | "type" | "default"))
            .any(|w| heads.contains(w));
        if binds && !imports.contains(&text) {
            imports.push(text);
        }
    }
    imports.sort_by_key(|text| {
        file_chunks
            .iter()
            .find(|c| c.node_kind == SymbolKind::Import && c.content.trim() == text.trim())
            .map_or(u32::MAX, |c| c.start_line)
    });

    let mut children: HashMap<Option<&str>, Vec<&CodeChunk>> = HashMap::new();
    for c in file_chunks {
        if whole.contains(c.id.as_str()) || wrappers.contains(c.id.as_str()) {
            children
                .entry(c.parent_chunk_id.as_deref())
                .or_default()
                .push(c);
        }
    }
    for list in children.values_mut() {
        list.sort_by_key(|c| c.start_line);
    }
    /// Blocks of one level: `(text, whether it is a one-part declaration)`.
    fn emit(
        parent: Option<&str>,
        children: &HashMap<Option<&str>, Vec<&CodeChunk>>,
        whole: &HashSet<&str>,
        out: &mut Vec<(String, bool)>,
    ) {
        for c in children.get(&parent).into_iter().flatten() {
            if whole.contains(c.id.as_str()) {
                let plain = c.is_leaf() && !c.node_kind.has_code_body();
                out.push((c.full_source.trim_end().to_string(), plain));
            } else {
                let mut inner = Vec::new();
                emit(Some(c.id.as_str()), children, whole, &mut inner);
                let head = header(c);
                let close = format!("{}}}", indentation(&head));
                out.push((format!("{head}\n{}\n{close}", join(&inner)), false));
            }
        }
    }
    /// Consecutive plain declarations (fields, constants) stay together; anything with a
    /// body is set off by blank lines.
    fn join(blocks: &[(String, bool)]) -> String {
        let mut out = String::new();
        for (i, (text, plain)) in blocks.iter().enumerate() {
            if i > 0 {
                out.push_str(if *plain && blocks[i - 1].1 {
                    "\n"
                } else {
                    "\n\n"
                });
            }
            out.push_str(text);
        }
        out
    }
    let mut blocks = Vec::new();
    emit(None, &children, &whole, &mut blocks);
    let mut out = format!("// {path}\n");
    if !imports.is_empty() {
        out.push('\n');
        out.push_str(&imports.join("\n"));
        out.push('\n');
    }
    if !blocks.is_empty() {
        out.push('\n');
        out.push_str(&join(&blocks));
        out.push('\n');
    }
    out
}
