//! The TypeScript/JavaScript walk that produces [`FileRefs`]: one iterative pass over the
//! syntax tree with a stack of function and block scopes, so that parameters and locals
//! shadow file-level names, and a stack of annotation contexts, so that parameter and
//! return types are told apart. Iterative (an explicit stack, no recursion) like the rest
//! of the parser, so deeply nested input cannot overflow the thread stack.

use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use crate::parse::refs::{
    CallbackType, DeclaredType, Export, FileRefs, ImportBinding, Imported, ModuleUse, RefBase,
    RefKind, RefTarget,
};
use crate::parse::scopes::Scopes;
use crate::text::truncate_chars;

/// Longest receiver text kept for an unknown receiver.
const RECEIVER_CHARS: usize = 40;

/// A name bound by an enclosing function or block scope.
#[derive(Debug, Clone)]
struct Local {
    /// Byte offset of the binding identifier.
    decl: usize,
    /// Whether it declares a nested symbol (function, class, function-valued variable).
    nested: bool,
    /// The type its annotation or `new T()` initialiser names.
    type_name: Option<String>,
    /// For an unannotated callback parameter: the call it is passed to, the argument and
    /// parameter positions.
    context: Option<(RefTarget, usize, usize)>,
}

type Scope = HashMap<String, Local>;

/// How type names met now are used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TypeContext {
    Plain,
    Param,
    Return,
}

enum Step<'t> {
    /// A node, its field name in its parent, and its parent and grandparent: carried down
    /// the walk because `Node::parent` walks from the root (O(depth) per call, quadratic
    /// over a deeply nested file).
    Enter(Node<'t>, Option<&'t str>, Lineage<'t>),
    PopScope,
    PopContext,
}

/// A node's parent and grandparent.
#[derive(Clone, Copy, Default)]
struct Lineage<'t> {
    parent: Option<Node<'t>>,
    grandparent: Option<Node<'t>>,
}

fn is_function_like(kind: &str) -> bool {
    matches!(
        kind,
        "function_declaration"
            | "generator_function_declaration"
            | "function_expression"
            | "function"
            | "generator_function"
            | "arrow_function"
            | "method_definition"
    )
}

fn unwrap(mut node: Node) -> Node {
    while matches!(
        node.kind(),
        "parenthesized_expression" | "non_null_expression" | "as_expression"
    ) {
        match node.named_child(0) {
            Some(inner) => node = inner,
            None => break,
        }
    }
    node
}

/// Whether an identifier with this parent and field binds a name rather than using one.
fn is_binding(parent: &str, field: Option<&str>) -> bool {
    match field {
        Some("name") => matches!(
            parent,
            "variable_declarator"
                | "function_declaration"
                | "generator_function_declaration"
                | "function_expression"
                | "function"
                | "generator_function"
                | "class_declaration"
                | "class"
                | "abstract_class_declaration"
                | "interface_declaration"
                | "type_alias_declaration"
                | "enum_declaration"
                | "internal_module"
                | "module"
                | "type_parameter"
                | "import_specifier"
                | "export_specifier"
                | "type_predicate"
                | "function_signature"
        ),
        Some("pattern" | "parameter" | "label" | "alias") => true,
        Some("left") => matches!(
            parent,
            "assignment_pattern" | "object_assignment_pattern" | "for_in_statement"
        ),
        Some("value") => parent == "pair_pattern",
        _ => matches!(
            parent,
            "formal_parameters"
                | "array_pattern"
                | "rest_pattern"
                | "object_pattern"
                | "import_clause"
                | "namespace_import"
                | "namespace_export"
                | "import_require_clause"
                | "import_alias"
                | "export_clause"
                | "type_predicate"
        ),
    }
}

struct Walker<'s> {
    src: &'s str,
    scopes: Scopes<Local>,
    contexts: Vec<TypeContext>,
    /// Node ids already reported by an enclosing construct (a callee, a heritage name).
    handled: HashSet<usize>,
    out: FileRefs,
}

/// Extracts the name facts of one parsed file.
pub(super) fn extract(root: Node, src: &str) -> FileRefs {
    let mut walker = Walker {
        src,
        scopes: Scopes::default(),
        contexts: vec![TypeContext::Plain],
        handled: HashSet::new(),
        out: FileRefs::default(),
    };
    walker.run(root);
    walker.out
}

impl<'s> Walker<'s> {
    fn text(&self, node: Node) -> &'s str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    fn string_content(&self, node: Node) -> String {
        self.text(node)
            .trim_matches(|c| c == '\'' || c == '"' || c == '`')
            .to_string()
    }

    fn run(&mut self, root: Node) {
        let mut stack = vec![Step::Enter(root, None, Lineage::default())];
        while let Some(step) = stack.pop() {
            let (node, field, lineage) = match step {
                Step::PopScope => {
                    self.scopes.close();
                    continue;
                }
                Step::PopContext => {
                    self.contexts.pop();
                    continue;
                }
                Step::Enter(node, field, lineage) => (node, field, lineage),
            };
            if let Some(scope) = self.scope_for(node, lineage) {
                self.scopes.open(scope);
                stack.push(Step::PopScope);
            }
            if let Some(context) = self.context_for(node, field) {
                self.contexts.push(context);
                stack.push(Step::PopContext);
            }
            if !self.visit(node, field, lineage.parent) {
                continue;
            }
            let below = Lineage {
                parent: Some(node),
                grandparent: lineage.parent,
            };
            let mut cursor = node.walk();
            let mut children = Vec::new();
            if cursor.goto_first_child() {
                loop {
                    children.push((cursor.node(), cursor.field_name()));
                    if !cursor.goto_next_sibling() {
                        break;
                    }
                }
            }
            stack.extend(
                children
                    .into_iter()
                    .rev()
                    .map(|(child, field)| Step::Enter(child, field, below)),
            );
        }
    }

    // ----- scopes -------------------------------------------------------------------

    fn scope_for(&self, node: Node, lineage: Lineage) -> Option<Scope> {
        let kind = node.kind();
        let mut scope = Scope::new();
        if is_function_like(kind) {
            self.type_parameters(node, &mut scope);
            let site = self.callback_site(node, lineage);
            if let Some(params) = node.child_by_field_name("parameters") {
                self.parameters(params, &mut scope);
                if let Some((callee, arg)) = &site {
                    let mut cursor = params.walk();
                    for (i, param) in params.named_children(&mut cursor).enumerate() {
                        let untyped = param.child_by_field_name("type").is_none();
                        let name = param.child_by_field_name("pattern").unwrap_or(param);
                        if untyped && name.kind() == "identifier" {
                            self.bind_contextual(name, (callee.clone(), *arg, i), &mut scope);
                        }
                    }
                }
            }
            if let Some(param) = node.child_by_field_name("parameter") {
                self.pattern_names(param, &mut scope);
                if let Some((callee, arg)) = site
                    && param.kind() == "identifier"
                {
                    self.bind_contextual(param, (callee, arg, 0), &mut scope);
                }
            }
            if let Some(body) = node.child_by_field_name("body")
                && body.kind() == "statement_block"
            {
                self.declarations(body, &mut scope);
            }
            return Some(scope);
        }
        match kind {
            "statement_block" | "class_static_block" => {
                let parent_is_function = lineage.parent.is_some_and(|p| is_function_like(p.kind()));
                if parent_is_function {
                    return None;
                }
                self.declarations(node, &mut scope);
            }
            "switch_body" => {
                let mut cursor = node.walk();
                for case in node.named_children(&mut cursor) {
                    self.declarations(case, &mut scope);
                }
            }
            "for_statement" => {
                if let Some(init) = node.child_by_field_name("initializer") {
                    self.declaration(init, &mut scope);
                }
            }
            "for_in_statement" => {
                if node.child_by_field_name("kind").is_some()
                    && let Some(left) = node.child_by_field_name("left")
                {
                    self.pattern_names(left, &mut scope);
                }
            }
            "catch_clause" => {
                if let Some(param) = node.child_by_field_name("parameter") {
                    self.pattern_names(param, &mut scope);
                }
            }
            "class_declaration"
            | "class"
            | "abstract_class_declaration"
            | "interface_declaration"
            | "type_alias_declaration"
            | "method_signature"
            | "function_signature"
            | "call_signature"
            | "construct_signature" => {
                self.type_parameters(node, &mut scope);
                if scope.is_empty() {
                    return None;
                }
            }
            _ => return None,
        }
        Some(scope)
    }

    fn bind(&self, node: Node, nested: bool, type_name: Option<String>, scope: &mut Scope) {
        scope.insert(
            self.text(node).to_string(),
            Local {
                decl: node.start_byte(),
                nested,
                type_name,
                context: None,
            },
        );
    }

    fn bind_contextual(&self, node: Node, context: (RefTarget, usize, usize), scope: &mut Scope) {
        scope.insert(
            self.text(node).to_string(),
            Local {
                decl: node.start_byte(),
                nested: false,
                type_name: None,
                context: Some(context),
            },
        );
    }

    /// When `function` is an argument of a call or `new`: the callee and the position.
    fn callback_site(&self, function: Node, lineage: Lineage) -> Option<(RefTarget, usize)> {
        let arguments = lineage.parent?;
        if arguments.kind() != "arguments" {
            return None;
        }
        let call = lineage.grandparent?;
        let callee = match call.kind() {
            "call_expression" => call.child_by_field_name("function")?,
            "new_expression" => call.child_by_field_name("constructor")?,
            _ => return None,
        };
        let mut cursor = arguments.walk();
        let arg = arguments
            .named_children(&mut cursor)
            .position(|a| a.id() == function.id())?;
        let callee = unwrap(callee);
        let target = match callee.kind() {
            "identifier" => self.name_target(self.text(callee))?,
            "member_expression" => self.member(callee)?,
            _ => return None,
        };
        Some((target, arg))
    }

    /// The function-typed parameters of a declaration, for contextual typing.
    fn callback_types(&mut self, function: Node) {
        let Some(params) = function.child_by_field_name("parameters") else {
            return;
        };
        let mut cursor = params.walk();
        let list: Vec<Node> = params.named_children(&mut cursor).collect();
        for (arg, param) in list.into_iter().enumerate() {
            let Some(mut ty) = param
                .child_by_field_name("type")
                .and_then(|t| t.named_child(0))
            else {
                continue;
            };
            // `(…) => T`, possibly parenthesised or in a union with `undefined`.
            let mut guard = 0;
            while ty.kind() != "function_type" && guard < 8 {
                guard += 1;
                let mut c = ty.walk();
                let next = ty.named_children(&mut c).find(|n| {
                    matches!(
                        n.kind(),
                        "function_type" | "parenthesized_type" | "union_type"
                    )
                });
                match next {
                    Some(n) if matches!(ty.kind(), "parenthesized_type" | "union_type") => ty = n,
                    _ => break,
                }
            }
            if ty.kind() != "function_type" {
                continue;
            }
            let Some(inner) = ty.child_by_field_name("parameters") else {
                continue;
            };
            let mut c2 = inner.walk();
            let types: Vec<Option<String>> = inner
                .named_children(&mut c2)
                .filter(|p| {
                    p.child_by_field_name("pattern")
                        .is_none_or(|n| self.text(n) != "this")
                })
                .map(|p| {
                    p.child_by_field_name("type")
                        .and_then(|t| self.annotation_type(t))
                })
                .collect();
            if types.iter().any(Option::is_some) {
                self.out.callbacks.push(CallbackType {
                    offset: function.start_byte(),
                    arg,
                    params: types,
                });
            }
        }
    }

    fn type_parameters(&self, node: Node, scope: &mut Scope) {
        let Some(params) = node.child_by_field_name("type_parameters") else {
            return;
        };
        let mut cursor = params.walk();
        for param in params.named_children(&mut cursor) {
            if let Some(name) = param.child_by_field_name("name") {
                self.bind(name, false, None, scope);
            }
        }
    }

    fn parameters(&self, params: Node, scope: &mut Scope) {
        let mut cursor = params.walk();
        for param in params.named_children(&mut cursor) {
            match param.kind() {
                "required_parameter" | "optional_parameter" => {
                    let type_name = param
                        .child_by_field_name("type")
                        .and_then(|t| self.annotation_type(t));
                    if let Some(pattern) = param.child_by_field_name("pattern") {
                        if pattern.kind() == "identifier" {
                            self.bind(pattern, false, type_name, scope);
                        } else {
                            self.pattern_names(pattern, scope);
                        }
                    }
                }
                _ => self.pattern_names(param, scope),
            }
        }
    }

    /// Every name a binding pattern binds (identifiers, destructuring, defaults, rests).
    fn pattern_names(&self, pattern: Node, scope: &mut Scope) {
        let mut stack = vec![pattern];
        while let Some(node) = stack.pop() {
            match node.kind() {
                "identifier" | "shorthand_property_identifier_pattern" => {
                    self.bind(node, false, None, scope)
                }
                "assignment_pattern" | "object_assignment_pattern" => {
                    stack.extend(node.child_by_field_name("left"));
                }
                "pair_pattern" => stack.extend(node.child_by_field_name("value")),
                "object_pattern" | "array_pattern" | "rest_pattern" => {
                    let mut cursor = node.walk();
                    stack.extend(node.named_children(&mut cursor));
                }
                _ => {}
            }
        }
    }

    /// Declarations made directly in a block (hoisted for the whole block).
    fn declarations(&self, block: Node, scope: &mut Scope) {
        let mut cursor = block.walk();
        for statement in block.named_children(&mut cursor) {
            self.declaration(statement, scope);
        }
    }

    fn declaration(&self, statement: Node, scope: &mut Scope) {
        match statement.kind() {
            "lexical_declaration" | "variable_declaration" => {
                let mut cursor = statement.walk();
                for decl in statement.named_children(&mut cursor) {
                    if decl.kind() != "variable_declarator" {
                        continue;
                    }
                    let Some(name) = decl.child_by_field_name("name") else {
                        continue;
                    };
                    if name.kind() != "identifier" {
                        self.pattern_names(name, scope);
                        continue;
                    }
                    let value = decl.child_by_field_name("value").map(unwrap);
                    let nested = value
                        .is_some_and(|v| is_function_like(v.kind()) || matches!(v.kind(), "class"));
                    self.bind(name, nested, self.declared_type(decl), scope);
                }
            }
            "function_declaration"
            | "generator_function_declaration"
            | "class_declaration"
            | "abstract_class_declaration" => {
                if let Some(name) = statement.child_by_field_name("name") {
                    self.bind(name, true, None, scope);
                }
            }
            _ => {}
        }
    }

    /// The type a `: T` annotation names, when it names one (`T`, `T<U>`, the first named
    /// type of a union such as `T | undefined`).
    fn annotation_type(&self, annotation: Node) -> Option<String> {
        let mut stack = vec![annotation.named_child(0)?];
        while let Some(ty) = stack.pop() {
            match ty.kind() {
                "type_identifier" => return Some(self.text(ty).to_string()),
                "generic_type" => {
                    let name = ty.child_by_field_name("name")?;
                    return (name.kind() == "type_identifier").then(|| self.text(name).to_string());
                }
                "union_type" | "parenthesized_type" => {
                    let mut cursor = ty.walk();
                    let parts: Vec<Node> = ty.named_children(&mut cursor).collect();
                    stack.extend(parts.into_iter().rev());
                }
                _ => {}
            }
        }
        None
    }

    /// The type a declaration's annotation or `new T()` initialiser names.
    fn declared_type(&self, declaration: Node) -> Option<String> {
        declaration
            .child_by_field_name("type")
            .and_then(|t| self.annotation_type(t))
            .or_else(|| {
                let v = unwrap(declaration.child_by_field_name("value")?);
                if v.kind() != "new_expression" {
                    return None;
                }
                let ctor = v.child_by_field_name("constructor")?;
                (ctor.kind() == "identifier").then(|| self.text(ctor).to_string())
            })
    }

    fn lookup(&self, name: &str) -> Option<&Local> {
        self.scopes.get(name)
    }

    fn context_for(&self, node: Node, field: Option<&str>) -> Option<TypeContext> {
        match field {
            Some("return_type") => Some(TypeContext::Return),
            Some("parameters") if node.kind() == "formal_parameters" => Some(TypeContext::Param),
            Some("body" | "value") => Some(TypeContext::Plain),
            _ => None,
        }
    }

    fn type_kind(&self) -> RefKind {
        match self.contexts.last() {
            Some(TypeContext::Param) => RefKind::ParamType,
            Some(TypeContext::Return) => RefKind::ReturnType,
            _ => RefKind::Type,
        }
    }

    // ----- references ---------------------------------------------------------------

    fn push(&mut self, node: Node, kind: RefKind, target: RefTarget) {
        let reference = crate::parse::tree::reference(node, kind, target);
        self.out.references.push(reference);
    }

    /// The target a free-standing name stands for, `None` for parameters and locals.
    fn name_target(&self, name: &str) -> Option<RefTarget> {
        match self.lookup(name) {
            None => Some(RefTarget::Name {
                name: name.to_string(),
            }),
            Some(local) if local.nested => Some(RefTarget::Local {
                name: name.to_string(),
                decl: local.decl,
            }),
            Some(_) => None,
        }
    }

    fn base(&self, object: Node) -> RefBase {
        let object = unwrap(object);
        match object.kind() {
            "this" => RefBase::This,
            "super" => RefBase::Super,
            "member_expression"
                if object
                    .child_by_field_name("object")
                    .is_some_and(|o| o.kind() == "this") =>
            {
                match object.child_by_field_name("property") {
                    Some(p) => RefBase::ThisMember(self.text(p).to_string()),
                    None => RefBase::Unknown(String::new()),
                }
            }
            "identifier" => {
                let name = self.text(object);
                match self.lookup(name) {
                    None => RefBase::Name(name.to_string()),
                    Some(local) if local.nested => RefBase::Local(local.decl),
                    Some(Local {
                        type_name: Some(t), ..
                    }) => RefBase::Typed(t.clone()),
                    Some(Local {
                        context: Some((callee, arg, param)),
                        ..
                    }) => RefBase::Callback {
                        callee: Box::new(callee.clone()),
                        arg: *arg,
                        param: *param,
                    },
                    Some(_) => RefBase::Unknown(name.to_string()),
                }
            }
            _ => RefBase::Unknown(truncate_chars(self.text(object), RECEIVER_CHARS).to_string()),
        }
    }

    /// `object.property` as a member target.
    fn member(&self, member: Node) -> Option<RefTarget> {
        let property = member.child_by_field_name("property")?;
        let object = member.child_by_field_name("object")?;
        Some(RefTarget::Member {
            base: self.base(object),
            member: self.text(property).to_string(),
        })
    }

    /// Reports `node` used as `kind` (a callee, a heritage name) and marks it handled.
    fn use_expression(&mut self, node: Node, kind: RefKind) {
        let node = unwrap(node);
        let target = match node.kind() {
            "identifier" | "type_identifier" => self.name_target(self.text(node)),
            "member_expression" => self.member(node),
            "nested_type_identifier" => {
                let module = node.child_by_field_name("module");
                let name = node.child_by_field_name("name");
                if let Some(name) = name {
                    self.handled.insert(name.id());
                }
                module.zip(name).map(|(m, n)| RefTarget::Member {
                    base: RefBase::Name(self.text(m).to_string()),
                    member: self.text(n).to_string(),
                })
            }
            "generic_type" => {
                if let Some(name) = node.child_by_field_name("name") {
                    self.use_expression(name, kind);
                }
                return;
            }
            _ => None,
        };
        self.handled.insert(node.id());
        if let Some(target) = target {
            self.push(node, kind, target);
        }
    }

    /// Handles one node; returns whether to descend into its children.
    fn visit(&mut self, node: Node, field: Option<&str>, parent: Option<Node>) -> bool {
        if matches!(
            node.kind(),
            "function_declaration"
                | "generator_function_declaration"
                | "method_definition"
                | "method_signature"
                | "abstract_method_signature"
                | "function_signature"
                | "arrow_function"
                | "function_expression"
        ) {
            self.callback_types(node);
        }
        match node.kind() {
            "comment" | "string" | "regex" | "number" => return false,
            "import_statement" => {
                self.import_statement(node);
                return false;
            }
            "identifier" | "type_identifier" | "shorthand_property_identifier" => {
                self.identifier(node, field, parent);
                return false;
            }
            "export_statement" => self.export_statement(node),
            "call_expression" => self.call(node),
            "new_expression" => {
                if let Some(ctor) = node.child_by_field_name("constructor") {
                    self.use_expression(ctor, RefKind::Call);
                }
            }
            "jsx_opening_element" | "jsx_self_closing_element" => self.jsx_element(node),
            "extends_clause" => {
                let mut cursor = node.walk();
                let values: Vec<Node> = node.children_by_field_name("value", &mut cursor).collect();
                for value in values {
                    self.use_expression(value, RefKind::Extends);
                }
            }
            "implements_clause" | "extends_type_clause" => {
                let kind = if node.kind() == "implements_clause" {
                    RefKind::Implements
                } else {
                    RefKind::Extends
                };
                let mut cursor = node.walk();
                let types: Vec<Node> = node.named_children(&mut cursor).collect();
                for ty in types {
                    self.use_expression(ty, kind);
                }
            }
            "variable_declarator" | "public_field_definition" | "property_signature" => {
                self.typed_declaration(node)
            }
            "assignment_expression" => self.commonjs_export(node),
            "member_expression" => self.member_read(node),
            "nested_type_identifier" if !self.handled.contains(&node.id()) => {
                let kind = self.type_kind();
                self.use_expression(node, kind);
            }
            _ => {}
        }
        true
    }

    /// A call: `require`/`import()` name a module, anything else calls its callee.
    fn call(&mut self, node: Node) {
        let Some(callee) = node.child_by_field_name("function") else {
            return;
        };
        let callee = unwrap(callee);
        if self.require_call(node).is_some() || callee.kind() == "import" {
            if let Some(module) = self.first_string_argument(node) {
                self.out.modules.push(ModuleUse {
                    module,
                    offset: node.start_byte(),
                });
            }
        } else {
            self.use_expression(callee, RefKind::Call);
        }
    }

    /// A JSX element calls its component (lower-case names are HTML's, not code).
    fn jsx_element(&mut self, node: Node) {
        if let Some(name) = node.child_by_field_name("name") {
            let intrinsic = name.kind() == "identifier"
                && self
                    .text(name)
                    .starts_with(|c: char| c.is_ascii_lowercase());
            if intrinsic {
                self.handled.insert(name.id());
            } else {
                self.use_expression(name, RefKind::Call);
            }
        }
    }

    /// A declarator or field: a `require` binding, and the type it declares.
    fn typed_declaration(&mut self, node: Node) {
        if node.kind() == "variable_declarator" {
            self.require_binding(node);
        }
        if let Some(name) = node.child_by_field_name("name")
            && let Some(type_name) = self.declared_type(node)
        {
            self.out.declared.push(DeclaredType {
                offset: name.start_byte(),
                type_name,
            });
        }
    }

    /// A member read not already part of a call or type (`a.b` with a known base).
    fn member_read(&mut self, node: Node) {
        if !self.handled.contains(&node.id())
            && let Some(target) = self.member(node)
            && !matches!(
                target,
                RefTarget::Member {
                    base: RefBase::Unknown(_),
                    ..
                }
            )
        {
            self.push(node, RefKind::Read, target);
        }
    }

    /// A name in reference position: what it refers to, unless a binding.
    fn identifier(&mut self, node: Node, field: Option<&str>, parent: Option<Node>) {
        if self.handled.contains(&node.id()) {
            return;
        }
        let parent = parent.map(|p| p.kind()).unwrap_or("");
        if is_binding(parent, field) {
            return;
        }
        let kind = if node.kind() == "type_identifier" {
            self.type_kind()
        } else {
            RefKind::Read
        };
        if let Some(target) = self.name_target(self.text(node)) {
            self.push(node, kind, target);
        }
    }

    // ----- imports and exports -----------------------------------------------------

    fn import_statement(&mut self, node: Node) {
        let offset = node.start_byte();
        let mut module = node
            .child_by_field_name("source")
            .map(|s| self.string_content(s));
        let mut bindings: Vec<(String, Imported)> = Vec::new();
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                "import_clause" => {
                    let mut c2 = child.walk();
                    for part in child.named_children(&mut c2) {
                        match part.kind() {
                            "identifier" => {
                                bindings.push((self.text(part).to_string(), Imported::Default))
                            }
                            "namespace_import" => {
                                let mut c3 = part.walk();
                                for id in part.named_children(&mut c3) {
                                    if id.kind() == "identifier" {
                                        bindings
                                            .push((self.text(id).to_string(), Imported::Module));
                                    }
                                }
                            }
                            "named_imports" => {
                                let mut c3 = part.walk();
                                for spec in part.named_children(&mut c3) {
                                    let Some(name) = spec.child_by_field_name("name") else {
                                        continue;
                                    };
                                    let local = spec.child_by_field_name("alias").unwrap_or(name);
                                    let imported = self.string_content(name);
                                    let imported = if imported == "default" {
                                        Imported::Default
                                    } else {
                                        Imported::Named(imported)
                                    };
                                    bindings.push((self.text(local).to_string(), imported));
                                }
                            }
                            _ => {}
                        }
                    }
                }
                "import_require_clause" => {
                    let mut c2 = child.walk();
                    for part in child.named_children(&mut c2) {
                        match part.kind() {
                            "identifier" => {
                                bindings.push((self.text(part).to_string(), Imported::Module))
                            }
                            "string" => module = Some(self.string_content(part)),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        let Some(module) = module else {
            return;
        };
        self.out.modules.push(ModuleUse {
            module: module.clone(),
            offset,
        });
        for (local, imported) in bindings {
            self.out.imports.push(ImportBinding {
                local,
                module: module.clone(),
                imported,
                offset,
            });
        }
    }

    fn export_statement(&mut self, node: Node) {
        let source = node
            .child_by_field_name("source")
            .map(|s| self.string_content(s));
        let mut cursor = node.walk();
        let children: Vec<Node> = node.children(&mut cursor).collect();
        if let Some(module) = source {
            self.out.modules.push(ModuleUse {
                module: module.clone(),
                offset: node.start_byte(),
            });
            let mut star = children.iter().any(|c| c.kind() == "*");
            for child in &children {
                match child.kind() {
                    "namespace_export" => {
                        star = false;
                        let mut c2 = child.walk();
                        for id in child.named_children(&mut c2) {
                            self.out.exports.push(Export::From {
                                exported: self.string_content(id),
                                module: module.clone(),
                                imported: Imported::Module,
                            });
                        }
                    }
                    "export_clause" => {
                        for (name, exported) in self.export_specifiers(*child) {
                            let imported = if name == "default" {
                                Imported::Default
                            } else {
                                Imported::Named(name)
                            };
                            self.out.exports.push(Export::From {
                                exported,
                                module: module.clone(),
                                imported,
                            });
                        }
                    }
                    _ => {}
                }
            }
            if star {
                self.out.exports.push(Export::Star { module });
            }
            return;
        }
        for child in &children {
            if child.kind() == "export_clause" {
                for (local, exported) in self.export_specifiers(*child) {
                    self.out.exports.push(Export::Local { exported, local });
                }
            }
        }
        let is_default = children.iter().any(|c| matches!(c.kind(), "default" | "="));
        if is_default && let Some(value) = node.child_by_field_name("value").map(unwrap) {
            if value.kind() == "identifier" {
                self.out.exports.push(Export::Local {
                    exported: "default".into(),
                    local: self.text(value).to_string(),
                });
            }
        } else if is_default
            && let Some(id) = children.iter().rev().find(|c| c.kind() == "identifier")
        {
            // `export = name`
            self.out.exports.push(Export::Local {
                exported: "default".into(),
                local: self.text(*id).to_string(),
            });
        }
    }

    /// `(name, exported-as)` pairs of an `export { … }` clause.
    fn export_specifiers(&self, clause: Node) -> Vec<(String, String)> {
        let mut cursor = clause.walk();
        clause
            .named_children(&mut cursor)
            .filter(|s| s.kind() == "export_specifier")
            .filter_map(|spec| {
                let name = spec.child_by_field_name("name")?;
                let exported = spec.child_by_field_name("alias").unwrap_or(name);
                Some((self.string_content(name), self.string_content(exported)))
            })
            .collect()
    }

    fn first_string_argument(&self, call: Node) -> Option<String> {
        let args = call.child_by_field_name("arguments")?;
        let first = args.named_child(0)?;
        (first.kind() == "string").then(|| self.string_content(first))
    }

    /// The module of a `require('m')` call.
    fn require_call(&self, call: Node) -> Option<String> {
        let callee = call.child_by_field_name("function")?;
        if callee.kind() != "identifier" || self.text(callee) != "require" {
            return None;
        }
        self.first_string_argument(call)
    }

    /// `const x = require('m')` / `const { a, b: c } = require('m')`.
    fn require_binding(&mut self, declarator: Node) {
        let Some(value) = declarator.child_by_field_name("value").map(unwrap) else {
            return;
        };
        if value.kind() != "call_expression" {
            return;
        }
        let Some(module) = self.require_call(value) else {
            return;
        };
        let Some(name) = declarator.child_by_field_name("name") else {
            return;
        };
        let offset = declarator.start_byte();
        match name.kind() {
            "identifier" => self.out.imports.push(ImportBinding {
                local: self.text(name).to_string(),
                module,
                imported: Imported::Module,
                offset,
            }),
            "object_pattern" => {
                let mut cursor = name.walk();
                for prop in name.named_children(&mut cursor) {
                    let (imported, local) = match prop.kind() {
                        "shorthand_property_identifier_pattern" => (prop, prop),
                        "pair_pattern" => match (
                            prop.child_by_field_name("key"),
                            prop.child_by_field_name("value"),
                        ) {
                            (Some(k), Some(v)) if v.kind() == "identifier" => (k, v),
                            _ => continue,
                        },
                        _ => continue,
                    };
                    self.out.imports.push(ImportBinding {
                        local: self.text(local).to_string(),
                        module: module.clone(),
                        imported: Imported::Named(self.text(imported).to_string()),
                        offset,
                    });
                }
            }
            _ => {}
        }
    }

    /// `module.exports = name` / `module.exports = { a, b }`.
    fn commonjs_export(&mut self, assignment: Node) {
        let (Some(left), Some(right)) = (
            assignment.child_by_field_name("left"),
            assignment.child_by_field_name("right").map(unwrap),
        ) else {
            return;
        };
        if self.text(left) != "module.exports" {
            return;
        }
        match right.kind() {
            "identifier" => self.out.exports.push(Export::Local {
                exported: "default".into(),
                local: self.text(right).to_string(),
            }),
            "object" => {
                let mut cursor = right.walk();
                for prop in right.named_children(&mut cursor) {
                    let pair = match prop.kind() {
                        "shorthand_property_identifier" => Some((prop, prop)),
                        "pair" => prop
                            .child_by_field_name("key")
                            .zip(prop.child_by_field_name("value"))
                            .filter(|(_, v)| v.kind() == "identifier"),
                        _ => None,
                    };
                    if let Some((key, value)) = pair {
                        self.out.exports.push(Export::Local {
                            exported: self.text(key).to_string(),
                            local: self.text(value).to_string(),
                        });
                    }
                }
            }
            _ => {}
        }
    }
}
