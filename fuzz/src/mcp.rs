//! The MCP tools' arguments (the server itself is left out).

#[path = "../../src/mcp/args.rs"]
pub mod args;
