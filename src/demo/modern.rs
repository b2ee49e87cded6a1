//! Modern (`2026-07-28`) request handling: per-request `_meta` and routing-header checks,
//! `server/discover`, `tools/*`, the tasks extension (`tasks/get|update|cancel`) and
//! `subscriptions/listen` push streams.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

use super::catalog::{self, TaskSupport, ToolCall};
use super::store::{Outcome, Scope, StoreError};
use super::tools::{self, Work};
use super::wire::{
    self, LEGACY_VERSION, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, META_SERVER_INFO,
    META_SUBSCRIPTION_ID, MODERN_VERSION, RpcError, TASKS_EXTENSION, UNSUPPORTED_VERSION,
    decode_header_value, header_str,
};
use super::{App, short};

const METHODS: [&str; 6] = [
    "server/discover",
    "tools/list",
    "tools/call",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
];

/// What validation learned about a request.
struct Request<'a> {
    id: Value,
    method: &'a str,
    params: &'a Map<String, Value>,
    tasks_declared: bool,
}

pub(super) fn server_info() -> Value {
    json!({ "name": "taskrail-demo", "version": env!("CARGO_PKG_VERSION") })
}

fn supported_versions(app: &App) -> Vec<&'static str> {
    if app.opts.legacy {
        vec![LEGACY_VERSION]
    } else {
        vec![MODERN_VERSION, LEGACY_VERSION]
    }
}

/// Envelope and header checks, in this order: `_meta` present (`-32602`),
/// `MCP-Protocol-Version` equals `_meta` (`-32020`), version supported (`-32022`),
/// `Mcp-Method` equals the method (`-32020`), method known (`-32601`/404),
/// `Mcp-Name` equals the tool name / task id (`-32020`).
fn validate<'a>(
    app: &App,
    headers: &HeaderMap,
    msg: &'a Value,
    method: &'a str,
) -> Result<Request<'a>, RpcError> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    let params = match msg.get("params") {
        None => EMPTY.get_or_init(Map::new),
        Some(Value::Object(p)) => p,
        Some(_) => return Err(RpcError::malformed("params must be an object")),
    };
    let meta = params.get("_meta").and_then(Value::as_object);
    let version = meta
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .and_then(Value::as_str);
    let caps = meta
        .and_then(|m| m.get(META_CLIENT_CAPABILITIES))
        .and_then(Value::as_object);
    let (Some(version), Some(caps)) = (version, caps) else {
        return Err(RpcError::malformed(format!(
            "params._meta must carry {META_PROTOCOL_VERSION} and {META_CLIENT_CAPABILITIES}"
        )));
    };
    match header_str(headers, "mcp-protocol-version") {
        Some(h) if h == version => {}
        Some(h) => {
            return Err(RpcError::header_mismatch(format!(
                "MCP-Protocol-Version header '{h}' does not match _meta protocolVersion '{version}'"
            )));
        }
        None => {
            return Err(RpcError::header_mismatch(
                "MCP-Protocol-Version header is required",
            ));
        }
    }
    if version != MODERN_VERSION {
        return Err(RpcError::new(
            StatusCode::BAD_REQUEST,
            UNSUPPORTED_VERSION,
            "Unsupported protocol version",
        )
        .with_data(json!({ "supported": supported_versions(app), "requested": version })));
    }
    match header_str(headers, "mcp-method") {
        Some(h) if h == method => {}
        Some(h) => {
            return Err(RpcError::header_mismatch(format!(
                "Mcp-Method header '{h}' does not match method '{method}'"
            )));
        }
        None => return Err(RpcError::header_mismatch("Mcp-Method header is required")),
    }
    let listen = method == "subscriptions/listen" && !app.opts.no_push;
    if !METHODS.contains(&method) && !listen {
        return Err(RpcError::method_not_found(method));
    }
    let name_field = match method {
        "tools/call" => Some("name"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    };
    if let Some(field) = name_field {
        let Some(expected) = params.get(field).and_then(Value::as_str) else {
            return Err(RpcError::malformed(format!(
                "params.{field} must be a string"
            )));
        };
        let given = header_str(headers, "mcp-name").and_then(decode_header_value);
        match given {
            Some(g) if g == expected => {}
            Some(_) => {
                return Err(RpcError::header_mismatch(format!(
                    "Mcp-Name header does not match params.{field}"
                )));
            }
            None => {
                return Err(RpcError::header_mismatch(
                    "Mcp-Name header is required (or its =?base64?…?= form did not decode)",
                ));
            }
        }
    }
    if method == "tools/call" {
        check_param_headers(headers, params)?;
    }
    let tasks_declared = caps
        .get("extensions")
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some_and(Value::is_object);
    Ok(Request {
        id: msg.get("id").cloned().unwrap_or(Value::Null),
        method,
        params,
        tasks_declared,
    })
}

pub(super) async fn dispatch(app: &Arc<App>, headers: &HeaderMap, msg: &Value) -> Response {
    let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
    if msg.get("id").is_none() {
        // Notifications (e.g. notifications/cancelled) need no answer.
        return wire::accepted();
    }
    let req = match validate(app, headers, msg, method) {
        Ok(r) => r,
        Err(e) => {
            let id = msg.get("id").cloned().unwrap_or(Value::Null);
            tracing::debug!(method, code = e.code, message = %e.message, "modern request refused");
            return e.into_response(&id);
        }
    };
    let outcome = match req.method {
        "server/discover" => Ok(reply(&req.id, discover(app))),
        "tools/list" => Ok(reply(
            &req.id,
            json!({ "resultType": "complete", "tools": catalog::catalog(false),
                    "ttlMs": 300_000, "cacheScope": "public" }),
        )),
        "tools/call" => tools_call(app, &req).await,
        "subscriptions/listen" => listen(app, &req),
        _ => task_method(app, &req),
    };
    outcome.unwrap_or_else(|e| e.into_response(&req.id))
}

fn reply(id: &Value, result: Value) -> Response {
    wire::json_reply(StatusCode::OK, &wire::result_message(id, result))
}

/// One response message as a single-event SSE stream.
fn reply_sse(id: &Value, result: Value) -> Response {
    let msg = wire::result_message(id, result);
    wire::sse_reply(futures::stream::iter([msg]))
}

fn discover(app: &App) -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": supported_versions(app),
        "capabilities": {
            "tools": { "listChanged": false },
            "extensions": { TASKS_EXTENSION: {} }
        },
        "instructions": "taskrail demo server: every tool simulates real work. Try render_report, deploy (asks for approval), import_rows (long, cancellable) and survey (every form field kind).",
        "ttlMs": 3_600_000,
        "cacheScope": "public",
        "_meta": { META_SERVER_INFO: server_info() }
    })
}

/// `resultType` first, then the given fields.
fn with_result_type(kind: &str, fields: &Value) -> Value {
    let mut out = Map::new();
    out.insert("resultType".into(), json!(kind));
    if let Some(obj) = fields.as_object() {
        for (k, v) in obj {
            if k != "resultType" {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

async fn tools_call(app: &Arc<App>, req: &Request<'_>) -> Result<Response, RpcError> {
    let name = req.params.get("name").and_then(Value::as_str).unwrap_or("");
    let args = req.params.get("arguments").cloned().unwrap_or(json!({}));
    let call = ToolCall::parse(name, &args)?;
    let support = call.task_support();
    if support == TaskSupport::Required && !req.tasks_declared {
        return Err(RpcError::missing_tasks_capability());
    }
    if req.tasks_declared && support != TaskSupport::Never {
        let (task_id, snapshot, cancel) = app.create_task(Scope::Modern, app.opts.ttl, &call);
        let sse = call.streams_reply();
        app.spawn_work(task_id, cancel, call);
        let result = with_result_type("task", &snapshot);
        return Ok(if sse {
            reply_sse(&req.id, result)
        } else {
            reply(&req.id, result)
        });
    }
    // Answer inline; SSE tools do the work inside the stream so headers go out first.
    let id = req.id.clone();
    let store = app.store.clone();
    let scale = app.opts.time_scale;
    let sse = call.streams_reply();
    let work = async move {
        let mut work = Work::inline(store, scale, None);
        match tools::run(call, &mut work).await {
            Outcome::Result(result) => {
                wire::result_message(&id, with_result_type("complete", &result))
            }
            Outcome::Error(error) => wire::error_message(&id, &error),
            Outcome::Cancelled(msg) => wire::error_message(
                &id,
                &json!({ "code": wire::INTERNAL_ERROR, "message": msg }),
            ),
        }
    };
    if sse {
        return Ok(wire::sse_reply(futures::stream::once(work)));
    }
    Ok(wire::json_reply(StatusCode::OK, &work.await))
}

fn not_found(e: StoreError) -> RpcError {
    match e {
        StoreError::NotFound => RpcError::invalid_params("Failed to retrieve task: Task not found"),
        StoreError::Terminal => RpcError::invalid_params("Task is already terminal"),
        StoreError::DuplicateKey(k) => RpcError::invalid_params(format!("duplicate key {k}")),
    }
}

/// `tasks/get`, `tasks/update`, `tasks/cancel`.
fn task_method(app: &Arc<App>, req: &Request<'_>) -> Result<Response, RpcError> {
    if !req.tasks_declared {
        return Err(RpcError::missing_tasks_capability());
    }
    // validate() checked that taskId is a string.
    let task_id = req
        .params
        .get("taskId")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let ack = json!({ "resultType": "complete" });
    match req.method {
        "tasks/get" => {
            app.stats.tasks_get(&task_id);
            let stale = app.opts.stale_snapshots;
            let coin = stale && app.coin(0.25);
            let snapshot = app
                .store
                .read(&task_id, &Scope::Modern, stale, coin)
                .map_err(not_found)?;
            let result = with_result_type("complete", &snapshot);
            Ok(if app.streams_reply(&task_id) {
                reply_sse(&req.id, result)
            } else {
                reply(&req.id, result)
            })
        }
        "tasks/update" => {
            let Some(responses) = req.params.get("inputResponses").and_then(Value::as_object)
            else {
                return Err(RpcError::invalid_params(
                    "params.inputResponses must be an object",
                ));
            };
            app.store
                .status(&task_id, &Scope::Modern)
                .map_err(not_found)?;
            let responses = responses.clone();
            later(app, move |app| {
                match app.store.answer(&task_id, &Scope::Modern, &responses) {
                    Ok(taken) => tracing::debug!(task = %short(&task_id), taken, "input applied"),
                    Err(e) => tracing::debug!(task = %short(&task_id), ?e, "input not applied"),
                }
            });
            Ok(reply(&req.id, ack))
        }
        _ => {
            app.store
                .status(&task_id, &Scope::Modern)
                .map_err(not_found)?;
            later(app, move |app| {
                let running = app.store.request_cancel(&task_id, &Scope::Modern);
                tracing::debug!(task = %short(&task_id), ?running, "cancel applied");
            });
            Ok(reply(&req.id, ack))
        }
    }
}

/// Apply a mutation now, or after `--ack-delay` (the ack has already gone out).
fn later(app: &Arc<App>, apply: impl FnOnce(&App) + Send + 'static) {
    if app.opts.ack_delay == 0 {
        apply(app);
        return;
    }
    let app = app.clone();
    let delay = Duration::from_millis(app.opts.ack_delay);
    tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        apply(&app);
    });
}

/// `subscriptions/listen`: an SSE stream that starts with the acknowledgement and then
/// carries one `notifications/tasks` per change of an accepted task.
fn listen(app: &Arc<App>, req: &Request<'_>) -> Result<Response, RpcError> {
    let Some(filter) = req.params.get("notifications").and_then(Value::as_object) else {
        return Err(RpcError::malformed(
            "params.notifications must be an object",
        ));
    };
    let requested = filter.get("taskIds");
    if requested.is_some() && !req.tasks_declared {
        return Err(RpcError::missing_tasks_capability());
    }
    let requested = match requested {
        None => None,
        Some(Value::Array(ids)) => Some(ids),
        Some(_) => {
            return Err(RpcError::malformed(
                "notifications.taskIds must be an array",
            ));
        }
    };
    // Subscribe before deciding what is accepted so no later change can slip by.
    let mut changes = app.store.subscribe();
    let mut accepted: Vec<String> = Vec::new();
    for id in requested.into_iter().flatten().filter_map(Value::as_str) {
        if !accepted.iter().any(|a| a == id) && app.store.status(id, &Scope::Modern).is_ok() {
            accepted.push(id.to_string());
        }
    }
    app.stats.listen_opened();
    let sub_id = req.id.clone();
    let mut agreed = Map::new();
    if requested.is_some() {
        agreed.insert("taskIds".into(), json!(accepted));
    }
    let ack = wire::notification(
        "notifications/subscriptions/acknowledged",
        json!({ "_meta": { META_SUBSCRIPTION_ID: sub_id }, "notifications": agreed }),
    );
    tracing::debug!(subscription = %sub_id, tasks = accepted.len(), "listen opened");
    let (tx, rx) = mpsc::unbounded_channel();
    // The receiver is alive until this function returns the stream, so this cannot fail.
    let _ = tx.send(ack);
    let app2 = app.clone();
    let end = app.stream_end();
    tokio::spawn(async move {
        tokio::pin!(end);
        loop {
            let change = tokio::select! {
                c = changes.recv() => c,
                _ = tx.closed() => break,
                _ = &mut end => break,
            };
            let change = match change {
                Ok(c) => c,
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(missed = n, "listen stream fell behind");
                    continue;
                }
                Err(RecvError::Closed) => break,
            };
            if change.scope != Scope::Modern || !accepted.contains(&change.task_id) {
                continue;
            }
            let mut params = Map::new();
            params.insert("_meta".into(), json!({ META_SUBSCRIPTION_ID: sub_id }));
            if let Some(fields) = change.snapshot.as_object() {
                params.extend(fields.clone());
            }
            let note = wire::notification("notifications/tasks", Value::Object(params));
            if tx.send(note).is_err() {
                break;
            }
            app2.stats.notification_sent();
        }
        tracing::debug!(subscription = %sub_id, "listen stream ended");
    });
    Ok(wire::sse_reply(wire::channel_stream(rx)))
}

/// `x-mcp-header` arguments must come with a matching `Mcp-Param-{Name}` header (`-32020`).
fn check_param_headers(headers: &HeaderMap, params: &Map<String, Value>) -> Result<(), RpcError> {
    let tool = params
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let catalog = catalog::catalog(false);
    let Some(props) = catalog
        .as_array()
        .and_then(|tools| tools.iter().find(|t| t["name"] == tool))
        .and_then(|t| t.pointer("/inputSchema/properties"))
        .and_then(Value::as_object)
    else {
        return Ok(());
    };
    for (key, prop) in props {
        let Some(header) = prop.get("x-mcp-header").and_then(Value::as_str) else {
            continue;
        };
        let expected = params
            .get("arguments")
            .and_then(|a| a.get(key))
            .and_then(Value::as_str);
        let given = header_str(
            headers,
            &format!("mcp-param-{}", header.to_ascii_lowercase()),
        )
        .and_then(decode_header_value);
        if expected.is_some() && given.as_deref() != expected {
            return Err(RpcError::header_mismatch(format!(
                "Mcp-Param-{header} header must carry arguments.{key}"
            )));
        }
    }
    Ok(())
}
