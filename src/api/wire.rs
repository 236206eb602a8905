//! The API's records as they travel, by their wire names. They are the service's own
//! records: those serialise in camelCase (the blueprint's casing, used by every body,
//! event and MCP argument) and are documented for OpenAPI where they are defined, so
//! the store, the service and the wire cannot drift apart.

pub use crate::service::records::{
    FileRecord as File, Job, RepoSettings as Settings, Repository, SymbolRecord as Symbol,
};
