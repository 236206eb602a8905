//! Name facts of one file, for the symbol graph: what each occurrence refers to by name,
//! what the file imports and what it exports. Language-neutral data; the walks that
//! produce it are `parse::typescript::ref_walk` and `parse::lang::ref_walk`.
//!
//! The parser only knows one file, so nothing here is resolved: a reference says "a call
//! of the free name `validate`" or "a read of member `secret` of `this`", and
//! [`crate::graph`] later binds those names to declarations across files. Names bound by
//! an enclosing function scope (parameters, local variables) are dropped here, except
//! local declarations that are symbols themselves (nested functions and classes), which
//! are kept as [`RefTarget::Local`].

use serde::{Deserialize, Serialize};

/// How an occurrence uses what it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefKind {
    /// Called (`f()`), instantiated (`new C()`) or rendered as a JSX element (`<C />`).
    Call,
    /// Any other value use (`x`, `obj.x`, `{ x }`).
    Read,
    /// A type use outside parameter and return annotations.
    Type,
    /// A type in a parameter annotation of the enclosing function.
    ParamType,
    /// A type in the return annotation of the enclosing function.
    ReturnType,
    /// A class `extends` clause or an interface `extends` list.
    Extends,
    /// A class `implements` list.
    Implements,
}

/// What a member access is applied to.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "base", content = "name")]
pub enum RefBase {
    /// `this.m`.
    This,
    /// `super.m`.
    Super,
    /// A free name (`Config.m`, `ns.m`, `jwt.verify`).
    Name(String),
    /// A local binding whose declared type (annotation or `new T()` initialiser) names `T`.
    Typed(String),
    /// A local binding to a nested declaration at this byte offset.
    Local(usize),
    /// A member of `this` (`this.store.get()` has base `ThisMember("store")`).
    ThisMember(String),
    /// An unannotated parameter of a callback passed as argument `arg` of a call of
    /// `callee`: its type is the callee's declared callback parameter type (contextual
    /// typing, `operate((source, subscriber) => subscriber.next())`).
    Callback {
        /// What is called (or instantiated) with the callback.
        callee: Box<RefTarget>,
        /// Argument position of the callback.
        arg: usize,
        /// Parameter position within the callback.
        param: usize,
    },
    /// Anything else (`a.b.m`, `f().m`, an untyped local): the receiver's type is unknown.
    Unknown(String),
}

/// What an occurrence names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "target")]
pub enum RefTarget {
    /// A name not bound by any enclosing function scope: a same-file declaration, an
    /// import, or a global.
    Name {
        /// The name.
        name: String,
    },
    /// A name bound in an enclosing function scope to a nested declaration (function,
    /// class, function-valued variable) whose name identifier starts at `decl`.
    Local {
        /// The name.
        name: String,
        /// Byte offset of the declaration's name.
        decl: usize,
    },
    /// `base.member`.
    Member {
        /// The receiver.
        base: RefBase,
        /// The member name.
        member: String,
    },
}

/// One occurrence of a name in reference position.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    /// Byte offset of the occurrence.
    pub offset: usize,
    /// 1-indexed line.
    pub line: u32,
    /// How it is used.
    pub kind: RefKind,
    /// What it names.
    pub target: RefTarget,
}

/// Which export of a module an import binds.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "import", content = "name")]
pub enum Imported {
    /// `import { name } …` / `const { name } = require(…)`.
    Named(String),
    /// `import x from …`.
    Default,
    /// The whole module: `import * as x`, `import x = require(…)`, `const x = require(…)`.
    Module,
}

/// One local name bound by an import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportBinding {
    /// The local name.
    pub local: String,
    /// Module specifier as written.
    pub module: String,
    /// What it binds.
    pub imported: Imported,
    /// Byte offset of the import statement.
    pub offset: usize,
}

/// One export of the file that is not an `export`-modified declaration (those carry the
/// `exported` flag on their symbol).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "export")]
pub enum Export {
    /// `export { local as exported }`, `export default local`, `export = local`
    /// (exported as `default`).
    Local {
        /// Name other modules import.
        exported: String,
        /// Local name it stands for.
        local: String,
    },
    /// `export { imported as exported } from 'module'`, `export * as exported from 'module'`
    /// (imported [`Imported::Module`]).
    From {
        /// Name other modules import.
        exported: String,
        /// Module specifier.
        module: String,
        /// What of that module.
        imported: Imported,
    },
    /// `export * from 'module'`.
    Star {
        /// Module specifier.
        module: String,
    },
}

/// Module specifiers the file depends on (imports, re-exports, `require` calls), with the
/// byte offset of the statement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleUse {
    /// Module specifier as written.
    pub module: String,
    /// Byte offset of the statement.
    pub offset: usize,
}

/// The type a declaration's annotation (or `new T()` initialiser) names: class fields,
/// interface properties and variables, so that `this.store.get()` and `config.load()` can
/// be followed to the type's members.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeclaredType {
    /// Byte offset of the declared name.
    pub offset: usize,
    /// The type's name (the first named type of a union).
    pub type_name: String,
}

/// The parameter types of a function-typed parameter of a declaration
/// (`init: (source: Observable<T>, subscriber: Subscriber<R>) => void` at position `arg`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackType {
    /// Byte offset of the declaring function, method or constructor.
    pub offset: usize,
    /// Position of the function-typed parameter.
    pub arg: usize,
    /// The named type of each of its parameters (`this` excluded), when it names one.
    pub params: Vec<Option<String>>,
}

/// Everything [`crate::graph`] needs from one file's syntax.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRefs {
    /// Local names bound by imports.
    pub imports: Vec<ImportBinding>,
    /// Exports other than `export`-modified declarations.
    pub exports: Vec<Export>,
    /// Modules the file depends on.
    pub modules: Vec<ModuleUse>,
    /// Reference occurrences in source order.
    pub references: Vec<Reference>,
    /// Declared types of fields, properties and variables.
    pub declared: Vec<DeclaredType>,
    /// Function-typed parameters of declarations.
    pub callbacks: Vec<CallbackType>,
}
