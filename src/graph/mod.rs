//! Structural analysis (not built yet: issue "Structural analysis").
//!
//! Will resolve identifiers to declarations across files (scopes, imports, tsconfig
//! paths, re-exports) and compute the symbol graph: calls, callers, references, type
//! hierarchy and type flows (`SymbolMetadata`). Input: parsed files; output: edges. Pure
//! resolution logic; persistence goes through `store`.
