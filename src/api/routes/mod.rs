//! Route handlers, one file per resource. Each parses its request with the
//! [`super::extract`] extractors, makes one service call and shapes the answer with the
//! [`super::wire`] types; each carries its OpenAPI description (`utoipa::path`).

pub(crate) mod access;
pub(crate) mod events;
pub(crate) mod grep;
pub(crate) mod jobs;
pub(crate) mod refs;
pub(crate) mod repositories;
pub(crate) mod scout;
pub(crate) mod search;
pub(crate) mod symbols;

use std::sync::Arc;

use axum::extract::State;

use crate::service::Service;

/// The service every handler calls.
type Shared = State<Arc<Service>>;
