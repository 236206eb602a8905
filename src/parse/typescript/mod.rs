//! The tree-sitter parser for TypeScript, TSX and JavaScript (with JSX).
//!
//! One `Extractor` walks one syntax tree. Container scopes (the file root, namespace and
//! ambient-module bodies) turn every statement into a symbol or statement item; function,
//! method and callback bodies only contribute nested *definitions* (functions, classes,
//! callbacks with block bodies, object-literal methods); class and interface bodies
//! contribute their members. Everything is iterative except the descent from a symbol to
//! its child symbols, which is capped at [`MAX_SYMBOL_DEPTH`], so hostile input cannot
//! overflow the stack.

use tree_sitter::Node;

use super::tree::{
    Ctx, LABEL_CHARS, MAX_SYMBOL_DEPTH, SIGNATURE_CHARS, VALUE_SIGNATURE_CHARS, block_comment_text,
    has_child_kind, merge_overloads, sorted, span, symbol_at,
};
use super::{
    ByteRange, Import, Language, LanguageParser, Modifier, ParseError, ParsedFile, ParsedSymbol,
    SymbolKind,
};
use crate::text::{collapse_truncate, collapse_whitespace, truncate_chars};

mod ref_walk;

/// tree-sitter parser for one of the TS/JS languages.
#[derive(Debug, Clone, Copy)]
pub struct TsParser {
    language: Language,
}

impl TsParser {
    /// A parser for `language`.
    pub fn new(language: Language) -> Self {
        Self { language }
    }
}

impl LanguageParser for TsParser {
    fn language(&self) -> Language {
        self.language
    }

    fn parse(&self, source: &str) -> Result<ParsedFile, ParseError> {
        let tree = super::parse_tree(self.language, source)?;
        let mut ex = Extractor::new(source, self.language, &tree.language());
        let root = tree.root_node();
        ex.scan(root);
        let symbols = ex.container(root, &Ctx::root());
        let refs = ref_walk::extract(root, source);
        let Extractor { imports, found, .. } = ex;
        Ok(found.into_file(self.language, source, symbols, imports, refs))
    }
}

/// The parts of a symbol gathered before its children are extracted.
struct Draft<'t> {
    kind: SymbolKind,
    name: String,
    /// Node whose span is the symbol's range (export/declare wrappers included).
    outer: Node<'t>,
    /// Start byte override (decorators before a class member).
    start: Option<Node<'t>>,
    body: Option<Node<'t>>,
    signature: String,
    modifiers: Vec<Modifier>,
    bindings: Vec<String>,
    /// Where the children come from.
    children: Children<'t>,
}

impl<'t> Draft<'t> {
    /// A `kind` symbol spanning `outer`, without body, children or bindings.
    fn new(
        kind: SymbolKind,
        name: impl Into<String>,
        outer: Node<'t>,
        signature: String,
        modifiers: Vec<Modifier>,
    ) -> Self {
        Self {
            kind,
            name: name.into(),
            outer,
            start: None,
            body: None,
            signature,
            modifiers,
            bindings: Vec::new(),
            children: Children::None,
        }
    }

    /// With `body`, whose children are read as `children` says.
    fn with_body(mut self, body: Option<Node<'t>>, children: fn(Node<'t>) -> Children<'t>) -> Self {
        self.body = body;
        self.children = body.map_or(Children::None, children);
        self
    }

    /// Starting at `start` rather than at `outer` (decorators before a class member).
    fn starting_at(mut self, start: Option<Node<'t>>) -> Self {
        self.start = start;
        self
    }
}

enum Children<'t> {
    None,
    /// Nested definitions inside a function/expression subtree.
    Nested(Node<'t>),
    /// Statements of a namespace / module body.
    Container(Node<'t>),
    /// Members of a class body.
    ClassMembers(Node<'t>),
    /// Members of an interface body / object type.
    InterfaceMembers(Node<'t>),
}

/// Node kinds the hot walks test, as lookup tables by kind id (comparing kind names costs a
/// `strlen` and a UTF-8 check per node).
struct KindTable {
    identifier: Vec<bool>,
    comment: Vec<bool>,
    /// Kinds `nested_definition` may turn into a symbol.
    definition: Vec<bool>,
}

impl KindTable {
    fn new(language: &tree_sitter::Language) -> Self {
        let table = |names: &[&str]| super::tree::kind_table(language, names);
        Self {
            identifier: table(&[
                "identifier",
                "type_identifier",
                "shorthand_property_identifier",
            ]),
            // A `#!` line is not code either (it is dropped like a comment at the root).
            comment: table(&["comment", "html_comment", "hash_bang_line"]),
            definition: table(&[
                "function_declaration",
                "generator_function_declaration",
                "class",
                "class_declaration",
                "abstract_class_declaration",
                "interface_declaration",
                "enum_declaration",
                "type_alias_declaration",
                "lexical_declaration",
                "variable_declaration",
                "method_definition",
                "pair",
                "assignment_expression",
                "arrow_function",
                "function_expression",
                "function",
                "generator_function",
            ]),
        }
    }

    fn is(table: &[bool], node: Node) -> bool {
        super::tree::in_table(table, node)
    }
}

struct Extractor<'s> {
    kinds: KindTable,
    src: &'s str,
    language: Language,
    imports: Vec<Import>,
    found: super::tree::Scan,
}

fn is_function_like(kind: &str) -> bool {
    matches!(
        kind,
        "arrow_function" | "function_expression" | "function" | "generator_function"
    )
}

fn is_class_like(kind: &str) -> bool {
    matches!(
        kind,
        "class" | "class_declaration" | "abstract_class_declaration"
    )
}

fn has_block_body(node: Node) -> bool {
    node.child_by_field_name("body")
        .is_some_and(|b| b.kind() == "statement_block")
}

/// `value` unwrapped from parentheses, `as`/`satisfies` expressions and non-null assertions.
fn unwrap_expression(mut node: Node) -> Node {
    loop {
        match node.kind() {
            "parenthesized_expression"
            | "as_expression"
            | "satisfies_expression"
            | "non_null_expression" => match node.named_child(0) {
                Some(inner) => node = inner,
                None => return node,
            },
            _ => return node,
        }
    }
}

impl<'s> Extractor<'s> {
    fn new(src: &'s str, language: Language, grammar: &tree_sitter::Language) -> Self {
        Self {
            kinds: KindTable::new(grammar),
            src,
            language,
            imports: Vec::new(),
            found: Default::default(),
        }
    }

    fn text(&self, node: Node) -> &'s str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    fn slice(&self, start: usize, end: usize) -> &'s str {
        self.src.get(start..end).unwrap_or("")
    }

    /// One iterative pass over the whole tree: identifiers, comments, diagnostics.
    fn scan(&mut self, root: Node) {
        let kinds = &self.kinds;
        self.found = super::tree::scan(
            root,
            self.src,
            |n| KindTable::is(&kinds.identifier, n),
            |n| KindTable::is(&kinds.comment, n),
        );
    }

    // ----- container scopes (root, namespace bodies) ---------------------------------

    /// Every statement of a container scope becomes a symbol or a statement item.
    fn container(&mut self, node: Node, ctx: &Ctx) -> Vec<ParsedSymbol> {
        let children: Vec<Node> = node.children(&mut node.walk()).collect();
        let mut out = Vec::new();
        for child in children {
            if !child.is_named() {
                // Stray tokens only appear at this level after error recovery; keep them
                // as error items so no code line is lost.
                let delimiter =
                    node.kind() == "statement_block" && matches!(child.kind(), "{" | "}");
                if delimiter || child.byte_range().is_empty() {
                    continue;
                }
                let draft = Draft::item(SymbolKind::Error, "syntax error".into(), child, self);
                out.push(self.finish(draft, ctx));
                continue;
            }
            if let Some(sym) = self.statement(child, ctx) {
                out.push(sym);
            }
        }
        merge_overloads(out)
    }

    fn statement(&mut self, node: Node, ctx: &Ctx) -> Option<ParsedSymbol> {
        match node.kind() {
            "comment" | "html_comment" | "hash_bang_line" | "empty_statement" => None,
            "import_statement" | "import_alias" => Some(self.import_statement(node, ctx)),
            "export_statement" => Some(self.export_statement(node, ctx)),
            "expression_statement" => Some(self.expression_statement(node, ctx)),
            "ERROR" => {
                let draft = Draft::item(SymbolKind::Error, "syntax error".into(), node, self);
                Some(self.finish(draft, ctx))
            }
            _ => {
                if let Some(draft) = self.declaration(node, node, &[]) {
                    return Some(self.finish(draft, ctx));
                }
                let label = self.statement_label(node);
                let draft = Draft::item(SymbolKind::Statement, label, node, self);
                Some(self.finish(draft, ctx))
            }
        }
    }

    fn label(&self, node: Node) -> String {
        let text = collapse_truncate(self.text(node), LABEL_CHARS + 1);
        truncate_chars(text.trim_end_matches(';'), LABEL_CHARS)
    }

    /// `if (cond)`, `for (const x of xs)`, `try`: the statement's first line without its `{`.
    fn statement_label(&self, node: Node) -> String {
        super::tree::statement_label(node, self.text(node), &[';', '{', ' '])
    }

    fn string_content(&self, node: Node) -> String {
        self.text(node)
            .trim_matches(|c| c == '\'' || c == '"' || c == '`')
            .to_string()
    }

    fn import_statement(&mut self, node: Node, ctx: &Ctx) -> ParsedSymbol {
        let mut module = String::new();
        let mut bindings = Vec::new();
        let type_only = has_child_kind(node, "type");
        if node.kind() == "import_alias" {
            // import A = N.M
            let mut cursor = node.walk();
            let parts: Vec<Node> = node.named_children(&mut cursor).collect();
            if let Some(first) = parts.first() {
                bindings.push(self.text(*first).to_string());
            }
            if let Some(last) = parts.last() {
                module = self.text(*last).to_string();
            }
        } else {
            if let Some(source) = node.child_by_field_name("source") {
                module = self.string_content(source);
            }
            let mut cursor = node.walk();
            for child in node.named_children(&mut cursor) {
                match child.kind() {
                    "import_clause" => self.import_clause_bindings(child, &mut bindings),
                    "import_require_clause" => {
                        let mut c2 = child.walk();
                        for part in child.named_children(&mut c2) {
                            match part.kind() {
                                "identifier" => bindings.push(self.text(part).to_string()),
                                "string" => module = self.string_content(part),
                                _ => {}
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        self.record_import(node, module.clone(), bindings.clone(), type_only);
        let mut draft = Draft::item(SymbolKind::Import, format!("import:{module}"), node, self);
        draft.bindings = bindings;
        self.finish(draft, ctx)
    }

    fn import_clause_bindings(&self, clause: Node, out: &mut Vec<String>) {
        let mut cursor = clause.walk();
        for child in clause.named_children(&mut cursor) {
            match child.kind() {
                "identifier" => out.push(self.text(child).to_string()),
                "namespace_import" => {
                    let mut c2 = child.walk();
                    out.extend(
                        child
                            .named_children(&mut c2)
                            .filter(|n| n.kind() == "identifier")
                            .map(|n| self.text(n).to_string()),
                    );
                }
                "named_imports" => {
                    let mut c2 = child.walk();
                    for spec in child.named_children(&mut c2) {
                        if spec.kind() != "import_specifier" {
                            continue;
                        }
                        let local = spec
                            .child_by_field_name("alias")
                            .or_else(|| spec.child_by_field_name("name"));
                        if let Some(local) = local {
                            out.push(self.text(local).to_string());
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn record_import(
        &mut self,
        node: Node,
        module: String,
        bindings: Vec<String>,
        type_only: bool,
    ) {
        self.imports.push(Import {
            module,
            bindings,
            text: collapse_whitespace(self.text(node)),
            bytes: ByteRange {
                start: node.start_byte(),
                end: node.end_byte(),
            },
            type_only,
        });
    }

    fn export_statement(&mut self, node: Node, ctx: &Ctx) -> ParsedSymbol {
        let is_default = has_child_kind(node, "default");
        let mut mods = vec![Modifier::Exported];
        if is_default {
            mods.push(Modifier::Default);
        }
        if let Some(source) = node.child_by_field_name("source") {
            let module = self.string_content(source);
            let draft = Draft::item(
                SymbolKind::ReExport,
                format!("re-export:{module}"),
                node,
                self,
            );
            return self.finish(draft, ctx);
        }
        if let Some(decl) = node.child_by_field_name("declaration")
            && let Some(draft) = self.declaration(decl, node, &mods)
        {
            return self.finish(draft, ctx);
        }
        if let Some(value) = node.child_by_field_name("value") {
            let value = unwrap_expression(value);
            if let Some(mut draft) = self.value_definition(value, node, "default", &mods) {
                if draft.kind == SymbolKind::Const {
                    draft.kind = SymbolKind::Export;
                    draft.name = "export default".into();
                }
                return self.finish(draft, ctx);
            }
        }
        let name = if has_child_kind(node, "=") {
            "export =".to_string()
        } else {
            self.label(node)
        };
        let mut draft = Draft::item(SymbolKind::Export, name, node, self);
        draft.modifiers = mods;
        self.finish(draft, ctx)
    }

    fn expression_statement(&mut self, node: Node, ctx: &Ctx) -> ParsedSymbol {
        let Some(expr) = node.named_child(0).map(unwrap_expression) else {
            return self.expression_item(node, ctx);
        };
        // `namespace X {}` parses as an expression statement in the TS grammar.
        if matches!(expr.kind(), "internal_module" | "module")
            && let Some(draft) = self.declaration(expr, node, &[])
        {
            return self.finish(draft, ctx);
        }
        // require('polyfill');
        if let Some(module) = self.require_module(expr) {
            self.record_import(node, module.clone(), Vec::new(), false);
            let draft = Draft::item(SymbolKind::Import, format!("import:{module}"), node, self);
            return self.finish(draft, ctx);
        }
        // CommonJS exports: module.exports = …, exports.x = …, module.exports.x = …
        if expr.kind() == "assignment_expression"
            && let (Some(left), Some(right)) = (
                expr.child_by_field_name("left"),
                expr.child_by_field_name("right"),
            )
        {
            let target = self.text(left);
            let export_name = if target == "module.exports" {
                Some("module.exports".to_string())
            } else {
                target
                    .strip_prefix("module.exports.")
                    .or_else(|| target.strip_prefix("exports."))
                    .filter(|rest| !rest.is_empty() && !rest.contains(['.', '[']))
                    .map(str::to_string)
            };
            if let Some(name) = export_name {
                let right = unwrap_expression(right);
                let mods = [Modifier::Exported];
                if let Some(mut draft) = self.value_definition(right, node, &name, &mods) {
                    if draft.kind == SymbolKind::Const {
                        draft.kind = if name == "module.exports" {
                            SymbolKind::Expression
                        } else {
                            SymbolKind::Variable
                        };
                        draft.children = Children::Nested(right);
                    } else if let Some(body) = draft.body {
                        draft.signature = self.head(expr, Some(body));
                    }
                    draft.name = name;
                    return self.finish(draft, ctx);
                }
            }
            // `Runner.prototype.run = function (fn) {…}`, `app.use = function use() {…}`:
            // the statement is that function (or class), one unit named by its target,
            // not an expression wrapping a function with the same lines.
            let right = unwrap_expression(right);
            if ((is_function_like(right.kind()) && has_block_body(right))
                || is_class_like(right.kind()))
                && let Some(mut draft) =
                    self.value_definition(right, node, &collapse_whitespace(self.text(left)), &[])
            {
                if let Some(body) = draft.body {
                    draft.signature = self.head(expr, Some(body));
                }
                return self.finish(draft, ctx);
            }
        }
        self.expression_item(node, ctx)
    }

    /// An expression statement as a plain item, labelled by its first line.
    fn expression_item(&mut self, node: Node, ctx: &Ctx) -> ParsedSymbol {
        let label = self.statement_label(node);
        let draft = Draft::item(SymbolKind::Expression, label, node, self);
        self.finish(draft, ctx)
    }

    /// `require('x')` or `require('x').y` → `x`.
    fn require_module(&self, expr: Node) -> Option<String> {
        let mut call = unwrap_expression(expr);
        if call.kind() == "member_expression" {
            call = call.child_by_field_name("object")?;
        }
        if call.kind() != "call_expression" {
            return None;
        }
        let function = call.child_by_field_name("function")?;
        if self.text(function) != "require" {
            return None;
        }
        let args = call.child_by_field_name("arguments")?;
        let first = args.named_child(0)?;
        (first.kind() == "string").then(|| self.string_content(first))
    }

    // ----- declarations -----------------------------------------------------------------

    /// A declaration node (possibly wrapped by `outer`) as a draft symbol.
    fn declaration<'t>(
        &mut self,
        decl: Node<'t>,
        outer: Node<'t>,
        extra: &[Modifier],
    ) -> Option<Draft<'t>> {
        let mut mods = extra.to_vec();
        let draft = match decl.kind() {
            "function_declaration" | "generator_function_declaration" | "function_signature" => {
                let name = self
                    .field_text(decl, "name")
                    .unwrap_or("default")
                    .to_string();
                self.function_draft(decl, outer, name, mods)
            }
            k if is_class_like(k) => {
                let name = self
                    .field_text(decl, "name")
                    .unwrap_or("default")
                    .to_string();
                self.class_draft(decl, outer, name, mods)
            }
            "interface_declaration" => {
                let name = self.field_text(decl, "name")?.to_string();
                let body = decl.child_by_field_name("body");
                Draft::new(
                    SymbolKind::Interface,
                    name,
                    outer,
                    self.head(decl, body),
                    mods,
                )
                .with_body(body, Children::InterfaceMembers)
            }
            "type_alias_declaration" => {
                let name = self.field_text(decl, "name")?.to_string();
                Draft::new(
                    SymbolKind::Type,
                    name,
                    outer,
                    self.value_signature(decl),
                    mods,
                )
            }
            "enum_declaration" => {
                if has_child_kind(decl, "const") {
                    mods.push(Modifier::Const);
                }
                let name = self.field_text(decl, "name")?.to_string();
                let body = decl.child_by_field_name("body");
                Draft {
                    body,
                    ..Draft::new(SymbolKind::Enum, name, outer, self.head(decl, body), mods)
                }
            }
            "internal_module" | "module" => {
                let name_node = decl.child_by_field_name("name")?;
                let (kind, name) = if name_node.kind() == "string" {
                    (SymbolKind::Module, self.string_content(name_node))
                } else {
                    (SymbolKind::Namespace, self.text(name_node).to_string())
                };
                let body = decl.child_by_field_name("body");
                Draft::new(kind, name, outer, self.head(decl, body), mods)
                    .with_body(body, Children::Container)
            }
            "ambient_declaration" => return self.ambient(decl, outer, mods),
            "lexical_declaration" | "variable_declaration" => {
                return self.variable_statement(decl, outer, mods);
            }
            _ => return None,
        };
        Some(draft)
    }

    /// `declare …`: `declare global { … }` is a module, anything else the declaration
    /// it wraps, marked `declare`.
    fn ambient<'t>(
        &mut self,
        decl: Node<'t>,
        outer: Node<'t>,
        mut mods: Vec<Modifier>,
    ) -> Option<Draft<'t>> {
        mods.push(Modifier::Declare);
        let mut cursor = decl.walk();
        let inner: Vec<Node> = decl.named_children(&mut cursor).collect();
        if let Some(&body) = inner.iter().find(|n| n.kind() == "statement_block") {
            let head = self.head(decl, Some(body));
            return Some(Draft {
                body: Some(body),
                children: Children::Container(body),
                ..Draft::new(SymbolKind::Module, "global", outer, head, mods)
            });
        }
        let inner = *inner.iter().find(|n| n.kind() != "comment")?;
        let inner = if inner.kind() == "expression_statement" {
            inner.named_child(0)?
        } else {
            inner
        };
        self.declaration(inner, outer, &mods)
    }

    fn field_text(&self, node: Node, field: &str) -> Option<&'s str> {
        node.child_by_field_name(field).map(|n| self.text(n))
    }

    fn function_draft<'t>(
        &mut self,
        decl: Node<'t>,
        outer: Node<'t>,
        name: String,
        mut mods: Vec<Modifier>,
    ) -> Draft<'t> {
        if has_child_kind(decl, "async") {
            mods.push(Modifier::Async);
        }
        if decl.kind().starts_with("generator") || has_child_kind(decl, "*") {
            mods.push(Modifier::Generator);
        }
        let body = decl
            .child_by_field_name("body")
            .filter(|b| b.kind() == "statement_block");
        let kind = if self.is_component_fn(&name, decl, body) {
            SymbolKind::Component
        } else {
            SymbolKind::Function
        };
        Draft::new(
            kind,
            name,
            outer,
            self.head(decl, decl.child_by_field_name("body")),
            mods,
        )
        .with_body(body, Children::Nested)
    }

    fn class_draft<'t>(
        &self,
        decl: Node<'t>,
        outer: Node<'t>,
        name: String,
        mut mods: Vec<Modifier>,
    ) -> Draft<'t> {
        if decl.kind() == "abstract_class_declaration" {
            mods.push(Modifier::Abstract);
        }
        let body = decl.child_by_field_name("body");
        let kind = if self.extends_react_component(decl) {
            SymbolKind::Component
        } else {
            SymbolKind::Class
        };
        Draft::new(kind, name, outer, self.head(decl, body), mods)
            .with_body(body, Children::ClassMembers)
    }

    /// `let`/`const`/`var` statements: requires become imports, function values functions,
    /// everything else a const or variable; several declarators make one symbol.
    fn variable_statement<'t>(
        &mut self,
        decl: Node<'t>,
        outer: Node<'t>,
        mods: Vec<Modifier>,
    ) -> Option<Draft<'t>> {
        let is_const = decl
            .child_by_field_name("kind")
            .is_some_and(|k| self.text(k) == "const")
            || self.text(decl).starts_with("const");
        let mut cursor = decl.walk();
        let declarators: Vec<Node> = decl
            .named_children(&mut cursor)
            .filter(|n| n.kind() == "variable_declarator")
            .collect();
        let first = *declarators.first()?;
        let names: Vec<String> = declarators
            .iter()
            .filter_map(|d| d.child_by_field_name("name"))
            .map(|n| collapse_whitespace(self.text(n)))
            .collect();
        let mut bindings = Vec::new();
        for d in &declarators {
            if let Some(n) = d.child_by_field_name("name") {
                self.pattern_names(n, &mut bindings);
            }
        }

        // CommonJS imports: const x = require('y')
        let requires: Vec<String> = declarators
            .iter()
            .filter_map(|d| {
                d.child_by_field_name("value")
                    .and_then(|v| self.require_module(v))
            })
            .collect();
        if !requires.is_empty() && requires.len() == declarators.len() {
            self.record_import(outer, requires[0].clone(), bindings.clone(), false);
            let mut draft = Draft::item(
                SymbolKind::Import,
                format!("import:{}", requires[0]),
                outer,
                self,
            );
            draft.bindings = bindings;
            return Some(draft);
        }

        let name = names.join(", ");
        if declarators.len() == 1
            && let Some(value) = first.child_by_field_name("value").map(unwrap_expression)
        {
            let annotated_component = first
                .child_by_field_name("type")
                .is_some_and(|t| is_component_type(self.text(t)));
            if let Some(mut draft) = self.value_definition(value, outer, &name, &mods) {
                if draft.kind == SymbolKind::Const && !is_const {
                    draft.kind = SymbolKind::Variable;
                }
                if annotated_component && draft.kind == SymbolKind::Function {
                    draft.kind = SymbolKind::Component;
                }
                draft.signature = self.variable_signature(outer, decl, draft.body);
                if names.first().is_some_and(|n| n.starts_with(['{', '['])) {
                    draft.bindings = bindings;
                }
                return Some(draft);
            }
        }
        let kind = if is_const {
            SymbolKind::Const
        } else {
            SymbolKind::Variable
        };
        Some(Draft {
            kind,
            signature: self.value_signature(decl),
            name,
            outer,
            start: None,
            body: None,
            modifiers: mods,
            bindings: if bindings.len() > 1 || names.len() > 1 {
                bindings
            } else {
                Vec::new()
            },
            children: Children::Nested(decl),
        })
    }

    /// A value bound to a name (variable initialiser, export default, CommonJS export):
    /// functions and classes become definitions; other values a `Const` draft whose
    /// children are the definitions nested inside the value.
    fn value_definition<'t>(
        &mut self,
        value: Node<'t>,
        outer: Node<'t>,
        name: &str,
        mods: &[Modifier],
    ) -> Option<Draft<'t>> {
        let mods = mods.to_vec();
        let kind = value.kind();
        if is_function_like(kind) {
            return Some(self.function_draft(value, outer, name.to_string(), mods));
        }
        if is_class_like(kind) {
            return Some(self.class_draft(value, outer, name.to_string(), mods));
        }
        // forwardRef((props, ref) => …), memo(function X() {…}), React.memo(…)
        if kind == "call_expression"
            && let Some(function) = value.child_by_field_name("function")
            && matches!(
                self.text(function),
                "forwardRef" | "React.forwardRef" | "memo" | "React.memo"
            )
            && let Some(inner) = value
                .child_by_field_name("arguments")
                .and_then(|a| a.named_child(0))
                .map(unwrap_expression)
            && is_function_like(inner.kind())
        {
            let body = inner
                .child_by_field_name("body")
                .filter(|b| b.kind() == "statement_block");
            let kind = if starts_upper(name) {
                SymbolKind::Component
            } else {
                SymbolKind::Function
            };
            return Some(
                Draft::new(
                    kind,
                    name.to_string(),
                    outer,
                    self.head(value, inner.child_by_field_name("body")),
                    mods,
                )
                .with_body(body, Children::Nested),
            );
        }
        let body = (kind == "object" && self.object_has_methods(value)).then_some(value);
        Some(Draft {
            body,
            children: Children::Nested(value),
            ..Draft::new(
                SymbolKind::Const,
                name.to_string(),
                outer,
                self.value_signature(outer),
                mods,
            )
        })
    }

    fn object_has_methods(&self, object: Node) -> bool {
        let mut cursor = object.walk();
        object
            .named_children(&mut cursor)
            .any(|member| match member.kind() {
                "method_definition" => true,
                "pair" => member
                    .child_by_field_name("value")
                    .map(unwrap_expression)
                    .is_some_and(|v| is_function_like(v.kind()) && has_block_body(v)),
                _ => false,
            })
    }

    fn pattern_names(&self, pattern: Node, out: &mut Vec<String>) {
        let mut stack = vec![pattern];
        while let Some(node) = stack.pop() {
            match node.kind() {
                "identifier" | "shorthand_property_identifier_pattern" => {
                    out.push(self.text(node).to_string())
                }
                "pair_pattern" => {
                    if let Some(v) = node.child_by_field_name("value") {
                        stack.push(v);
                    }
                }
                "assignment_pattern" | "object_assignment_pattern" => {
                    if let Some(l) = node.child_by_field_name("left") {
                        stack.push(l);
                    }
                }
                _ => {
                    let mut cursor = node.walk();
                    let kids: Vec<Node> = node.named_children(&mut cursor).collect();
                    stack.extend(kids.into_iter().rev());
                }
            }
        }
    }

    // ----- signatures ---------------------------------------------------------------

    /// Declaration head: from the first token that is not a decorator or comment up to the
    /// body (or the end), whitespace collapsed.
    fn head(&self, node: Node, body: Option<Node>) -> String {
        let mut start = node.start_byte();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if matches!(child.kind(), "decorator" | "comment") {
                start = child.end_byte();
            } else {
                start = start.max(child.start_byte());
                break;
            }
        }
        let end = body.map_or(node.end_byte(), |b| b.start_byte()).max(start);
        let text = collapse_truncate(self.slice(start, end), SIGNATURE_CHARS + 1);
        let text = text.trim_end_matches([';', ',', '{']).trim_end();
        truncate_chars(text, SIGNATURE_CHARS)
    }

    fn value_signature(&self, node: Node) -> String {
        let text = collapse_truncate(self.text(node), VALUE_SIGNATURE_CHARS + 1);
        truncate_chars(text.trim_end_matches(';').trim_end(), VALUE_SIGNATURE_CHARS)
    }

    /// `const f = async (a: T): R =>` for function values, the collapsed statement otherwise.
    fn variable_signature(&self, outer: Node, decl: Node, body: Option<Node>) -> String {
        match body {
            Some(body) => {
                let text = collapse_truncate(
                    self.slice(decl.start_byte(), body.start_byte()),
                    SIGNATURE_CHARS + 1,
                );
                truncate_chars(text.trim_end(), SIGNATURE_CHARS)
            }
            None => self.value_signature(if outer.kind() == "export_statement" {
                decl
            } else {
                outer
            }),
        }
    }

    // ----- React --------------------------------------------------------------------

    fn is_component_fn(&self, name: &str, func: Node, body: Option<Node>) -> bool {
        if !starts_upper(name) {
            return false;
        }
        if func
            .child_by_field_name("return_type")
            .is_some_and(|t| is_component_type(self.text(t)))
        {
            return true;
        }
        if !self.language.has_jsx() {
            return false;
        }
        let Some(root) = body.or_else(|| func.child_by_field_name("body")) else {
            return false;
        };
        let mut cursor = root.walk();
        loop {
            if matches!(
                cursor.node().kind(),
                "jsx_element" | "jsx_self_closing_element" | "jsx_fragment"
            ) {
                return true;
            }
            if cursor.goto_first_child() {
                continue;
            }
            loop {
                if cursor.node() == root {
                    return false;
                }
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() {
                    return false;
                }
            }
        }
    }

    fn extends_react_component(&self, class: Node) -> bool {
        let mut cursor = class.walk();
        class.named_children(&mut cursor).any(|c| {
            c.kind() == "class_heritage" && {
                let text = self.text(c);
                let extends = text
                    .split_whitespace()
                    .skip_while(|w| *w != "extends")
                    .nth(1)
                    .unwrap_or("");
                let base = extends.split('<').next().unwrap_or("");
                matches!(
                    base,
                    "Component" | "PureComponent" | "React.Component" | "React.PureComponent"
                )
            }
        })
    }

    // ----- finishing a symbol ---------------------------------------------------------

    fn jsdoc_before(&self, node: Node) -> Option<String> {
        let prev = node.prev_sibling()?;
        if prev.kind() != "comment" {
            return None;
        }
        let text = self.text(prev);
        if !text.starts_with("/**") || text.starts_with("/***") {
            return None; // not JSDoc, or a `/***` banner
        }
        block_comment_text(text)
    }

    fn finish(&mut self, draft: Draft, ctx: &Ctx) -> ParsedSymbol {
        let first = draft.start.unwrap_or(draft.outer);
        let jsdoc = if draft.kind.is_statement() {
            None
        } else {
            self.jsdoc_before(first)
        };
        let child_ctx = ctx.child(&draft.name);
        let children = if ctx.depth + 1 > MAX_SYMBOL_DEPTH {
            Vec::new()
        } else {
            match draft.children {
                Children::None => Vec::new(),
                Children::Nested(node) => self.nested(node, &child_ctx),
                Children::Container(node) => self.container(node, &child_ctx),
                Children::ClassMembers(node) => self.class_members(node, &child_ctx),
                Children::InterfaceMembers(node) => self.interface_members(node, &child_ctx),
            }
        };
        let modifiers = sorted(draft.modifiers);
        ParsedSymbol {
            body: draft.body.map(span),
            signature: draft.signature,
            exported: modifiers.contains(&Modifier::Exported),
            modifiers,
            jsdoc,
            bindings: draft.bindings,
            children,
            ..symbol_at(draft.kind, draft.name, first, draft.outer, ctx)
        }
    }

    // ----- bodies: nested definitions ----------------------------------------------------

    /// Definitions nested anywhere inside `root` (not `root` itself), without descending
    /// into a definition once found: its own children are found recursively.
    fn nested(&mut self, root: Node, ctx: &Ctx) -> Vec<ParsedSymbol> {
        let mut found = Vec::new();
        let mut cursor = root.walk();
        if !cursor.goto_first_child() {
            return found;
        }
        // Pre-order walk with one cursor; a definition's subtree is skipped (its own
        // children are found when it is finished).
        loop {
            let node = cursor.node();
            let mut descend = node.is_named() && node.child_count() > 0;
            if KindTable::is(&self.kinds.definition, node)
                && let Some(draft) = self.nested_definition(node)
            {
                found.push(self.finish(draft, ctx));
                descend = false;
            }
            if descend && cursor.goto_first_child() {
                continue;
            }
            loop {
                if cursor.goto_next_sibling() {
                    break;
                }
                if !cursor.goto_parent() || cursor.node() == root {
                    return merge_overloads(found);
                }
            }
        }
    }

    fn nested_definition<'t>(&mut self, node: Node<'t>) -> Option<Draft<'t>> {
        match node.kind() {
            "function_declaration" | "generator_function_declaration" => {
                self.declaration(node, node, &[])
            }
            k if is_class_like(k) && node.child_by_field_name("body").is_some() => {
                if k == "class" {
                    let name = self
                        .field_text(node, "name")
                        .unwrap_or("anonymous class")
                        .to_string();
                    Some(self.class_draft(node, node, name, Vec::new()))
                } else {
                    self.declaration(node, node, &[])
                }
            }
            "interface_declaration" | "enum_declaration" | "type_alias_declaration" => {
                self.declaration(node, node, &[])
            }
            "lexical_declaration" | "variable_declaration" => {
                let mut cursor = node.walk();
                let declarators: Vec<Node> = node
                    .named_children(&mut cursor)
                    .filter(|n| n.kind() == "variable_declarator")
                    .collect();
                let [declarator] = declarators.as_slice() else {
                    return None;
                };
                let value = declarator
                    .child_by_field_name("value")
                    .map(unwrap_expression)?;
                let definition = (is_function_like(value.kind()) && has_block_body(value))
                    || (is_class_like(value.kind()) && value.child_by_field_name("body").is_some());
                if !definition {
                    return None;
                }
                self.variable_statement(node, node, Vec::new())
            }
            "method_definition" => self.method_draft(node, None),
            "pair" => {
                let value = node.child_by_field_name("value").map(unwrap_expression)?;
                if !(is_function_like(value.kind()) && has_block_body(value)) {
                    return None;
                }
                let key = node.child_by_field_name("key")?;
                let name = self.member_name(key);
                let mut draft = self.value_definition(value, node, &name, &[])?;
                draft.kind = SymbolKind::Method;
                draft.signature = self.head(node, value.child_by_field_name("body"));
                Some(draft)
            }
            "assignment_expression" => {
                let right = node.child_by_field_name("right").map(unwrap_expression)?;
                if !(is_function_like(right.kind()) && has_block_body(right)) {
                    return None;
                }
                let name = collapse_whitespace(self.text(node.child_by_field_name("left")?));
                let mut draft = self.value_definition(right, node, &name, &[])?;
                draft.signature = self.head(node, right.child_by_field_name("body"));
                Some(draft)
            }
            k if is_function_like(k) && has_block_body(node) => {
                let name = self.anonymous_name(node);
                let mut draft = self.value_definition(node, node, &name, &[])?;
                if draft.kind == SymbolKind::Function {
                    draft.kind = SymbolKind::Callback;
                }
                Some(draft)
            }
            _ => None,
        }
    }

    /// `callback:forEach`, `describe('parses imports')`, or `anonymous`.
    fn anonymous_name(&self, func: Node) -> String {
        if let Some(name) = func.child_by_field_name("name") {
            return self.text(name).to_string();
        }
        let Some(parent) = func.parent() else {
            return "anonymous".into();
        };
        if parent.kind() == "arguments"
            && let Some(call) = parent.parent()
            && let Some(callee) = call.child_by_field_name("function")
        {
            let callee_name = match callee.kind() {
                "member_expression" => callee
                    .child_by_field_name("property")
                    .map_or_else(|| self.text(callee), |p| self.text(p)),
                _ => self.text(callee),
            };
            let callee_name = truncate_chars(&collapse_whitespace(callee_name), 30);
            if let Some(first) = parent.named_child(0)
                && first != func
                && matches!(first.kind(), "string" | "template_string")
            {
                let label = truncate_chars(&collapse_whitespace(self.text(first)), 50);
                return format!("{callee_name}({label})");
            }
            return format!("callback:{callee_name}");
        }
        let mut up = parent;
        while up.kind() == "parenthesized_expression" {
            match up.parent() {
                Some(p) => up = p,
                None => break,
            }
        }
        if up.kind() == "call_expression" {
            return "iife".into();
        }
        "anonymous".into()
    }

    fn member_name(&self, key: Node) -> String {
        match key.kind() {
            "string" => self.string_content(key),
            _ => collapse_whitespace(self.text(key)),
        }
    }

    // ----- class and interface members ---------------------------------------------------

    fn class_members(&mut self, body: Node, ctx: &Ctx) -> Vec<ParsedSymbol> {
        let mut out = Vec::new();
        let mut pending_decorator: Option<Node> = None;
        let mut cursor = body.walk();
        let members: Vec<Node> = body.named_children(&mut cursor).collect();
        for member in members {
            let draft = match member.kind() {
                "decorator" => {
                    pending_decorator.get_or_insert(member);
                    continue;
                }
                "comment" => continue,
                "method_definition" | "method_signature" | "abstract_method_signature" => {
                    self.method_draft(member, pending_decorator)
                }
                "public_field_definition" | "field_definition" => {
                    self.field_draft(member, pending_decorator)
                }
                _ => None,
            };
            pending_decorator = None;
            if let Some(draft) = draft {
                out.push(self.finish(draft, ctx));
            }
        }
        merge_overloads(out)
    }

    fn member_modifiers(&self, member: Node, name_node: Option<Node>) -> Vec<Modifier> {
        let mut mods = Vec::new();
        let mut cursor = member.walk();
        for child in member.children(&mut cursor) {
            if Some(child) == name_node {
                break;
            }
            match child.kind() {
                "accessibility_modifier" => match self.text(child) {
                    "private" => mods.push(Modifier::Private),
                    "protected" => mods.push(Modifier::Protected),
                    _ => mods.push(Modifier::Public),
                },
                "override_modifier" | "override" => mods.push(Modifier::Override),
                "static" => mods.push(Modifier::Static),
                "readonly" => mods.push(Modifier::Readonly),
                "abstract" => mods.push(Modifier::Abstract),
                "declare" => mods.push(Modifier::Declare),
                "async" => mods.push(Modifier::Async),
                "*" => mods.push(Modifier::Generator),
                "get" => mods.push(Modifier::Getter),
                "set" => mods.push(Modifier::Setter),
                _ => {}
            }
        }
        if name_node.is_some_and(|n| n.kind() == "private_property_identifier") {
            mods.push(Modifier::Private);
        }
        let mut cursor = member.walk();
        if member.children(&mut cursor).any(|c| c.kind() == "?") {
            mods.push(Modifier::Optional);
        }
        mods
    }

    fn method_draft<'t>(
        &mut self,
        member: Node<'t>,
        decorator: Option<Node<'t>>,
    ) -> Option<Draft<'t>> {
        let name_node = member.child_by_field_name("name")?;
        let name = self.member_name(name_node);
        let mut mods = self.member_modifiers(member, Some(name_node));
        if member.kind() == "abstract_method_signature" {
            mods.push(Modifier::Abstract);
        }
        let body = member
            .child_by_field_name("body")
            .filter(|b| b.kind() == "statement_block");
        let kind = if name == "constructor" {
            SymbolKind::Constructor
        } else {
            SymbolKind::Method
        };
        Some(
            Draft::new(kind, name, member, self.head(member, body), mods)
                .with_body(body, Children::Nested)
                .starting_at(decorator),
        )
    }

    fn field_draft<'t>(
        &mut self,
        member: Node<'t>,
        decorator: Option<Node<'t>>,
    ) -> Option<Draft<'t>> {
        let name_node = member
            .child_by_field_name("name")
            .or_else(|| member.child_by_field_name("property"))?;
        let name = self.member_name(name_node);
        let mods = self.member_modifiers(member, Some(name_node));
        let value = member.child_by_field_name("value").map(unwrap_expression);
        if let Some(value) = value
            && (is_function_like(value.kind()) || is_class_like(value.kind()))
        {
            let mut draft = self.value_definition(value, member, &name, &mods)?;
            if is_function_like(value.kind()) {
                draft.kind = SymbolKind::Method;
            }
            draft.start = decorator;
            draft.signature = self.head(member, value.child_by_field_name("body"));
            return Some(draft);
        }
        Some(Draft {
            children: value.map_or(Children::None, Children::Nested),
            ..Draft::new(
                SymbolKind::Property,
                name,
                member,
                self.head(member, None),
                mods,
            )
            .starting_at(decorator)
        })
    }

    fn interface_members(&mut self, body: Node, ctx: &Ctx) -> Vec<ParsedSymbol> {
        let mut out = Vec::new();
        let mut cursor = body.walk();
        let members: Vec<Node> = body.named_children(&mut cursor).collect();
        for member in members {
            let kind = match member.kind() {
                "property_signature" => SymbolKind::Property,
                "method_signature" => SymbolKind::Method,
                _ => continue,
            };
            let Some(name_node) = member.child_by_field_name("name") else {
                continue;
            };
            let draft = Draft::new(
                kind,
                self.member_name(name_node),
                member,
                self.head(member, None),
                self.member_modifiers(member, Some(name_node)),
            );
            out.push(self.finish(draft, ctx));
        }
        merge_overloads(out)
    }
}

impl<'t> Draft<'t> {
    /// A statement item: no body, its label as signature, nested definitions as children.
    fn item(kind: SymbolKind, name: String, node: Node<'t>, ex: &Extractor) -> Self {
        let children = match kind {
            SymbolKind::Import | SymbolKind::ReExport => Children::None,
            _ => Children::Nested(node),
        };
        Draft {
            children,
            ..Draft::new(kind, name, node, ex.value_signature(node), Vec::new())
        }
    }
}

fn starts_upper(name: &str) -> bool {
    name.chars().next().is_some_and(char::is_uppercase)
}

fn is_component_type(annotation: &str) -> bool {
    let t = annotation.trim_start_matches(':').trim();
    [
        "FC",
        "FunctionComponent",
        "VFC",
        "ComponentType",
        "JSX.Element",
        "ReactElement",
        "ReactNode",
    ]
    .iter()
    .any(|k| t.starts_with(k) || t.starts_with(&format!("React.{k}")))
}
