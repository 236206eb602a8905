//! Name facts for the symbol graph from a Python, Go, Rust or Java tree: imports, calls,
//! member accesses, reads, type uses and heritage, with names bound inside a function
//! (parameters, locals) dropped unless they stand for a nested declaration or tell the
//! type of a receiver. The same output as the TypeScript walk ([`crate::parse::refs`]);
//! what a language's tree looks like comes from its [`RefSyntax`].

use std::collections::{HashMap, HashSet};

use tree_sitter::Node;

use super::{ImportSpec, SourceText, Syntax};
use crate::parse::refs::{
    DeclaredType, FileRefs, ImportBinding, ModuleUse, RefBase, RefKind, RefTarget,
};
use crate::parse::scopes::Scopes;

/// A name bound inside a function scope.
#[derive(Debug, Clone)]
pub(crate) struct Local {
    /// The name.
    pub name: String,
    /// The type it was declared with, when it names one (`x: Store`, `Store s`, `s := NewStore()` not).
    pub ty: Option<String>,
    /// Byte offset of the name of a nested declaration it stands for.
    pub decl: Option<usize>,
    /// Whether it is the receiver (`self`, Go's receiver): member accesses on it are on
    /// the enclosing type.
    pub receiver: bool,
}

impl Local {
    /// A plain local.
    pub fn plain(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ty: None,
            decl: None,
            receiver: false,
        }
    }

    /// A local of a known type.
    pub fn typed(name: impl Into<String>, ty: Option<String>) -> Self {
        Self {
            ty,
            ..Self::plain(name)
        }
    }

    /// The name of a nested declaration (function, class) of the scope: the `name`
    /// field of `declaration`.
    pub fn declared(declaration: Node, src: &str) -> Option<Self> {
        let name = declaration.child_by_field_name("name")?;
        Some(Self {
            decl: Some(name.start_byte()),
            ..Self::plain(src.text_of(name))
        })
    }
}

/// A member access: `object.member`.
pub(crate) struct Access<'t> {
    /// The receiver expression.
    pub object: Node<'t>,
    /// The member's name.
    pub member: String,
}

impl<'t> Access<'t> {
    /// The access whose receiver is `node`'s field `object` and whose member is its field
    /// `member`.
    pub fn fields(node: Node<'t>, object: &str, member: &str, src: &str) -> Option<Self> {
        Some(Self {
            object: node.child_by_field_name(object)?,
            member: src.text_of(node.child_by_field_name(member)?).to_string(),
        })
    }
}

/// What the graph walk needs to know of one language's tree.
pub(crate) trait RefSyntax {
    /// When `node` opens a function scope: the names its parameters bind.
    fn scope(&self, node: Node, src: &str) -> Option<Vec<Local>>;

    /// Names `node` binds in the enclosing function scope (assignments, `let`, local
    /// variable declarations, nested definitions, loop variables), added to `out`.
    fn binds(&self, node: Node, src: &str, out: &mut Vec<Local>);

    /// When `node` (a child of `parent`) is a call (or instantiation): what is called.
    fn callee<'t>(&self, node: Node<'t>, parent: Option<Node<'t>>) -> Option<Node<'t>>;

    /// When `node` is a member access: its receiver and member.
    fn access<'t>(&self, node: Node<'t>, src: &str) -> Option<Access<'t>>;

    /// Whether `node` is the language's `this` (`self`, `this`).
    fn is_this(&self, node: Node, src: &str) -> bool;

    /// Whether `node` is `super`.
    fn is_super(&self, _node: Node, _src: &str) -> bool {
        false
    }

    /// When `node` makes a new value of a named type (Java's `new T(…)`): the node naming
    /// the type, so that `new T().m()` is a call of `T.m`.
    fn constructed<'t>(&self, _node: Node<'t>) -> Option<Node<'t>> {
        None
    }

    /// Whether `node` is a name in value position.
    fn is_name(&self, node: Node) -> bool {
        node.kind() == "identifier"
    }

    /// Whether `node` is the name of a type.
    fn is_type_name(&self, node: Node) -> bool {
        node.kind() == "type_identifier"
    }

    /// Whether the names directly under `parent` name types (Python's annotation
    /// `type` node): a name there counts as [`RefSyntax::is_type_name`].
    fn is_type_position(&self, _parent: Node) -> bool {
        false
    }

    /// Where a name is declared rather than used: `(parent kind, field)` pairs, the
    /// field `*` for any child (a definition's name, a parameter, a keyword argument's
    /// name).
    fn declarations(&self) -> &'static [(&'static str, &'static str)];

    /// For a class-like node: the types it extends and implements.
    fn heritage<'t>(&self, _node: Node<'t>, _src: &str) -> Vec<(Node<'t>, RefKind)> {
        Vec::new()
    }

    /// Declared types of fields (`store: Store`), added to `out`.
    fn declared(&self, _node: Node, _src: &str, _out: &mut Vec<DeclaredType>) {}
}

/// The bare type name in a type expression (`*pkg.Store` → `Store`, `Vec<T>` → `Vec`,
/// `&mut Store` → `Store`, `Optional[Store]` → `Optional`).
pub(crate) fn type_name(text: &str) -> Option<String> {
    let t = text
        .trim()
        .trim_start_matches(['*', '&'])
        .trim_start_matches("mut ")
        .trim_start_matches("dyn ")
        .trim_start_matches("impl ")
        .trim();
    let t = t.split(['<', '[', '(', ' ', '|']).next().unwrap_or(t);
    let t = t.rsplit("::").next().unwrap_or(t);
    let t = t.rsplit('.').next().unwrap_or(t);
    (!t.is_empty() && t.chars().all(|c| c.is_alphanumeric() || c == '_')).then(|| t.to_string())
}

/// Adds an import statement's bindings and module uses.
fn record_imports(out: &mut FileRefs, specs: Vec<ImportSpec>, statement: usize) {
    for spec in specs {
        let offset = spec.bytes.map_or(statement, |b| b.start);
        for b in spec.bindings {
            if !b.local.is_empty() {
                out.imports.push(ImportBinding {
                    local: b.local,
                    module: b.module,
                    imported: b.imported,
                    offset,
                });
            }
        }
        for module in spec.modules {
            if !module.is_empty() && !out.modules.iter().any(|m| m.module == module) {
                out.modules.push(ModuleUse { module, offset });
            }
        }
    }
}

struct Walk<'a> {
    /// For import statements.
    imports: &'a dyn Syntax,
    syntax: &'a dyn RefSyntax,
    src: &'a str,
    /// Where each open function scope ends, innermost last.
    ends: Vec<usize>,
    /// The names the open scopes bind.
    scopes: Scopes<Local>,
    /// Start offsets of names already reported as part of a larger reference.
    consumed: HashSet<usize>,
    out: FileRefs,
}

impl Walk<'_> {
    fn local(&self, name: &str) -> Option<&Local> {
        self.scopes.get(name)
    }

    /// Whether `node`, a child of `parent`, is a name in value position.
    fn is_name(&self, node: Node, parent: Option<Node>) -> bool {
        self.syntax.is_name(node) && !parent.is_some_and(|p| self.syntax.is_type_position(p))
    }

    /// Whether `node`, a child of `parent`, names a type.
    fn is_type_name(&self, node: Node, parent: Option<Node>) -> bool {
        self.syntax.is_type_name(node)
            || (self.syntax.is_name(node)
                && parent.is_some_and(|p| self.syntax.is_type_position(p)))
    }

    /// Collects the names a function scope binds: its parameters, then everything
    /// bound in its body outside nested scopes.
    fn open_scope(&mut self, node: Node, params: Vec<Local>) {
        let mut locals: HashMap<String, Local> = HashMap::new();
        for p in params {
            locals.insert(p.name.clone(), p);
        }
        let mut found = Vec::new();
        let (syntax, src) = (self.syntax, self.src);
        crate::parse::tree::preorder(node, |n| {
            syntax.binds(n, src, &mut found);
            // Names bound inside a nested scope are that scope's.
            syntax.scope(n, src).is_none()
        });
        for l in found {
            // A parameter's declared type wins over an untyped rebinding.
            let entry = locals.entry(l.name.clone()).or_insert_with(|| l.clone());
            if entry.ty.is_none() {
                entry.ty = l.ty;
            }
            if entry.decl.is_none() {
                entry.decl = l.decl;
            }
        }
        self.scopes.open(locals);
        self.ends.push(node.end_byte());
    }

    /// Records a reference at `node`.
    fn push(&mut self, node: Node, kind: RefKind, target: RefTarget) {
        let reference = crate::parse::tree::reference(node, kind, target);
        self.out.references.push(reference);
    }

    /// The target a name names here, or `None` for a plain local.
    fn name_target(&self, name: &str) -> Option<RefTarget> {
        match self.local(name) {
            Some(Local {
                decl: Some(decl), ..
            }) => Some(RefTarget::Local {
                name: name.to_string(),
                decl: *decl,
            }),
            Some(_) => None,
            None => Some(RefTarget::Name {
                name: name.to_string(),
            }),
        }
    }

    /// What a receiver expression is, as a member access base (`access` is the member
    /// access whose receiver it is).
    fn base(&self, object: Node, access: Node) -> RefBase {
        let text = self.src.text_of(object);
        if self.syntax.is_this(object, self.src) {
            return RefBase::This;
        }
        if self.syntax.is_super(object, self.src) {
            return RefBase::Super;
        }
        if self.is_name(object, Some(access)) || self.is_type_name(object, Some(access)) {
            return match self.local(text) {
                Some(l) if l.receiver => match &l.ty {
                    Some(t) => RefBase::Typed(t.clone()),
                    None => RefBase::This,
                },
                Some(l) => match (&l.ty, l.decl) {
                    (_, Some(decl)) => RefBase::Local(decl),
                    (Some(t), None) => RefBase::Typed(t.clone()),
                    (None, None) => RefBase::Unknown(text.to_string()),
                },
                None => RefBase::Name(text.to_string()),
            };
        }
        if let Some(inner) = self.syntax.access(object, self.src)
            && self.syntax.is_this(inner.object, self.src)
        {
            return RefBase::ThisMember(inner.member);
        }
        if let Some(ty) = self
            .syntax
            .constructed(object)
            .and_then(|t| type_name(self.src.text_of(t)))
        {
            return RefBase::Typed(ty);
        }
        RefBase::Unknown(crate::text::collapse_truncate(text, 40))
    }

    /// Reports the expression `expr`, a child of `parent`, used as `kind` (a callee, a
    /// heritage type).
    fn expression(&mut self, expr: Node, parent: Option<Node>, kind: RefKind) {
        if let Some(access) = self.syntax.access(expr, self.src) {
            let base = self.base(access.object, expr);
            self.consumed.insert(expr.start_byte());
            self.mark_member(expr);
            self.push(
                expr,
                kind,
                RefTarget::Member {
                    base,
                    member: access.member,
                },
            );
        } else if self.is_name(expr, parent) || self.is_type_name(expr, parent) {
            let name = self.src.text_of(expr).to_string();
            self.consumed.insert(expr.start_byte());
            if let Some(target) = self.name_target(&name) {
                self.push(expr, kind, target);
            }
        }
    }

    /// Marks the member name of an access as consumed so that it is not read again.
    fn mark_member(&mut self, access: Node) {
        let mut cursor = access.walk();
        for child in access.named_children(&mut cursor) {
            if child.start_byte() > access.start_byte() {
                self.consumed.insert(child.start_byte());
            }
        }
    }

    /// Reports what `node`, a child of `parent`, is; `false` when its subtree is done
    /// with (an import).
    fn visit(&mut self, node: Node, parent: Option<Node>) -> bool {
        while self
            .ends
            .last()
            .is_some_and(|end| node.start_byte() >= *end)
        {
            self.ends.pop();
            self.scopes.close();
        }
        if let Some(specs) = self.imports.imports(node, self.src) {
            record_imports(&mut self.out, specs, node.start_byte());
            return false;
        }
        self.syntax.declared(node, self.src, &mut self.out.declared);
        if let Some(params) = self.syntax.scope(node, self.src) {
            self.open_scope(node, params);
        }
        for (ty, kind) in self.syntax.heritage(node, self.src) {
            // Judged by its own kind: no language lists a heritage type under a
            // type-position node.
            self.expression(ty, None, kind);
        }
        if let Some(callee) = self.syntax.callee(node, parent) {
            let callee_parent = if callee == node { parent } else { Some(node) };
            self.expression(callee, callee_parent, RefKind::Call);
            return true;
        }
        if self.consumed.contains(&node.start_byte()) && self.is_reference_node(node, parent) {
            return true;
        }
        if let Some(access) = self.syntax.access(node, self.src) {
            if self.syntax.is_this(access.object, self.src)
                || self.is_name(access.object, Some(node))
                || self.is_type_name(access.object, Some(node))
            {
                let base = self.base(access.object, node);
                self.consumed.insert(access.object.start_byte());
                self.mark_member(node);
                self.push(
                    node,
                    RefKind::Read,
                    RefTarget::Member {
                        base,
                        member: access.member,
                    },
                );
            }
            return true;
        }
        if self.is_declaration(node, parent) {
            return true;
        }
        let kind = if self.is_type_name(node, parent) {
            RefKind::Type
        } else if self.is_name(node, parent) {
            RefKind::Read
        } else {
            return true;
        };
        let name = self.src.text_of(node).to_string();
        if let Some(target) = self.name_target(&name) {
            self.push(node, kind, target);
        }
        true
    }

    /// Whether the name `node`, a child of `parent`, is declared here (see
    /// [`RefSyntax::declarations`]).
    fn is_declaration(&self, node: Node, parent: Option<Node>) -> bool {
        let Some(parent) = parent else {
            return false;
        };
        let kind = parent.kind();
        self.syntax.declarations().iter().any(|(k, field)| {
            *k == kind && (*field == "*" || parent.child_by_field_name(field) == Some(node))
        })
    }

    fn is_reference_node(&self, node: Node, parent: Option<Node>) -> bool {
        self.is_name(node, parent)
            || self.is_type_name(node, parent)
            || self.syntax.access(node, self.src).is_some()
    }
}

/// The name facts of one file.
pub(crate) fn extract(syntax: &dyn Syntax, root: Node, src: &str) -> FileRefs {
    let mut walk = Walk {
        imports: syntax,
        syntax: syntax.refs(),
        src,
        ends: Vec::new(),
        scopes: Scopes::default(),
        consumed: HashSet::new(),
        out: FileRefs::default(),
    };
    walk.visit(root, None);
    crate::parse::tree::preorder_with_parent(root, |node, parent| {
        !node.is_named() || walk.visit(node, Some(parent))
    });
    let mut out = walk.out;
    out.references.sort_by_key(|r| r.offset);
    out
}
