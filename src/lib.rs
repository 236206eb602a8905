//! Sextant: precise, token-budgeted code context for AI agents and teams.
//!
//! The crate is laid out as the pipeline it implements (see `docs/ARCHITECTURE.md`):
//!
//! ```text
//! parse → chunk → index → store / embed → search → graph → render → service
//!       → api / mcp / cli (adapters, side by side) → server (mounts api and mcp)
//! ```
//!
//! [`service`] is the domain API every adapter calls ([`api`] for REST, [`mcp`], [`cli`]);
//! [`server`] is the HTTP process that mounts the first two; [`scout`] is impact
//! exploration over the symbol graph; [`telemetry`] sets up logs and OpenTelemetry traces
//! for the whole process. Each module's doc states the contract it keeps.

pub mod api;
pub mod app;
pub mod auth;
pub mod chunk;
pub mod cli;
pub mod config;
pub mod conformance;
pub mod console;
pub mod dev;
pub mod embed;
pub mod graph;
pub mod index;
pub mod mcp;
pub mod parse;
pub mod render;
pub mod roles;
pub mod scout;
pub mod search;
pub mod server;
pub mod service;
pub mod store;
pub mod telemetry;
pub mod text;
