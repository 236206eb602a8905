//! `/repositories`: register, list, inspect, change, remove, sync; files and symbols.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::Shared;
use crate::api::error::{
    AdminOnly, ApiError, BodyRejected, ErrorBody, NoSuchRepository, Unauthenticated,
};
use crate::api::extract::{Body, Caller, Params};
use crate::api::wire::{File, Job, Repository, Settings, Symbol};
use crate::service::{
    Registration, RepositoryChange, RepositoryStatus, Service, ServiceError, Source,
};

pub(in crate::api) fn routes() -> OpenApiRouter<Arc<Service>> {
    OpenApiRouter::new()
        .routes(routes!(list_repositories, add_repository))
        .routes(routes!(
            get_repository,
            update_repository,
            delete_repository
        ))
        .routes(routes!(sync_repository))
        .routes(routes!(list_files))
        .routes(routes!(file_symbols))
}

/// `GET /api/v1/repositories`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RepositoryList {
    /// The repositories the caller may see.
    pub repositories: Vec<Repository>,
}

/// Registered repositories the caller may see.
#[utoipa::path(get, path = "/repositories", tag = "repositories",
    responses(
        (status = 200, description = "Repositories", body = RepositoryList),
        Unauthenticated))]
async fn list_repositories(
    State(service): Shared,
    Caller(caller): Caller,
) -> Result<Json<RepositoryList>, ApiError> {
    let repositories = service.list_repositories(&caller).await?;
    Ok(Json(RepositoryList { repositories }))
}

/// The body of `POST /api/v1/repositories` as sent: exactly one of `path` and `git`
/// (documented as `NewRepositoryDoc`, which says so in the schema). Which one is
/// decided by [`Source::from_fields`], so that REST and MCP refuse the same way (400).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewRepository {
    path: Option<String>,
    git: Option<String>,
    #[serde(rename = "ref")]
    tracked_ref: Option<String>,
    name: Option<String>,
    #[serde(default)]
    settings: Settings,
}

impl NewRepository {
    /// The registration this body asks for.
    pub fn registration(self) -> Result<Registration, ServiceError> {
        Ok(Registration {
            source: Source::from_fields(self.path, self.git, self.tracked_ref)?,
            name: self.name,
            settings: self.settings,
        })
    }
}

/// `POST /api/v1/repositories` as documented: a directory or a git URL.
#[derive(ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
enum NewRepositoryDoc {
    /// A directory on the server.
    Path(PathSource),
    /// A git repository.
    Git(GitSource),
}

/// A directory on the server to index.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct PathSource {
    /// The directory (must exist and lie under the server's allowed roots, if set).
    #[schema(min_length = 1, pattern = "\\S")]
    path: String,
    /// Display name (default: the directory's name).
    name: Option<String>,
    /// Include/exclude globs, limits, languages, watch.
    settings: Option<Settings>,
}

/// A git repository to clone and index.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct GitSource {
    /// A git URL (https, ssh or file).
    #[schema(min_length = 1, pattern = "\\S")]
    git: String,
    /// Branch, tag or commit to track (default: the remote's HEAD).
    #[serde(rename = "ref")]
    tracked_ref: Option<String>,
    /// Display name (default: the repository's name).
    name: Option<String>,
    /// Include/exclude globs, limits, languages, fetch interval.
    settings: Option<Settings>,
}

/// A repository with the job that indexes it.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RepositoryCreated {
    /// The registered repository.
    pub repository: Repository,
    /// Its first sync, queued.
    pub job: Job,
}

/// Registers a directory or git repository and queues its first sync (admin scope,
/// token without a repository allowlist).
#[utoipa::path(post, path = "/repositories", tag = "repositories",
    request_body = NewRepositoryDoc,
    responses(
        (status = 201, description = "Registered; the first sync is queued", body = RepositoryCreated),
        (status = 400, description = "Bad source or settings (or neither or both of `path` and `git`)", body = ErrorBody),
        Unauthenticated,
        (status = 403, description = "Not an unrestricted admin token", body = ErrorBody),
        (status = 409, description = "The name is taken", body = ErrorBody),
        BodyRejected))]
async fn add_repository(
    State(service): Shared,
    Caller(caller): Caller,
    Body(new): Body<NewRepository>,
) -> Result<(StatusCode, Json<RepositoryCreated>), ApiError> {
    let (repository, job) = service.register(&caller, new.registration()?).await?;
    Ok((
        StatusCode::CREATED,
        Json(RepositoryCreated { repository, job }),
    ))
}

/// File counts of a repository.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct FileCounts {
    /// Files indexed.
    pub indexed: i64,
    /// Files seen but not indexed (too large, binary, excluded by limits…).
    pub skipped: i64,
}

/// `GET /api/v1/repositories/{repo}`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RepositoryDetail {
    /// The repository (status, indexed commit, last error, settings).
    pub repository: Repository,
    /// File counts.
    pub files: FileCounts,
    /// Symbols indexed.
    pub symbols: i64,
    /// The five most recent jobs.
    pub recent_jobs: Vec<Job>,
    /// The refs it tracks beyond its default one, each with its status and commit.
    pub refs: Vec<Repository>,
}

/// One repository: status, indexed commit, counts, last error, recent jobs.
#[utoipa::path(get, path = "/repositories/{repo}", tag = "repositories",
    params(("repo" = String, Path, description = "Repository name or id")),
    responses(
        (status = 200, description = "The repository", body = RepositoryDetail),
        Unauthenticated,
        NoSuchRepository))]
async fn get_repository(
    State(service): Shared,
    Caller(caller): Caller,
    Path(repo): Path<String>,
) -> Result<Json<RepositoryDetail>, ApiError> {
    Ok(Json(service.repository(&caller, &repo).await?.into()))
}

impl From<RepositoryStatus> for RepositoryDetail {
    fn from(status: RepositoryStatus) -> Self {
        Self {
            repository: status.repository,
            files: FileCounts {
                indexed: status.counts.indexed,
                skipped: status.counts.skipped,
            },
            symbols: status.counts.symbols,
            recent_jobs: status.recent_jobs,
            refs: status.refs,
        }
    }
}

/// `PATCH /api/v1/repositories/{repo}`: what to change.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RepositoryUpdate {
    /// New settings (replace the current ones as a whole).
    pub settings: Option<Settings>,
    /// Git repositories: the branch, tag or commit to track.
    #[serde(rename = "ref")]
    pub tracked_ref: Option<String>,
}

/// `{"repository": …}`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RepositoryBody {
    /// The repository.
    pub repository: Repository,
}

/// Changes a repository's settings or tracked ref (admin); the next sync applies them.
#[utoipa::path(patch, path = "/repositories/{repo}", tag = "repositories",
    params(("repo" = String, Path, description = "Repository name or id")),
    request_body = RepositoryUpdate,
    responses(
        (status = 200, description = "Saved", body = RepositoryBody),
        (status = 400, description = "Invalid settings", body = ErrorBody),
        Unauthenticated,
        AdminOnly,
        NoSuchRepository,
        BodyRejected))]
async fn update_repository(
    State(service): Shared,
    Caller(caller): Caller,
    Path(repo): Path<String>,
    Body(update): Body<RepositoryUpdate>,
) -> Result<Json<RepositoryBody>, ApiError> {
    let change = RepositoryChange {
        settings: update.settings,
        tracked_ref: update.tracked_ref,
    };
    let repository = service.update(&caller, &repo, change).await?;
    Ok(Json(RepositoryBody { repository }))
}

/// `{"removed": …}`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Removed {
    /// The repository that was removed.
    pub removed: Repository,
}

/// Removes a repository and everything indexed for it (admin).
#[utoipa::path(delete, path = "/repositories/{repo}", tag = "repositories",
    params(("repo" = String, Path, description = "Repository name or id")),
    responses(
        (status = 200, description = "Removed", body = Removed),
        Unauthenticated,
        AdminOnly,
        NoSuchRepository))]
async fn delete_repository(
    State(service): Shared,
    Caller(caller): Caller,
    Path(repo): Path<String>,
) -> Result<Json<Removed>, ApiError> {
    let removed = service.remove(&caller, &repo).await?;
    Ok(Json(Removed { removed }))
}

/// `{"job": …}`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct JobBody {
    /// The job.
    pub job: Job,
}

/// Queues a sync (admin). 409 while one is queued or running.
#[utoipa::path(post, path = "/repositories/{repo}/sync", tag = "repositories",
    params(("repo" = String, Path, description = "Repository name or id")),
    responses(
        (status = 202, description = "Queued; follow it at /api/v1/jobs/{id} or /api/v1/events", body = JobBody),
        Unauthenticated,
        AdminOnly,
        NoSuchRepository,
        (status = 409, description = "A sync is already queued or running", body = ErrorBody)))]
async fn sync_repository(
    State(service): Shared,
    Caller(caller): Caller,
    Path(repo): Path<String>,
) -> Result<(StatusCode, Json<JobBody>), ApiError> {
    let job = service.sync(&caller, &repo).await?;
    Ok((StatusCode::ACCEPTED, Json(JobBody { job })))
}

/// `?skipped=true`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct FilesQuery {
    /// Only files that were not indexed, with the reason.
    #[serde(default)]
    skipped: bool,
}

/// `{"files": …}`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct FileList {
    /// Files with their language, size, symbol count, or skip reason.
    pub files: Vec<File>,
}

/// The files of a repository (or only those skipped, with the reason).
#[utoipa::path(get, path = "/repositories/{repo}/files", tag = "repositories",
    params(("repo" = String, Path, description = "Repository name or id"), FilesQuery),
    responses(
        (status = 200, description = "Files", body = FileList),
        (status = 400, description = "Invalid query string", body = ErrorBody),
        Unauthenticated,
        NoSuchRepository))]
async fn list_files(
    State(service): Shared,
    Caller(caller): Caller,
    Path(repo): Path<String>,
    Params(q): Params<FilesQuery>,
) -> Result<Json<FileList>, ApiError> {
    let files = service.files(&caller, &repo, q.skipped).await?;
    Ok(Json(FileList { files }))
}

/// `?path=src/a.ts`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct FileQuery {
    /// File path relative to the repository root.
    path: String,
    /// On this tracked ref (a branch, tag, commit or worktree the repository tracks
    /// besides its default ref); default: the default ref.
    #[serde(rename = "ref")]
    git_ref: Option<String>,
}

/// `GET …/symbols`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct FileSymbols {
    /// The file.
    pub path: String,
    /// Its symbols in source order (kind, breadcrumb, signature, lines, depth).
    pub symbols: Vec<Symbol>,
}

/// The symbols of one file: its structure without its text.
#[utoipa::path(get, path = "/repositories/{repo}/symbols", tag = "code",
    params(("repo" = String, Path, description = "Repository name or id"), FileQuery),
    responses(
        (status = 200, description = "Symbols", body = FileSymbols),
        (status = 400, description = "Missing `path`", body = ErrorBody),
        Unauthenticated,
        (status = 404, description = "No such repository, ref or file", body = ErrorBody),
        (status = 409, description = "The ref is not indexed yet", body = ErrorBody)))]
async fn file_symbols(
    State(service): Shared,
    Caller(caller): Caller,
    Path(repo): Path<String>,
    Params(file): Params<FileQuery>,
) -> Result<Json<FileSymbols>, ApiError> {
    let symbols = service
        .file_symbols(&caller, &repo, &file.path, file.git_ref.as_deref())
        .await?;
    Ok(Json(FileSymbols {
        path: file.path,
        symbols,
    }))
}
