//! HTTP surface (not built yet: issue "Server").
//!
//! Will serve REST under `/api/v1`, SSE progress, OpenAPI, health and metrics with axum.
//! Translates requests into calls on `index` and `search`; holds no business logic.
