//! `/scout`: what depends on a symbol, rated and explained; as one JSON answer, or as
//! server-sent events (`progress` per rated link, then `result`) when the client accepts
//! `text/event-stream`.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::Shared;
use crate::api::error::{
    ApiError, BodyRejected, ErrorBody, ErrorDetail, TooManySearches, Unauthenticated,
};
use crate::api::extract::{Body, Caller};
use crate::scout::{Risk, ScoutResponse};
use crate::service::{ScoutRequest, Service};

pub(in crate::api) fn routes() -> OpenApiRouter<Arc<Service>> {
    OpenApiRouter::new().routes(routes!(scout))
}

/// `POST /api/v1/scout`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScoutBody {
    /// What to find out: "what breaks if I add a variant to ShapeKind", a symbol's name,
    /// or `symbol = path/file.ts > Parent > name`.
    #[schema(min_length = 1, max_length = 8192)]
    pub query: String,
    /// Interest tags; links with these tags are explored first. The structural rater
    /// gives `exhaustive`, `pattern-match`, `record`, `implements`, `overrides`,
    /// `subclass`, `call-site`, `type-only`, `reference`, `import`, `re-export`, `test`.
    #[serde(default)]
    #[schema(max_items = 20)]
    pub tags: Vec<String>,
    /// Most symbols to explore (1–200, default 20).
    #[schema(minimum = 1, maximum = 200)]
    pub budget: Option<u32>,
    /// Only these repositories (names or ids); default: every one the token sees.
    #[serde(default)]
    #[schema(max_items = 100)]
    pub repositories: Vec<String>,
    /// On this ref the repositories track besides their default one (a branch, tag,
    /// commit or worktree); default: each repository's default ref.
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
}

/// One `progress` event of a streamed scout: a link was rated.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScoutProgress {
    /// Symbols explored so far.
    pub explored: u32,
    /// `path:line` of the link.
    pub location: String,
    /// The symbol there (`Parent > name`).
    pub symbol: String,
    /// Its rating's risk.
    pub risk: Risk,
    /// Its rating's tags.
    pub tags: Vec<String>,
    /// Whether Scout explores further from it.
    pub expanded: bool,
}

/// Explores what depends on the symbol a question names (callers, references,
/// implementations, overrides, exhaustive `switch`es and `Record`s over it), rates every
/// link and answers with a summary and the places that must change with it. With
/// `Accept: text/event-stream` the answer streams: a `progress` event per rated link,
/// then one `result` event (the same JSON), or an `error` event.
#[utoipa::path(post, path = "/scout", tag = "code",
    request_body = ScoutBody,
    responses(
        (status = 200, description = "Summary, pointers, and what the exploration did; or, streamed, `progress` events then a `result`",
            content((ScoutResponse = "application/json"), (ScoutProgress = "text/event-stream"))),
        (status = 400, description = "Empty query, bad budget or tags (named)", body = ErrorBody),
        Unauthenticated,
        (status = 404, description = "A repository in `repositories`, or the ref, does not exist", body = ErrorBody),
        (status = 409, description = "The ref is not indexed yet", body = ErrorBody),
        BodyRejected,
        TooManySearches))]
async fn scout(
    State(service): Shared,
    Caller(caller): Caller,
    headers: HeaderMap,
    Body(body): Body<ScoutBody>,
) -> Result<Response, ApiError> {
    let request = ScoutRequest {
        query: body.query,
        tags: body.tags,
        budget: body.budget,
        repositories: body.repositories,
        git_ref: body.git_ref,
    };
    let streamed = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"));
    if !streamed {
        return Ok(Json(service.scout(&caller, request, |_, _| {}).await?).into_response());
    }
    request.check()?;
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel::<Event>();
    tokio::spawn(async move {
        let progress = sender.clone();
        let result = service
            .scout(&caller, request, move |visit, explored| {
                let event = ScoutProgress {
                    explored,
                    location: visit.link.location(),
                    symbol: visit.link.neighbour.breadcrumb.clone(),
                    risk: Risk::of(&visit.rubric),
                    tags: visit.rubric.tags.clone(),
                    expanded: visit.expanded,
                };
                let _ = progress.send(sse_event("progress", &event));
            })
            .await;
        let last = match result {
            Ok(answer) => sse_event("result", &answer),
            Err(e) => {
                let e = ApiError::from(e);
                sse_event(
                    "error",
                    &ErrorBody {
                        error: ErrorDetail {
                            code: e.code,
                            message: e.message,
                        },
                    },
                )
            }
        };
        let _ = sender.send(last);
    });
    let stream = futures::stream::unfold(receiver, |mut receiver| async move {
        let event = receiver.recv().await?;
        Some((Ok::<_, Infallible>(event), receiver))
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}

/// An SSE event named `name` with `data` as JSON.
fn sse_event(name: &str, data: &impl Serialize) -> Event {
    Event::default()
        .event(name)
        .data(serde_json::to_string(data).unwrap_or_default())
}
