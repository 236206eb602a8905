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
    let used: HashSet<&str> = targets
        .iter()
        .flat_map(|t| identifiers(&t.full_source))
        .collect();
    let target_ids: HashSet<&str> = targets.iter().map(|t| t.id.as_str()).collect();
    let encloses_target = |c: &CodeChunk| {
        targets
            .iter()
            .any(|t| c.start_line <= t.start_line && t.end_line <= c.end_line)
    };
    // Chunks shown whole: the targets and the declarations they use.
    let mut whole: HashSet<&str> = target_ids.clone();
    for c in file_chunks {
        if target_ids.contains(c.id.as_str())
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
    fn emit(
        parent: Option<&str>,
        children: &HashMap<Option<&str>, Vec<&CodeChunk>>,
        whole: &HashSet<&str>,
        out: &mut Vec<String>,
    ) {
        for c in children.get(&parent).into_iter().flatten() {
            if whole.contains(c.id.as_str()) {
                out.push(c.full_source.trim_end().to_string());
            } else {
                let mut inner = Vec::new();
                emit(Some(c.id.as_str()), children, whole, &mut inner);
                let head = header(c);
                let close = format!("{}}}", indentation(&head));
                out.push(format!("{head}\n{}\n{close}", inner.join("\n\n")));
            }
        }
    }
    let mut blocks = Vec::new();
    emit(None, &children, &whole, &mut blocks);
    let mut out = format!("// {path}\n");
    if !imports.is_empty() {
        out.push('\n');
        out.push_str(&imports.join("\n"));
        out.push('\n');
    }
    for block in blocks {
        out.push('\n');
        out.push_str(&block);
        out.push('\n');
    }
    out
}
