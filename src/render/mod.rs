//! Output formats (not built yet: issues "Structural analysis" and "Search pipeline").
//!
//! Will render the connection graph (★ in results, ◆ shared) and smart structural
//! snapshots, and assemble the MCP multi-content response. Pure functions from results
//! and metadata to text; no I/O.
