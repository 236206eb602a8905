//! Long-lived sessions per token: SSE progress streams and MCP sessions.
//!
//! Both hold server memory for as long as the client keeps them: a token may have at most
//! [`SessionLimits::per_token`] of them open at once (beyond, a 429 that says which limit
//! was hit), and an MCP session with no request for [`SessionLimits::idle`] is closed (its
//! next request gets rmcp's 404, and the client starts a new one) and stops counting at
//! once, whether or not a request has swept it yet. An MCP session belongs to the token
//! that started it: another token's request naming its id gets the 404 an unknown id
//! gets. Streamed Scout answers (`Accept: text/event-stream`) count like progress
//! streams. Sessions of the loopback user (authentication off) are closed when idle too,
//! but not counted: the connection cap bounds them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use crate::api::ApiError;
use crate::auth::Principal;

/// Default for [`SessionLimits::per_token`].
pub const DEFAULT_SESSIONS_PER_TOKEN: usize = 32;
/// Default for [`SessionLimits::idle`].
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(300);

/// Bounds on long-lived sessions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    /// SSE streams plus MCP sessions one token may hold open.
    pub per_token: usize,
    /// An MCP session without a request for this long is closed.
    pub idle: Duration,
}

impl Default for SessionLimits {
    fn default() -> Self {
        Self {
            per_token: DEFAULT_SESSIONS_PER_TOKEN,
            idle: DEFAULT_SESSION_IDLE,
        }
    }
}

/// An open MCP session, as the `/mcp` layer saw it.
#[derive(Debug)]
struct McpSession {
    owner: String,
    last_seen: Instant,
}

#[derive(Debug, Default)]
struct Open {
    /// Open SSE streams per token id.
    streams: HashMap<String, usize>,
    /// Open MCP sessions by session id.
    mcp: HashMap<String, McpSession>,
    /// MCP sessions being started (an `initialize` in flight) per token id.
    starting: HashMap<String, usize>,
}

/// The sessions open now, per token, and the MCP session manager they live in.
#[derive(Debug)]
pub struct Sessions {
    limits: SessionLimits,
    open: Mutex<Open>,
    manager: Arc<LocalSessionManager>,
}

/// Holds one SSE stream's place in its token's count; dropping it (the client went away,
/// the stream ended) frees the place.
#[derive(Debug)]
pub struct StreamPermit {
    sessions: Arc<Sessions>,
    owner: String,
}

impl Drop for StreamPermit {
    fn drop(&mut self) {
        let mut open = self.sessions.lock();
        if let Some(n) = open.streams.get_mut(&self.owner) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.streams.remove(&self.owner);
            }
        }
    }
}

impl Sessions {
    /// Sessions under `limits`; MCP sessions live in a session manager whose own idle
    /// timeout is the same.
    pub fn new(limits: SessionLimits) -> Self {
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive = Some(limits.idle);
        Self {
            limits,
            open: Mutex::new(Open::default()),
            manager: Arc::new(manager),
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> SessionLimits {
        self.limits
    }

    /// The MCP session manager (for the `/mcp` service).
    pub fn manager(&self) -> Arc<LocalSessionManager> {
        self.manager.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        // The counts stay meaningful whatever panicked while they were held.
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whose count a caller's sessions go to; `None`: not counted (no token).
    fn owner(caller: &Principal) -> Option<String> {
        caller.token_id.clone()
    }

    /// How many sessions `owner` holds (MCP sessions idle past the limit no longer count,
    /// swept or not).
    fn held(&self, open: &Open, owner: &str) -> usize {
        open.streams.get(owner).copied().unwrap_or(0)
            + open.starting.get(owner).copied().unwrap_or(0)
            + open
                .mcp
                .values()
                .filter(|s| s.owner == owner && s.last_seen.elapsed() <= self.limits.idle)
                .count()
    }

    fn refusal(&self, held: usize) -> ApiError {
        ApiError::too_many(format!(
            "this token has {held} sessions open (SSE streams and MCP sessions), the most \
             allowed (--max-sessions-per-token {}); close one (end a stream, or DELETE /mcp \
             with its Mcp-Session-Id) or wait for idle MCP sessions to expire after {} s",
            self.limits.per_token,
            self.limits.idle.as_secs()
        ))
    }

    /// Takes a place for one SSE stream of `caller`, or says why not.
    pub fn open_stream(
        self: &Arc<Self>,
        caller: &Principal,
    ) -> Result<Option<StreamPermit>, ApiError> {
        let Some(owner) = Self::owner(caller) else {
            return Ok(None);
        };
        let mut open = self.lock();
        let held = self.held(&open, &owner);
        if held >= self.limits.per_token {
            return Err(self.refusal(held));
        }
        *open.streams.entry(owner.clone()).or_default() += 1;
        Ok(Some(StreamPermit {
            sessions: self.clone(),
            owner,
        }))
    }

    /// Closes MCP sessions idle for longer than the limit; returns their ids.
    async fn sweep(&self) -> Vec<String> {
        let idle: Vec<String> = {
            let mut open = self.lock();
            let expired: Vec<String> = open
                .mcp
                .iter()
                .filter(|(_, s)| s.last_seen.elapsed() > self.limits.idle)
                .map(|(id, _)| id.clone())
                .collect();
            for id in &expired {
                open.mcp.remove(id);
            }
            expired
        };
        for id in &idle {
            let id: rmcp::transport::streamable_http_server::SessionId = id.as_str().into();
            if let Err(e) = self.manager.close_session(&id).await {
                tracing::debug!(session = %id, error = %e, "closing an idle MCP session");
            }
        }
        idle
    }
}

/// The middleware in front of the progress streams: a token's stream takes one of its
/// session places (429 beyond the limit) and gives it back when the client goes away
/// (the permit travels with the response body and is dropped with it).
pub async fn sse_sessions(
    State(sessions): State<Arc<Sessions>>,
    request: Request,
    next: Next,
) -> Response {
    let permit = match request.extensions().get::<Principal>() {
        Some(caller) => match sessions.open_stream(caller) {
            Ok(permit) => permit,
            Err(refused) => return refused.into_response(),
        },
        None => None,
    };
    let response = next.run(request).await;
    let Some(permit) = permit else {
        return response;
    };
    if !response.status().is_success() {
        return response;
    }
    let (parts, body) = response.into_parts();
    let stream = futures::StreamExt::map(body.into_data_stream(), move |chunk| {
        let _held = &permit;
        chunk
    });
    Response::from_parts(parts, axum::body::Body::from_stream(stream))
}

/// The middleware in front of routes that stream only when asked to (Scout): a request
/// that accepts `text/event-stream` is counted as [`sse_sessions`] counts a progress
/// stream; any other passes as it is.
pub async fn streamed_sessions(
    State(sessions): State<Arc<Sessions>>,
    request: Request,
    next: Next,
) -> Response {
    let streams = request
        .headers()
        .get(axum::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"));
    if streams {
        sse_sessions(State(sessions), request, next).await
    } else {
        next.run(request).await
    }
}

/// The `/mcp` layer: counts sessions per token, refuses a new one over the limit, closes
/// idle ones, keeps each session's last use, and answers a request naming another
/// token's session as rmcp answers an unknown one.
pub async fn mcp_sessions(
    State(sessions): State<Arc<Sessions>>,
    request: Request,
    next: Next,
) -> Response {
    sessions.sweep().await;
    let caller = request.extensions().get::<Principal>();
    // Every session is recorded, so idle ones are closed; only tokens are counted.
    let capped = caller.and_then(Sessions::owner).is_some();
    let owner = caller.map(|p| Sessions::owner(p).unwrap_or_default());
    let session_id = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let method = request.method().clone();
    match (&session_id, &owner) {
        (Some(id), _) => {
            let mut open = sessions.lock();
            if let Some(s) = open.mcp.get_mut(id) {
                if Some(&s.owner) != owner.as_ref() {
                    // Not this caller's: the same answer as a session that does not exist.
                    return (
                        axum::http::StatusCode::NOT_FOUND,
                        "Not Found: Session not found",
                    )
                        .into_response();
                }
                s.last_seen = Instant::now();
            }
        }
        // A POST without a session starts one (`initialize`).
        (None, Some(owner)) if method == Method::POST => {
            let mut open = sessions.lock();
            let held = sessions.held(&open, owner);
            if capped && held >= sessions.limits.per_token {
                return sessions.refusal(held).into_response();
            }
            *open.starting.entry(owner.clone()).or_default() += 1;
        }
        _ => {}
    }
    let response = next.run(request).await;
    if let Some(owner) = owner {
        if session_id.is_none() && method == Method::POST {
            let mut open = sessions.lock();
            if let Some(n) = open.starting.get_mut(&owner) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    open.starting.remove(&owner);
                }
            }
        }
        match (&session_id, method) {
            (Some(id), Method::DELETE) => {
                sessions.lock().mcp.remove(id);
            }
            (None, Method::POST) if response.status().is_success() => {
                if let Some(id) = response
                    .headers()
                    .get("mcp-session-id")
                    .and_then(|v| v.to_str().ok())
                {
                    sessions.lock().mcp.insert(
                        id.to_string(),
                        McpSession {
                            owner,
                            last_seen: Instant::now(),
                        },
                    );
                }
            }
            _ => {}
        }
    }
    response
}
