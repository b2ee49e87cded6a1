//! Legacy (`2025-11-25`) sessions: `initialize`, `Mcp-Session-Id` checks, DELETE, the
//! session GET stream with `notifications/tasks/status`, and routing of server→client
//! `elicitation/create` requests (an open `tasks/result` stream first, else GET) together
//! with the POSTed responses that answer them.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc::{self, UnboundedSender, WeakUnboundedSender};
use tokio_util::sync::CancellationToken;

use super::legacy_wire::{flat_task, progress_notification};
use super::store::{Scope, TaskChange};
use super::wire::{self, LEGACY_VERSION, META_RELATED_TASK, accepts, header_str, http_error};
use super::{App, modern::server_info, short};

/// A server→client request still waiting for its response.
struct Outstanding {
    id: u64,
    task_id: String,
    key: String,
    message: Value,
    sent_on: Option<WeakUnboundedSender<Value>>,
}

/// Whether a weakly held stream is still open.
fn live(stream: &WeakUnboundedSender<Value>) -> bool {
    stream.upgrade().is_some_and(|s| !s.is_closed())
}

impl Outstanding {
    fn delivered(&self) -> bool {
        self.sent_on.as_ref().is_some_and(live)
    }
}

#[derive(Default)]
struct Session {
    get_stream: Option<UnboundedSender<Value>>,
    /// Weak, so a finished `tasks/result` stream ends when its own producer lets go.
    result_streams: HashMap<String, Vec<WeakUnboundedSender<Value>>>,
    outstanding: Vec<Outstanding>,
    asked: HashSet<(String, String)>,
    progress_tokens: HashMap<String, Value>,
    next_request_id: u64,
    closed: CancellationToken,
}

impl Session {
    /// The live stream a message about `task_id` should go out on: an open `tasks/result`
    /// stream for the task, else the GET stream.
    fn route(&mut self, task_id: &str) -> Option<UnboundedSender<Value>> {
        if let Some(streams) = self.result_streams.get_mut(task_id) {
            streams.retain(live);
            if let Some(s) = streams.last().and_then(WeakUnboundedSender::upgrade) {
                return Some(s);
            }
        }
        if self
            .get_stream
            .as_ref()
            .is_some_and(UnboundedSender::is_closed)
        {
            self.get_stream = None;
        }
        self.get_stream.clone()
    }

    /// Send (or re-send) every request that is not sitting on a live stream.
    fn flush(&mut self) {
        let pending: Vec<usize> = (0..self.outstanding.len())
            .filter(|&i| !self.outstanding[i].delivered())
            .collect();
        for i in pending {
            let task_id = self.outstanding[i].task_id.clone();
            if let Some(stream) = self.route(&task_id)
                && stream.send(self.outstanding[i].message.clone()).is_ok()
            {
                self.outstanding[i].sent_on = Some(stream.downgrade());
            }
        }
    }
}

/// Every legacy session of one server.
#[derive(Default)]
pub(crate) struct Sessions {
    inner: Mutex<HashMap<String, Session>>,
}

impl Sessions {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Session>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remember the progress token of a task-augmented call.
    pub(super) fn set_progress_token(&self, sid: &str, task_id: &str, token: Value) {
        if let Some(s) = self.lock().get_mut(sid) {
            s.progress_tokens.insert(task_id.to_string(), token);
        }
    }

    /// Register an open `tasks/result` stream and send it this task's pending requests.
    pub(super) fn open_result_stream(
        &self,
        sid: &str,
        task_id: &str,
        stream: &UnboundedSender<Value>,
    ) {
        if let Some(s) = self.lock().get_mut(sid) {
            s.result_streams
                .entry(task_id.to_string())
                .or_default()
                .push(stream.downgrade());
            s.flush();
        }
    }
}

/// Why a request has no usable session.
pub(super) enum NoSession {
    /// No `Mcp-Session-Id` header: 400.
    Missing,
    /// A session id this server does not know (or no longer knows): 404.
    Unknown,
}

impl NoSession {
    pub(super) fn into_response(self, app: &App) -> Response {
        match self {
            NoSession::Missing if app.opts.legacy => http_error(
                StatusCode::BAD_REQUEST,
                -32000,
                "Bad Request: Server not initialized",
            ),
            NoSession::Missing => http_error(
                StatusCode::BAD_REQUEST,
                -32000,
                "Bad Request: Mcp-Session-Id header is required",
            ),
            NoSession::Unknown => http_error(StatusCode::NOT_FOUND, -32001, "Session not found"),
        }
    }
}

/// 2025-11-25: tell the session of `task_id` that the URL-mode elicitation `id` is done
/// (on the task's `tasks/result` stream, else the GET stream).
pub(super) fn elicitation_complete(app: &App, task_id: &str, id: &str) {
    let Some(Scope::Legacy(sid)) = app.store.scope_of(task_id) else {
        return;
    };
    let note = wire::notification(
        "notifications/elicitation/complete",
        json!({ "elicitationId": id }),
    );
    if let Some(stream) = app
        .sessions
        .lock()
        .get_mut(&sid)
        .and_then(|s| s.route(task_id))
    {
        let _ = stream.send(note);
    }
}

/// The session id of a request.
pub(super) fn session_of(app: &App, headers: &HeaderMap) -> Result<String, NoSession> {
    let sid = header_str(headers, "mcp-session-id").ok_or(NoSession::Missing)?;
    if !app.sessions.lock().contains_key(sid) {
        return Err(NoSession::Unknown);
    }
    Ok(sid.to_string())
}

/// `initialize`: a new session; the reply carries `Mcp-Session-Id`.
pub(super) fn initialize(app: &Arc<App>, _headers: &HeaderMap, msg: &Value) -> Response {
    let id = msg.get("id").cloned().unwrap_or(Value::Null);
    let sid = uuid::Uuid::new_v4().simple().to_string();
    let session = Session::default();
    let closed = session.closed.clone();
    // Subscribe before the session exists so no change of its tasks is missed.
    let changes = app.store.subscribe();
    app.sessions.lock().insert(sid.clone(), session);
    tokio::spawn(watch_session(app.clone(), sid.clone(), closed, changes));
    tracing::debug!(session = %short(&sid), "legacy session opened");
    let result = json!({
        "protocolVersion": LEGACY_VERSION,
        "capabilities": {
            "tools": { "listChanged": false },
            "tasks": { "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } }
        },
        "serverInfo": server_info(),
        "instructions": "taskrail demo server (legacy session): task tools take params.task; input arrives as elicitation/create requests."
    });
    let mut response = wire::json_reply(StatusCode::OK, &wire::result_message(&id, result));
    if let Ok(value) = HeaderValue::from_str(&sid) {
        response.headers_mut().insert("mcp-session-id", value);
    }
    response
}

/// A JSON-RPC response POSTed by the client (the answer to an `elicitation/create`).
pub(super) fn client_response(app: &Arc<App>, headers: &HeaderMap, msg: &Value) -> Response {
    let sid = match session_of(app, headers) {
        Ok(s) => s,
        Err(no) => return no.into_response(app),
    };
    let id = msg.get("id").cloned().unwrap_or(Value::Null);
    let found = {
        let mut sessions = app.sessions.lock();
        sessions.get_mut(&sid).and_then(|s| {
            let pos = s.outstanding.iter().position(|o| json!(o.id) == id)?;
            let o = s.outstanding.remove(pos);
            Some((o.task_id, o.key))
        })
    };
    let Some((task_id, key)) = found else {
        tracing::debug!(%id, "response to an unknown server request ignored");
        return wire::accepted();
    };
    let answer = match msg.get("result") {
        Some(result) => result.clone(),
        None => json!({ "action": "cancel" }),
    };
    let mut responses = Map::new();
    responses.insert(key, answer);
    let applied = app.store.answer(&task_id, &Scope::Legacy(sid), &responses);
    tracing::debug!(task = %short(&task_id), ?applied, "elicitation answered");
    wire::accepted()
}

/// GET with a session: the server-to-client stream (`notifications/tasks/status`, input
/// requests of tasks without an open `tasks/result`). A new GET replaces the old stream.
pub(super) fn open_get_stream(app: &Arc<App>, headers: &HeaderMap) -> Response {
    let sid = match session_of(app, headers) {
        Ok(s) => s,
        Err(no) => return no.into_response(app),
    };
    if app.opts.no_push {
        return (StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed").into_response();
    }
    if !accepts(headers, "text/event-stream") {
        return http_error(
            StatusCode::NOT_ACCEPTABLE,
            wire::INVALID_REQUEST,
            "Not Acceptable: Accept must list text/event-stream",
        );
    }
    let (tx, rx) = mpsc::unbounded_channel::<Value>();
    {
        let mut sessions = app.sessions.lock();
        if let Some(s) = sessions.get_mut(&sid) {
            s.get_stream = Some(tx);
            s.flush();
        }
    }
    app.stats.listen_opened();
    tracing::debug!(session = %short(&sid), "legacy GET stream opened");
    let end = app.stream_end();
    wire::sse_reply(wire::channel_stream(rx).take_until(end))
}

/// DELETE: end the session, its streams and the work of its unfinished tasks.
pub(super) fn end_session(app: &Arc<App>, headers: &HeaderMap) -> Response {
    let sid = match session_of(app, headers) {
        Ok(s) => s,
        Err(no) => return no.into_response(app),
    };
    if let Some(session) = app.sessions.lock().remove(&sid) {
        session.closed.cancel();
    }
    let scope = Scope::Legacy(sid.clone());
    for task in app.store.list(&scope) {
        if let Some(t) = task.get("taskId").and_then(Value::as_str) {
            let _ = app.store.request_cancel(t, &scope);
        }
    }
    tracing::debug!(session = %short(&sid), "legacy session ended");
    StatusCode::OK.into_response()
}

/// Follow the session's task changes: status notifications on the GET stream, progress
/// for calls that carried a progress token, and `elicitation/create` for new input keys.
async fn watch_session(
    app: Arc<App>,
    sid: String,
    closed: CancellationToken,
    mut changes: tokio::sync::broadcast::Receiver<Arc<TaskChange>>,
) {
    let scope = Scope::Legacy(sid.clone());
    loop {
        let change = tokio::select! {
            c = changes.recv() => c,
            _ = closed.cancelled() => break,
            _ = app.shutdown.cancelled() => break,
        };
        let change = match change {
            Ok(c) => c,
            Err(RecvError::Lagged(n)) => {
                tracing::warn!(missed = n, "legacy session watcher fell behind");
                continue;
            }
            Err(RecvError::Closed) => break,
        };
        if change.scope != scope {
            continue;
        }
        let mut sessions = app.sessions.lock();
        let Some(session) = sessions.get_mut(&sid) else {
            break;
        };
        on_change(&app, session, &change);
    }
}

fn on_change(app: &App, session: &mut Session, change: &TaskChange) {
    let task_id = change.task_id.as_str();
    let snapshot = &change.snapshot;
    if !app.opts.no_push
        && let Some(get) = &session.get_stream
    {
        let note = wire::notification("notifications/tasks/status", flat_task(snapshot));
        if get.send(note).is_ok() {
            app.stats.notification_sent(snapshot);
        } else {
            session.get_stream = None;
        }
    }
    if let (Some(p), Some(token)) = (&change.progress, session.progress_tokens.get(task_id)) {
        let message = snapshot
            .get("statusMessage")
            .and_then(Value::as_str)
            .unwrap_or("");
        let note = progress_notification(token, p, message);
        if let Some(stream) = session.route(task_id) {
            let _ = stream.send(note);
        }
    }
    if let Some(requests) = snapshot.get("inputRequests").and_then(Value::as_object) {
        for (key, request) in requests {
            if !session.asked.insert((task_id.to_string(), key.clone())) {
                continue;
            }
            session.next_request_id += 1;
            let mut params = request.get("params").cloned().unwrap_or(json!({}));
            if let Some(obj) = params.as_object_mut() {
                obj.insert(
                    "_meta".into(),
                    json!({ META_RELATED_TASK: { "taskId": task_id } }),
                );
            }
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or("elicitation/create");
            let message = json!({
                "jsonrpc": "2.0",
                "id": session.next_request_id,
                "method": method,
                "params": params
            });
            session.outstanding.push(Outstanding {
                id: session.next_request_id,
                task_id: task_id.to_string(),
                key: key.clone(),
                message,
                sent_on: None,
            });
        }
        session.flush();
    }
    let terminal = snapshot
        .get("status")
        .and_then(Value::as_str)
        .is_some_and(|s| matches!(s, "completed" | "failed" | "cancelled"));
    if terminal {
        session.outstanding.retain(|o| o.task_id != task_id);
        session.progress_tokens.remove(task_id);
        session.result_streams.retain(|_, v| {
            v.retain(live);
            !v.is_empty()
        });
    }
}
