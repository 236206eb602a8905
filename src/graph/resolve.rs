//! Binding names to declarations across files: the symbol graph's edges.
//!
//! A [`Resolver`] holds [`FileView`]s (a file's symbols and its [`FileFacts`]) and turns
//! one file's references into [`EdgeRecord`]s: free names through enclosing namespaces,
//! same-file declarations and imports (following re-exports, `export *` barrels and
//! namespace imports); members through `this`, `super`, classes, namespaces, enums and
//! typed locals, up the `extends` chain; declaration merging by looking at every
//! same-named declaration of a scope. Files it needs but does not hold are recorded in
//! [`Resolver::missing`], so the caller can load them and resolve again: the resolver
//! itself does no I/O.

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use super::facts::{Base, FileFacts, Target};
use super::modules::ModuleResolver;
use crate::parse::refs::{Export, ImportBinding, Imported, RefKind};
use crate::parse::{Language, ModuleRules, SymbolKind};
use crate::store::{EdgeKind, EdgeRecord};

/// How names resolve across files in `path`'s language (the language table's rules);
/// `None` for a path Sextant does not parse.
fn rules(path: &str) -> Option<ModuleRules> {
    Language::from_path(std::path::Path::new(path)).map(|l| l.def().modules)
}

/// How deep re-export chains and inheritance chains are followed.
const MAX_HOPS: usize = 16;

/// One symbol of a file, as the resolver needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolNode {
    /// Chunk id.
    pub id: String,
    /// Declared name (or statement label).
    pub name: String,
    /// Kind.
    pub kind: SymbolKind,
    /// Enclosing symbol's chunk id.
    pub parent: Option<String>,
    /// Whether it is exported.
    pub exported: bool,
    /// Whether it is the module's default export.
    pub default_export: bool,
}

/// What the resolver knows of one file.
#[derive(Debug, Clone, Default)]
pub struct FileView {
    /// Repository-relative path.
    pub path: String,
    /// The file's symbols in source order.
    pub symbols: Vec<SymbolNode>,
    /// Its name facts.
    pub facts: FileFacts,
}

/// A file view with lookup tables.
#[derive(Debug)]
struct Indexed {
    view: FileView,
    by_id: HashMap<String, usize>,
    /// Declarations (not statements) by parent id (`""` for the root) and name.
    scoped: HashMap<(String, String), Vec<usize>>,
    imports: HashMap<String, usize>,
    /// Declared type names by chunk id.
    declared: HashMap<String, String>,
    /// Callback parameter types by (function chunk id, parameter position).
    callbacks: HashMap<(String, usize), Vec<Option<String>>>,
}

impl Indexed {
    fn new(view: FileView) -> Self {
        let mut by_id = HashMap::new();
        let mut scoped: HashMap<(String, String), Vec<usize>> = HashMap::new();
        for (i, s) in view.symbols.iter().enumerate() {
            by_id.insert(s.id.clone(), i);
            if !s.kind.is_statement() {
                scoped
                    .entry((s.parent.clone().unwrap_or_default(), s.name.clone()))
                    .or_default()
                    .push(i);
            }
        }
        let imports = view
            .facts
            .imports
            .iter()
            .enumerate()
            .map(|(i, b)| (b.local.clone(), i))
            .collect();
        let declared = view.facts.declared.iter().cloned().collect();
        let callbacks = view
            .facts
            .callbacks
            .iter()
            .map(|(id, arg, params)| ((id.clone(), *arg), params.clone()))
            .collect();
        Self {
            view,
            by_id,
            scoped,
            imports,
            declared,
            callbacks,
        }
    }

    fn symbol(&self, index: usize) -> &SymbolNode {
        &self.view.symbols[index]
    }

    fn scoped(&self, parent: &str, name: &str) -> &[usize] {
        self.scoped
            .get(&(parent.to_string(), name.to_string()))
            .map_or(&[], Vec::as_slice)
    }
}

/// What a name or member resolves to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Resolved {
    /// A declaration: file path and symbol index.
    Symbol(String, usize),
    /// A whole module of the repository (namespace import).
    Module(String),
    /// Something outside the repository, by display name (`jwt`, `jwt.verify`).
    External(String),
}

/// Binds the references of files to declarations. See the module docs.
#[derive(Debug, Default)]
pub struct Resolver {
    modules: ModuleResolver,
    files: HashMap<String, Indexed>,
    missing: RefCell<BTreeSet<String>>,
    /// Root names of Go and Java packages, built on first use and dropped when a file is
    /// added: (directory, extension) → name → declaring files in path order.
    packages: RefCell<HashMap<(String, &'static str), Arc<PackageNames>>>,
}

/// The root declarations of one package by name: the files declaring each, in path order.
type PackageNames = HashMap<String, Vec<String>>;

/// Picks the declaration a name means among same-named ones (declaration merging):
/// classes and functions before interfaces, namespaces and the rest.
fn primary(file: &Indexed, candidates: &[usize]) -> Option<usize> {
    let rank = |i: &usize| match file.symbol(*i).kind {
        SymbolKind::Class | SymbolKind::Component | SymbolKind::Struct => 0,
        SymbolKind::Function | SymbolKind::Macro => 1,
        SymbolKind::Enum | SymbolKind::Const | SymbolKind::Variable => 2,
        SymbolKind::Interface | SymbolKind::Type => 3,
        _ => 4,
    };
    candidates.iter().copied().min_by_key(|i| (rank(i), *i))
}

fn edge_kind(kind: RefKind) -> EdgeKind {
    match kind {
        RefKind::Call => EdgeKind::Calls,
        RefKind::Read => EdgeKind::References,
        RefKind::Type => EdgeKind::Type,
        RefKind::ParamType => EdgeKind::ParamType,
        RefKind::ReturnType => EdgeKind::ReturnType,
        RefKind::Extends => EdgeKind::Extends,
        RefKind::Implements => EdgeKind::Implements,
    }
}

impl Resolver {
    /// A resolver for one repository.
    pub fn new(modules: ModuleResolver) -> Self {
        Self {
            modules,
            ..Self::default()
        }
    }

    /// The module resolver.
    pub fn modules(&self) -> &ModuleResolver {
        &self.modules
    }

    /// Adds (or replaces) a file.
    pub fn add(&mut self, view: FileView) {
        self.missing.borrow_mut().remove(&view.path);
        self.packages.get_mut().clear();
        self.files.insert(view.path.clone(), Indexed::new(view));
    }

    /// Whether the file is held.
    pub fn contains(&self, path: &str) -> bool {
        self.files.contains_key(path)
    }

    /// Indexed files a resolution since the last call needed but the resolver did not
    /// hold; resolve again after adding them.
    pub fn missing(&self) -> Vec<String> {
        std::mem::take(&mut *self.missing.borrow_mut())
            .into_iter()
            .filter(|p| !self.files.contains_key(p))
            .collect()
    }

    fn file(&self, path: &str) -> Option<&Indexed> {
        let file = self.files.get(path);
        if file.is_none() && self.modules.has_file(path) {
            self.missing.borrow_mut().insert(path.to_string());
        }
        file
    }

    /// The file a module specifier of `from` names, or an external display name.
    fn module(&self, from: &str, spec: &str) -> Result<String, String> {
        self.modules
            .resolve(from, spec)
            .ok_or_else(|| spec.to_string())
    }

    /// The edges of file `path` (which must be held): one per distinct
    /// (source chunk, target, kind), plus `imports` edges to the files it depends on.
    pub fn edges(&self, path: &str) -> Vec<EdgeRecord> {
        let Some(file) = self.file(path) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        for m in &file.view.facts.modules {
            let (to_name, certain) = match self.modules.resolve(path, &m.module) {
                Some(p) if p.ends_with('/') => {
                    let dir = p.trim_end_matches('/');
                    match self.modules.package_files(dir, "go").next() {
                        Some(first) => (first.clone(), true),
                        None => continue,
                    }
                }
                Some(p) => (p, true),
                None if m.module.starts_with('.') => {
                    let base = super::normalize(&format!("{}/{}", super::dir_of(path), m.module));
                    (
                        format!("?{}", base.unwrap_or_else(|| m.module.clone())),
                        false,
                    )
                }
                None => continue,
            };
            if seen.insert((m.from.clone(), to_name.clone(), EdgeKind::Imports)) {
                out.push(EdgeRecord {
                    from_chunk: m.from.clone(),
                    to_chunk: None,
                    to_name,
                    kind: EdgeKind::Imports,
                    certain,
                    line: None,
                });
            }
        }
        for r in &file.view.facts.refs {
            let kind = edge_kind(r.kind);
            let Some((to_chunk, to_name, certain)) = self.target(file, &r.from, &r.target, r.kind)
            else {
                continue;
            };
            if to_chunk.as_deref() == Some(r.from.as_str()) && kind != EdgeKind::Calls {
                continue;
            }
            let key = (
                r.from.clone(),
                to_chunk.clone().unwrap_or_else(|| to_name.clone()),
                kind,
            );
            if seen.insert(key) {
                out.push(EdgeRecord {
                    from_chunk: r.from.clone(),
                    to_chunk,
                    to_name,
                    kind,
                    certain,
                    line: Some(i64::from(r.line)),
                });
            }
        }
        out
    }

    /// Display name of a symbol: its name qualified by enclosing declarations.
    fn display(&self, path: &str, index: usize) -> String {
        let Some(file) = self.files.get(path) else {
            return String::new();
        };
        let mut parts = vec![file.symbol(index).name.clone()];
        let mut parent = file.symbol(index).parent.clone();
        while let Some(id) = parent {
            let Some(&i) = file.by_id.get(&id) else { break };
            let s = file.symbol(i);
            parts.push(s.name.clone());
            parent = s.parent.clone();
        }
        parts.reverse();
        parts.join(".")
    }

    /// `(to_chunk, to_name, certain)` of one reference.
    fn target(
        &self,
        file: &Indexed,
        from: &str,
        target: &Target,
        kind: RefKind,
    ) -> Option<(Option<String>, String, bool)> {
        let resolved = match target {
            Target::Member(base, member) => match self.member_of(file, from, base, member, 0) {
                Some(r) => r,
                None => {
                    // The receiver's type is unknown: the call is recorded by member name,
                    // flagged uncertain, rather than bound to a guess.
                    return match base {
                        Base::Unknown(_) | Base::Callback(..) if kind == RefKind::Call => {
                            Some((None, member.clone(), false))
                        }
                        _ => None,
                    };
                }
            },
            other => self.resolve(file, from, other, 0)?,
        };
        match resolved {
            Resolved::Symbol(p, i) => {
                let id = self.files.get(&p)?.symbol(i).id.clone();
                Some((Some(id), self.display(&p, i), true))
            }
            Resolved::External(name) if kind != RefKind::Read => Some((None, name, true)),
            Resolved::External(_) | Resolved::Module(_) => None,
        }
    }

    /// Resolves a free name used in chunk `from` of `file`.
    fn name(&self, file: &Indexed, from: &str, name: &str, hops: usize) -> Option<Resolved> {
        // Enclosing namespaces (and nested scopes) first, then the file root.
        let mut scope = file
            .by_id
            .get(from)
            .and_then(|&i| file.symbol(i).parent.clone());
        loop {
            let parent = scope.clone().unwrap_or_default();
            let found = file.scoped(&parent, name);
            // A class member is not in scope by its bare name.
            let container_is_class = scope
                .as_ref()
                .and_then(|id| file.by_id.get(id))
                .is_some_and(|&i| {
                    matches!(
                        file.symbol(i).kind,
                        SymbolKind::Class | SymbolKind::Interface | SymbolKind::Component
                    )
                });
            if !container_is_class && let Some(i) = primary(file, found) {
                return Some(Resolved::Symbol(file.view.path.clone(), i));
            }
            // Java sees the members of enclosing classes (and their supertypes) by name.
            if container_is_class
                && rules(&file.view.path).is_some_and(|r| r.enclosing_members)
                && let Some(&class) = scope.as_ref().and_then(|id| file.by_id.get(id))
                && let Some(found) = self.find_member(&file.view.path, class, name, hops)
            {
                return Some(found);
            }
            match scope {
                None => break,
                Some(id) => {
                    scope = file
                        .by_id
                        .get(&id)
                        .and_then(|&i| file.symbol(i).parent.clone());
                }
            }
        }
        let Some(&import) = file.imports.get(name) else {
            return self.package_scope(&file.view.path, name, hops);
        };
        self.imported(file, import, name, hops)
    }

    /// What import binding `import` of `file`, bound locally as `name`, refers to.
    fn imported(&self, file: &Indexed, import: usize, name: &str, hops: usize) -> Option<Resolved> {
        let binding = &file.view.facts.imports[import];
        let path = &file.view.path;
        match self.module(path, &binding.module) {
            Err(_) if let Some(sub) = self.submodule(path, binding) => Some(Resolved::Module(sub)),
            Err(spec) => Some(Resolved::External(match &binding.imported {
                Imported::Named(n) if n != name => format!("{spec}.{n}"),
                _ => name.to_string(),
            })),
            Ok(target) => match &binding.imported {
                Imported::Module => Some(Resolved::Module(target)),
                Imported::Default => self.export(&target, "default", hops + 1),
                // Rust: `use crate::unicode` names the module file, not the `mod
                // unicode;` line that declares it.
                Imported::Named(n) if rules(path).is_some_and(|r| r.submodule_first) => self
                    .submodule(path, binding)
                    .map(Resolved::Module)
                    .or_else(|| self.export(&target, n, hops + 1)),
                Imported::Named(n) => self
                    .export(&target, n, hops + 1)
                    .or_else(|| self.submodule(path, binding).map(Resolved::Module)),
            },
        }
    }

    /// The submodule an import binds when the imported name is one: Python's `from pkg
    /// import name` (`pkg/name.py`), Rust's `use crate::name` (`src/name.rs`).
    fn submodule(&self, path: &str, binding: &ImportBinding) -> Option<String> {
        let Imported::Named(name) = &binding.imported else {
            return None;
        };
        let spec = &binding.module;
        let separator = rules(path)?.submodule_separator?;
        // A relative Python module (`.`, `..pkg.`) already ends with its separator.
        let sub = if spec.ends_with(separator) {
            format!("{spec}{name}")
        } else {
            format!("{spec}{separator}{name}")
        };
        let found = self.modules.resolve(path, &sub)?;
        // Rust paths resolve to their longest module prefix: `a::item` is found as `a`'s
        // file, which names an item, not a submodule.
        (self.modules.resolve(path, spec).as_ref() != Some(&found)).then_some(found)
    }

    /// Resolves export `name` of the file at `path`.
    fn export(&self, path: &str, name: &str, hops: usize) -> Option<Resolved> {
        if hops > MAX_HOPS {
            return None;
        }
        if let Some(dir) = path.strip_suffix('/') {
            return self.package_export(dir, name);
        }
        let file = self.file(path)?;
        for export in &file.view.facts.exports {
            match export {
                Export::Local { exported, local } if exported == name => {
                    return self.top_level(file, local, hops);
                }
                Export::From {
                    exported,
                    module,
                    imported,
                } if exported == name => {
                    return match self.module(path, module) {
                        Err(spec) => Some(Resolved::External(format!("{spec}.{name}"))),
                        Ok(target) => match imported {
                            Imported::Module => Some(Resolved::Module(target)),
                            Imported::Default => self.export(&target, "default", hops + 1),
                            Imported::Named(n) => self.export(&target, n, hops + 1),
                        },
                    };
                }
                _ => {}
            }
        }
        let declared: Vec<usize> = if name == "default" {
            file.view
                .symbols
                .iter()
                .enumerate()
                .filter(|(_, s)| s.parent.is_none() && s.default_export)
                .map(|(i, _)| i)
                .collect()
        } else {
            // An import names a private item only where the language lets it: Python's
            // `from m import _helper` and Rust's `use super::helper` are legal (the
            // underscore is a convention; Rust children see their parents' items), and
            // Java's package-private members are seen within the package. TypeScript's and
            // Go's exports are enforced.
            let sees_private = rules(path).is_some_and(|r| r.imports_see_private);
            file.scoped("", name)
                .iter()
                .copied()
                .filter(|&i| sees_private || file.symbol(i).exported)
                .collect()
        };
        if let Some(i) = primary(file, &declared) {
            return Some(Resolved::Symbol(path.to_string(), i));
        }
        if name == "default" {
            return None;
        }
        // A Python module's imported names are its attributes (`pkg/__init__.py` importing
        // `name`), and Rust's `pub use self::v::visit` re-exports.
        if rules(path).is_some_and(|r| r.imports_are_exports)
            && let Some(&import) = file.imports.get(name)
        {
            return self.imported(file, import, name, hops + 1);
        }
        for export in &file.view.facts.exports {
            if let Export::Star { module } = export
                && let Ok(target) = self.module(path, module)
                && let Some(found) = self.export(&target, name, hops + 1)
            {
                return Some(found);
            }
        }
        None
    }

    /// A file-level name: a root declaration or an import.
    fn top_level(&self, file: &Indexed, name: &str, hops: usize) -> Option<Resolved> {
        if let Some(i) = primary(file, file.scoped("", name)) {
            return Some(Resolved::Symbol(file.view.path.clone(), i));
        }
        self.imported(file, *file.imports.get(name)?, name, hops)
    }

    /// The nearest class-like symbol enclosing chunk `from` (itself included).
    fn enclosing_class(&self, file: &Indexed, from: &str) -> Option<usize> {
        let mut current = file.by_id.get(from).copied();
        while let Some(i) = current {
            let s = file.symbol(i);
            if matches!(
                s.kind,
                SymbolKind::Class
                    | SymbolKind::Component
                    | SymbolKind::Struct
                    | SymbolKind::Impl
                    | SymbolKind::Interface
            ) || (s.kind == SymbolKind::Const || s.kind == SymbolKind::Variable)
                && current != file.by_id.get(from).copied()
            {
                return Some(i);
            }
            current = s.parent.as_ref().and_then(|p| file.by_id.get(p).copied());
        }
        None
    }

    /// Member `member` of what `base` names, seen from chunk `from`. `hops` counts the
    /// resolution steps taken to get here (a base may name a class whose supertypes are
    /// members of other bases): past [`MAX_HOPS`] there is no answer, so that a cycle
    /// of them (`class A(m.B)`, `class B(m.A)`) ends.
    fn member_of(
        &self,
        file: &Indexed,
        from: &str,
        base: &Base,
        member: &str,
        hops: usize,
    ) -> Option<Resolved> {
        if hops > MAX_HOPS {
            return None;
        }
        let path = file.view.path.as_str();
        match base {
            Base::This => {
                let class = self.enclosing_class(file, from)?;
                self.find_member(path, class, member, hops)
            }
            Base::Super => {
                let class = self.enclosing_class(file, from)?;
                self.supertypes(path, class, hops)
                    .into_iter()
                    .find_map(|(p, i)| self.find_member(&p, i, member, hops + 1))
            }
            Base::Chunk(id) => self.find_member(path, *file.by_id.get(id)?, member, hops),
            Base::ThisMember(field) => {
                let class = self.enclosing_class(file, from)?;
                match self.find_member(path, class, field, hops)? {
                    Resolved::Symbol(p, i) => self.member_by_type(&p, i, member, hops),
                    _ => None,
                }
            }
            // `pkg.Type` (a Go parameter of an imported type): the package's type.
            Base::Typed(name) if name.contains('.') => {
                let (package, ty) = name.rsplit_once('.')?;
                match self.member_of(file, from, &Base::Name(package.to_string()), ty, hops + 1)? {
                    Resolved::Symbol(p, i) => self.find_member(&p, i, member, hops + 1),
                    _ => None,
                }
            }
            Base::Name(name) | Base::Typed(name) => match self.name(file, from, name, hops)? {
                // A value with a declared type (`const p: Provider = { … }`) has that
                // type's members, as the compiler sees it; anything else its own.
                Resolved::Symbol(p, i) => self
                    .member_by_type(&p, i, member, hops)
                    .or_else(|| self.find_member(&p, i, member, hops)),
                Resolved::Module(p) => self.export(&p, member, hops + 1),
                Resolved::External(display) => {
                    Some(Resolved::External(format!("{display}.{member}")))
                }
            },
            Base::Callback(callee, arg, param) => {
                let (p, i) = match self.resolve(file, from, callee, hops + 1)? {
                    Resolved::Symbol(p, i) => (p, i),
                    _ => return None,
                };
                // `new C(cb)` passes the callback to C's constructor.
                let (p, i) = match self.file(&p)?.symbol(i).kind {
                    SymbolKind::Class | SymbolKind::Component => {
                        match self.find_member(&p, i, "constructor", hops)? {
                            Resolved::Symbol(p, i) => (p, i),
                            _ => return None,
                        }
                    }
                    _ => (p, i),
                };
                let declaring = self.file(&p)?;
                let id = &declaring.symbol(i).id;
                let type_name = declaring
                    .callbacks
                    .get(&(id.clone(), *arg))?
                    .get(*param)?
                    .as_ref()?;
                match self.name(declaring, id, type_name, hops + 1)? {
                    Resolved::Symbol(tp, ti) => self
                        .find_member(&tp, ti, member, hops + 1)
                        .or_else(|| self.member_by_type(&tp, ti, member, hops + 1)),
                    _ => None,
                }
            }
            Base::Unknown(_) => None,
        }
    }

    /// What a reference target names, `hops` steps into a resolution.
    fn resolve(
        &self,
        file: &Indexed,
        from: &str,
        target: &Target,
        hops: usize,
    ) -> Option<Resolved> {
        match target {
            Target::Chunk(id) => Some(Resolved::Symbol(
                file.view.path.clone(),
                *file.by_id.get(id)?,
            )),
            Target::Name(name) => self.name(file, from, name, hops),
            Target::Member(base, member) => self.member_of(file, from, base, member, hops),
        }
    }

    /// Member `member` of the declared type of a field, property or variable.
    fn member_by_type(
        &self,
        path: &str,
        index: usize,
        member: &str,
        hops: usize,
    ) -> Option<Resolved> {
        let file = self.file(path)?;
        let symbol = file.symbol(index);
        let type_name = file.declared.get(&symbol.id)?;
        match self.name(file, &symbol.id, type_name, hops + 1)? {
            Resolved::Symbol(p, i) => self.find_member(&p, i, member, hops + 1),
            _ => None,
        }
    }

    /// Member `member` of the symbol at (`path`, `index`): its children, those of every
    /// same-named declaration of the same scope (merging), then its supertypes'.
    fn find_member(&self, path: &str, index: usize, member: &str, hops: usize) -> Option<Resolved> {
        if hops > MAX_HOPS {
            return None;
        }
        let file = self.file(path)?;
        let symbol = file.symbol(index);
        let parent = symbol.parent.clone().unwrap_or_default();
        let merged = file.scoped(&parent, &symbol.name);
        let declarations: Vec<usize> = if merged.contains(&index) {
            merged.to_vec()
        } else {
            vec![index]
        };
        for &d in &declarations {
            let id = &file.symbol(d).id;
            if let Some(&child) = file.scoped(id, member).first() {
                return Some(Resolved::Symbol(path.to_string(), child));
            }
        }
        for &d in &declarations {
            for (p, i) in self.supertypes(path, d, hops) {
                if let Some(found) = self.find_member(&p, i, member, hops + 1) {
                    return Some(found);
                }
            }
        }
        // Go declares methods beside their type, as `Type.Method`, anywhere in its package.
        if rules(path).is_some_and(|r| r.methods_beside_type) && symbol.parent.is_none() {
            let qualified = format!("{}.{member}", symbol.name);
            return self.package_scope(path, &qualified, hops).or_else(|| {
                primary(file, file.scoped("", &qualified))
                    .map(|i| Resolved::Symbol(path.to_string(), i))
            });
        }
        None
    }

    /// The root names of the package of `ext` files in `dir` (files not held yet are
    /// reported missing and left out until they are added).
    fn package_names(&self, dir: &str, ext: &'static str) -> Arc<PackageNames> {
        let key = (dir.to_string(), ext);
        if let Some(names) = self.packages.borrow().get(&key) {
            return names.clone();
        }
        let mut names = PackageNames::new();
        let paths: Vec<String> = self.modules.package_files(dir, ext).cloned().collect();
        for path in paths {
            let Some(file) = self.file(&path) else {
                continue;
            };
            for (parent, name) in file.scoped.keys() {
                if parent.is_empty() {
                    names.entry(name.clone()).or_default().push(path.clone());
                }
            }
        }
        let names = Arc::new(names);
        self.packages.borrow_mut().insert(key, names.clone());
        names
    }

    /// The first of the package's files (other than `except`) declaring root `name`,
    /// with the declaration `keep` accepts.
    fn in_package(
        &self,
        dir: &str,
        ext: &'static str,
        name: &str,
        except: Option<&str>,
        keep: impl Fn(&SymbolNode) -> bool,
    ) -> Option<Resolved> {
        let names = self.package_names(dir, ext);
        names.get(name)?.iter().find_map(|p| {
            if Some(p.as_str()) == except {
                return None;
            }
            let file = self.files.get(p)?;
            let found: Vec<usize> = file
                .scoped("", name)
                .iter()
                .copied()
                .filter(|&i| keep(file.symbol(i)))
                .collect();
            primary(file, &found).map(|i| Resolved::Symbol(p.clone(), i))
        })
    }

    /// A root declaration `name` of another file of `path`'s package: Go and Java see
    /// their package's names without importing them.
    fn package_scope(&self, path: &str, name: &str, hops: usize) -> Option<Resolved> {
        if !rules(path)?.package_scope || hops > MAX_HOPS {
            return None;
        }
        let (_, ext) = path.rsplit_once('.')?;
        let def = Language::from_path(std::path::Path::new(path))?.def();
        let ext = *def.extensions.iter().find(|e| **e == ext)?;
        self.in_package(super::dir_of(path), ext, name, Some(path), |_| true)
    }

    /// Exported root declaration `name` of the Go package in `dir`.
    fn package_export(&self, dir: &str, name: &str) -> Option<Resolved> {
        self.in_package(dir, "go", name, None, |s| s.exported)
    }

    /// The declarations a class or interface extends.
    fn supertypes(&self, path: &str, index: usize, hops: usize) -> Vec<(String, usize)> {
        let Some(file) = self.file(path) else {
            return Vec::new();
        };
        let id = &file.symbol(index).id;
        file.view
            .facts
            .refs
            .iter()
            .filter(|r| &r.from == id && r.kind == RefKind::Extends)
            .filter_map(|r| {
                let resolved = match &r.target {
                    Target::Name(n) => self.name(file, id, n, hops + 1),
                    Target::Member(base, m) => self.member_of(file, id, base, m, hops + 1),
                    Target::Chunk(c) => {
                        Some(Resolved::Symbol(path.to_string(), *file.by_id.get(c)?))
                    }
                };
                match resolved? {
                    Resolved::Symbol(p, i) => Some((p, i)),
                    _ => None,
                }
            })
            .collect()
    }
}

impl SymbolNode {
    /// The node of a stored symbol.
    pub fn from_record(record: &crate::store::SymbolRecord) -> Option<Self> {
        Some(Self {
            id: record.chunk_id.clone(),
            name: record.name.clone(),
            kind: SymbolKind::parse(&record.kind)?,
            parent: record.parent_chunk_id.clone(),
            exported: record.exported,
            default_export: record.modifiers.split_whitespace().any(|m| m == "default"),
        })
    }
}
