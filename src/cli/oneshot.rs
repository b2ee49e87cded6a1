//! One-request subcommands: `tools`, `get`, `answer`, `cancel` — straight on the MCP
//! client, each recorded in the ledger, each printing JSON (or a sanitized table).
//!
//! Owns: those four commands. Must not follow tasks (that is `follow`).

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::answer_check::{KeyState, check_response, key_state};
use super::args::exit;
use super::output::{finish, normalize_response, say, tool_json};
use super::task_ref::TaskRef;
use super::{Context, fail};
use crate::engine::ServerSpec;
use crate::ledger::EventKind;
use crate::mcp::{Era, McpClient, McpError, TaskId, TaskStatus};
use crate::sanitize::sanitize_line;

fn error_exit(e: &McpError) -> u8 {
    match e {
        McpError::TaskNotFound { .. } => exit::UNKNOWN_TASK,
        _ => exit::CONNECTION,
    }
}

pub async fn tools(ctx: &Context, json_out: bool) -> u8 {
    let (client, _) = match ctx.connect().await {
        Ok(c) => c,
        Err(code) => return code,
    };
    let tools = match client.list_tools().await {
        Ok(t) => t,
        Err(e) => return fail(&format!("tools/list: {e}"), exit::CONNECTION),
    };
    client.close().await;
    let mut text = String::new();
    if json_out {
        let list: Vec<Value> = tools.iter().map(tool_json).collect();
        text = crate::sanitize::json_pretty(&list) + "\n";
    } else {
        for t in &tools {
            let desc = t
                .description
                .as_deref()
                .map(|d| sanitize_line(d, 80))
                .unwrap_or_default();
            let hint = t
                .task_support
                .as_deref()
                .map(|s| format!(" [task: {}]", sanitize_line(s, 20)))
                .unwrap_or_default();
            let _ = writeln!(text, "{:<24} {desc}{hint}", sanitize_line(&t.name, 24));
        }
    }
    finish(&text, exit::COMPLETED)
}

pub async fn get(ctx: &Context, spec: &ServerSpec, task: &TaskRef) -> u8 {
    let client = match ctx.connect_to(spec).await {
        Ok(c) => c,
        Err(code) => return code,
    };
    let task_id = &task.task_id;
    let code = match fetch(&client, task_id).await {
        Ok(task) => {
            let (era, id, snap) = (client.era(), task_id.clone(), task.clone());
            ctx.record(&spec.id, move |l, server| {
                l.record_tracked(server, Some(era), &id)?;
                l.record_snapshot(server, &snap, EventKind::Poll, None)
                    .map(|_| ())
            })
            .await;
            let code = match task.status {
                TaskStatus::Completed | TaskStatus::Failed if task.is_tool_error() => {
                    exit::TOOL_ERROR
                }
                TaskStatus::Failed => exit::FAILED,
                TaskStatus::Cancelled => exit::CANCELLED,
                _ => exit::COMPLETED,
            };
            finish(&(crate::sanitize::json_pretty(&task) + "\n"), code)
        }
        Err(e) => {
            if matches!(e, McpError::TaskNotFound { .. }) {
                let id = task_id.clone();
                ctx.record(&spec.id, move |l, server| l.mark_expired(server, &id))
                    .await;
            }
            fail(&format!("tasks/get: {e}"), error_exit(&e))
        }
    };
    client.close().await;
    code
}

/// `tasks/get`, plus the payload a legacy server keeps behind `tasks/result`.
async fn fetch(client: &McpClient, task_id: &TaskId) -> Result<crate::mcp::Task, McpError> {
    let mut task = client.get_task(task_id).await?;
    if client.era() == Era::Legacy
        && task.status.is_terminal()
        && task.result.is_none()
        && task.error.is_none()
    {
        match client.task_result(task_id).await? {
            Ok(r) => task.result = Some(r),
            Err(e) => task.error = Some(e),
        }
    }
    Ok(task)
}

/// What `answer` is asked to send.
pub struct AnswerArgs<'a> {
    pub key: &'a str,
    pub response: &'a str,
    pub force: bool,
}

pub async fn answer(ctx: &Context, spec: &ServerSpec, task: &TaskRef, args: AnswerArgs<'_>) -> u8 {
    let AnswerArgs {
        key,
        response,
        force,
    } = args;
    if ctx.read_only || spec.read_only {
        return fail("answer refused: --read-only", exit::USAGE);
    }
    let response: Value = match serde_json::from_str(response) {
        Ok(v) => normalize_response(v),
        Err(e) => return fail(&format!("--json is not valid JSON: {e}"), exit::USAGE),
    };
    let client = match ctx.connect_to(spec).await {
        Ok(c) => c,
        Err(code) => return code,
    };
    let task_id = &task.task_id;
    let record = refreshed_record(ctx, &client, spec, task, key).await;
    let state = key_state(record.as_ref(), key);
    let ignored = state.ignored_because();
    let shown_key = sanitize_line(key, 80);
    if let (Some(why), false) = (&ignored, force) {
        client.close().await;
        return fail(
            &format!(
                "not sent: task {}, key {shown_key}: {why}, so the server would ignore the answer (--force sends it anyway)",
                task_id.prefix()
            ),
            exit::USAGE,
        );
    }
    if let (KeyState::Pending(request), false) = (&state, force)
        && let Err(p) = check_response(request, &response)
    {
        client.close().await;
        return fail(
            &format!(
                "not sent: field {}: {} (the request's requestedSchema; --force sends it anyway)",
                p.field, p.why
            ),
            exit::USAGE,
        );
    }
    let mut responses = BTreeMap::new();
    responses.insert(key.to_string(), response.clone());
    let code = match client.update_task(task_id, &responses).await {
        Ok(()) => {
            let action = response
                .get("action")
                .and_then(Value::as_str)
                .unwrap_or("accept")
                .to_string();
            let (era, id, k) = (client.era(), task_id.clone(), key.to_string());
            ctx.record(&spec.id, move |l, server| {
                l.record_tracked(server, Some(era), &id)?;
                l.mark_answered(server, &id, &k, &action)?;
                l.record_event(
                    server,
                    &id,
                    EventKind::InputSent,
                    None,
                    &json!({ "key": k, "action": action }),
                )
            })
            .await;
            let mut ack = json!({ "ok": true, "taskId": task_id, "key": key });
            if let Some(why) = &ignored {
                say!("the server acknowledged the answer but ignores it: {why}");
                ack["ignored"] = json!(why);
            }
            finish(&(crate::sanitize::json_line(&ack) + "\n"), exit::COMPLETED)
        }
        Err(e) => fail(&format!("tasks/update: {e}"), error_exit(&e)),
    };
    client.close().await;
    code
}

/// The ledger's record of the task, refreshed with one `tasks/get` when it cannot tell
/// whether `key` is asked (no snapshot, or a snapshot without the key that is not
/// answered either: the server may have asked since).
async fn refreshed_record(
    ctx: &Context,
    client: &McpClient,
    spec: &ServerSpec,
    task: &TaskRef,
    key: &str,
) -> Option<crate::ledger::TaskRecord> {
    let stale = match key_state(task.record.as_ref(), key) {
        KeyState::Pending(_) | KeyState::Answered => false,
        KeyState::NotAsked { .. } | KeyState::Unknown => true,
    };
    if !stale || client.era() == Era::Legacy {
        return task.record.clone();
    }
    let Ok(snap) = client.get_task(&task.task_id).await else {
        return task.record.clone();
    };
    let (era, id) = (client.era(), task.task_id.clone());
    ctx.record(&spec.id, move |l, server| {
        l.record_tracked(server, Some(era), &id)?;
        l.record_snapshot(server, &snap, EventKind::Poll, None)
            .map(|_| ())
    })
    .await;
    let (server, id) = (spec.id.clone(), task.task_id.clone());
    ctx.ledger_call(move |l| l.get(&server, &id))
        .await
        .ok()
        .flatten()
}

pub async fn cancel(ctx: &Context, spec: &ServerSpec, task: &TaskRef) -> u8 {
    if ctx.read_only || spec.read_only {
        return fail("cancel refused: --read-only", exit::USAGE);
    }
    let client = match ctx.connect_to(spec).await {
        Ok(c) => c,
        Err(code) => return code,
    };
    let task_id = &task.task_id;
    let code = match client.cancel_task(task_id).await {
        Ok(task) => {
            let (era, id) = (client.era(), task_id.clone());
            ctx.record(&spec.id, move |l, server| {
                l.record_tracked(server, Some(era), &id)?;
                l.record_event(server, &id, EventKind::CancelAcked, None, &json!({}))
            })
            .await;
            let mut ack = json!({ "ok": true, "taskId": task_id });
            if let Some(t) = task {
                ack["status"] = json!(t.status.as_str());
            }
            finish(&(crate::sanitize::json_line(&ack) + "\n"), exit::COMPLETED)
        }
        Err(e) => fail(&format!("tasks/cancel: {e}"), error_exit(&e)),
    };
    client.close().await;
    code
}
