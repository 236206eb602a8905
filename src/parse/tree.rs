//! Helpers over tree-sitter trees that every parser uses: positions and spans, one
//! iterative pre-order walk, and the pass that collects identifiers, comments and
//! syntax diagnostics. Iterative throughout, so hostile nesting cannot overflow the stack.

use tree_sitter::Node;

use super::refs::{RefKind, RefTarget, Reference};
use super::{
    ByteRange, Diagnostic, IdentRef, Import, Language, LineRange, Modifier, ParsedFile,
    ParsedSymbol, SymbolKind,
};
use crate::text::{collapse_truncate, truncate_chars};

/// At most this many diagnostics are kept per file.
const MAX_DIAGNOSTICS: usize = 50;
/// Symbols nested deeper than this are left inside their ancestor's chunk.
pub(crate) const MAX_SYMBOL_DEPTH: u32 = 32;
/// Longest statement label (`app.use(cors())`, `if x:`), in characters.
pub(crate) const LABEL_CHARS: usize = 60;
/// Longest signature kept for declarations without a body, in characters.
pub(crate) const VALUE_SIGNATURE_CHARS: usize = 160;
/// Longest signature kept for function-like declarations, in characters.
pub(crate) const SIGNATURE_CHARS: usize = 400;

/// `/** … */` or `/* … */` text without delimiters and leading `*`s; `None` when empty.
pub(crate) fn block_comment_text(text: &str) -> Option<String> {
    let inner = text
        .strip_prefix("/**")
        .or_else(|| text.strip_prefix("/*"))?
        .strip_suffix("*/")?;
    line_comments_text(inner.lines(), "*")
}

/// Comment lines with `prefix` (`///`, `//`, a block comment's `*`) and one space after
/// it stripped, joined; `None` when empty.
pub(crate) fn line_comments_text<'a>(
    lines: impl IntoIterator<Item = &'a str>,
    prefix: &str,
) -> Option<String> {
    let lines: Vec<&str> = lines
        .into_iter()
        .map(|l| {
            let l = l.trim();
            let l = l.strip_prefix(prefix).unwrap_or(l);
            l.strip_prefix(' ').unwrap_or(l).trim_end()
        })
        .collect();
    let doc = lines.join("\n");
    let doc = doc.trim();
    (!doc.is_empty()).then(|| doc.to_string())
}

/// 1-indexed first line of `node`.
pub(crate) fn line_of(node: Node) -> u32 {
    node.start_position().row as u32 + 1
}

/// 1-indexed last line of `node` (a node ending at column 0 ends on the line before).
pub(crate) fn end_line_of(node: Node) -> u32 {
    let end = node.end_position();
    let start = node.start_position();
    if end.column == 0 && end.row > start.row {
        end.row as u32
    } else {
        end.row as u32 + 1
    }
}

/// The byte span of `node`.
pub(crate) fn span(node: Node) -> ByteRange {
    ByteRange {
        start: node.start_byte(),
        end: node.end_byte(),
    }
}

/// Whether `node` has a child (named or not) of `kind`.
pub(crate) fn has_child_kind(node: Node, kind: &str) -> bool {
    let mut cursor = node.walk();
    node.children(&mut cursor).any(|c| c.kind() == kind)
}

/// The named children of `node`.
pub(crate) fn named_children(node: Node) -> Vec<Node> {
    let mut cursor = node.walk();
    node.named_children(&mut cursor).collect()
}

/// Visits the descendants of `root` (not `root` itself) in pre-order; a node's subtree
/// is entered only when `visit` returns `true` for it.
pub(crate) fn preorder<'t>(root: Node<'t>, mut visit: impl FnMut(Node<'t>) -> bool) {
    preorder_with_parent(root, |node, _| visit(node));
}

/// [`preorder`], also giving each node's parent (`root` for its children). The walk keeps
/// its own ancestor stack: tree-sitter's `Node::parent` descends from the tree's root,
/// so one call per node would make a walk quadratic in the nesting depth.
pub(crate) fn preorder_with_parent<'t>(
    root: Node<'t>,
    mut visit: impl FnMut(Node<'t>, Node<'t>) -> bool,
) {
    let mut cursor = root.walk();
    if !cursor.goto_first_child() {
        return;
    }
    let mut ancestors = vec![root];
    loop {
        let node = cursor.node();
        let parent = *ancestors.last().unwrap_or(&root);
        if visit(node, parent) && cursor.goto_first_child() {
            ancestors.push(node);
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() || cursor.node() == root {
                return;
            }
            ancestors.pop();
        }
    }
}

/// Where a symbol is being created: its depth and its parent's name.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    /// Nesting depth, 0 at the file root.
    pub depth: u32,
    /// The enclosing symbol's name.
    pub parent: Option<String>,
}

impl Ctx {
    /// The file root.
    pub fn root() -> Self {
        Self {
            depth: 0,
            parent: None,
        }
    }

    /// Inside the symbol `name`.
    pub fn child(&self, name: &str) -> Self {
        Self {
            depth: self.depth + 1,
            parent: Some(name.to_string()),
        }
    }
}

/// A symbol of `kind` named `name` at `ctx`, spanning from the start of `first` to the
/// end of `outer`; everything else empty, for the caller to fill in.
pub(crate) fn symbol_at(
    kind: SymbolKind,
    name: String,
    first: Node,
    outer: Node,
    ctx: &Ctx,
) -> ParsedSymbol {
    let mut symbol = ParsedSymbol::bare(
        kind,
        name,
        LineRange {
            start: line_of(first),
            end: end_line_of(outer),
        },
        ByteRange {
            start: first.start_byte(),
            end: outer.end_byte(),
        },
    );
    symbol.depth = ctx.depth;
    symbol.parent_name = ctx.parent.clone();
    symbol
}

/// `modifiers` in their fixed order, each once.
pub(crate) fn sorted(mut modifiers: Vec<Modifier>) -> Vec<Modifier> {
    modifiers.sort();
    modifiers.dedup();
    modifiers
}

/// A lookup table by node kind id: `true` for the named kinds called `names` (comparing
/// kind names on a hot walk costs a `strlen` and a UTF-8 check per node).
pub(crate) fn kind_table(language: &tree_sitter::Language, names: &[&str]) -> Vec<bool> {
    (0..language.node_kind_count() as u16)
        .map(|id| {
            language.node_kind_is_named(id)
                && language
                    .node_kind_for_id(id)
                    .is_some_and(|k| names.contains(&k))
        })
        .collect()
}

/// Whether `node`'s kind is marked in `table` (made by [`kind_table`]).
pub(crate) fn in_table(table: &[bool], node: Node) -> bool {
    table.get(node.kind_id() as usize).copied().unwrap_or(false)
}

/// A reference occurrence at `node`.
pub(crate) fn reference(node: Node, kind: RefKind, target: RefTarget) -> Reference {
    Reference {
        offset: node.start_byte(),
        line: line_of(node),
        kind,
        target,
    }
}

/// What [`scan`] collects.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// Identifier occurrences, by offset.
    pub identifiers: Vec<IdentRef>,
    /// Comment spans, by offset (comment subtrees are not entered).
    pub comments: Vec<ByteRange>,
    /// Error and missing nodes, at most [`MAX_DIAGNOSTICS`].
    pub diagnostics: Vec<Diagnostic>,
}

impl Scan {
    /// The parsed file of `source`: this scan with the walk's symbols (deprecated ones
    /// marked), imports and refs.
    pub fn into_file(
        self,
        language: Language,
        source: &str,
        mut symbols: Vec<ParsedSymbol>,
        imports: Vec<Import>,
        refs: super::refs::FileRefs,
    ) -> ParsedFile {
        super::symbol::mark_deprecated(&mut symbols, source);
        ParsedFile {
            language,
            symbols,
            imports,
            identifiers: self.identifiers,
            comments: self.comments,
            diagnostics: self.diagnostics,
            line_count: source.lines().count() as u32,
            refs,
        }
    }
}

/// A statement's label: its first line, collapsed, without the trailing characters of
/// `trim` (`{`, `;`…), or its node kind in words when nothing is left.
pub(crate) fn statement_label(node: Node, text: &str, trim: &[char]) -> String {
    let first = text.lines().next().unwrap_or("");
    let head = collapse_truncate(first, LABEL_CHARS * 2);
    let head = head.trim_end_matches(trim);
    if head.is_empty() {
        node.kind().replace('_', " ")
    } else {
        truncate_chars(head, LABEL_CHARS)
    }
}

/// One pass over the whole tree: the identifiers and comments the predicates pick, and
/// a diagnostic for each error or missing node.
pub(crate) fn scan(
    root: Node,
    src: &str,
    is_identifier: impl Fn(Node) -> bool,
    is_comment: impl Fn(Node) -> bool,
) -> Scan {
    let text = |node: Node| src.get(node.byte_range()).unwrap_or("");
    let mut out = Scan::default();
    let mut visit = |node: Node| {
        let mut descend = true;
        if is_identifier(node) {
            out.identifiers.push(IdentRef {
                offset: node.start_byte(),
                name: text(node).to_string(),
            });
        } else if is_comment(node) {
            out.comments.push(span(node));
            descend = false;
        }
        if (node.is_error() || node.is_missing()) && out.diagnostics.len() < MAX_DIAGNOSTICS {
            let pos = node.start_position();
            let message = if node.is_missing() {
                format!("missing `{}`", node.kind())
            } else {
                format!("syntax error near `{}`", collapse_truncate(text(node), 30))
            };
            out.diagnostics.push(Diagnostic {
                line: pos.row as u32 + 1,
                column: pos.column as u32 + 1,
                message,
            });
        }
        descend
    };
    if visit(root) {
        preorder(root, visit);
    }
    out
}

/// Folds overload signatures into the declaration that follows them: a run of same-name,
/// same-kind function-like symbols where every earlier one has no body becomes one symbol
/// whose range starts at the first overload.
pub(crate) fn merge_overloads(symbols: Vec<ParsedSymbol>) -> Vec<ParsedSymbol> {
    let mut out: Vec<ParsedSymbol> = Vec::with_capacity(symbols.len());
    for mut sym in symbols {
        let mergeable = matches!(
            sym.kind,
            SymbolKind::Function
                | SymbolKind::Method
                | SymbolKind::Constructor
                | SymbolKind::Component
        ) && !sym.modifiers.contains(&Modifier::Getter)
            && !sym.modifiers.contains(&Modifier::Setter);
        if mergeable
            && let Some(prev) = out.last_mut()
            && prev.name == sym.name
            && prev.kind == sym.kind
            && prev.body.is_none()
            && prev.children.is_empty()
            && !prev.modifiers.contains(&Modifier::Abstract)
        {
            let prev = out.pop().expect("checked above");
            // Deprecated when every signature is (an undocumented implementation
            // follows them), not when one of several ways to call it is.
            let deprecated = |s: &ParsedSymbol| {
                s.modifiers.contains(&Modifier::Deprecated)
                    || (s.overloads.is_empty() && super::symbol::doc_deprecated(s.jsdoc.as_deref()))
            };
            let all_deprecated = deprecated(&prev)
                && (deprecated(&sym) || (sym.body.is_some() && sym.jsdoc.is_none()));
            let mut overloads = prev.overloads;
            overloads.push(prev.signature);
            overloads.append(&mut sym.overloads);
            sym.overloads = overloads;
            sym.range.start = prev.range.start;
            sym.bytes.start = prev.bytes.start;
            sym.jsdoc = prev.jsdoc.or(sym.jsdoc);
            sym.modifiers.extend(prev.modifiers);
            sym.modifiers.retain(|m| *m != Modifier::Deprecated);
            if all_deprecated {
                sym.modifiers.push(Modifier::Deprecated);
            }
            sym.modifiers.sort();
            sym.modifiers.dedup();
            sym.exported |= prev.exported;
        }
        out.push(sym);
    }
    out
}
