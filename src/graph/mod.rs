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
