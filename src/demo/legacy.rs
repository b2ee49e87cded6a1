//! Legacy (`2025-11-25`) sessions and experimental core tasks: `initialize`, the session
//! GET stream with `notifications/tasks/status`, `tasks/get|result|list|cancel`, and
//! input as real `elicitation/create` requests answered by POSTed responses.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc::{self, UnboundedSender, WeakUnboundedSender};
use tokio_util::sync::CancellationToken;

use super::store::{Outcome, Progress, Scope, Status, StoreError, TaskChange};
use super::tools::{self, TaskSupport, ToolCall, Work};
use super::wire::{
    self, INTERNAL_ERROR, INVALID_PARAMS, LEGACY_VERSION, META_RELATED_TASK, METHOD_NOT_FOUND,
    RpcError, accepts, header_str, http_error,
};
use super::{App, modern::server_info, short};

/// Page size of `tasks/list`.
const PAGE: usize = 10;
/// Protocol versions a legacy request may name in `MCP-Protocol-Version`.
const LEGACY_VERSIONS: [&str; 3] = [LEGACY_VERSION, "2025-06-18", "2025-03-26"];

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
}

fn ok_error(code: i64, message: impl Into<String>) -> RpcError {
    RpcError::new(StatusCode::OK, code, message)
}

/// Why a request has no usable session.
enum NoSession {
    /// No `Mcp-Session-Id` header: 400.
    Missing,
    /// A session id this server does not know (or no longer knows): 404.
    Unknown,
}

impl NoSession {
    fn into_response(self, app: &App) -> Response {
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

/// The session id of a request.
fn session_of(app: &App, headers: &HeaderMap) -> Result<String, NoSession> {
    let sid = header_str(headers, "mcp-session-id").ok_or(NoSession::Missing)?;
    if !app.sessions.lock().contains_key(sid) {
        return Err(NoSession::Unknown);
    }
    Ok(sid.to_string())
}

/// The flat tasks-v1 `Task` from a DetailedTask snapshot.
fn flat_task(snapshot: &Value) -> Value {
    let mut t = Map::new();
    for (from, to) in [
        ("taskId", "taskId"),
        ("status", "status"),
        ("statusMessage", "statusMessage"),
        ("createdAt", "createdAt"),
        ("lastUpdatedAt", "lastUpdatedAt"),
        ("ttlMs", "ttl"),
        ("pollIntervalMs", "pollInterval"),
    ] {
        if let Some(v) = snapshot.get(from) {
            t.insert(to.into(), v.clone());
        }
    }
    Value::Object(t)
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

/// Every POSTed legacy request other than `initialize`.
pub(super) async fn dispatch(app: &Arc<App>, headers: &HeaderMap, msg: &Value) -> Response {
    let sid = match session_of(app, headers) {
        Ok(s) => s,
        Err(no) => return no.into_response(app),
    };
    if let Some(v) = header_str(headers, "mcp-protocol-version")
        && !LEGACY_VERSIONS.contains(&v)
    {
        return http_error(
            StatusCode::BAD_REQUEST,
            -32000,
            &format!("Bad Request: Unsupported protocol version: {v}"),
        );
    }
    let Some(id) = msg.get("id").cloned() else {
        return wire::accepted(); // notifications/initialized, notifications/cancelled, …
    };
    let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
    let empty = json!({});
    let params = msg.get("params").unwrap_or(&empty);
    let scope = Scope::Legacy(sid.clone());
    let task_id = || {
        params
            .get("taskId")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| ok_error(INVALID_PARAMS, "params.taskId must be a string"))
    };
    let result: Result<Value, RpcError> = match method {
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({ "tools": tools::catalog(true) })),
        "tools/call" => return tools_call(app, &sid, &id, params).await,
        "tasks/get" => task_id().and_then(|t| {
            app.stats.tasks_get(&t);
            let stale = app.opts.stale_snapshots;
            let coin = stale && app.coin(0.25);
            app.store
                .read(&t, &scope, stale, coin)
                .map(|s| flat_task(&s))
                .map_err(|_| ok_error(INVALID_PARAMS, "Failed to retrieve task: Task not found"))
        }),
        "tasks/result" => match task_id() {
            Ok(t) => return tasks_result(app, sid, id, t),
            Err(e) => Err(e),
        },
        "tasks/list" => list(app, &scope, params),
        "tasks/cancel" => task_id().and_then(|t| match app.store.cancel_now(&t, &scope) {
            Ok(snapshot) => Ok(flat_task(&snapshot)),
            Err(StoreError::Terminal) => Err(ok_error(
                INVALID_PARAMS,
                "Cannot cancel task: already in a terminal status",
            )),
            Err(_) => Err(ok_error(
                INVALID_PARAMS,
                "Failed to cancel task: Task not found",
            )),
        }),
        other => Err(ok_error(
            METHOD_NOT_FOUND,
            format!("Method not found: {other}"),
        )),
    };
    match result {
        Ok(r) => wire::json_reply(StatusCode::OK, &wire::result_message(&id, r)),
        Err(e) => e.into_response(&id),
    }
}

fn list(app: &App, scope: &Scope, params: &Value) -> Result<Value, RpcError> {
    let start = match params.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(c) => c
            .as_str()
            .and_then(|c| c.strip_prefix("page:"))
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| ok_error(INVALID_PARAMS, "Invalid cursor"))?,
    };
    let all = app.store.list(scope);
    let tasks: Vec<Value> = all.iter().skip(start).take(PAGE).map(flat_task).collect();
    let mut result = json!({ "tasks": tasks });
    if start + PAGE < all.len() {
        result["nextCursor"] = json!(format!("page:{}", start + PAGE));
    }
    Ok(result)
}

async fn tools_call(app: &Arc<App>, sid: &str, id: &Value, params: &Value) -> Response {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    let call = match ToolCall::parse(name, &args) {
        Ok(c) => c,
        Err(e) => return ok_error(e.code, e.message).into_response(id),
    };
    let task = params.get("task").filter(|t| t.is_object());
    let progress_token = params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .cloned();
    match (call.task_support(), task) {
        (TaskSupport::Never, Some(_)) => {
            return ok_error(
                METHOD_NOT_FOUND,
                format!("Tool {name} does not support tasks"),
            )
            .into_response(id);
        }
        (TaskSupport::Required, None) => {
            return ok_error(
                METHOD_NOT_FOUND,
                format!("Tool {name} requires task augmentation"),
            )
            .into_response(id);
        }
        _ => {}
    }
    let sse = call.streams_reply();
    if let Some(task) = task {
        let ttl = task
            .get("ttl")
            .and_then(Value::as_u64)
            .map_or(app.opts.ttl, |t| t.clamp(1, app.opts.ttl));
        let (task_id, snapshot, cancel) =
            app.create_task(Scope::Legacy(sid.to_string()), ttl, &call);
        if let Some(token) = progress_token
            && let Some(s) = app.sessions.lock().get_mut(sid)
        {
            s.progress_tokens.insert(task_id.clone(), token);
        }
        app.spawn_work(task_id, cancel, call);
        let result = json!({
            "task": flat_task(&snapshot),
            "_meta": { "io.modelcontextprotocol/model-immediate-response":
                       "The work has started as a task; results follow when it finishes." }
        });
        let msg = wire::result_message(id, result);
        return if sse {
            wire::sse_reply(futures::stream::iter([msg]))
        } else {
            wire::json_reply(StatusCode::OK, &msg)
        };
    }
    // Inline: progress notifications (if asked for) precede the response on SSE tools.
    let store = app.store.clone();
    let scale = app.opts.time_scale;
    let id = id.clone();
    if !sse {
        let mut work = Work::inline(store, scale, None);
        let msg = inline_message(&id, tools::run(call, &mut work).await);
        return wire::json_reply(StatusCode::OK, &msg);
    }
    let (tx, rx) = mpsc::unbounded_channel::<Value>();
    tokio::spawn(async move {
        let (ptx, mut prx) = mpsc::unbounded_channel::<(String, Progress)>();
        let mut work = Work::inline(store, scale, progress_token.is_some().then_some(ptx));
        let run = tools::run(call, &mut work);
        tokio::pin!(run);
        loop {
            tokio::select! {
                outcome = &mut run => {
                    // Progress sent just before the end still goes out first.
                    while let Ok((message, p)) = prx.try_recv() {
                        if let Some(token) = &progress_token {
                            let _ = tx.send(progress_notification(token, &p, &message));
                        }
                    }
                    let _ = tx.send(inline_message(&id, outcome));
                    break;
                }
                Some((message, p)) = prx.recv() => {
                    if let Some(token) = &progress_token {
                        let _ = tx.send(progress_notification(token, &p, &message));
                    }
                }
                _ = tx.closed() => break,
            }
        }
    });
    wire::sse_reply(wire::channel_stream(rx))
}

fn inline_message(id: &Value, outcome: Outcome) -> Value {
    match outcome {
        Outcome::Result(r) => wire::result_message(id, r),
        Outcome::Error(e) => wire::error_message(id, &e),
        Outcome::Cancelled(m) => {
            wire::error_message(id, &json!({ "code": INTERNAL_ERROR, "message": m }))
        }
    }
}

fn progress_notification(token: &Value, p: &Progress, message: &str) -> Value {
    let mut params = json!({ "progressToken": token, "progress": p.progress, "message": message });
    if let Some(total) = p.total {
        params["total"] = json!(total);
    }
    wire::notification("notifications/progress", params)
}

/// The final message of `tasks/result` for a terminal task.
fn final_message(
    id: &Value,
    task_id: &str,
    status: Status,
    result: Option<Value>,
    error: Option<Value>,
) -> Value {
    if let Some(mut result) = result {
        if let Some(obj) = result.as_object_mut() {
            let meta = obj.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(META_RELATED_TASK.into(), json!({ "taskId": task_id }));
            }
        }
        return wire::result_message(id, result);
    }
    let error = error.unwrap_or_else(|| {
        json!({
            "code": INTERNAL_ERROR,
            "message": format!("Task ended {} without a result", status.as_str()),
            "data": { "taskId": task_id, "status": status.as_str() }
        })
    });
    wire::error_message(id, &error)
}

/// `tasks/result`: JSON at once for a terminal task; otherwise an SSE stream that carries
/// this task's input requests and ends with the result (or error) once the task is done.
fn tasks_result(app: &Arc<App>, sid: String, id: Value, task_id: String) -> Response {
    let scope = Scope::Legacy(sid.clone());
    let mut changes = app.store.subscribe();
    let not_found = || ok_error(INVALID_PARAMS, "Failed to retrieve task: Task not found");
    match app.store.terminal(&task_id, &scope) {
        Err(_) => return not_found().into_response(&id),
        Ok(Some(t)) => {
            let msg = final_message(&id, &task_id, t.status, t.result, t.error);
            return wire::json_reply(StatusCode::OK, &msg);
        }
        Ok(None) => {}
    }
    let (tx, rx) = mpsc::unbounded_channel::<Value>();
    {
        let mut sessions = app.sessions.lock();
        if let Some(s) = sessions.get_mut(&sid) {
            s.result_streams
                .entry(task_id.clone())
                .or_default()
                .push(tx.downgrade());
            s.flush();
        }
    }
    let app = app.clone();
    tokio::spawn(async move {
        let mut recheck = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                c = changes.recv() => match c {
                    Ok(c) if c.task_id != task_id || c.scope != scope => continue,
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                },
                _ = recheck.tick() => {}
                _ = tx.closed() => return,
                _ = app.shutdown.cancelled() => return,
            }
            match app.store.terminal(&task_id, &scope) {
                Ok(None) => continue,
                Ok(Some(t)) => {
                    let _ = tx.send(final_message(&id, &task_id, t.status, t.result, t.error));
                }
                Err(_) => {
                    let _ = tx.send(wire::error_message(&id, &not_found().to_json()));
                }
            }
            return;
        }
    });
    wire::sse_reply(wire::channel_stream(rx))
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
            app.stats.notification_sent();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_task_renames_fields_and_drops_payloads() {
        let detailed = json!({
            "taskId": "t", "status": "completed", "createdAt": "a", "lastUpdatedAt": "b",
            "ttlMs": 5, "pollIntervalMs": 6, "result": {"content": []}
        });
        let flat = flat_task(&detailed);
        assert_eq!(flat["ttl"], 5);
        assert_eq!(flat["pollInterval"], 6);
        assert!(flat.get("result").is_none());
        assert!(flat.get("ttlMs").is_none());
    }

    #[test]
    fn final_message_tags_the_related_task() {
        let m = final_message(
            &json!(3),
            "t1",
            Status::Completed,
            Some(json!({"content": []})),
            None,
        );
        assert_eq!(m["result"]["_meta"][META_RELATED_TASK]["taskId"], "t1");
        let e = final_message(&json!(3), "t1", Status::Cancelled, None, None);
        assert_eq!(e["error"]["code"], INTERNAL_ERROR);
    }
}
