//! Progress streams (SSE): every sync the caller sees, or one repository's.

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::Shared;
use crate::api::error::{ApiError, NoSuchRepository, SessionsFull, Unauthenticated};
use crate::api::extract::Caller;
use crate::service::records::ProgressEvent;
use crate::service::{ProgressFeed, Service};

pub(in crate::api) fn routes() -> OpenApiRouter<Arc<Service>> {
    OpenApiRouter::new()
        .routes(routes!(events))
        .routes(routes!(repository_events))
}

/// Progress of every sync the caller may see, as server-sent events (`event: progress`,
/// data: a JSON [`ProgressEvent`]).
#[utoipa::path(get, path = "/events", tag = "jobs",
    responses(
        (status = 200, description = "An endless stream of `progress` events", content_type = "text/event-stream", body = ProgressEvent),
        Unauthenticated,
        SessionsFull))]
async fn events(
    State(service): Shared,
    Caller(caller): Caller,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    Ok(sse(service.progress(&caller, None).await?))
}

/// Progress of one repository's syncs, as server-sent events.
#[utoipa::path(get, path = "/repositories/{repo}/events", tag = "jobs",
    params(("repo" = String, Path, description = "Repository name or id")),
    responses(
        (status = 200, description = "An endless stream of `progress` events", content_type = "text/event-stream", body = ProgressEvent),
        Unauthenticated,
        NoSuchRepository,
        SessionsFull))]
async fn repository_events(
    State(service): Shared,
    Caller(caller): Caller,
    Path(repo): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    Ok(sse(service.progress(&caller, Some(&repo)).await?))
}

/// The feed as `progress` events.
fn sse(feed: ProgressFeed) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let stream = futures::stream::unfold(feed, |mut feed| async move {
        let event = feed.next().await?;
        let data = serde_json::to_string(&event).unwrap_or_default();
        Some((Ok(Event::default().event("progress").data(data)), feed))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}
