//! `/jobs`: recent syncs and one sync's state.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::Shared;
use super::repositories::JobBody;
use crate::api::error::{ApiError, ErrorBody, NoSuchRepository, Unauthenticated};
use crate::api::extract::{Caller, Params};
use crate::api::wire::Job;
use crate::service::Service;

pub(in crate::api) fn routes() -> OpenApiRouter<Arc<Service>> {
    OpenApiRouter::new()
        .routes(routes!(list_jobs))
        .routes(routes!(get_job))
}

/// `?repository=…&limit=…`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct JobsQuery {
    /// Only this repository's jobs (name or id).
    repository: Option<String>,
    /// Most recent first, at most this many (1–500, default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
}

/// `{"jobs": …}`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct JobList {
    /// Most recent first.
    pub jobs: Vec<Job>,
}

/// Recent jobs, of one repository or of every visible one.
#[utoipa::path(get, path = "/jobs", tag = "jobs",
    params(JobsQuery),
    responses(
        (status = 200, description = "Jobs", body = JobList),
        (status = 400, description = "Bad limit", body = ErrorBody),
        Unauthenticated,
        NoSuchRepository))]
async fn list_jobs(
    State(service): Shared,
    Caller(caller): Caller,
    Params(q): Params<JobsQuery>,
) -> Result<Json<JobList>, ApiError> {
    let jobs = service
        .jobs(&caller, q.repository.as_deref(), q.limit.unwrap_or(50))
        .await?;
    Ok(Json(JobList { jobs }))
}

/// One job: state, progress, message.
#[utoipa::path(get, path = "/jobs/{id}", tag = "jobs",
    params(("id" = String, Path, description = "Job id")),
    responses(
        (status = 200, description = "The job", body = JobBody),
        Unauthenticated,
        (status = 404, description = "No such job", body = ErrorBody)))]
async fn get_job(
    State(service): Shared,
    Caller(caller): Caller,
    Path(id): Path<String>,
) -> Result<Json<JobBody>, ApiError> {
    let job = service.job(&caller, &id).await?;
    Ok(Json(JobBody { job }))
}
