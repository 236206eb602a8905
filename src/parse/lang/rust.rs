//! Rust: modules (inline bodies are containers), `use` declarations, functions, structs
//! with their fields, enums, unions, traits and `impl` blocks with their items, type
//! aliases, constants, statics and `macro_rules!`; attributes belong to the item they
//! precede, and `///` / `/** */` comments are the documentation.

use tree_sitter::Node;

use super::{
    Binding, Children, Def, ImportSpec, Item, Place, SourceText, Syntax, block_comment_text,
    comments_above, is_c_comment as is_comment_kind, line_comments_text, named_children,
};
use crate::parse::refs::Imported;
use crate::parse::{Modifier, SymbolKind};

/// Rust's [`Syntax`].
pub(crate) struct Rust;

/// Whether a comment node is an outer doc comment (`///`, `/** */`).
fn is_outer_doc(text: &str) -> bool {
    (text.starts_with("///") && !text.starts_with("////"))
        || (text.starts_with("/**") && !text.starts_with("/***") && text != "/**/")
}

/// The `use` tree flattened: `(module path, imported name or `*`, local name)`, e.g.
/// `use a::{b::C, d as e}` → `("a::b", "C", "C")`, `("a", "d", "e")`.
pub(crate) fn use_paths(
    node: Node,
    src: &str,
    prefix: &str,
    out: &mut Vec<(String, String, String)>,
) {
    let join = |a: &str, b: &str| {
        if a.is_empty() {
            b.to_string()
        } else if b.is_empty() {
            a.to_string()
        } else {
            format!("{a}::{b}")
        }
    };
    match node.kind() {
        "scoped_use_list" => {
            let path = src.field_of(node, "path").unwrap_or("");
            let prefix = join(prefix, path);
            if let Some(list) = node.child_by_field_name("list") {
                use_paths(list, src, &prefix, out);
            }
        }
        "use_list" => {
            for child in named_children(node) {
                use_paths(child, src, prefix, out);
            }
        }
        "use_as_clause" => {
            let path = src.field_of(node, "path").unwrap_or("");
            let alias = src
                .field_of(node, "alias")
                .map(str::to_string)
                .unwrap_or_default();
            let full = join(prefix, path);
            let (module, name) = split_path(&full);
            out.push((module, name, alias));
        }
        "use_wildcard" => {
            let path = src
                .text_of(node)
                .trim_end_matches('*')
                .trim_end_matches("::");
            out.push((join(prefix, path), "*".to_string(), String::new()));
        }
        "identifier" | "scoped_identifier" | "self" | "crate" | "super" => {
            let full = join(prefix, src.text_of(node));
            let (module, name) = split_path(&full);
            // `use a::b::{self}` binds `b`.
            if name == "self" {
                let (m, n) = split_path(&module);
                out.push((m, n.clone(), n));
            } else {
                out.push((module, name.clone(), name));
            }
        }
        _ => {}
    }
}

/// `a::b::C` → (`a::b`, `C`).
fn split_path(path: &str) -> (String, String) {
    match path.rsplit_once("::") {
        Some((m, n)) => (m.to_string(), n.to_string()),
        None => (String::new(), path.to_string()),
    }
}

/// The name of the type an `impl` block is for (`impl<T> Tr for Vec<T>` → `Vec`).
pub(crate) fn impl_type_name(node: Node, src: &str) -> String {
    let Some(ty) = node.child_by_field_name("type") else {
        return String::new();
    };
    let text = src
        .text_of(ty)
        .trim_start_matches('&')
        .trim_start_matches("mut ");
    let text = text.split('<').next().unwrap_or(text);
    text.rsplit("::").next().unwrap_or(text).trim().to_string()
}

impl Rust {
    fn modifiers(&self, node: Node, src: &str) -> (Vec<Modifier>, bool) {
        let mut modifiers = Vec::new();
        let mut exported = false;
        for child in named_children(node) {
            match child.kind() {
                "visibility_modifier" => {
                    exported = true;
                    modifiers.push(Modifier::Public);
                }
                "function_modifiers" => {
                    let text = src.text_of(child);
                    if text.split_whitespace().any(|w| w == "async") {
                        modifiers.push(Modifier::Async);
                    }
                    if text.split_whitespace().any(|w| w == "const") {
                        modifiers.push(Modifier::Const);
                    }
                }
                _ => {}
            }
        }
        (modifiers, exported)
    }

    fn definition<'t>(&self, node: Node<'t>, place: Place, src: &str) -> Option<Def<'t>> {
        let name = || src.name_of(node);
        let body = node.child_by_field_name("body");
        let def = match node.kind() {
            "function_item" => {
                let kind = if place == Place::Members {
                    SymbolKind::Method
                } else {
                    SymbolKind::Function
                };
                Def::new(kind, name(), node)
                    .body(body, body.map_or(Children::None, Children::Nested))
            }
            "function_signature_item" => Def::new(SymbolKind::Method, name(), node),
            "struct_item" | "union_item" => {
                let members = body.filter(|b| b.kind() == "field_declaration_list");
                let def = Def::new(SymbolKind::Struct, name(), node)
                    .body(members, members.map_or(Children::None, Children::Members));
                if node.kind() == "union_item" {
                    def.native("union")
                } else {
                    def
                }
            }
            "enum_item" => Def::new(SymbolKind::Enum, name(), node).body(body, Children::None),
            "trait_item" => Def::new(SymbolKind::Interface, name(), node)
                .body(body, body.map_or(Children::None, Children::Members))
                .native("trait"),
            "impl_item" => {
                let mut def = Def::new(SymbolKind::Impl, impl_type_name(node, src), node)
                    .body(body, body.map_or(Children::None, Children::Members));
                if node.child_by_field_name("trait").is_some() {
                    def.native = Some("trait impl");
                }
                def
            }
            "mod_item" => Def::new(SymbolKind::Module, name(), node)
                .body(body, body.map_or(Children::None, Children::Container))
                .native("mod"),
            "macro_definition" => Def::new(SymbolKind::Macro, name(), node)
                .native("macro_rules")
                .exported(true),
            "const_item" => Def::new(SymbolKind::Const, name(), node),
            "static_item" => Def::new(SymbolKind::Variable, name(), node).native("static"),
            "type_item" => Def::new(SymbolKind::Type, name(), node),
            "associated_type" => Def::new(SymbolKind::Type, name(), node).native("associated type"),
            "field_declaration" if place == Place::Members => {
                Def::new(SymbolKind::Property, name(), node).native("field")
            }
            _ => return None,
        };
        let (modifiers, exported) = self.modifiers(node, src);
        let exported = exported || def.exported;
        let mut def = def.modifiers(modifiers).exported(exported);
        // Attributes directly above belong to the item (doc comments may sit among them).
        let mut start = None;
        let mut prev = node.prev_sibling();
        while let Some(p) = prev {
            match p.kind() {
                "attribute_item" => start = Some(p),
                k if is_comment_kind(k) => {}
                _ => break,
            }
            prev = p.prev_sibling();
        }
        def.start = start;
        Some(def)
    }

    /// Whether the next sibling that is not a comment or attribute is a definition.
    fn precedes_item(&self, node: Node, src: &str) -> bool {
        let mut next = node.next_sibling();
        while let Some(n) = next {
            if !is_comment_kind(n.kind()) && n.kind() != "attribute_item" {
                return self.definition(n, Place::Container, src).is_some();
            }
            next = n.next_sibling();
        }
        false
    }
}

impl Syntax for Rust {
    fn item<'t>(&self, node: Node<'t>, place: Place, src: &str) -> Item<'t> {
        if let Some(def) = self.definition(node, place, src) {
            return def.item();
        }
        match (place, node.kind()) {
            // Attributes are part of the item they precede; others stay statements.
            (Place::Container, "attribute_item") if self.precedes_item(node, src) => Item::Skip,
            (Place::Container, "expression_statement" | "macro_invocation") => {
                Item::Statement(SymbolKind::Expression)
            }
            (Place::Container, _) => Item::Statement(SymbolKind::Statement),
            _ => Item::Skip,
        }
    }

    fn imports(&self, node: Node, src: &str) -> Option<Vec<ImportSpec>> {
        let mut spec = ImportSpec::default();
        match node.kind() {
            "extern_crate_declaration" => {
                let name = src.field_of(node, "name").unwrap_or("");
                let local = src.field_of(node, "alias").unwrap_or(name);
                spec.depend(name);
                spec.bindings
                    .push(Binding::new(local, name, Imported::Module));
            }
            "use_declaration" => {
                let mut paths = Vec::new();
                if let Some(argument) = node.child_by_field_name("argument") {
                    use_paths(argument, src, "", &mut paths);
                }
                for (module, name, local) in paths {
                    if name == "*" {
                        spec.depend(&module);
                        continue;
                    }
                    // `use serde;` names a crate; `use a::b::C` item `C` of module `a::b`.
                    let (module, imported) = if module.is_empty() {
                        (name, Imported::Module)
                    } else {
                        (module, Imported::Named(name))
                    };
                    spec.depend(&module);
                    if !matches!(local.as_str(), "" | "_") {
                        spec.bindings.push(Binding::new(local, module, imported));
                    }
                }
            }
            _ => return None,
        }
        Some(vec![spec])
    }

    fn doc(&self, def: &Def, src: &str) -> Option<String> {
        let comments = comments_above(
            def.outer,
            |n| is_comment_kind(n.kind()) && is_outer_doc(src.text_of(n)),
            |n| n.kind() == "attribute_item",
        );
        if let Some(last) = comments.last() {
            if src.text_of(*last).starts_with("/**") {
                return block_comment_text(src.text_of(*last));
            }
            return line_comments_text(
                comments
                    .iter()
                    .map(|c| src.text_of(*c))
                    .filter(|t| t.starts_with("///")),
                "///",
            );
        }
        doc_attributes(def.outer, src).or_else(|| inner_doc(def.decl, src))
    }

    fn refs(&self) -> &dyn super::ref_walk::RefSyntax {
        self
    }
}

mod graph {
    use tree_sitter::Node;

    use super::Rust;
    use crate::parse::lang::ref_walk::{Access, Local, RefSyntax, type_name};
    use crate::parse::lang::{SourceText, named_children};
    use crate::parse::refs::{DeclaredType, RefKind};

    /// The identifiers a pattern binds.
    fn pattern_names(node: Node, src: &str, out: &mut Vec<String>) {
        let mut stack = vec![node];
        while let Some(n) = stack.pop() {
            match n.kind() {
                "identifier" => out.push(src.text_of(n).to_string()),
                // `Some(x)`: the path is not a binding; `Point { x, .. }` binds `x`.
                "tuple_struct_pattern" | "struct_pattern" => {
                    for c in named_children(n).into_iter().skip(1) {
                        stack.push(c);
                    }
                }
                "scoped_identifier" | "field_identifier" => {}
                "field_pattern" => match n.child_by_field_name("pattern") {
                    Some(p) => stack.push(p),
                    None => {
                        if let Some(name) = n.child_by_field_name("name") {
                            out.push(src.text_of(name).to_string());
                        }
                    }
                },
                _ => stack.extend(named_children(n)),
            }
        }
    }

    impl RefSyntax for Rust {
        fn scope(&self, node: Node, src: &str) -> Option<Vec<Local>> {
            let params = match node.kind() {
                "function_item" | "closure_expression" => node.child_by_field_name("parameters"),
                _ => return None,
            };
            let mut out = Vec::new();
            for p in params.map(named_children).unwrap_or_default() {
                match p.kind() {
                    "self_parameter" => out.push(Local {
                        receiver: true,
                        ..Local::plain("self")
                    }),
                    "parameter" => {
                        let ty = p
                            .child_by_field_name("type")
                            .and_then(|t| type_name(src.text_of(t)));
                        let mut names = Vec::new();
                        if let Some(pattern) = p.child_by_field_name("pattern") {
                            pattern_names(pattern, src, &mut names);
                        }
                        out.extend(names.into_iter().map(|n| Local::typed(n, ty.clone())));
                    }
                    "identifier" => out.push(Local::plain(src.text_of(p))),
                    _ => {
                        let mut names = Vec::new();
                        pattern_names(p, src, &mut names);
                        out.extend(names.into_iter().map(Local::plain));
                    }
                }
            }
            Some(out)
        }

        fn binds(&self, node: Node, src: &str, out: &mut Vec<Local>) {
            let mut names = Vec::new();
            let mut ty = None;
            match node.kind() {
                "let_declaration" => {
                    if let Some(p) = node.child_by_field_name("pattern") {
                        pattern_names(p, src, &mut names);
                    }
                    ty = node
                        .child_by_field_name("type")
                        .and_then(|t| type_name(src.text_of(t)))
                        .or_else(|| {
                            // `let s = Store::new(…)` / `Store { … }`.
                            let value = node.child_by_field_name("value")?;
                            let path = match value.kind() {
                                "call_expression" => {
                                    let f = value.child_by_field_name("function")?;
                                    (f.kind() == "scoped_identifier")
                                        .then(|| f.child_by_field_name("path"))??
                                }
                                "struct_expression" => value.child_by_field_name("name")?,
                                _ => return None,
                            };
                            let name = type_name(src.text_of(path))?;
                            name.starts_with(char::is_uppercase).then_some(name)
                        });
                }
                "let_condition" | "for_expression" | "match_arm" => {
                    let field = node.child_by_field_name("pattern");
                    if let Some(p) = field {
                        pattern_names(p, src, &mut names);
                    }
                }
                "function_item" | "struct_item" | "enum_item" => {
                    out.extend(Local::declared(node, src));
                    return;
                }
                _ => return,
            }
            out.extend(names.into_iter().map(|n| Local::typed(n, ty.clone())));
        }

        fn declarations(&self) -> &'static [(&'static str, &'static str)] {
            &[
                ("function_item", "name"),
                ("function_signature_item", "name"),
                ("struct_item", "name"),
                ("enum_item", "name"),
                ("union_item", "name"),
                ("trait_item", "name"),
                ("type_item", "name"),
                ("const_item", "name"),
                ("static_item", "name"),
                ("mod_item", "name"),
                ("macro_definition", "name"),
                ("enum_variant", "name"),
                ("associated_type", "name"),
                ("type_parameter", "name"),
                ("constrained_type_parameter", "name"),
                ("extern_crate_declaration", "name"),
                ("parameter", "pattern"),
                ("let_declaration", "pattern"),
                ("closure_parameters", "*"),
                ("tuple_pattern", "*"),
                ("shorthand_field_initializer", "*"),
                ("lifetime", "*"),
                ("use_as_clause", "*"),
            ]
        }

        fn callee<'t>(&self, node: Node<'t>, parent: Option<Node<'t>>) -> Option<Node<'t>> {
            match node.kind() {
                "call_expression" => node.child_by_field_name("function"),
                "macro_invocation" => node.child_by_field_name("macro"),
                // A macro's arguments are tokens, not expressions (`assert_eq!(parse(x),
                // …)`): a bare name followed by parentheses there is taken for a call.
                "identifier" if super::is_call_in_tokens(node, parent) => Some(node),
                _ => None,
            }
        }

        fn access<'t>(&self, node: Node<'t>, src: &str) -> Option<Access<'t>> {
            let (object, member) = match node.kind() {
                "field_expression" => ("value", "field"),
                "scoped_identifier" | "scoped_type_identifier" => ("path", "name"),
                _ => return None,
            };
            Access::fields(node, object, member, src)
        }

        fn is_this(&self, node: Node, src: &str) -> bool {
            node.kind() == "self" || src.text_of(node) == "Self"
        }

        fn heritage<'t>(&self, node: Node<'t>, _src: &str) -> Vec<(Node<'t>, RefKind)> {
            match node.kind() {
                "impl_item" => node
                    .child_by_field_name("trait")
                    .map(|t| {
                        let t = if t.kind() == "generic_type" {
                            t.child_by_field_name("type").unwrap_or(t)
                        } else {
                            t
                        };
                        vec![(t, RefKind::Implements)]
                    })
                    .unwrap_or_default(),
                "trait_item" => node
                    .child_by_field_name("bounds")
                    .map(|b| {
                        named_children(b)
                            .into_iter()
                            .filter(|c| {
                                matches!(c.kind(), "type_identifier" | "scoped_type_identifier")
                            })
                            .map(|c| (c, RefKind::Extends))
                            .collect()
                    })
                    .unwrap_or_default(),
                _ => Vec::new(),
            }
        }

        fn declared(&self, node: Node, src: &str, out: &mut Vec<DeclaredType>) {
            if node.kind() == "field_declaration"
                && let Some(name) = node.child_by_field_name("name")
                && let Some(ty) = node.child_by_field_name("type")
                && let Some(type_name) = type_name(src.text_of(ty))
            {
                out.push(DeclaredType {
                    offset: name.start_byte(),
                    type_name,
                });
            }
        }
    }
}

/// `#[doc = "…"]` attributes directly above an item, joined.
fn doc_attributes(item: Node, src: &str) -> Option<String> {
    let mut lines = Vec::new();
    let mut prev = item.prev_named_sibling();
    while let Some(p) = prev.filter(|p| p.kind() == "attribute_item") {
        let text = src.text_of(p);
        if let Some(value) = text
            .strip_prefix("#[")
            .and_then(|t| t.strip_suffix(']'))
            .and_then(|t| t.trim().strip_prefix("doc"))
            .and_then(|t| t.trim_start().strip_prefix('='))
            .map(str::trim)
            .and_then(|t| t.strip_prefix('"'))
            .and_then(|t| t.strip_suffix('"'))
        {
            lines.push(value);
        }
        prev = p.prev_named_sibling();
    }
    lines.reverse();
    line_comments_text(lines, "")
}

/// A module's inner documentation: the `//!` lines (or a `/*! */` block) that open its
/// body.
fn inner_doc(item: Node, src: &str) -> Option<String> {
    if item.kind() != "mod_item" {
        return None;
    }
    let body = item.child_by_field_name("body")?;
    let mut lines = Vec::new();
    for child in named_children(body) {
        let text = src.text_of(child);
        if !is_comment_kind(child.kind()) {
            break;
        }
        if let Some(block) = text.strip_prefix("/*!") {
            return block_comment_text(&format!("/*{block}"));
        }
        if text.starts_with("//!") {
            lines.push(text);
        } else {
            break;
        }
    }
    line_comments_text(lines, "//!")
}

/// Whether `name`, a token of a macro's arguments, is a bare name called with
/// parentheses (`f(…)`, not `a::f(…)` or `x.f(…)`, whose receivers tokens do not give);
/// `parent` is its parent node.
fn is_call_in_tokens(name: Node, parent: Option<Node>) -> bool {
    parent.is_some_and(|p| p.kind() == "token_tree")
        && name.next_sibling().is_some_and(|n| {
            n.kind() == "token_tree" && n.child(0).is_some_and(|c| c.kind() == "(")
        })
        && !name
            .prev_sibling()
            .is_some_and(|p| matches!(p.kind(), "::" | "." | "$"))
}
