//! Python: modules, classes, functions and methods (decorators included), class and
//! module assignments, imports; docstrings are the documentation.

use tree_sitter::Node;

use super::{
    Binding, Children, Def, ImportSpec, Item, Place, SourceText, Syntax, has_child_kind,
    named_children,
};
use crate::parse::refs::Imported;
use crate::parse::{Modifier, SymbolKind};

/// Python's [`Syntax`].
pub(crate) struct Python;

/// Whether `node` is a docstring: a lone string statement first in a module, class or
/// function body (comments before it allowed).
fn is_docstring(node: Node) -> bool {
    if node.kind() != "expression_statement"
        || node.named_child_count() != 1
        || node.named_child(0).is_none_or(|c| c.kind() != "string")
    {
        return false;
    }
    if !node
        .parent()
        .is_some_and(|p| matches!(p.kind(), "module" | "block"))
    {
        return false;
    }
    let mut prev = node.prev_named_sibling();
    while let Some(p) = prev {
        if p.kind() != "comment" {
            return false;
        }
        prev = p.prev_named_sibling();
    }
    true
}

/// The text of a Python string literal without prefix and quotes, dedented the way
/// `inspect.cleandoc` does.
pub(crate) fn docstring_text(literal: &str) -> Option<String> {
    let body = literal.trim_start_matches(|c: char| c.is_ascii_alphabetic());
    let body = ["\"\"\"", "'''", "\"", "'"]
        .iter()
        .find_map(|q| body.strip_prefix(q).and_then(|b| b.strip_suffix(q)))?;
    let mut lines = body.lines();
    let first = lines.next().unwrap_or("").trim().to_string();
    let rest: Vec<&str> = lines.collect();
    let indent = rest
        .iter()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut out = vec![first];
    out.extend(rest.iter().map(|l| {
        l.get(indent..)
            .unwrap_or(l.trim_start())
            .trim_end()
            .to_string()
    }));
    let doc = out.join("\n");
    let doc = doc.trim();
    (!doc.is_empty()).then(|| doc.to_string())
}

/// Whether a module-level name is a constant by convention (`MAX_SIZE`).
fn is_constant_name(name: &str) -> bool {
    name.chars().any(|c| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The names an assignment target binds (`a`, `a, b`, `(a, [b, c])`), in order.
pub(crate) fn target_names(node: Node, src: &str, out: &mut Vec<String>) {
    match node.kind() {
        "identifier" => out.push(src.text_of(node).to_string()),
        "pattern_list"
        | "tuple_pattern"
        | "list_pattern"
        | "parenthesized_expression"
        | "expression_list"
        | "tuple"
        | "list"
        | "list_splat_pattern" => {
            for child in named_children(node) {
                target_names(child, src, out);
            }
        }
        _ => {}
    }
}

impl Python {
    fn definition<'t>(
        &self,
        node: Node<'t>,
        outer: Node<'t>,
        place: Place,
        src: &str,
    ) -> Option<Def<'t>> {
        let name = src.text_of(node.child_by_field_name("name")?).to_string();
        let body = node.child_by_field_name("body");
        let exported = place != Place::Nested && !name.starts_with('_');
        let mut def = match node.kind() {
            "function_definition" => {
                let kind = match place {
                    Place::Members if name == "__init__" => SymbolKind::Constructor,
                    Place::Members => SymbolKind::Method,
                    _ => SymbolKind::Function,
                };
                let mut def = Def::new(kind, name, node)
                    .body(body, body.map_or(Children::None, Children::Nested));
                if has_child_kind(node, "async") {
                    def.modifiers.push(Modifier::Async);
                }
                def
            }
            "class_definition" => Def::new(SymbolKind::Class, name, node)
                .body(body, body.map_or(Children::None, Children::Members)),
            _ => return None,
        };
        def.outer = outer;
        def.exported = exported;
        // `_x` and `__x` are private by convention (`__init__` and other dunders are not).
        if place == Place::Members && def.name.starts_with('_') && !def.name.ends_with("__") {
            def.modifiers.push(Modifier::Private);
        }
        if outer.kind() == "decorated_definition" {
            for decorator in named_children(outer) {
                if decorator.kind() != "decorator" {
                    continue;
                }
                let text = src.text_of(decorator).trim_start_matches('@').trim();
                let head = text.split('(').next().unwrap_or("");
                let last = head.rsplit('.').next().unwrap_or("");
                match last {
                    "staticmethod" | "classmethod" => def.modifiers.push(Modifier::Static),
                    "property" | "cached_property" => def.modifiers.push(Modifier::Getter),
                    "setter" => def.modifiers.push(Modifier::Setter),
                    "abstractmethod" => def.modifiers.push(Modifier::Abstract),
                    "override" => def.modifiers.push(Modifier::Override),
                    "overload" => def.stub = true,
                    _ => {}
                }
            }
        }
        Some(def)
    }

    /// `x = …`, `a, b = …`, `x: int = …` at module or class level.
    fn assignment<'t>(&self, node: Node<'t>, place: Place, src: &str) -> Option<Def<'t>> {
        let assign = node.named_child(0)?;
        if assign.kind() != "assignment" {
            return None;
        }
        let mut names = Vec::new();
        target_names(assign.child_by_field_name("left")?, src, &mut names);
        let name = names.first()?.clone();
        let kind = match place {
            Place::Members => SymbolKind::Property,
            _ if is_constant_name(&name) => SymbolKind::Const,
            _ => SymbolKind::Variable,
        };
        let mut def = Def::new(kind, name.clone(), node).exported(!name.starts_with('_'));
        if names.len() > 1 {
            def.bindings = names;
        }
        if assign.child_by_field_name("right").is_none() {
            // `x: int`: an annotation only.
            def.native = Some("annotation");
        }
        Some(def)
    }
}

impl Syntax for Python {
    fn identifier_kinds(&self) -> &'static [&'static str] {
        &["identifier"]
    }

    fn is_comment(&self, node: Node, _src: &str) -> bool {
        node.kind() == "comment" || is_docstring(node)
    }

    fn is_delimiter(&self, token: &str) -> bool {
        matches!(token, ";" | ":")
    }

    fn item<'t>(&self, node: Node<'t>, place: Place, src: &str) -> Item<'t> {
        match node.kind() {
            "decorated_definition" => node
                .child_by_field_name("definition")
                .and_then(|inner| self.definition(inner, node, place, src))
                .map_or(Item::Skip, Def::item),
            "function_definition" | "class_definition" => self
                .definition(node, node, place, src)
                .map_or(Item::Skip, Def::item),
            _ if place == Place::Nested => Item::Skip,
            "expression_statement" => match self.assignment(node, place, src) {
                Some(def) => def.item(),
                None => Item::Statement(SymbolKind::Expression),
            },
            "type_alias_statement" => {
                let name = node
                    .child_by_field_name("left")
                    .map(|n| src.text_of(n).split('[').next().unwrap_or("").to_string())
                    .unwrap_or_default();
                Def::new(SymbolKind::Type, name, node).exported(true).item()
            }
            _ => Item::Statement(SymbolKind::Statement),
        }
    }

    fn imports(&self, node: Node, src: &str) -> Option<Vec<ImportSpec>> {
        let spec = match node.kind() {
            // `import a.b` binds `a`; `import a.b as c` binds `c` to `a.b`.
            "import_statement" => {
                let mut spec = ImportSpec::default();
                for name in named_children(node) {
                    let (module, binding) = match name.kind() {
                        "aliased_import" => {
                            let module = src.field_of(name, "name").unwrap_or("");
                            let alias = src.field_of(name, "alias").unwrap_or("");
                            (module, Binding::new(alias, module, Imported::Module))
                        }
                        _ => {
                            let module = src.text_of(name);
                            let top = module.split('.').next().unwrap_or(module);
                            (module, Binding::new(top, top, Imported::Module))
                        }
                    };
                    spec.depend(module);
                    spec.bindings.push(binding);
                }
                spec
            }
            // `from m import a, b as c`.
            "import_from_statement" => {
                let module = src.field_of(node, "module_name").unwrap_or("");
                let mut cursor = node.walk();
                let bindings = node
                    .children_by_field_name("name", &mut cursor)
                    .filter_map(|name| {
                        let (imported, local) = match name.kind() {
                            "aliased_import" => {
                                (src.field_of(name, "name")?, src.field_of(name, "alias")?)
                            }
                            _ => (src.text_of(name), src.text_of(name)),
                        };
                        Some(Binding::new(
                            local,
                            module,
                            Imported::Named(imported.into()),
                        ))
                    })
                    .collect();
                ImportSpec::of(module, bindings)
            }
            "future_import_statement" => ImportSpec::of("__future__", Vec::new()),
            _ => return None,
        };
        Some(vec![spec])
    }

    fn doc(&self, def: &Def, src: &str) -> Option<String> {
        let body = def.body?;
        let first = named_children(body)
            .into_iter()
            .find(|c| c.kind() != "comment")?;
        if !is_docstring(first) {
            return None;
        }
        docstring_text(src.text_of(first.named_child(0)?))
    }

    fn refs(&self) -> &dyn super::ref_walk::RefSyntax {
        self
    }
}

mod graph {
    use tree_sitter::Node;

    use super::{Python, target_names};
    use crate::parse::lang::SourceText;
    use crate::parse::lang::named_children;
    use crate::parse::lang::ref_walk::{Access, Local, RefSyntax, type_name};
    use crate::parse::refs::{DeclaredType, RefKind};

    /// Whether a function definition is a method: its (decorated) definition sits in a
    /// class body.
    fn is_method(function: Node) -> bool {
        let mut up = function.parent();
        if up.is_some_and(|p| p.kind() == "decorated_definition") {
            up = up.and_then(|p| p.parent());
        }
        up.filter(|b| b.kind() == "block")
            .and_then(|b| b.parent())
            .is_some_and(|c| c.kind() == "class_definition")
    }

    fn param(node: Node, src: &str) -> Option<Local> {
        match node.kind() {
            "identifier" => Some(Local::plain(src.text_of(node))),
            "typed_parameter" => {
                let name = named_children(node)
                    .into_iter()
                    .find(|c| c.kind() == "identifier")?;
                let ty = node
                    .child_by_field_name("type")
                    .and_then(|t| type_name(src.text_of(t)));
                Some(Local::typed(src.text_of(name), ty))
            }
            "default_parameter" | "typed_default_parameter" => {
                let name = node.child_by_field_name("name")?;
                let ty = node
                    .child_by_field_name("type")
                    .and_then(|t| type_name(src.text_of(t)));
                Some(Local::typed(src.text_of(name), ty))
            }
            "list_splat_pattern" | "dictionary_splat_pattern" => {
                named_children(node).first().and_then(|n| param(*n, src))
            }
            _ => None,
        }
    }

    impl RefSyntax for Python {
        fn scope(&self, node: Node, src: &str) -> Option<Vec<Local>> {
            let params = match node.kind() {
                "function_definition" | "lambda" => node.child_by_field_name("parameters"),
                _ => return None,
            };
            let mut out: Vec<Local> = params
                .map(|p| {
                    named_children(p)
                        .into_iter()
                        .filter_map(|c| param(c, src))
                        .collect()
                })
                .unwrap_or_default();
            if node.kind() == "function_definition"
                && is_method(node)
                && let Some(first) = out.first_mut()
            {
                first.receiver = true;
            }
            Some(out)
        }

        fn binds(&self, node: Node, src: &str, out: &mut Vec<Local>) {
            let mut names = Vec::new();
            match node.kind() {
                "assignment" | "augmented_assignment" => {
                    if let Some(left) = node.child_by_field_name("left") {
                        target_names(left, src, &mut names);
                    }
                    let ty = node
                        .child_by_field_name("type")
                        .and_then(|t| type_name(src.text_of(t)))
                        .or_else(|| {
                            // `x = Store(...)`: the constructor names the type.
                            let right = node.child_by_field_name("right")?;
                            let f = (right.kind() == "call")
                                .then(|| right.child_by_field_name("function"))??;
                            let name = type_name(src.text_of(f))?;
                            name.starts_with(char::is_uppercase).then_some(name)
                        });
                    out.extend(names.into_iter().map(|n| Local::typed(n, ty.clone())));
                    return;
                }
                "for_statement" | "for_in_clause" => {
                    if let Some(left) = node.child_by_field_name("left") {
                        target_names(left, src, &mut names);
                    }
                }
                "named_expression" | "as_pattern_target" => {
                    if let Some(n) = node.child_by_field_name("name") {
                        names.push(src.text_of(n).to_string());
                    } else {
                        target_names(node, src, &mut names);
                    }
                }
                "function_definition" | "class_definition" => {
                    out.extend(Local::declared(node, src));
                    return;
                }
                _ => return,
            }
            out.extend(names.into_iter().map(Local::plain));
        }

        fn declarations(&self) -> &'static [(&'static str, &'static str)] {
            &[
                ("function_definition", "name"),
                ("class_definition", "name"),
                ("keyword_argument", "name"),
                ("default_parameter", "name"),
                ("typed_default_parameter", "name"),
                ("assignment", "left"),
                ("augmented_assignment", "left"),
                ("for_statement", "left"),
                ("parameters", "*"),
                ("lambda_parameters", "*"),
                ("typed_parameter", "*"),
                ("global_statement", "*"),
                ("nonlocal_statement", "*"),
                ("pattern_list", "*"),
                ("aliased_import", "*"),
                ("dotted_name", "*"),
            ]
        }

        fn callee<'t>(&self, node: Node<'t>, _parent: Option<Node<'t>>) -> Option<Node<'t>> {
            (node.kind() == "call")
                .then(|| node.child_by_field_name("function"))
                .flatten()
        }

        fn access<'t>(&self, node: Node<'t>, src: &str) -> Option<Access<'t>> {
            (node.kind() == "attribute").then_some(())?;
            Access::fields(node, "object", "attribute", src)
        }

        fn is_this(&self, node: Node, src: &str) -> bool {
            node.kind() == "identifier" && matches!(src.text_of(node), "self" | "cls")
        }

        fn is_type_name(&self, _node: Node) -> bool {
            false
        }

        fn is_type_position(&self, parent: Node) -> bool {
            parent.kind() == "type"
        }

        fn heritage<'t>(&self, node: Node<'t>, _src: &str) -> Vec<(Node<'t>, RefKind)> {
            if node.kind() != "class_definition" {
                return Vec::new();
            }
            node.child_by_field_name("superclasses")
                .map(|list| {
                    named_children(list)
                        .into_iter()
                        .filter(|c| matches!(c.kind(), "identifier" | "attribute"))
                        .map(|c| (c, RefKind::Extends))
                        .collect()
                })
                .unwrap_or_default()
        }

        fn declared(&self, node: Node, src: &str, out: &mut Vec<DeclaredType>) {
            // `store: Store` in a class body.
            if node.kind() == "assignment"
                && let Some(ty) = node.child_by_field_name("type")
                && let Some(left) = node.child_by_field_name("left")
                && left.kind() == "identifier"
                && let Some(type_name) = type_name(src.text_of(ty))
            {
                out.push(DeclaredType {
                    offset: left.start_byte(),
                    type_name,
                });
            }
        }
    }
}
