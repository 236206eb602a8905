//! Go: the package clause, imports, functions, methods (named `Type.Method` after their
//! receiver), types (structs with their fields, interfaces with their methods), constants
//! and variables; the comment block above a declaration is its documentation.

use tree_sitter::Node;

use super::{
    Binding, Children, Def, ImportSpec, Item, Place, SourceText, Syntax, comments_above,
    line_comments_text, named_children,
};
use crate::parse::SymbolKind;
use crate::parse::refs::Imported;

/// Go's [`Syntax`].
pub(crate) struct Go;

/// The names one `const`/`var` spec declares (`A, B = 1, 2` declares both).
fn spec_names(spec: Node, src: &str) -> Vec<String> {
    let mut cursor = spec.walk();
    spec.children_by_field_name("name", &mut cursor)
        .map(|n| src.text_of(n).to_string())
        .collect()
}

/// Go exports names that start with an upper-case letter.
pub(crate) fn is_exported(name: &str) -> bool {
    name.chars().next().is_some_and(char::is_uppercase)
}

/// The receiver's type name of a method (`(s *Store)` → `Store`, `(l List[T])` → `List`).
pub(crate) fn receiver_type(method: Node, src: &str) -> Option<String> {
    let receiver = method.child_by_field_name("receiver")?;
    let param = named_children(receiver)
        .into_iter()
        .find(|c| c.kind() == "parameter_declaration")?;
    let text = src.text_of(param.child_by_field_name("type")?);
    let name = text.trim_start_matches('*');
    let name = name.split('[').next().unwrap_or(name).trim();
    (!name.is_empty()).then(|| name.to_string())
}

impl Go {
    /// `type X …` with one spec, or a group of them.
    fn type_declaration<'t>(&self, node: Node<'t>, src: &str) -> Item<'t> {
        let specs: Vec<Node> = named_children(node)
            .into_iter()
            .filter(|c| matches!(c.kind(), "type_spec" | "type_alias"))
            .collect();
        match specs.as_slice() {
            [spec] => {
                let mut def = self.type_spec(*spec, src);
                def.outer = node;
                def.decl = node;
                def.item()
            }
            _ => {
                let names: Vec<String> = specs
                    .iter()
                    .filter_map(|s| s.child_by_field_name("name"))
                    .map(|n| src.text_of(n).to_string())
                    .collect();
                let mut def = Def::new(SymbolKind::Type, names.join(", "), node)
                    .native("type group")
                    .exported(names.iter().any(|n| is_exported(n)));
                def.children = Children::Members(node);
                def.signature = Some(format!("type ( {} )", names.join("; ")));
                def.item()
            }
        }
    }

    fn type_spec<'t>(&self, spec: Node<'t>, src: &str) -> Def<'t> {
        let name = src.name_of(spec);
        let exported = is_exported(&name);
        let ty = spec.child_by_field_name("type");
        let mut def = match ty.map(|t| t.kind()) {
            _ if spec.kind() == "type_alias" => {
                Def::new(SymbolKind::Type, name, spec).native("type alias")
            }
            Some("struct_type") => {
                let fields = ty.and_then(|t| {
                    named_children(t)
                        .into_iter()
                        .find(|c| c.kind() == "field_declaration_list")
                });
                Def::new(SymbolKind::Struct, name, spec)
                    .body(fields, fields.map_or(Children::None, Children::Members))
            }
            Some("interface_type") => Def::new(SymbolKind::Interface, name, spec)
                .body(ty, ty.map_or(Children::None, Children::Members)),
            _ => Def::new(SymbolKind::Type, name, spec),
        };
        if let Some(keyword) = ty
            .map(|t| t.kind())
            .and_then(|k| k.strip_suffix("_type"))
            .filter(|k| matches!(*k, "struct" | "interface"))
        {
            let params = src.field_of(spec, "type_parameters").unwrap_or("");
            def.signature = Some(format!("type {}{params} {keyword}", def.name));
        }
        def.exported(exported)
    }

    /// `const X = …` / `var x T`: one spec is one symbol; a parenthesised group of
    /// several is a container of them, like a `type ( … )` group, so each name is found.
    fn value_declaration<'t>(&self, node: Node<'t>, src: &str) -> Option<Def<'t>> {
        let keyword = if node.kind() == "const_declaration" {
            "const"
        } else {
            "var"
        };
        let specs = value_specs(node);
        let names: Vec<String> = specs.iter().flat_map(|s| spec_names(*s, src)).collect();
        match specs.as_slice() {
            [spec] => {
                let mut def = self.value_spec(*spec, src)?;
                def.outer = node;
                def.decl = node;
                Some(def)
            }
            _ => {
                let mut def = Def::new(value_kind(node), names.join(", "), node)
                    .native(if keyword == "const" {
                        "const group"
                    } else {
                        "var group"
                    })
                    .exported(names.iter().any(|n| is_exported(n)));
                def.children = Children::Members(node);
                def.signature = Some(format!("{keyword} ( {} )", names.join("; ")));
                Some(def)
            }
        }
    }

    /// One `const`/`var` spec (`A, B = 1, 2` binds both names).
    fn value_spec<'t>(&self, spec: Node<'t>, src: &str) -> Option<Def<'t>> {
        let names = spec_names(spec, src);
        let name = names.first()?.clone();
        let mut def =
            Def::new(value_kind(spec), name, spec).exported(names.iter().any(|n| is_exported(n)));
        if names.len() > 1 {
            def.bindings = names;
        }
        Some(def)
    }
}

/// Const or variable, by the declaration or spec kind.
fn value_kind(node: Node) -> SymbolKind {
    if node.kind().starts_with("const") {
        SymbolKind::Const
    } else {
        SymbolKind::Variable
    }
}

/// The specs of a `const`/`var` declaration, in order (through a `var ( … )` list).
fn value_specs(node: Node) -> Vec<Node> {
    let mut out = Vec::new();
    for child in named_children(node) {
        match child.kind() {
            "const_spec" | "var_spec" => out.push(child),
            "var_spec_list" | "const_spec_list" => out.extend(value_specs(child)),
            _ => {}
        }
    }
    out
}

/// The name a Go import path binds by default: its last element, without a major
/// version suffix (`github.com/x/y/v2` → `y`) or a `go-`/`.go` decoration.
pub(crate) fn package_name(path: &str) -> &str {
    let mut parts = path.rsplit('/');
    let mut last = parts.next().unwrap_or(path);
    if last.len() > 1
        && last.starts_with('v')
        && last[1..].chars().all(|c| c.is_ascii_digit())
        && let Some(prev) = parts.next()
    {
        last = prev;
    }
    let last = last.strip_prefix("go-").unwrap_or(last);
    last.strip_suffix(".go").unwrap_or(last)
}

impl Syntax for Go {
    fn identifier_kinds(&self) -> &'static [&'static str] {
        &["identifier", "type_identifier", "package_identifier"]
    }

    fn is_comment(&self, node: Node, _src: &str) -> bool {
        node.kind() == "comment"
    }

    fn item<'t>(&self, node: Node<'t>, place: Place, src: &str) -> Item<'t> {
        match (place, node.kind()) {
            (_, "function_declaration") => {
                let name = src.name_of(node);
                let body = node.child_by_field_name("body");
                Def::new(SymbolKind::Function, name.clone(), node)
                    .body(body, Children::None)
                    .exported(is_exported(&name))
                    .item()
            }
            (Place::Container, "method_declaration") => {
                let method = src.name_of(node);
                let name = match receiver_type(node, src) {
                    Some(receiver) => format!("{receiver}.{method}"),
                    None => method.clone(),
                };
                let body = node.child_by_field_name("body");
                Def::new(SymbolKind::Method, name, node)
                    .body(body, Children::None)
                    .exported(is_exported(&method))
                    .item()
            }
            (Place::Nested, _) => Item::Skip,
            (Place::Container, "package_clause") => {
                let name = named_children(node)
                    .first()
                    .map(|n| src.text_of(*n).to_string())
                    .unwrap_or_default();
                Def::new(SymbolKind::Module, format!("package {name}"), node)
                    .native("package")
                    .exported(true)
                    .item()
            }
            (Place::Container, "type_declaration") => self.type_declaration(node, src),
            (Place::Members, "type_spec" | "type_alias") => self.type_spec(node, src).item(),
            (Place::Members, "const_spec" | "var_spec") => {
                self.value_spec(node, src).map_or(Item::Skip, Def::item)
            }
            (Place::Members, "var_spec_list" | "const_spec_list") => Item::Within(node),
            (Place::Container, "const_declaration" | "var_declaration") => self
                .value_declaration(node, src)
                .map_or(Item::Statement(SymbolKind::Statement), Def::item),
            (Place::Members, "field_declaration") => {
                let mut cursor = node.walk();
                let names: Vec<String> = node
                    .children_by_field_name("name", &mut cursor)
                    .map(|n| src.text_of(n).to_string())
                    .collect();
                // An embedded field is named by its type.
                let name = names.first().cloned().unwrap_or_else(|| {
                    node.child_by_field_name("type")
                        .map(|t| {
                            let t = src.text_of(t).trim_start_matches('*');
                            t.rsplit('.').next().unwrap_or(t).to_string()
                        })
                        .unwrap_or_default()
                });
                let mut def =
                    Def::new(SymbolKind::Property, name.clone(), node).exported(is_exported(&name));
                if names.len() > 1 {
                    def.bindings = names;
                }
                def.item()
            }
            (Place::Members, "method_elem") => {
                let name = src.name_of(node);
                Def::new(SymbolKind::Method, name.clone(), node)
                    .exported(is_exported(&name))
                    .item()
            }
            (Place::Members, _) => Item::Skip,
            (Place::Container, "expression_statement") => Item::Statement(SymbolKind::Expression),
            (Place::Container, _) => Item::Statement(SymbolKind::Statement),
        }
    }

    fn imports(&self, node: Node, src: &str) -> Option<Vec<ImportSpec>> {
        if node.kind() != "import_declaration" {
            return None;
        }
        let mut specs: Vec<Node> = Vec::new();
        let mut grouped = false;
        for child in named_children(node) {
            match child.kind() {
                "import_spec" => specs.push(child),
                "import_spec_list" => {
                    grouped = true;
                    specs.extend(
                        named_children(child)
                            .into_iter()
                            .filter(|c| c.kind() == "import_spec"),
                    );
                }
                _ => {}
            }
        }
        let specs = specs.into_iter().filter_map(|spec| {
            let module = src
                .text_of(spec.child_by_field_name("path")?)
                .trim_matches(['"', '`']);
            // `_` and `.` imports bind no name of their own.
            let local = match src.field_of(spec, "name") {
                Some("_" | ".") => None,
                Some(alias) => Some(alias),
                None => Some(package_name(module)),
            };
            let bindings = local
                .map(|l| Binding::new(l, module, Imported::Module))
                .into_iter()
                .collect();
            let mut out = ImportSpec::of(module, bindings);
            // In a group, each element stands for itself in `relevantImports`.
            if grouped {
                out.text = Some(format!(
                    "import {}",
                    crate::text::collapse_whitespace(src.text_of(spec))
                ));
                out.bytes = Some(super::span(spec));
            }
            Some(out)
        });
        Some(specs.collect())
    }

    fn doc(&self, def: &Def, src: &str) -> Option<String> {
        let first = def.start.unwrap_or(def.outer);
        let comments = comments_above(first, |n| n.kind() == "comment", |_| false);
        let last = comments.last()?;
        let text = src.text_of(*last);
        if text.starts_with("/*") {
            return super::block_comment_text(text);
        }
        line_comments_text(comments.iter().map(|c| src.text_of(*c)), "//")
    }

    fn refs(&self) -> &dyn super::ref_walk::RefSyntax {
        self
    }
}

mod graph {
    use tree_sitter::Node;

    use super::Go;
    use crate::parse::lang::ref_walk::{Access, Local, RefSyntax, type_name};
    use crate::parse::lang::{SourceText, named_children};
    use crate::parse::refs::DeclaredType;

    /// The names and type of a parameter or field declaration.
    fn names_and_type<'t>(node: Node<'t>, src: &str) -> (Vec<Node<'t>>, Option<String>) {
        let mut cursor = node.walk();
        let names: Vec<Node> = node.children_by_field_name("name", &mut cursor).collect();
        let ty = node
            .child_by_field_name("type")
            .and_then(|t| qualified_type(src.text_of(t)));
        (names, ty)
    }

    /// A parameter's type with its package kept (`*store.Store` → `store.Store`), so that
    /// the graph can look the type up in the imported package.
    fn qualified_type(text: &str) -> Option<String> {
        let t = text.trim().trim_start_matches(['*', '&']).trim();
        let t = t.split(['[', ' ']).next().unwrap_or(t);
        match t.split_once('.') {
            Some((package, name)) => {
                let name = type_name(name)?;
                Some(format!("{package}.{name}"))
            }
            None => type_name(t),
        }
    }

    fn params(list: Option<Node>, src: &str, receiver: bool, out: &mut Vec<Local>) {
        let Some(list) = list else { return };
        for p in named_children(list) {
            if !matches!(
                p.kind(),
                "parameter_declaration" | "variadic_parameter_declaration"
            ) {
                continue;
            }
            let (names, ty) = names_and_type(p, src);
            for n in names {
                let mut local = Local::typed(src.text_of(n), ty.clone());
                local.receiver = receiver;
                out.push(local);
            }
        }
    }

    impl RefSyntax for Go {
        fn scope(&self, node: Node, src: &str) -> Option<Vec<Local>> {
            let mut out = Vec::new();
            match node.kind() {
                "function_declaration" | "func_literal" => {}
                "method_declaration" => {
                    params(node.child_by_field_name("receiver"), src, true, &mut out);
                }
                _ => return None,
            }
            params(node.child_by_field_name("parameters"), src, false, &mut out);
            // Named results are locals too.
            if let Some(result) = node.child_by_field_name("result")
                && result.kind() == "parameter_list"
            {
                params(Some(result), src, false, &mut out);
            }
            Some(out)
        }

        fn binds(&self, node: Node, src: &str, out: &mut Vec<Local>) {
            match node.kind() {
                "short_var_declaration" | "range_clause" => {
                    let Some(left) = node.child_by_field_name("left") else {
                        return;
                    };
                    // `s := NewStore()` / `s := &Store{}`: a constructor or literal names
                    // the type when there is one name.
                    let ty = node.child_by_field_name("right").and_then(|r| {
                        let first = named_children(r).into_iter().next()?;
                        let first = if first.kind() == "unary_expression" {
                            first.child_by_field_name("operand")?
                        } else {
                            first
                        };
                        match first.kind() {
                            "composite_literal" => first
                                .child_by_field_name("type")
                                .and_then(|t| type_name(src.text_of(t))),
                            _ => None,
                        }
                    });
                    for n in named_children(left) {
                        if n.kind() == "identifier" {
                            out.push(Local::typed(src.text_of(n), ty.clone()));
                        }
                    }
                }
                "var_spec" | "const_spec" => {
                    let (names, ty) = names_and_type(node, src);
                    out.extend(
                        names
                            .into_iter()
                            .map(|n| Local::typed(src.text_of(n), ty.clone())),
                    );
                }
                _ => {}
            }
        }

        fn declarations(&self) -> &'static [(&'static str, &'static str)] {
            &[
                ("function_declaration", "name"),
                ("method_declaration", "name"),
                ("type_spec", "name"),
                ("type_alias", "name"),
                ("const_spec", "name"),
                ("var_spec", "name"),
                ("parameter_declaration", "name"),
                ("variadic_parameter_declaration", "name"),
                ("type_parameter_declaration", "name"),
                ("labeled_statement", "name"),
                ("import_spec", "name"),
                ("package_clause", "*"),
            ]
        }

        fn callee<'t>(&self, node: Node<'t>, _parent: Option<Node<'t>>) -> Option<Node<'t>> {
            (node.kind() == "call_expression")
                .then(|| node.child_by_field_name("function"))
                .flatten()
        }

        fn access<'t>(&self, node: Node<'t>, src: &str) -> Option<Access<'t>> {
            let (object, member) = match node.kind() {
                "selector_expression" => ("operand", "field"),
                "qualified_type" => ("package", "name"),
                _ => return None,
            };
            Access::fields(node, object, member, src)
        }

        fn is_this(&self, _node: Node, _src: &str) -> bool {
            false
        }

        fn is_name(&self, node: Node) -> bool {
            matches!(node.kind(), "identifier" | "package_identifier")
        }

        fn declared(&self, node: Node, src: &str, out: &mut Vec<DeclaredType>) {
            if node.kind() != "field_declaration" {
                return;
            }
            let (names, ty) = names_and_type(node, src);
            if let Some(ty) = ty {
                for n in names {
                    out.push(DeclaredType {
                        offset: n.start_byte(),
                        type_name: ty.clone(),
                    });
                }
            }
        }
    }
}
