//! Legacy (`2025-11-25`) requests inside a session: tools with `params.task`, and the
//! experimental core tasks methods `tasks/get|result|list|cancel` (v1 shapes: nested
//! CreateTaskResult, flat Task, blocking `tasks/result`).

use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

use super::App;
use super::catalog::{self, TaskSupport, ToolCall};
use super::legacy_wire::{flat_task, progress_notification};
use super::session::session_of;
use super::store::{Outcome, Progress, Scope, Status, StoreError};
use super::tools::{self, Work};
use super::wire::{
    self, INTERNAL_ERROR, INVALID_PARAMS, LEGACY_VERSION, META_RELATED_TASK, METHOD_NOT_FOUND,
    RpcError, header_str, http_error,
};

/// Page size of `tasks/list`.
const PAGE: usize = 10;
/// Protocol versions a legacy request may name in `MCP-Protocol-Version`.
const LEGACY_VERSIONS: [&str; 3] = [LEGACY_VERSION, "2025-06-18", "2025-03-26"];

fn ok_error(code: i64, message: impl Into<String>) -> RpcError {
    RpcError::new(StatusCode::OK, code, message)
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
        "tools/list" => Ok(json!({ "tools": catalog::catalog(true) })),
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
        if let Some(token) = progress_token {
            app.sessions.set_progress_token(sid, &task_id, token);
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
    app.sessions.open_result_stream(&sid, &task_id, &tx);
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

#[cfg(test)]
mod tests {
    use super::*;

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
