//! MCP surface (not built yet: issue "Server").
//!
//! Will expose `codebase_search`, `get_symbol`, `get_file_symbols` and friends over
//! streamable HTTP at `/mcp` and over stdio (rmcp). Like `api`, a thin adapter over
//! `search` and `render`.
