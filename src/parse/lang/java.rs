//! Java: the package declaration, imports, classes, interfaces, enums, records and
//! annotation types (nested ones included) with their methods, constructors, fields and
//! constants; local and anonymous classes inside method bodies; Javadoc is the
//! documentation.

use tree_sitter::Node;

use super::{
    Binding, Children, Def, ImportSpec, Item, Place, SourceText, Syntax, block_comment_text,
    comments_above, has_child_kind, is_c_comment as is_comment_kind, named_children,
};
use crate::parse::refs::Imported;
use crate::parse::{Modifier, SymbolKind};

/// Java's [`Syntax`].
pub(crate) struct Java;

impl Java {
    /// Modifiers from the declaration's `modifiers` node, and whether it is `public`.
    fn modifiers(&self, node: Node, src: &str) -> (Vec<Modifier>, bool) {
        let mut out = Vec::new();
        let mut public = false;
        let Some(mods) = named_children(node)
            .into_iter()
            .find(|c| c.kind() == "modifiers")
        else {
            return (out, false);
        };
        let mut cursor = mods.walk();
        for token in mods.children(&mut cursor) {
            match src.text_of(token) {
                "public" => {
                    public = true;
                    out.push(Modifier::Public);
                }
                "private" => out.push(Modifier::Private),
                "protected" => out.push(Modifier::Protected),
                "static" => out.push(Modifier::Static),
                "abstract" => out.push(Modifier::Abstract),
                "final" => out.push(Modifier::Readonly),
                "@Override" => out.push(Modifier::Override),
                _ => {}
            }
        }
        (out, public)
    }

    fn definition<'t>(&self, node: Node<'t>, place: Place, src: &str) -> Option<Def<'t>> {
        let name = || src.name_of(node);
        let body = node.child_by_field_name("body");
        let members = |kind: SymbolKind| {
            Def::new(kind, name(), node).body(body, body.map_or(Children::None, Children::Members))
        };
        let def = match node.kind() {
            "class_declaration" => members(SymbolKind::Class),
            "record_declaration" => members(SymbolKind::Class).native("record"),
            "interface_declaration" => members(SymbolKind::Interface),
            "annotation_type_declaration" => members(SymbolKind::Interface).native("@interface"),
            "enum_declaration" => members(SymbolKind::Enum),
            _ if place == Place::Nested => return None,
            "method_declaration" => Def::new(SymbolKind::Method, name(), node)
                .body(body, body.map_or(Children::None, Children::Nested)),
            "constructor_declaration" | "compact_constructor_declaration" => {
                Def::new(SymbolKind::Constructor, name(), node)
                    .body(body, body.map_or(Children::None, Children::Nested))
            }
            "annotation_type_element_declaration" => Def::new(SymbolKind::Method, name(), node),
            "field_declaration" | "constant_declaration" => {
                let mut cursor = node.walk();
                let names: Vec<String> = node
                    .children_by_field_name("declarator", &mut cursor)
                    .filter_map(|d| d.child_by_field_name("name"))
                    .map(|n| src.text_of(n).to_string())
                    .collect();
                let kind = if node.kind() == "constant_declaration" {
                    SymbolKind::Const
                } else {
                    SymbolKind::Property
                };
                let mut def = Def::new(kind, names.first()?.clone(), node).native("field");
                if names.len() > 1 {
                    def.bindings = names;
                }
                def
            }
            "enum_constant" => Def::new(SymbolKind::Const, name(), node).native("enum constant"),
            _ => return None,
        };
        let (modifiers, public) = self.modifiers(node, src);
        // Interface members are public; top-level types are visible in their package.
        let in_interface = node
            .parent()
            .is_some_and(|p| matches!(p.kind(), "interface_body" | "annotation_type_body"));
        let top_level = node.parent().is_some_and(|p| p.kind() == "program");
        Some(
            def.modifiers(modifiers)
                .exported(public || in_interface || top_level),
        )
    }
}

impl Syntax for Java {
    fn item<'t>(&self, node: Node<'t>, place: Place, src: &str) -> Item<'t> {
        if let Some(def) = self.definition(node, place, src) {
            return def.item();
        }
        match (place, node.kind()) {
            (Place::Members, "enum_body_declarations") => Item::Within(node),
            (Place::Container, "package_declaration") => {
                let name = named_children(node)
                    .into_iter()
                    .find(|c| matches!(c.kind(), "scoped_identifier" | "identifier"))
                    .map(|n| src.text_of(n).to_string())
                    .unwrap_or_default();
                Def::new(SymbolKind::Module, format!("package {name}"), node)
                    .native("package")
                    .exported(true)
                    .item()
            }
            (Place::Container, "expression_statement") => Item::Statement(SymbolKind::Expression),
            (Place::Container, _) => Item::Statement(SymbolKind::Statement),
            _ => Item::Skip,
        }
    }

    fn imports(&self, node: Node, src: &str) -> Option<Vec<ImportSpec>> {
        if node.kind() != "import_declaration" {
            return None;
        }
        let children = named_children(node);
        let path = children
            .iter()
            .find(|c| matches!(c.kind(), "scoped_identifier" | "identifier"))
            .map_or("", |n| src.text_of(*n));
        let mut bindings = Vec::new();
        // `import a.b.*;` binds no name of its own.
        if !children.iter().any(|c| c.kind() == "asterisk") {
            let (scope, name) = path.rsplit_once('.').unwrap_or(("", path));
            // `import static a.B.m;` binds member `m` of class `a.B`.
            let module = if has_child_kind(node, "static") {
                scope
            } else {
                path
            };
            bindings.push(Binding::new(name, module, Imported::Named(name.into())));
        }
        Some(vec![ImportSpec::of(path, bindings)])
    }

    fn doc(&self, def: &Def, src: &str) -> Option<String> {
        let comments = comments_above(def.outer, |n| is_comment_kind(n.kind()), |_| false);
        let last = comments.last()?;
        let text = src.text_of(*last);
        if text.starts_with("/**") && !text.starts_with("/***") {
            block_comment_text(text)
        } else {
            None
        }
    }

    fn refs(&self) -> &dyn super::ref_walk::RefSyntax {
        self
    }
}

mod graph {
    use tree_sitter::Node;

    use super::Java;
    use crate::parse::lang::ref_walk::{Access, Local, RefSyntax, type_name};
    use crate::parse::lang::{SourceText, named_children};
    use crate::parse::refs::{DeclaredType, RefKind};

    /// The declarator names of a field or local variable declaration.
    fn declarator_names<'t>(node: Node<'t>) -> Vec<Node<'t>> {
        let mut cursor = node.walk();
        node.children_by_field_name("declarator", &mut cursor)
            .filter_map(|d| d.child_by_field_name("name"))
            .collect()
    }

    impl RefSyntax for Java {
        fn scope(&self, node: Node, src: &str) -> Option<Vec<Local>> {
            let params = match node.kind() {
                "method_declaration" | "constructor_declaration" | "lambda_expression" => {
                    node.child_by_field_name("parameters")
                }
                _ => return None,
            };
            let mut out = Vec::new();
            let Some(params) = params else {
                return Some(out);
            };
            if params.kind() == "identifier" {
                out.push(Local::plain(src.text_of(params)));
                return Some(out);
            }
            for p in named_children(params) {
                match p.kind() {
                    "formal_parameter" | "spread_parameter" => {
                        let ty = p
                            .child_by_field_name("type")
                            .and_then(|t| type_name(src.text_of(t)));
                        let name = p.child_by_field_name("name").or_else(|| {
                            named_children(p)
                                .into_iter()
                                .rev()
                                .find(|c| c.kind() == "variable_declarator")
                                .and_then(|d| d.child_by_field_name("name"))
                        });
                        if let Some(name) = name {
                            out.push(Local::typed(src.text_of(name), ty));
                        }
                    }
                    "identifier" => out.push(Local::plain(src.text_of(p))),
                    _ => {}
                }
            }
            Some(out)
        }

        fn binds(&self, node: Node, src: &str, out: &mut Vec<Local>) {
            match node.kind() {
                "local_variable_declaration" => {
                    let ty = src
                        .field_of(node, "type")
                        .filter(|t| *t != "var")
                        .and_then(type_name);
                    for n in declarator_names(node) {
                        out.push(Local::typed(src.text_of(n), ty.clone()));
                    }
                }
                "enhanced_for_statement" | "catch_formal_parameter" | "resource" => {
                    let ty = node
                        .child_by_field_name("type")
                        .and_then(|t| type_name(src.text_of(t)));
                    if let Some(n) = node.child_by_field_name("name") {
                        out.push(Local::typed(src.text_of(n), ty));
                    }
                }
                "class_declaration" => out.extend(Local::declared(node, src)),
                _ => {}
            }
        }

        fn declarations(&self) -> &'static [(&'static str, &'static str)] {
            &[
                ("class_declaration", "name"),
                ("interface_declaration", "name"),
                ("enum_declaration", "name"),
                ("record_declaration", "name"),
                ("annotation_type_declaration", "name"),
                ("method_declaration", "name"),
                ("constructor_declaration", "name"),
                ("compact_constructor_declaration", "name"),
                ("variable_declarator", "name"),
                ("formal_parameter", "name"),
                ("enum_constant", "name"),
                ("catch_formal_parameter", "name"),
                ("enhanced_for_statement", "name"),
                ("annotation_type_element_declaration", "name"),
                ("resource", "name"),
                ("type_parameter", "*"),
                ("lambda_expression", "*"),
                ("inferred_parameters", "*"),
                ("package_declaration", "*"),
                ("scoped_identifier", "*"),
                ("marker_annotation", "*"),
                ("annotation", "*"),
                ("element_value_pair", "*"),
            ]
        }

        fn callee<'t>(&self, node: Node<'t>, _parent: Option<Node<'t>>) -> Option<Node<'t>> {
            match node.kind() {
                "method_invocation" if node.child_by_field_name("object").is_some() => Some(node),
                "method_invocation" => node.child_by_field_name("name"),
                "object_creation_expression" => node.child_by_field_name("type").map(|t| {
                    if t.kind() == "generic_type" {
                        named_children(t).into_iter().next().unwrap_or(t)
                    } else {
                        t
                    }
                }),
                _ => None,
            }
        }

        fn access<'t>(&self, node: Node<'t>, src: &str) -> Option<Access<'t>> {
            let (object, member) = match node.kind() {
                "field_access" => ("object", "field"),
                "method_invocation" => ("object", "name"),
                _ => return None,
            };
            Access::fields(node, object, member, src)
        }

        fn is_this(&self, node: Node, _src: &str) -> bool {
            node.kind() == "this"
        }

        fn is_super(&self, node: Node, _src: &str) -> bool {
            node.kind() == "super"
        }

        fn constructed<'t>(&self, node: Node<'t>) -> Option<Node<'t>> {
            match node.kind() {
                "object_creation_expression" => node.child_by_field_name("type"),
                "parenthesized_expression" => node.named_child(0).and_then(|n| self.constructed(n)),
                _ => None,
            }
        }

        fn heritage<'t>(&self, node: Node<'t>, _src: &str) -> Vec<(Node<'t>, RefKind)> {
            let mut out = Vec::new();
            let types = |n: Node<'t>| -> Vec<Node<'t>> {
                let mut found = Vec::new();
                let mut stack = vec![n];
                while let Some(x) = stack.pop() {
                    match x.kind() {
                        "type_identifier" | "scoped_type_identifier" => found.push(x),
                        "generic_type" => {
                            if let Some(first) = named_children(x).into_iter().next() {
                                found.push(first);
                            }
                        }
                        _ => stack.extend(named_children(x).into_iter().rev()),
                    }
                }
                found
            };
            for child in named_children(node) {
                let kind = match (node.kind(), child.kind()) {
                    ("class_declaration", "superclass") => RefKind::Extends,
                    (
                        "class_declaration" | "enum_declaration" | "record_declaration",
                        "super_interfaces",
                    ) => RefKind::Implements,
                    ("interface_declaration", "extends_interfaces") => RefKind::Extends,
                    _ => continue,
                };
                out.extend(types(child).into_iter().map(|t| (t, kind)));
            }
            out
        }

        fn declared(&self, node: Node, src: &str, out: &mut Vec<DeclaredType>) {
            if node.kind() != "field_declaration" {
                return;
            }
            let Some(ty) = node
                .child_by_field_name("type")
                .and_then(|t| type_name(src.text_of(t)))
            else {
                return;
            };
            for n in declarator_names(node) {
                out.push(DeclaredType {
                    offset: n.start_byte(),
                    type_name: ty.clone(),
                });
            }
        }
    }
}
