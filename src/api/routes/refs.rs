//! `/repositories/{repo}/refs`: the branches, tags and commits a git repository tracks
//! beside its default ref (each indexed as what differs from it).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::Shared;
use super::repositories::RepositoryCreated;
use crate::api::error::{
    AdminOnly, ApiError, BodyRejected, ErrorBody, NoSuchRepository, Unauthenticated,
};
use crate::api::extract::{Body, Caller, Params};
use crate::api::wire::{Job, Repository};
use crate::service::{Comparison, Service};

pub(in crate::api) fn routes() -> OpenApiRouter<Arc<Service>> {
    OpenApiRouter::new()
        .routes(routes!(list_refs, add_ref))
        .routes(routes!(drop_ref))
        .routes(routes!(compare_refs))
        .routes(routes!(refresh))
}

/// `GET …/refs`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RefList {
    /// Each tracked ref as a repository record: `name` is `REPOSITORY@REF`,
    /// `trackedRef` the ref, `status` and `indexedCommit` its own, `parentId` the
    /// repository.
    pub refs: Vec<Repository>,
}

/// The refs a repository tracks beyond its default one.
#[utoipa::path(get, path = "/repositories/{repo}/refs", tag = "repositories",
    params(("repo" = String, Path, description = "Repository name or id")),
    responses(
        (status = 200, description = "Tracked refs", body = RefList),
        Unauthenticated,
        NoSuchRepository))]
async fn list_refs(
    State(service): Shared,
    Caller(caller): Caller,
    Path(repo): Path<String>,
) -> Result<Json<RefList>, ApiError> {
    let refs = service.refs(&caller, &repo).await?;
    Ok(Json(RefList { refs }))
}

/// `POST …/refs`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewRef {
    /// A branch, tag or commit of a git repository's remote; for a local directory, a
    /// worktree's branch, name or directory.
    #[serde(rename = "ref")]
    #[schema(max_length = 200)]
    pub git_ref: String,
}

/// Tracks one more ref of a repository (admin) and queues its first sync; reads take it
/// as `ref`. A git repository's branch, tag or commit, or a local directory's worktree
/// (its branch, name or directory). It holds only the files that differ from the
/// repository.
#[utoipa::path(post, path = "/repositories/{repo}/refs", tag = "repositories",
    params(("repo" = String, Path, description = "Repository name or id")),
    request_body = NewRef,
    responses(
        (status = 201, description = "Tracked; its first sync is queued", body = RepositoryCreated),
        (status = 400, description = "A bad ref name, no such worktree, the default ref, or too many refs", body = ErrorBody),
        Unauthenticated,
        AdminOnly,
        NoSuchRepository,
        (status = 409, description = "The ref is tracked already", body = ErrorBody),
        BodyRejected))]
async fn add_ref(
    State(service): Shared,
    Caller(caller): Caller,
    Path(repo): Path<String>,
    Body(new): Body<NewRef>,
) -> Result<(StatusCode, Json<RepositoryCreated>), ApiError> {
    let (repository, job) = service.add_ref(&caller, &repo, &new.git_ref).await?;
    Ok((
        StatusCode::CREATED,
        Json(RepositoryCreated { repository, job }),
    ))
}

/// `DELETE …/refs/{ref}`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RefDropped {
    /// The ref's record as it was.
    pub dropped: Repository,
}

/// Stops tracking a ref (admin): what it alone held is deleted, nothing of the
/// repository's. A ref with `/` is written `%2F` in the path.
#[utoipa::path(delete, path = "/repositories/{repo}/refs/{ref}", tag = "repositories",
    params(
        ("repo" = String, Path, description = "Repository name or id"),
        ("ref" = String, Path, description = "The tracked ref (`/` as `%2F`)")),
    responses(
        (status = 200, description = "Dropped", body = RefDropped),
        Unauthenticated,
        AdminOnly,
        (status = 404, description = "No such repository, or it does not track the ref", body = ErrorBody)))]
async fn drop_ref(
    State(service): Shared,
    Caller(caller): Caller,
    Path((repo, git_ref)): Path<(String, String)>,
) -> Result<Json<RefDropped>, ApiError> {
    let dropped = service.drop_ref(&caller, &repo, &git_ref).await?;
    Ok(Json(RefDropped { dropped }))
}

/// `?base=main&head=feature`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct CompareQuery {
    /// The ref compared from (default: the repository's default ref).
    base: Option<String>,
    /// The ref compared to: a tracked ref (or the default ref).
    head: String,
}

/// What differs between two refs: files, symbols (added, removed, modified), and the
/// unchanged code on `head` that calls or uses a symbol it modifies or removes (what may
/// break when `head` merges).
#[utoipa::path(get, path = "/repositories/{repo}/compare", tag = "repositories",
    params(("repo" = String, Path, description = "Repository name or id"), CompareQuery),
    responses(
        (status = 200, description = "The comparison", body = Comparison),
        (status = 400, description = "Missing `head`", body = ErrorBody),
        Unauthenticated,
        (status = 404, description = "No such repository, or it does not track a ref named", body = ErrorBody)))]
async fn compare_refs(
    State(service): Shared,
    Caller(caller): Caller,
    Path(repo): Path<String>,
    Params(q): Params<CompareQuery>,
) -> Result<Json<Comparison>, ApiError> {
    let comparison = service
        .compare(&caller, &repo, q.base.as_deref(), &q.head)
        .await?;
    Ok(Json(comparison))
}

/// `{"jobs": …}`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RefreshJobs {
    /// One sync per repository and tracked ref: queued now, or the one already queued or
    /// running.
    pub jobs: Vec<Job>,
}

/// Brings a repository and every ref it tracks up to date (admin): for CI bots and push
/// webhooks. Each gets a sync unless one is queued or running (that job is returned), so
/// calling it again is harmless.
#[utoipa::path(post, path = "/repositories/{repo}/refresh", tag = "repositories",
    params(("repo" = String, Path, description = "Repository name or id")),
    responses(
        (status = 202, description = "Syncs queued (or already queued or running)", body = RefreshJobs),
        Unauthenticated,
        AdminOnly,
        NoSuchRepository))]
async fn refresh(
    State(service): Shared,
    Caller(caller): Caller,
    Path(repo): Path<String>,
) -> Result<(StatusCode, Json<RefreshJobs>), ApiError> {
    let jobs = service.refresh(&caller, &repo).await?;
    Ok((StatusCode::ACCEPTED, Json(RefreshJobs { jobs })))
}
