//! Route handlers: parse the request, call the engine, shape the answer.

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ApiError, AppState};
use crate::search::SearchOptions;
use crate::store::{JobState, RepoSettings};

type Shared = State<Arc<AppState>>;

/// The body, or a 400 naming what is wrong with it.
fn body<T>(payload: Result<Json<T>, JsonRejection>) -> Result<T, ApiError> {
    payload
        .map(|Json(v)| v)
        .map_err(|e| ApiError::bad_request(format!("invalid request body: {}", e.body_text())))
}

pub(super) async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}

pub(super) async fn readyz(State(state): Shared) -> Response {
    match state.indexer.meta().ping().await {
        Ok(()) => Json(json!({ "status": "ready" })).into_response(),
        Err(e) => ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            code: "not_ready",
            message: format!("the metadata store does not answer: {e}"),
        }
        .into_response(),
    }
}

pub(super) async fn not_found() -> ApiError {
    ApiError::not_found("no such route; the API lives under /api/v1 (see the README)")
}

pub(super) async fn list_repositories(State(state): Shared) -> Result<Json<Value>, ApiError> {
    let repos = state.indexer.meta().list_repositories().await?;
    Ok(Json(json!({ "repositories": repos })))
}

/// `POST /api/v1/repositories`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct NewRepository {
    /// A directory on the server.
    path: Option<String>,
    /// A git URL.
    git: Option<String>,
    /// Branch, tag or commit to track (git only).
    #[serde(rename = "ref")]
    tracked_ref: Option<String>,
    /// Display name (default: the directory or repository name).
    name: Option<String>,
    /// Settings (include/exclude globs, limits, …).
    #[serde(default)]
    settings: RepoSettings,
}

pub(super) async fn add_repository(
    State(state): Shared,
    payload: Result<Json<NewRepository>, JsonRejection>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let new = body(payload)?;
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
    Ok((
        StatusCode::CREATED,
        Json(json!({ "repository": repo, "job": job })),
    ))
}

pub(super) async fn get_repository(
    State(state): Shared,
    Path(repo): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let repo = state.indexer.find_repo(&repo).await?;
    let files = state.indexer.meta().list_files(&repo.id).await?;
    let indexed = files.iter().filter(|f| f.skip_reason.is_none()).count();
    let symbols: i64 = files.iter().map(|f| f.symbol_count).sum();
    let jobs = state.indexer.meta().list_jobs(Some(&repo.id), 5).await?;
    Ok(Json(json!({
        "repository": repo,
        "files": { "indexed": indexed, "skipped": files.len() - indexed },
        "symbols": symbols,
        "recentJobs": jobs,
    })))
}

pub(super) async fn delete_repository(
    State(state): Shared,
    Path(repo): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let removed = state.indexer.remove_repo(&repo).await?;
    Ok(Json(json!({ "removed": removed })))
}

pub(super) async fn sync_repository(
    State(state): Shared,
    Path(repo): Path<String>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let repo = state.indexer.find_repo(&repo).await?;
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
    Ok((StatusCode::ACCEPTED, Json(json!({ "job": job }))))
}

/// `?path=src/a.ts`.
#[derive(Debug, Deserialize)]
pub(super) struct FileQuery {
    path: String,
}

pub(super) async fn file_symbols(
    State(state): Shared,
    Path(repo): Path<String>,
    Query(file): Query<FileQuery>,
) -> Result<Json<Value>, ApiError> {
    let repo = state.indexer.find_repo(&repo).await?;
    let meta = state.indexer.meta();
    if meta.get_file(&repo.id, &file.path).await?.is_none() {
        return Err(ApiError::not_found(format!(
            "`{}` is not indexed in `{}` (paths are relative to the repository root)",
            file.path, repo.name
        )));
    }
    let symbols = meta.file_symbols(&repo.id, &file.path).await?;
    Ok(Json(json!({ "path": file.path, "symbols": symbols })))
}

pub(super) async fn get_job(
    State(state): Shared,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    match state.indexer.meta().get_job(&id).await? {
        Some(job) => Ok(Json(json!({ "job": job }))),
        None => Err(ApiError::not_found(format!("no job `{id}`"))),
    }
}

/// Every progress event of every sync, as `event: progress` with the event as JSON data.
pub(super) async fn events(
    State(state): Shared,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let receiver = state.events.subscribe();
    let stream = futures::stream::unfold(receiver, |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(event) => {
                    let data = serde_json::to_string(&event).unwrap_or_default();
                    return Some((Ok(Event::default().event("progress").data(data)), rx));
                }
                // A slow subscriber skips what it missed rather than stalling the sync.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// `POST /api/v1/search`: the query and any search option (camelCase, as in
/// [`SearchOptions`]); repositories may be given by name.
#[derive(Debug, Deserialize)]
pub(super) struct SearchRequest {
    query: String,
    #[serde(flatten)]
    options: SearchOptions,
}

pub(super) async fn search(
    State(state): Shared,
    payload: Result<Json<SearchRequest>, JsonRejection>,
) -> Result<Json<Value>, ApiError> {
    let SearchRequest { query, mut options } = body(payload)?;
    let mut repos = Vec::with_capacity(options.filter.repos.len());
    for name in &options.filter.repos {
        repos.push(state.indexer.find_repo(name).await?.id);
    }
    options.filter.repos = repos;
    let response = state.searcher.search(&query, &options).await?;
    let files = state.searcher.result_files(&response).await?;
    let content = crate::render::mcp_content(&response, &files);
    Ok(Json(json!({ "response": response, "content": content })))
}
