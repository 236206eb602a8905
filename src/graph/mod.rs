//! Structural analysis: the symbol graph.
//!
//! The parser reports, per file, which names each occurrence uses and what the file
//! imports and exports ([`crate::parse::refs`]). This layer turns that into edges between
//! chunks:
//!
//! 1. [`FileFacts::attribute`] gives every occurrence the id of the chunk it occurs in
//!    (at index time, with the file's chunks at hand); the indexer stores the result.
//! 2. [`ModuleResolver`] maps module specifiers to repository files (relative paths,
//!    `tsconfig` `paths`/`baseUrl`, workspace packages; Python modules, Java classes, Rust
//!    module paths and Go packages by `packages`).
//! 3. [`Resolver`] binds names to declarations across files and yields
//!    [`crate::store::EdgeRecord`]s: calls, references, type uses (with parameter and
//!    return types told apart), `extends` / `implements`, and file imports.
//!
//! Everything here is pure; the indexer feeds it files from the stores and writes the
//! edges back, and [`crate::search`] reads them to describe results.
//!
//! # Design notes
//!
//! - The parser's second pass (`parse::typescript::ref_walk`, one iterative walk with a stack
//!   of function/block scopes and of annotation contexts) reports per file: import bindings
//!   (named, default, namespace, `require`), exports (`export {…}`, `export … from`,
//!   `export *`, `export =`, `module.exports`), module uses, declared types of fields and
//!   variables, and every name occurrence in reference position as a call (incl. `new` and
//!   JSX), read, type use (parameter / return / other), `extends` or `implements`, with
//!   member accesses keeping their receiver (`this`, `super`, a free name, a typed local,
//!   `this.field`, or unknown). Parameters and locals shadow file-level names and are
//!   dropped, except nested declarations, which are kept as local targets.
//! - `FileFacts::attribute` gives each occurrence the innermost named chunk containing it
//!   (anonymous callbacks count for their function, as the TypeScript call hierarchy does).
//!   The indexer stores the result as JSON per file (`file_facts`).
//! - `ModuleResolver`: relative specifiers with extension/`index` probing (`.js` naming a
//!   `.ts` source included), the nearest `tsconfig.json`/`jsconfig.json` (`paths`, `baseUrl`,
//!   relative `extends`), workspace packages by `package.json` name. Comments and trailing
//!   commas in tsconfig are stripped by a small hand-written pass (`strip_jsonc`).
//!   For the other languages `graph::packages` resolves by path: Python relative imports
//!   from the file's package and absolute ones from the root or any source root (`x.py`,
//!   `x/__init__.py`); Java `a.b.C` → a file ending in `a/b/C.java`; Rust `crate::`,
//!   `self::`, `super::` against the file's module path (the longest prefix that is a
//!   module file, so a trailing item name resolves to its module); Go import paths → the
//!   deepest repository directory their trailing elements name (a package, `dir/`), so no
//!   `go.mod` is read. Go and Java files also see the root names of their package's other
//!   files; Go methods (`Type.Method`) are found as members of their type across the
//!   package; Java sees the enclosing classes' members by bare name; Python's `from pkg
//!   import module` and Rust's `use crate::module` bind the submodule's file (`submodule`).
//!   A Python module's imported names and Rust's `pub use` re-exports are followed as the
//!   module's own exports, and an import may name a private item where the language allows
//!   it (Python, Rust, Java; TypeScript and Go exports are enforced). One function
//!   (`imported`) resolves an import binding for scope lookups and exports alike. Inside a
//!   Rust macro's arguments (tokens, not expressions) a bare name before parentheses is
//!   taken for a call.
//! - `Resolver` binds names: enclosing namespaces, then root declarations, then imports
//!   (following `export … from` and `export *` chains, namespace imports, default exports),
//!   members through classes, namespaces, enums, object literals, the declared type of a
//!   field/variable, and up `extends` chains; every same-named declaration of a scope is
//!   searched for members (declaration merging). Calls on receivers of unknown type are kept
//!   by member name with `certain = false`, never bound to a guess. Files it needs but does
//!   not hold are reported by `missing()`; the caller loads them and resolves again.
//! - `GraphSlice::metadata`: `SymbolMetadata` from edges (calls, callers — for classes the
//!   callers of its members too —, used-by, extends/implements/subtypes, types in/out,
//!   members, reference files). `MemoryGraph` runs the whole chain on in-memory sources
//!   (fixtures, the accuracy benchmark).
//! - Index time (`index::graph`): after a sync's writes, the changed files and, transitively,
//!   every file with an `imports` edge to one of them (unresolved imports are recorded as
//!   `?base` so that a file appearing later re-resolves its importers) are re-resolved from
//!   the stored facts and their edges replaced; nothing is re-parsed.

mod facts;
mod memory;
mod metadata;
mod modules;
mod packages;
mod resolve;

pub use facts::{Base, FactModule, FactRef, FileFacts, Target};
pub use memory::MemoryGraph;
pub use metadata::{GraphSlice, SymbolMetadata, SymbolRef, display_name};
pub use modules::{ModuleResolver, dir_of, normalize};
pub use resolve::{FileView, Resolver, SymbolNode};
