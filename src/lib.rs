//! Sextant: precise, token-budgeted code context for AI agents and teams.
//!
//! The crate is laid out as the pipeline it implements; `docs/ARCHITECTURE.md` maps it.
//! parse → chunk → (index → store/embed → search → graph → render) → api/mcp/cli.

pub mod chunk;
pub mod cli;
pub mod config;
pub mod parse;
pub mod text;
pub mod validate;
