//! `SymbolMetadata` (the blueprint's phase 3 output) assembled from stored edges: kind
//! and modifiers, signature, type hierarchy, one-hop calls and callers, reference count
//! (distinct files), type flows and members. Pure: the caller loads a [`GraphSlice`].

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::store::{EdgeKind, EdgeRecord, SymbolName, SymbolRecord};

/// A symbol as the graph names it: a display name, and where it lives when it is in the
/// repository (`id` and `path` empty for external and unresolved names).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
pub struct SymbolRef {
    /// Chunk id, for repository symbols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `Class.member`, `name`, or an external `module.name`.
    pub name: String,
    /// File of a repository symbol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// Structural metadata of one symbol.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct SymbolMetadata {
    /// Chunk id.
    pub id: String,
    /// Display name (`TokenService.validateToken`).
    pub name: String,
    /// File.
    pub path: String,
    /// Node kind (`method`, `class`, …).
    pub kind: String,
    /// Modifiers, in their fixed order.
    pub modifiers: Vec<String>,
    /// Whether it is exported.
    pub exported: bool,
    /// Declaration head.
    pub signature: String,
    /// What it extends.
    pub extends: Vec<SymbolRef>,
    /// What it implements.
    pub implements: Vec<SymbolRef>,
    /// What extends or implements it.
    pub subtypes: Vec<SymbolRef>,
    /// What it calls (one hop), in source order.
    pub calls: Vec<SymbolRef>,
    /// Calls whose receiver's type is unknown, by member name.
    pub uncertain_calls: Vec<String>,
    /// What calls it (one hop); for classes, what calls it or its members.
    pub callers: Vec<SymbolRef>,
    /// What uses it other than by calling (reads, type uses).
    pub used_by: Vec<SymbolRef>,
    /// Files referencing it, sorted.
    pub reference_files: Vec<String>,
    /// Types named in its parameter annotations (where parameter types come from).
    pub types_in: Vec<SymbolRef>,
    /// Types named in its return annotation (where its results go).
    pub types_out: Vec<SymbolRef>,
    /// Other types it uses.
    pub types_used: Vec<SymbolRef>,
    /// For classes, interfaces, enums, namespaces: member names in source order, methods
    /// with `()`.
    pub members: Vec<String>,
    /// For documentation: the code symbols its inline code names (`validateToken`,
    /// `TokenService.validate`), resolved in its repository.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mentions: Vec<SymbolRef>,
}

impl SymbolMetadata {
    /// Number of distinct files referencing the symbol.
    pub fn reference_count(&self) -> usize {
        self.reference_files.len()
    }
}

/// The part of the graph around some symbols, loaded by the caller.
#[derive(Debug, Clone, Default)]
pub struct GraphSlice {
    /// The symbols described (targets and their children) by id, with their file.
    pub symbols: HashMap<String, (String, SymbolRecord)>,
    /// The other symbols at the ends of their edges, by id: only named and placed.
    pub ends: HashMap<String, SymbolName>,
    /// Edges leaving each loaded symbol.
    pub outgoing: HashMap<String, Vec<EdgeRecord>>,
    /// Edges arriving at each loaded symbol.
    pub incoming: HashMap<String, Vec<EdgeRecord>>,
    /// Children of each loaded symbol in source order.
    pub children: HashMap<String, Vec<String>>,
}

/// `A > B > c` → `A.B.c`.
pub fn display_name(breadcrumb: &str) -> String {
    breadcrumb.replace(" > ", ".")
}

fn is_method_like(kind: &str) -> bool {
    matches!(kind, "method" | "constructor" | "function" | "component")
}

impl GraphSlice {
    /// The file and breadcrumb of symbol `id`, when the slice holds it.
    fn place(&self, id: &str) -> Option<(&str, &str)> {
        match self.symbols.get(id) {
            Some((path, s)) => Some((path, &s.breadcrumb)),
            None => self
                .ends
                .get(id)
                .map(|e| (e.path.as_str(), e.breadcrumb.as_str())),
        }
    }

    fn symbol_ref(&self, id: &str) -> SymbolRef {
        match self.place(id) {
            Some((path, breadcrumb)) => SymbolRef {
                id: Some(id.to_string()),
                name: display_name(breadcrumb),
                path: Some(path.to_string()),
            },
            None => SymbolRef {
                id: Some(id.to_string()),
                name: id.to_string(),
                path: None,
            },
        }
    }

    fn edge_target(&self, e: &EdgeRecord) -> SymbolRef {
        match &e.to_chunk {
            Some(id) => self.symbol_ref(id),
            None => SymbolRef {
                id: None,
                name: e.to_name.clone(),
                path: None,
            },
        }
    }

    /// The metadata of symbol `id`, `None` when it is not in the slice.
    pub fn metadata(&self, id: &str) -> Option<SymbolMetadata> {
        let (path, symbol) = self.symbols.get(id)?;
        let outgoing = self.outgoing.get(id).map_or(&[][..], Vec::as_slice);
        let children = self.children.get(id).map_or(&[][..], Vec::as_slice);
        let targets = |kinds: &[EdgeKind]| -> Vec<SymbolRef> {
            let mut seen = BTreeSet::new();
            outgoing
                .iter()
                .filter(|e| kinds.contains(&e.kind) && e.certain)
                .map(|e| self.edge_target(e))
                .filter(|r| seen.insert(r.clone()))
                .collect()
        };
        // Incoming edges: the symbol's own, and for class-likes its members' too.
        let class_like = matches!(symbol.kind.as_str(), "class" | "component" | "interface");
        let mut incoming: Vec<&EdgeRecord> = self.incoming.get(id).into_iter().flatten().collect();
        if class_like {
            for child in children {
                incoming.extend(self.incoming.get(child).into_iter().flatten());
            }
        }
        let own = |e: &&&EdgeRecord| e.from_chunk != id && !children.contains(&e.from_chunk);
        let sources = |kinds: &[EdgeKind]| -> Vec<SymbolRef> {
            let mut seen = BTreeSet::new();
            let mut out: Vec<SymbolRef> = incoming
                .iter()
                .filter(own)
                .filter(|e| kinds.contains(&e.kind))
                .map(|e| self.symbol_ref(&e.from_chunk))
                .filter(|r| seen.insert(r.clone()))
                .collect();
            out.sort_by(|a, b| (&a.path, &a.name).cmp(&(&b.path, &b.name)));
            out
        };
        let callers = sources(&[EdgeKind::Calls]);
        let used_by: Vec<SymbolRef> = sources(&[
            EdgeKind::References,
            EdgeKind::Type,
            EdgeKind::ParamType,
            EdgeKind::ReturnType,
        ])
        .into_iter()
        .filter(|r| !callers.contains(r))
        .collect();
        Some(SymbolMetadata {
            id: id.to_string(),
            name: display_name(&symbol.breadcrumb),
            path: path.clone(),
            kind: symbol.kind.clone(),
            modifiers: symbol
                .modifiers
                .split_whitespace()
                .map(str::to_string)
                .collect(),
            exported: symbol.exported,
            signature: symbol.signature.clone(),
            extends: targets(&[EdgeKind::Extends]),
            implements: targets(&[EdgeKind::Implements]),
            subtypes: sources(&[EdgeKind::Extends, EdgeKind::Implements]),
            calls: targets(&[EdgeKind::Calls])
                .into_iter()
                .filter(|r| r.id.as_deref() != Some(id))
                .collect(),
            uncertain_calls: outgoing
                .iter()
                .filter(|e| e.kind == EdgeKind::Calls && !e.certain)
                .map(|e| e.to_name.clone())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
            callers,
            used_by,
            reference_files: self.reference_files(id),
            types_in: targets(&[EdgeKind::ParamType]),
            types_out: targets(&[EdgeKind::ReturnType]),
            types_used: targets(&[EdgeKind::Type]),
            members: self.members(&symbol.kind, children),
            mentions: Vec::new(),
        })
    }

    /// The files that refer to symbol `id` (imports aside), in order.
    fn reference_files(&self, id: &str) -> Vec<String> {
        self.incoming
            .get(id)
            .into_iter()
            .flatten()
            .filter(|e| e.kind != EdgeKind::Imports && e.from_chunk != id)
            .filter_map(|e| self.place(&e.from_chunk).map(|(p, _)| p.to_string()))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// The member names of a container symbol of `kind` (`name()` for methods); none for
    /// other kinds.
    fn members(&self, kind: &str, children: &[String]) -> Vec<String> {
        if !matches!(
            kind,
            "class" | "interface" | "enum" | "namespace" | "module" | "component"
        ) {
            return Vec::new();
        }
        children
            .iter()
            .filter_map(|c| self.symbols.get(c))
            .map(|(_, s)| {
                if is_method_like(&s.kind) {
                    format!("{}()", s.name)
                } else {
                    s.name.clone()
                }
            })
            .collect()
    }
}
