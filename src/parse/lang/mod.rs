//! One tree-sitter walk for Python, Go, Rust and Java, driven by a per-language [`Syntax`].
//!
//! The walk is the TypeScript parser's, made language-neutral: container scopes (the file
//! root, Rust `mod` bodies) turn every statement into a symbol or a statement item;
//! type bodies (classes, structs, traits, `impl` blocks, interfaces) contribute their
//! members; function bodies contribute only nested *definitions*. A [`Syntax`] says, for
//! one node in one of those places, what it is ([`Item`]); this module does the rest
//! (ranges, bodies, signatures, doc comments, imports, identifiers, diagnostics) the same
//! way for every language. Everything is iterative except the descent from a symbol to
//! its children, which is capped at [`MAX_SYMBOL_DEPTH`].

pub(super) mod go;
pub(super) mod java;
pub(super) mod python;
mod ref_walk;
pub(super) mod rust;

use tree_sitter::Node;

use super::tree::{
    Ctx, LABEL_CHARS, MAX_SYMBOL_DEPTH, SIGNATURE_CHARS, VALUE_SIGNATURE_CHARS, merge_overloads,
    sorted, symbol_at,
};

pub(crate) use super::tree::{
    block_comment_text, has_child_kind, line_comments_text, named_children, span,
};
use super::{
    ByteRange, Import, Language, LanguageParser, LineRange, Modifier, ParseError, ParsedFile,
    ParsedSymbol, SymbolKind,
};
use crate::parse::refs::Imported;
use crate::text::{collapse_truncate, collapse_whitespace, truncate_chars};

/// The parser for Python, Go, Rust or Java.
#[derive(Clone, Copy)]
pub struct TreeParser {
    language: Language,
    syntax: &'static dyn Syntax,
}

impl TreeParser {
    /// A parser for `language`, walked as `syntax` says (its row of the language table).
    pub(crate) fn new(language: Language, syntax: &'static dyn Syntax) -> Self {
        Self { language, syntax }
    }
}

impl LanguageParser for TreeParser {
    fn language(&self) -> Language {
        self.language
    }

    fn parse(&self, source: &str) -> Result<ParsedFile, ParseError> {
        let syntax = self.syntax;
        let tree = super::parse_tree(self.language, source)?;
        let root = tree.root_node();
        let mut ex = Extractor {
            syntax,
            src: source,
            imports: Vec::new(),
            found: Default::default(),
        };
        ex.scan(root);
        let symbols = ex.container(root, &Ctx::root());
        let refs = ref_walk::extract(syntax, root, source);
        let Extractor { imports, found, .. } = ex;
        Ok(found.into_file(self.language, source, symbols, imports, refs))
    }
}

/// Where a node stands, which decides what it may become.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// A statement of the file root or a module body: everything becomes an item.
    Container,
    /// A member of a type body: definitions become symbols, the rest stays in the type.
    Members,
    /// Somewhere inside a function body: only named definitions become symbols.
    Nested,
}

/// What a [`Syntax`] says a node is.
pub(crate) enum Item<'t> {
    /// Not an item: a comment, a docstring, punctuation, or (outside containers) code.
    Skip,
    /// A declaration.
    Def(Box<Def<'t>>),
    /// A root statement of this kind ([`SymbolKind::Expression`] or
    /// [`SymbolKind::Statement`]), labelled by its first line.
    Statement(SymbolKind),
    /// Not an item itself: its named children are items in the same place (a Java enum's
    /// body declarations, a Go `type ( … )` group).
    Within(Node<'t>),
}

/// One local name an import binds.
#[derive(Debug, Clone)]
pub(crate) struct Binding {
    /// The local name.
    pub local: String,
    /// The module it comes from, as written.
    pub module: String,
    /// What of that module.
    pub imported: Imported,
}

impl Binding {
    /// `local`, bound to `imported` of `module`.
    pub fn new(local: impl Into<String>, module: impl Into<String>, imported: Imported) -> Self {
        Self {
            local: local.into(),
            module: module.into(),
            imported,
        }
    }
}

/// The imports of an import statement, or of one element of an import group.
#[derive(Debug, Clone, Default)]
pub(crate) struct ImportSpec {
    /// The modules it depends on, as written; the first labels the statement.
    pub modules: Vec<String>,
    /// The local names it binds.
    pub bindings: Vec<Binding>,
    /// The text that stands for this import in `relevantImports`, when a statement
    /// makes several (a Go import group); `None` for the statement's own text.
    pub text: Option<String>,
    /// Byte span when not the statement's.
    pub bytes: Option<ByteRange>,
}

impl ImportSpec {
    /// An import of `module` binding `bindings`.
    pub fn of(module: impl Into<String>, bindings: Vec<Binding>) -> Self {
        Self {
            modules: vec![module.into()],
            bindings,
            ..Self::default()
        }
    }

    /// Adds `module` to the modules, once.
    pub fn depend(&mut self, module: &str) {
        if !module.is_empty() && !self.modules.iter().any(|m| m == module) {
            self.modules.push(module.to_string());
        }
    }
}

/// Where a symbol's child symbols come from.
pub(crate) enum Children<'t> {
    /// None.
    None,
    /// Named definitions anywhere inside a function body.
    Nested(Node<'t>),
    /// Members of a type body.
    Members(Node<'t>),
    /// Statements of a module body.
    Container(Node<'t>),
}

/// A declaration as a [`Syntax`] describes it; the extractor finishes it.
pub(crate) struct Def<'t> {
    /// What it is.
    pub kind: SymbolKind,
    /// The language's own name when it differs from `kind`'s.
    pub native: Option<&'static str>,
    /// Declared name.
    pub name: String,
    /// The node whose span is the symbol's (decorators included).
    pub outer: Node<'t>,
    /// The range starts here instead (attributes before a Rust item).
    pub start: Option<Node<'t>>,
    /// The declaration itself (inside a decorator wrapper): signatures and docs start here.
    pub decl: Node<'t>,
    /// The body a parent collapses.
    pub body: Option<Node<'t>>,
    /// Where the children come from.
    pub children: Children<'t>,
    /// Modifiers, any order.
    pub modifiers: Vec<Modifier>,
    /// Visible outside its module (Go capitalised, Rust `pub`, Java `public`, Python no
    /// leading underscore).
    pub exported: bool,
    /// Every name bound when more than `name` (`a, b = …`, `int x, y;`).
    pub bindings: Vec<String>,
    /// Signature override; by default the text from `decl` to the body.
    pub signature: Option<String>,
    /// A declaration only (Python's `@overload` stubs): no body of its own, so the
    /// definition of the same name that follows takes it as an overload.
    pub stub: bool,
}

impl<'t> Def<'t> {
    /// A definition of `kind` named `name` spanning `node`, without body or children.
    pub fn new(kind: SymbolKind, name: impl Into<String>, node: Node<'t>) -> Self {
        Self {
            kind,
            native: None,
            name: name.into(),
            outer: node,
            start: None,
            decl: node,
            body: None,
            children: Children::None,
            modifiers: Vec::new(),
            exported: false,
            bindings: Vec::new(),
            signature: None,
            stub: false,
        }
    }

    /// Sets the collapsible body and where the children come from.
    pub fn body(mut self, body: Option<Node<'t>>, children: Children<'t>) -> Self {
        self.body = body;
        self.children = children;
        self
    }

    /// Sets the language's own name for the construct.
    pub fn native(mut self, native: &'static str) -> Self {
        self.native = Some(native);
        self
    }

    /// Sets the export flag.
    pub fn exported(mut self, exported: bool) -> Self {
        self.exported = exported;
        self
    }

    /// Adds modifiers.
    pub fn modifiers(mut self, modifiers: impl IntoIterator<Item = Modifier>) -> Self {
        self.modifiers.extend(modifiers);
        self
    }

    /// Boxed as an [`Item`].
    pub fn item(self) -> Item<'t> {
        Item::Def(Box::new(self))
    }
}

/// Source text access shared by the extractor and the syntaxes.
pub(crate) trait SourceText {
    /// The text of `node`.
    fn text_of(&self, node: Node) -> &str;

    /// The text of `node`'s field `field`, when it has one.
    fn field_of(&self, node: Node, field: &str) -> Option<&str> {
        node.child_by_field_name(field).map(|n| self.text_of(n))
    }

    /// The text of `node`'s `name` field, empty when it has none.
    fn name_of(&self, node: Node) -> String {
        self.field_of(node, "name").unwrap_or_default().to_string()
    }
}

impl SourceText for str {
    fn text_of(&self, node: Node) -> &str {
        self.get(node.byte_range()).unwrap_or("")
    }
}

/// What one language's tree looks like.
pub(crate) trait Syntax: Sync {
    /// Node kinds that are names in reference position (collected as [`IdentRef`]s).
    fn identifier_kinds(&self) -> &'static [&'static str] {
        &["identifier", "type_identifier"]
    }

    /// Whether `node` is a comment (Python docstrings count: they document, they are not
    /// code to chunk). By default `//` and `/* */` comments as Rust and Java name them.
    fn is_comment(&self, node: Node, _src: &str) -> bool {
        is_c_comment(node.kind())
    }

    /// What `node` is at `place` (import statements are [`Syntax::imports`]'s).
    fn item<'t>(&self, node: Node<'t>, place: Place, src: &str) -> Item<'t>;

    /// When `node` is an import statement: what it imports. Used both for the file's
    /// imports (chunking) and its import bindings (the graph).
    fn imports(&self, node: Node, src: &str) -> Option<Vec<ImportSpec>>;

    /// The documentation of a finished definition.
    fn doc(&self, def: &Def, src: &str) -> Option<String>;

    /// Whether an unnamed child of a container is punctuation of the container itself
    /// (braces), not a stray token left by error recovery.
    fn is_delimiter(&self, token: &str) -> bool {
        matches!(token, "{" | "}" | ";" | "(" | ")")
    }

    /// The walk that finds references, imports and exports for the symbol graph.
    fn refs(&self) -> &dyn ref_walk::RefSyntax;
}

/// 1-indexed line numbers of byte offsets asked in increasing order, counted
/// incrementally so that many asks cost one pass over the text.
#[derive(Debug, Default)]
struct LineCursor {
    offset: usize,
    line: u32,
}

impl LineCursor {
    /// The line of `offset` in `src`; an offset before the last one asked restarts the
    /// count from the top.
    fn line_at(&mut self, src: &str, offset: usize) -> u32 {
        if offset < self.offset {
            *self = Self::default();
        }
        let upto = offset.min(src.len());
        let counted = src.as_bytes()[self.offset.min(upto)..upto]
            .iter()
            .filter(|b| **b == b'\n')
            .count();
        self.line += counted as u32;
        self.offset = upto;
        self.line + 1
    }
}

struct Extractor<'s> {
    syntax: &'static dyn Syntax,
    src: &'s str,
    imports: Vec<Import>,
    found: super::tree::Scan,
}

/// The comments directly above `first` (no blank line between), nearest last, passing
/// over siblings `skip` accepts (attributes).
pub(crate) fn comments_above<'t>(
    first: Node<'t>,
    is_comment: impl Fn(Node) -> bool,
    skip: impl Fn(Node) -> bool,
) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    let mut row = first.start_position().row;
    let mut current = first.prev_sibling();
    while let Some(node) = current {
        let end = node.end_position();
        // A line comment's node may end at column 0 of the next line.
        let end_row = if end.column == 0 && end.row > node.start_position().row {
            end.row - 1
        } else {
            end.row
        };
        if end_row + 1 < row {
            break;
        }
        if is_comment(node) {
            out.push(node);
        } else if !skip(node) {
            break;
        }
        row = node.start_position().row;
        current = node.prev_sibling();
    }
    out.reverse();
    out
}

/// Whether a node kind is a `//` or `/* */` comment (the Rust and Java grammars' names).
pub(crate) fn is_c_comment(kind: &str) -> bool {
    matches!(kind, "line_comment" | "block_comment")
}

impl<'s> Extractor<'s> {
    fn text(&self, node: Node) -> &'s str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    /// One iterative pass over the whole tree: identifiers, comments, diagnostics.
    fn scan(&mut self, root: Node) {
        let (syntax, src) = (self.syntax, self.src);
        let identifiers = super::tree::kind_table(&root.language(), syntax.identifier_kinds());
        self.found = super::tree::scan(
            root,
            src,
            |n| super::tree::in_table(&identifiers, n),
            |n| n.is_named() && syntax.is_comment(n, src),
        );
    }

    /// Every statement of a container scope becomes a symbol or a statement item.
    fn container(&mut self, node: Node, ctx: &Ctx) -> Vec<ParsedSymbol> {
        let children: Vec<Node> = node.children(&mut node.walk()).collect();
        let mut out = Vec::new();
        // At the root of a tree with errors, text that no child spans (tree-sitter leaves
        // the rest of the file outside every node after an unterminated Rust `/**`)
        // becomes error items, so no code line is lost.
        let recovering = ctx.depth == 0 && node.has_error();
        let mut lines = LineCursor::default();
        let mut spanned = node.start_byte();
        for child in children {
            if recovering {
                self.gap(spanned, child.start_byte(), node, ctx, &mut lines, &mut out);
            }
            spanned = spanned.max(child.end_byte());
            if !child.is_named() {
                // Stray tokens only appear at this level after error recovery; keep them
                // as error items so no code line is lost. A container's own braces are
                // not stray, but at the root of a tree with errors (a `}` left over by
                // recovery) they are.
                let stray_brace = ctx.depth == 0 && node.has_error();
                if (self.syntax.is_delimiter(child.kind()) && !stray_brace)
                    || child.byte_range().is_empty()
                {
                    continue;
                }
                out.push(self.item_symbol(child, SymbolKind::Error, "syntax error".into(), ctx));
                continue;
            }
            self.place(child, Place::Container, ctx, &mut out);
        }
        if recovering {
            let end = self.src.len().max(node.end_byte());
            self.gap(spanned, end, node, ctx, &mut lines, &mut out);
        }
        merge_overloads(out)
    }

    /// An error item for the text in `start..end` that no node spans, when it is more
    /// than whitespace (`root` stands in for the node it lacks).
    fn gap(
        &self,
        start: usize,
        end: usize,
        root: Node,
        ctx: &Ctx,
        lines: &mut LineCursor,
        out: &mut Vec<ParsedSymbol>,
    ) {
        let Some(text) = self.src.get(start..end) else {
            return;
        };
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return;
        }
        let first = start + (text.len() - text.trim_start().len());
        let last = first + trimmed.len();
        let range = LineRange {
            start: lines.line_at(self.src, first),
            end: lines.line_at(self.src, last.saturating_sub(1)),
        };
        out.push(ParsedSymbol {
            range,
            bytes: ByteRange {
                start: first,
                end: last,
            },
            signature: truncate_chars(&collapse_whitespace(trimmed), LABEL_CHARS),
            ..symbol_at(SymbolKind::Error, "syntax error".into(), root, root, ctx)
        });
    }

    /// The symbols `node` makes at `place`, appended to `out`.
    fn place(&mut self, node: Node, place: Place, ctx: &Ctx, out: &mut Vec<ParsedSymbol>) {
        if node.kind() == "ERROR" {
            if place == Place::Container {
                out.push(self.item_symbol(node, SymbolKind::Error, "syntax error".into(), ctx));
            } else {
                // Recovered members inside an error region.
                for child in named_children(node) {
                    self.place(child, place, ctx, out);
                }
            }
            return;
        }
        if self.syntax.is_comment(node, self.src) {
            return;
        }
        if let Some(specs) = self.syntax.imports(node, self.src) {
            if place == Place::Container {
                out.push(self.import(node, specs, ctx));
            }
            return;
        }
        match self.syntax.item(node, place, self.src) {
            Item::Skip => {}
            Item::Def(def) => out.push(self.finish(*def, ctx)),
            Item::Within(inner) => {
                for child in named_children(inner) {
                    self.place(child, place, ctx, out);
                }
            }
            Item::Statement(kind) if place == Place::Container => {
                let label = self.statement_label(node);
                out.push(self.item_symbol(node, kind, label, ctx));
            }
            Item::Statement(_) => {}
        }
    }

    /// Type members: definitions become symbols; other members stay in the type's chunk.
    fn members(&mut self, body: Node, ctx: &Ctx) -> Vec<ParsedSymbol> {
        let mut out = Vec::new();
        for child in named_children(body) {
            self.place(child, Place::Members, ctx, &mut out);
        }
        merge_overloads(out)
    }

    /// Definitions nested anywhere inside `root` (not `root` itself), without descending
    /// into a definition once found: its own children are found when it is finished.
    fn nested(&mut self, root: Node, ctx: &Ctx) -> Vec<ParsedSymbol> {
        let (syntax, src) = (self.syntax, self.src);
        let mut defs = Vec::new();
        super::tree::preorder(root, |node| {
            if node.is_named()
                && let Item::Def(def) = syntax.item(node, Place::Nested, src)
            {
                defs.push(def);
                return false;
            }
            node.is_named()
        });
        defs.into_iter().map(|def| self.finish(*def, ctx)).collect()
    }

    /// An import statement: its [`Import`]s (one for the statement, plus one per group
    /// element with its own text), and one [`SymbolKind::Import`] item.
    fn import(&mut self, node: Node, specs: Vec<ImportSpec>, ctx: &Ctx) -> ParsedSymbol {
        let label = specs
            .iter()
            .find_map(|s| s.modules.first())
            .cloned()
            .unwrap_or_default();
        let locals = |spec: &ImportSpec| -> Vec<String> {
            spec.bindings.iter().map(|b| b.local.clone()).collect()
        };
        let mut statement: Option<Import> = None;
        let mut names = Vec::new();
        for spec in &specs {
            names.extend(locals(spec));
            match &spec.text {
                Some(text) => self.imports.push(Import {
                    module: spec.modules.first().cloned().unwrap_or_default(),
                    bindings: locals(spec),
                    text: text.clone(),
                    bytes: spec.bytes.unwrap_or_else(|| span(node)),
                    type_only: false,
                }),
                None => statement
                    .get_or_insert_with(|| Import {
                        module: label.clone(),
                        bindings: Vec::new(),
                        text: collapse_whitespace(self.text(node)),
                        bytes: span(node),
                        type_only: false,
                    })
                    .bindings
                    .extend(locals(spec)),
            }
        }
        self.imports.extend(statement);
        let mut symbol = self.item_symbol(node, SymbolKind::Import, format!("import:{label}"), ctx);
        symbol.bindings = names;
        symbol
    }

    /// `if x:`, `for i in xs`, `println!("hi")`: the statement's first line without its
    /// opening brace or colon.
    fn statement_label(&self, node: Node) -> String {
        super::tree::statement_label(node, self.text(node), &[';', '{', ':', ' '])
    }

    /// A statement item (no body, no children).
    fn item_symbol(&self, node: Node, kind: SymbolKind, name: String, ctx: &Ctx) -> ParsedSymbol {
        ParsedSymbol {
            signature: truncate_chars(&collapse_whitespace(self.text(node)), LABEL_CHARS),
            ..symbol_at(kind, name, node, node, ctx)
        }
    }

    /// The declaration head: from `decl` to the body, whitespace collapsed, without the
    /// `{` or `:` that opens the body; the whole declaration when it has no body.
    fn signature(&self, def: &Def) -> String {
        if let Some(sig) = &def.signature {
            return sig.clone();
        }
        match def.body {
            Some(body) if body.start_byte() > def.decl.start_byte() => {
                // Up to the body, or to a comment between the head and the body
                // (`def f(x):  # note`).
                let mut end = body;
                while let Some(prev) = end.prev_sibling()
                    && self.syntax.is_comment(prev, self.src)
                {
                    end = prev;
                }
                let end = end.start_byte().max(def.decl.start_byte());
                let head = self.src.get(def.decl.start_byte()..end).unwrap_or("");
                let head = collapse_truncate(head, SIGNATURE_CHARS);
                head.trim_end_matches(['{', ':', ' ', '(']).to_string()
            }
            _ => {
                let text = collapse_truncate(self.text(def.decl), VALUE_SIGNATURE_CHARS + 1);
                truncate_chars(text.trim_end_matches([';', ',']), VALUE_SIGNATURE_CHARS)
            }
        }
    }

    fn finish(&mut self, def: Def, ctx: &Ctx) -> ParsedSymbol {
        let first = def.start.unwrap_or(def.outer);
        let jsdoc = self.syntax.doc(&def, self.src);
        let signature = self.signature(&def);
        let child_ctx = ctx.child(&def.name);
        let children = if ctx.depth + 1 > MAX_SYMBOL_DEPTH {
            Vec::new()
        } else {
            match def.children {
                Children::None => Vec::new(),
                Children::Nested(node) => self.nested(node, &child_ctx),
                Children::Members(node) => self.members(node, &child_ctx),
                Children::Container(node) => self.container(node, &child_ctx),
            }
        };
        ParsedSymbol {
            body: if def.stub { None } else { def.body.map(span) },
            signature,
            native_kind: def.native.map(str::to_string),
            modifiers: sorted(def.modifiers),
            jsdoc,
            exported: def.exported,
            bindings: def.bindings,
            children,
            ..symbol_at(def.kind, def.name, first, def.outer, ctx)
        }
    }
}

#[cfg(test)]
mod tests;
