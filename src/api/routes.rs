//! Route handlers: parse the request, check what the caller may do, call the engine,
//! shape the answer. Each handler carries its OpenAPI description (`utoipa::path`).

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::auth::{require_admin, search_scope, visible_repo};
use super::error::ErrorBody;
use super::sessions::StreamPermit;
use super::{ApiError, AppState};
use crate::auth::Principal;
use crate::index::ProgressEvent;
use crate::render::McpContent;
use crate::search::{SearchOptions, SearchResponse};
use crate::store::{FileRecord, Job, JobState, RepoSettings, Repository, SymbolRecord};

type Shared = State<Arc<AppState>>;
type Caller = Extension<Principal>;

/// The body, or the error naming what is wrong with it (400/413/415/422).
fn body<T>(payload: Result<axum::Json<T>, JsonRejection>) -> Result<T, ApiError> {
    payload
        .map(|Json(v)| v)
        .map_err(|e| ApiError::from_body_rejection(e.status(), &e.body_text()))
}

/// The query string, or a 400 naming the parameter.
fn query<T>(q: Result<Query<T>, QueryRejection>) -> Result<T, ApiError> {
    q.map(|Query(v)| v)
        .map_err(|e| ApiError::bad_request(format!("invalid query string: {}", e.body_text())))
}

/// `{"status": …}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Status {
    /// `ok` / `ready`.
    #[schema(value_type = String)]
    pub status: &'static str,
}

/// The process is up.
#[utoipa::path(get, path = "/healthz", tag = "health", security(()),
    responses((status = 200, description = "Alive", body = Status)))]
pub(super) async fn healthz() -> Json<Status> {
    Json(Status { status: "ok" })
}

/// The metadata store answers (migrations are applied when it opens).
#[utoipa::path(get, path = "/readyz", tag = "health", security(()),
    responses(
        (status = 200, description = "Ready", body = Status),
        (status = 503, description = "The metadata store does not answer", body = ErrorBody)))]
pub(super) async fn readyz(State(state): Shared) -> Response {
    // A probe answers within seconds even while the database hangs.
    let ping = tokio::time::timeout(
        std::time::Duration::from_secs(3),
        state.indexer.meta().ping(),
    )
    .await;
    let why = match ping {
        Ok(Ok(())) => return Json(Status { status: "ready" }).into_response(),
        Ok(Err(e)) => e.to_string(),
        Err(_) => "no answer within 3 s".to_string(),
    };
    ApiError {
        status: StatusCode::SERVICE_UNAVAILABLE,
        code: "not_ready",
        message: format!("the metadata store does not answer: {why}"),
    }
    .into_response()
}

pub(super) async fn not_found() -> ApiError {
    ApiError::not_found("no such route; the API lives under /api/v1 (see /docs)")
}

/// `GET /api/v1/repositories`.
#[derive(Debug, Serialize, ToSchema)]
pub struct RepositoryList {
    /// The repositories the caller may see.
    pub repositories: Vec<Repository>,
}

/// Registered repositories the caller may see.
#[utoipa::path(get, path = "/repositories", tag = "repositories",
    responses(
        (status = 200, description = "Repositories", body = RepositoryList),
        (status = 401, description = "No or unknown token", body = ErrorBody)))]
pub(super) async fn list_repositories(
    State(state): Shared,
    Extension(caller): Caller,
) -> Result<Json<RepositoryList>, ApiError> {
    let mut repositories = state.indexer.meta().list_repositories().await?;
    repositories.retain(|r| caller.sees(&r.id));
    Ok(Json(RepositoryList { repositories }))
}

/// `POST /api/v1/repositories`: exactly one of `path` and `git` (documented as
/// [`NewRepositoryDoc`], which says so in the schema).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewRepository {
    /// A directory on the server (must lie under the server's allowed roots, if set).
    pub path: Option<String>,
    /// A git URL (https, ssh or file).
    pub git: Option<String>,
    /// Branch, tag or commit to track (git only; default: the remote's HEAD).
    #[serde(rename = "ref")]
    pub tracked_ref: Option<String>,
    /// Display name (default: the directory or repository name).
    pub name: Option<String>,
    /// Include/exclude globs, limits, languages, watch, fetch interval.
    #[serde(default)]
    pub settings: RepoSettings,
}

/// `POST /api/v1/repositories` as documented: a directory or a git URL.
#[derive(ToSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub enum NewRepositoryDoc {
    /// A directory on the server.
    Path(PathSource),
    /// A git repository.
    Git(GitSource),
}

/// A directory on the server to index.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct PathSource {
    /// The directory (must exist and lie under the server's allowed roots, if set).
    #[schema(min_length = 1, pattern = "\\S")]
    path: String,
    /// Display name (default: the directory's name).
    name: Option<String>,
    /// Include/exclude globs, limits, languages, watch.
    settings: Option<RepoSettings>,
}

/// A git repository to clone and index.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
pub struct GitSource {
    /// A git URL (https, ssh or file).
    #[schema(min_length = 1, pattern = "\\S")]
    git: String,
    /// Branch, tag or commit to track (default: the remote's HEAD).
    #[serde(rename = "ref")]
    tracked_ref: Option<String>,
    /// Display name (default: the repository's name).
    name: Option<String>,
    /// Include/exclude globs, limits, languages, fetch interval.
    settings: Option<RepoSettings>,
}

/// A repository with the job that indexes it.
#[derive(Debug, Serialize, ToSchema)]
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
        (status = 400, description = "Bad source or settings", body = ErrorBody),
        (status = 401, description = "No or unknown token", body = ErrorBody),
        (status = 403, description = "Not an unrestricted admin token", body = ErrorBody),
        (status = 409, description = "The name is taken", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Body is not JSON", body = ErrorBody),
        (status = 422, description = "Body of the wrong shape", body = ErrorBody)))]
pub(super) async fn add_repository(
    State(state): Shared,
    Extension(caller): Caller,
    payload: Result<Json<NewRepository>, JsonRejection>,
) -> Result<(StatusCode, Json<RepositoryCreated>), ApiError> {
    require_admin(&caller)?;
    if !caller.sees_all() {
        return Err(ApiError::forbidden(
            "this token is limited to some repositories and cannot register new ones",
        ));
    }
    let new = body(payload)?;
    let (repository, job) = register(&state, new).await?;
    Ok((
        StatusCode::CREATED,
        Json(RepositoryCreated { repository, job }),
    ))
}

/// Registers `new` and queues its first sync (shared by REST and MCP).
pub(crate) async fn register(
    state: &AppState,
    new: NewRepository,
) -> Result<(Repository, Job), ApiError> {
    let repo = match (&new.path, &new.git) {
        (Some(path), None) => {
            if new.tracked_ref.is_some() {
                return Err(ApiError::bad_request(
                    "`ref` applies to `git` repositories only",
                ));
            }
            state
                .indexer
                .register_path(&PathBuf::from(path), new.name.as_deref(), new.settings)
                .await?
        }
        (None, Some(url)) => {
            state
                .indexer
                .register_git(
                    url,
                    new.name.as_deref(),
                    new.tracked_ref.as_deref(),
                    new.settings,
                )
                .await?
        }
        _ => {
            return Err(ApiError::bad_request(
                "give exactly one of `path` (a directory on the server) or `git` (a URL)",
            ));
        }
    };
    let job = state.jobs.enqueue_sync(&repo.id).await?;
    Ok((repo, job))
}

/// File counts of a repository.
#[derive(Debug, Serialize, ToSchema)]
pub struct FileCounts {
    /// Files indexed.
    pub indexed: i64,
    /// Files seen but not indexed (too large, binary, excluded by limits…).
    pub skipped: i64,
}

/// `GET /api/v1/repositories/{repo}`.
#[derive(Debug, Serialize, ToSchema)]
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
}

/// One repository: status, indexed commit, counts, last error, recent jobs.
#[utoipa::path(get, path = "/repositories/{repo}", tag = "repositories",
    params(("repo" = String, Path, description = "Repository name or id")),
    responses(
        (status = 200, description = "The repository", body = RepositoryDetail),
        (status = 401, description = "No or unknown token", body = ErrorBody),
        (status = 404, description = "No such repository (or not visible to this token)", body = ErrorBody)))]
pub(super) async fn get_repository(
    State(state): Shared,
    Extension(caller): Caller,
    Path(repo): Path<String>,
) -> Result<Json<RepositoryDetail>, ApiError> {
    let repo = visible_repo(&state, &caller, &repo).await?;
    let counts = state.indexer.meta().file_counts(&repo.id).await?;
    let recent_jobs = state.indexer.meta().list_jobs(Some(&repo.id), 5).await?;
    Ok(Json(RepositoryDetail {
        repository: repo,
        files: FileCounts {
            indexed: counts.indexed,
            skipped: counts.skipped,
        },
        symbols: counts.symbols,
        recent_jobs,
    }))
}

/// `PATCH /api/v1/repositories/{repo}`: what to change.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RepositoryUpdate {
    /// New settings (replace the current ones as a whole).
    pub settings: Option<RepoSettings>,
    /// Git repositories: the branch, tag or commit to track.
    #[serde(rename = "ref")]
    pub tracked_ref: Option<String>,
}

/// `{"repository": …}`.
#[derive(Debug, Serialize, ToSchema)]
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
        (status = 401, description = "No or unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin token", body = ErrorBody),
        (status = 404, description = "No such repository", body = ErrorBody),
        (status = 415, description = "Body is not JSON", body = ErrorBody),
        (status = 422, description = "Body of the wrong shape", body = ErrorBody)))]
pub(super) async fn update_repository(
    State(state): Shared,
    Extension(caller): Caller,
    Path(repo): Path<String>,
    payload: Result<Json<RepositoryUpdate>, JsonRejection>,
) -> Result<Json<RepositoryBody>, ApiError> {
    let repo = visible_repo(&state, &caller, &repo).await?;
    require_admin(&caller)?;
    let update = body(payload)?;
    let settings = update.settings.unwrap_or(repo.settings);
    let repository = state
        .indexer
        .update_settings(&repo.id, update.tracked_ref, settings)
        .await?;
    Ok(Json(RepositoryBody { repository }))
}

/// `{"removed": …}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Removed {
    /// The repository that was removed.
    pub removed: Repository,
}

/// Removes a repository and everything indexed for it (admin).
#[utoipa::path(delete, path = "/repositories/{repo}", tag = "repositories",
    params(("repo" = String, Path, description = "Repository name or id")),
    responses(
        (status = 200, description = "Removed", body = Removed),
        (status = 401, description = "No or unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin token", body = ErrorBody),
        (status = 404, description = "No such repository", body = ErrorBody)))]
pub(super) async fn delete_repository(
    State(state): Shared,
    Extension(caller): Caller,
    Path(repo): Path<String>,
) -> Result<Json<Removed>, ApiError> {
    let repo = visible_repo(&state, &caller, &repo).await?;
    require_admin(&caller)?;
    let removed = state.indexer.remove_repo(&repo.id).await?;
    Ok(Json(Removed { removed }))
}

/// `{"job": …}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct JobBody {
    /// The job.
    pub job: Job,
}

/// Queues a sync (admin). 409 while one is queued or running.
#[utoipa::path(post, path = "/repositories/{repo}/sync", tag = "repositories",
    params(("repo" = String, Path, description = "Repository name or id")),
    responses(
        (status = 202, description = "Queued; follow it at /api/v1/jobs/{id} or /api/v1/events", body = JobBody),
        (status = 401, description = "No or unknown token", body = ErrorBody),
        (status = 403, description = "Not an admin token", body = ErrorBody),
        (status = 404, description = "No such repository", body = ErrorBody),
        (status = 409, description = "A sync is already queued or running", body = ErrorBody)))]
pub(super) async fn sync_repository(
    State(state): Shared,
    Extension(caller): Caller,
    Path(repo): Path<String>,
) -> Result<(StatusCode, Json<JobBody>), ApiError> {
    let repo = visible_repo(&state, &caller, &repo).await?;
    require_admin(&caller)?;
    let busy = state
        .indexer
        .meta()
        .list_jobs(Some(&repo.id), 1)
        .await?
        .into_iter()
        .find(|j| matches!(j.state, JobState::Queued | JobState::Running));
    if let Some(job) = busy {
        return Err(ApiError::conflict(format!(
            "a sync of `{}` is already {} (job {}); follow it at /api/v1/jobs/{}",
            repo.name,
            job.state.as_str(),
            job.id,
            job.id
        )));
    }
    let job = state.jobs.enqueue_sync(&repo.id).await?;
    Ok((StatusCode::ACCEPTED, Json(JobBody { job })))
}

/// `?skipped=true`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct FilesQuery {
    /// Only files that were not indexed, with the reason.
    #[serde(default)]
    skipped: bool,
}

/// `{"files": …}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FileList {
    /// Files with their language, size, symbol count, or skip reason.
    pub files: Vec<FileRecord>,
}

/// The files of a repository (or only those skipped, with the reason).
#[utoipa::path(get, path = "/repositories/{repo}/files", tag = "repositories",
    params(("repo" = String, Path, description = "Repository name or id"), FilesQuery),
    responses(
        (status = 200, description = "Files", body = FileList),
        (status = 400, description = "Invalid query string", body = ErrorBody),
        (status = 401, description = "No or unknown token", body = ErrorBody),
        (status = 404, description = "No such repository", body = ErrorBody)))]
pub(super) async fn list_files(
    State(state): Shared,
    Extension(caller): Caller,
    Path(repo): Path<String>,
    q: Result<Query<FilesQuery>, QueryRejection>,
) -> Result<Json<FileList>, ApiError> {
    let q = query(q)?;
    let repo = visible_repo(&state, &caller, &repo).await?;
    let mut files = state.indexer.meta().list_files(&repo.id).await?;
    if q.skipped {
        files.retain(|f| f.skip_reason.is_some());
    }
    Ok(Json(FileList { files }))
}

/// `?path=src/a.ts`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct FileQuery {
    /// File path relative to the repository root.
    path: String,
}

/// `GET …/symbols`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FileSymbols {
    /// The file.
    pub path: String,
    /// Its symbols in source order (kind, breadcrumb, signature, lines, depth).
    pub symbols: Vec<SymbolRecord>,
}

/// The symbols of one file: its structure without its text.
#[utoipa::path(get, path = "/repositories/{repo}/symbols", tag = "code",
    params(("repo" = String, Path, description = "Repository name or id"), FileQuery),
    responses(
        (status = 200, description = "Symbols", body = FileSymbols),
        (status = 400, description = "Missing `path`", body = ErrorBody),
        (status = 401, description = "No or unknown token", body = ErrorBody),
        (status = 404, description = "No such repository or file", body = ErrorBody)))]
pub(super) async fn file_symbols(
    State(state): Shared,
    Extension(caller): Caller,
    Path(repo): Path<String>,
    q: Result<Query<FileQuery>, QueryRejection>,
) -> Result<Json<FileSymbols>, ApiError> {
    let file = query(q)?;
    let repo = visible_repo(&state, &caller, &repo).await?;
    let meta = state.indexer.meta();
    if meta.get_file(&repo.id, &file.path).await?.is_none() {
        return Err(ApiError::not_found(format!(
            "`{}` is not indexed in `{}` (paths are relative to the repository root)",
            file.path, repo.name
        )));
    }
    let symbols = meta.file_symbols(&repo.id, &file.path).await?;
    Ok(Json(FileSymbols {
        path: file.path,
        symbols,
    }))
}

/// `?repository=…&limit=…`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct JobsQuery {
    /// Only this repository's jobs (name or id).
    repository: Option<String>,
    /// Most recent first, at most this many (1–500, default 50).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<u32>,
}

/// `{"jobs": …}`.
#[derive(Debug, Serialize, ToSchema)]
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
        (status = 401, description = "No or unknown token", body = ErrorBody),
        (status = 404, description = "No such repository", body = ErrorBody)))]
pub(super) async fn list_jobs(
    State(state): Shared,
    Extension(caller): Caller,
    q: Result<Query<JobsQuery>, QueryRejection>,
) -> Result<Json<JobList>, ApiError> {
    let q = query(q)?;
    let limit = q.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::bad_request("`limit` must be between 1 and 500"));
    }
    let repo = match &q.repository {
        Some(name) => Some(visible_repo(&state, &caller, name).await?.id),
        None => None,
    };
    let mut jobs = state
        .indexer
        .meta()
        .list_jobs(repo.as_deref(), i64::from(limit))
        .await?;
    jobs.retain(|j| job_visible(&caller, j));
    Ok(Json(JobList { jobs }))
}

fn job_visible(caller: &Principal, job: &Job) -> bool {
    match &job.repo_id {
        Some(id) => caller.sees(id),
        None => caller.sees_all(),
    }
}

/// One job: state, progress, message.
#[utoipa::path(get, path = "/jobs/{id}", tag = "jobs",
    params(("id" = String, Path, description = "Job id")),
    responses(
        (status = 200, description = "The job", body = JobBody),
        (status = 401, description = "No or unknown token", body = ErrorBody),
        (status = 404, description = "No such job", body = ErrorBody)))]
pub(super) async fn get_job(
    State(state): Shared,
    Extension(caller): Caller,
    Path(id): Path<String>,
) -> Result<Json<JobBody>, ApiError> {
    match state.indexer.meta().get_job(&id).await? {
        Some(job) if job_visible(&caller, &job) => Ok(Json(JobBody { job })),
        _ => Err(ApiError::not_found(format!("no job `{id}`"))),
    }
}

/// Progress of every sync the caller may see, as server-sent events (`event: progress`,
/// data: a JSON [`ProgressEvent`]).
#[utoipa::path(get, path = "/events", tag = "jobs",
    responses(
        (status = 200, description = "An endless stream of `progress` events", content_type = "text/event-stream", body = ProgressEvent),
        (status = 401, description = "No or unknown token", body = ErrorBody),
        (status = 429, description = "The token holds as many sessions (streams and MCP sessions) as allowed", body = ErrorBody)))]
pub(super) async fn events(
    State(state): Shared,
    Extension(caller): Caller,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let permit = state.sessions.open_stream(&caller)?;
    Ok(progress_stream(&state, permit, move |e| {
        caller.sees(&e.repo_id)
    }))
}

/// Progress of one repository's syncs, as server-sent events.
#[utoipa::path(get, path = "/repositories/{repo}/events", tag = "jobs",
    params(("repo" = String, Path, description = "Repository name or id")),
    responses(
        (status = 200, description = "An endless stream of `progress` events", content_type = "text/event-stream", body = ProgressEvent),
        (status = 401, description = "No or unknown token", body = ErrorBody),
        (status = 404, description = "No such repository", body = ErrorBody),
        (status = 429, description = "The token holds as many sessions (streams and MCP sessions) as allowed", body = ErrorBody)))]
pub(super) async fn repository_events(
    State(state): Shared,
    Extension(caller): Caller,
    Path(repo): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let id = visible_repo(&state, &caller, &repo).await?.id;
    let permit = state.sessions.open_stream(&caller)?;
    Ok(progress_stream(&state, permit, move |e| e.repo_id == id))
}

/// The progress broadcast as SSE, keeping the events `keep` accepts; `permit` holds the
/// stream's place in its token's session count until the client goes away.
fn progress_stream<K>(
    state: &AppState,
    permit: Option<StreamPermit>,
    keep: K,
) -> Sse<impl Stream<Item = Result<Event, Infallible>> + use<K>>
where
    K: Fn(&ProgressEvent) -> bool + Send + 'static,
{
    let receiver = state.events.subscribe();
    let state = (receiver, keep, permit);
    let stream = futures::stream::unfold(state, |(mut rx, keep, permit)| async move {
        loop {
            match rx.recv().await {
                Ok(event) if keep(&event) => {
                    let data = serde_json::to_string(&event).unwrap_or_default();
                    let sse = Event::default().event("progress").data(data);
                    return Some((Ok(sse), (rx, keep, permit)));
                }
                Ok(_) => continue,
                // A slow subscriber skips what it missed rather than stalling the sync.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// `POST /api/v1/search`: the query and any search option (camelCase, as in
/// [`SearchOptions`]); `repos` may hold names or ids.
#[derive(Debug, Deserialize, ToSchema)]
pub struct SearchRequest {
    /// A natural-language question, or `symbol = [path/file.ts >] [Parent >] name`
    /// (at most 8,192 bytes).
    #[schema(min_length = 1, max_length = 8192, pattern = "\\S")]
    pub query: String,
    /// Budget, thresholds, recall sizes and scope (`repos`, `paths`, `languages`, `kinds`).
    #[serde(flatten)]
    pub options: SearchOptions,
}

/// A search's answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct SearchResult {
    /// The structured response: results with their code and scores, every candidate,
    /// structural metadata, timings.
    pub response: SearchResponse,
    /// The same answer as MCP content: the connection graph, then one snapshot per file.
    pub content: Vec<McpContent>,
}

/// Natural-language search or `symbol =` lookup over the repositories the caller sees.
#[utoipa::path(post, path = "/search", tag = "code",
    request_body = SearchRequest,
    responses(
        (status = 200, description = "Results", body = SearchResult),
        (status = 400, description = "Empty query or invalid option (named)", body = ErrorBody),
        (status = 401, description = "No or unknown token", body = ErrorBody),
        (status = 404, description = "A repository in `repos` does not exist", body = ErrorBody),
        (status = 429, description = "Too many searches at once (see Retry-After)", body = ErrorBody),
        (status = 413, description = "Body too large", body = ErrorBody),
        (status = 415, description = "Body is not JSON", body = ErrorBody),
        (status = 422, description = "Body of the wrong shape", body = ErrorBody)))]
pub(super) async fn search(
    State(state): Shared,
    Extension(caller): Caller,
    payload: Result<Json<Value>, JsonRejection>,
) -> Result<Json<SearchResult>, ApiError> {
    // What the request leaves out comes from the server's defaults, not the built-in ones.
    let given = body(payload)?;
    let Value::Object(given) = given else {
        return Err(ApiError::from_body_rejection(
            StatusCode::UNPROCESSABLE_ENTITY,
            "expected a JSON object",
        ));
    };
    let mut merged = serde_json::to_value(&state.search_defaults)
        .map_err(|e| ApiError::internal(e.to_string()))?;
    if let Value::Object(base) = &mut merged {
        base.extend(given);
    }
    let SearchRequest { query, options } = serde_json::from_value(merged).map_err(|e| {
        ApiError::from_body_rejection(StatusCode::UNPROCESSABLE_ENTITY, &e.to_string())
    })?;
    Ok(Json(run_search(&state, &caller, &query, options).await?))
}

/// Scopes `options` to what `caller` sees, searches and renders (shared by REST and MCP).
pub(crate) async fn run_search(
    state: &AppState,
    caller: &Principal,
    query: &str,
    mut options: SearchOptions,
) -> Result<SearchResult, ApiError> {
    // Sizes and ranges first: nothing (not even a repository name) is looked up for a
    // request that is refused anyway.
    crate::search::validate_request(query, &options)?;
    options.filter.repos = search_scope(state, caller, &options.filter.repos).await?;
    let _slot = state.search_slots.try_acquire().map_err(|_| {
        ApiError::too_many("the server is answering as many searches as it may; retry shortly")
    })?;
    let response = state.searcher.search(query, &options).await?;
    let files = state.searcher.result_files(&response).await?;
    // Rendering is CPU work proportional to the files' size: off the async workers, so a
    // large answer never stalls other requests (health probes included).
    let (response, content) = tokio::task::spawn_blocking(move || {
        let content = crate::render::mcp_content(&response, &files);
        (response, content)
    })
    .await
    .map_err(|e| ApiError::internal(format!("rendering failed: {e}")))?;
    Ok(SearchResult { response, content })
}

/// `?name=…&repository=…`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(super) struct SymbolQuery {
    /// `name`, `Parent > name` or `path/file.ts > Parent > name`.
    #[param(min_length = 1, pattern = "\\S")]
    name: String,
    /// Only this repository (name or id).
    repository: Option<String>,
}

/// Exact symbol lookup (no vectors): every symbol with that name or breadcrumb, complete,
/// with its structural metadata. Same answer shape as search; unknown names give an empty
/// result.
#[utoipa::path(get, path = "/symbols", tag = "code",
    params(SymbolQuery),
    responses(
        (status = 200, description = "Matches (possibly none)", body = SearchResult),
        (status = 400, description = "Missing or empty `name`", body = ErrorBody),
        (status = 401, description = "No or unknown token", body = ErrorBody),
        (status = 404, description = "No such repository", body = ErrorBody),
        (status = 429, description = "Too many searches at once (see Retry-After)", body = ErrorBody)))]
pub(super) async fn get_symbol(
    State(state): Shared,
    Extension(caller): Caller,
    q: Result<Query<SymbolQuery>, QueryRejection>,
) -> Result<Json<SearchResult>, ApiError> {
    let q = query(q)?;
    Ok(Json(
        symbol_lookup(&state, &caller, &q.name, q.repository).await?,
    ))
}

/// `symbol = name` over the caller's repositories (shared by REST and MCP).
pub(crate) async fn symbol_lookup(
    state: &AppState,
    caller: &Principal,
    name: &str,
    repository: Option<String>,
) -> Result<SearchResult, ApiError> {
    if name.trim().is_empty() {
        return Err(ApiError::bad_request(
            "`name` must name a symbol: `name`, `Parent > name` or `path/file.ts > name`",
        ));
    }
    let mut options = state.search_defaults.clone();
    options.filter = Default::default();
    options.filter.repos = repository.into_iter().collect();
    run_search(state, caller, &format!("symbol = {name}"), options).await
}
