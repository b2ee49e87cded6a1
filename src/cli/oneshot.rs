//! One-request subcommands: `tools`, `get`, `answer`, `cancel` — straight on the MCP
//! client, each recorded in the ledger, each printing JSON (or a sanitized table).
//!
//! Owns: those four commands. Must not follow tasks (that is `follow`).

use serde_json::{Value, json};
use std::collections::BTreeMap;

use super::args::exit;
use super::output::{normalize_response, print_json, print_json_pretty, show};
use super::{Context, fail};
use crate::ledger::EventKind;
use crate::mcp::{Era, McpClient, McpError, TaskStatus};
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
    if json_out {
        print_json_pretty(&tools);
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
            show(format!("{:<24} {desc}{hint}", sanitize_line(&t.name, 24)));
        }
    }
    client.close().await;
    exit::COMPLETED
}

pub async fn get(ctx: &Context, task_id: &str) -> u8 {
    let (client, _) = match ctx.connect().await {
        Ok(c) => c,
        Err(code) => return code,
    };
    let code = match fetch(&client, task_id).await {
        Ok(task) => {
            let (era, id, snap) = (client.era(), task_id.to_string(), task.clone());
            ctx.record(&client, move |l, server| {
                l.record_tracked(server, Some(era), &id)?;
                l.record_snapshot(server, &snap, EventKind::Poll, None)
                    .map(|_| ())
            })
            .await;
            print_json_pretty(&task);
            match task.status {
                TaskStatus::Completed | TaskStatus::Failed if task.is_tool_error() => {
                    exit::TOOL_ERROR
                }
                TaskStatus::Failed => exit::FAILED,
                TaskStatus::Cancelled => exit::CANCELLED,
                _ => exit::COMPLETED,
            }
        }
        Err(e) => {
            if matches!(e, McpError::TaskNotFound { .. }) {
                let id = task_id.to_string();
                ctx.record(&client, move |l, server| l.mark_expired(server, &id))
                    .await;
            }
            fail(&format!("tasks/get: {e}"), error_exit(&e))
        }
    };
    client.close().await;
    code
}

/// `tasks/get`, plus the payload a legacy server keeps behind `tasks/result`.
async fn fetch(client: &McpClient, task_id: &str) -> Result<crate::mcp::Task, McpError> {
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

pub async fn answer(ctx: &Context, task_id: &str, key: &str, response: &str) -> u8 {
    if ctx.read_only {
        return fail("answer refused: --read-only", exit::USAGE);
    }
    let response: Value = match serde_json::from_str(response).map(normalize_response) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => return fail(&format!("--json: {e}"), exit::USAGE),
        Err(e) => return fail(&format!("--json is not valid JSON: {e}"), exit::USAGE),
    };
    let (client, _) = match ctx.connect().await {
        Ok(c) => c,
        Err(code) => return code,
    };
    let mut responses = BTreeMap::new();
    responses.insert(key.to_string(), response.clone());
    let code = match client.update_task(task_id, &responses).await {
        Ok(()) => {
            let action = response
                .get("action")
                .and_then(Value::as_str)
                .unwrap_or("accept")
                .to_string();
            let (era, id, k) = (client.era(), task_id.to_string(), key.to_string());
            ctx.record(&client, move |l, server| {
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
            print_json(&json!({ "ok": true, "taskId": task_id, "key": key }));
            exit::COMPLETED
        }
        Err(e) => fail(&format!("tasks/update: {e}"), error_exit(&e)),
    };
    client.close().await;
    code
}

pub async fn cancel(ctx: &Context, task_id: &str) -> u8 {
    if ctx.read_only {
        return fail("cancel refused: --read-only", exit::USAGE);
    }
    let (client, _) = match ctx.connect().await {
        Ok(c) => c,
        Err(code) => return code,
    };
    let code = match client.cancel_task(task_id).await {
        Ok(task) => {
            let (era, id) = (client.era(), task_id.to_string());
            ctx.record(&client, move |l, server| {
                l.record_tracked(server, Some(era), &id)?;
                l.record_event(server, &id, EventKind::CancelAcked, None, &json!({}))
            })
            .await;
            let mut ack = json!({ "ok": true, "taskId": task_id });
            if let Some(t) = task {
                ack["status"] = json!(t.status.as_str());
            }
            print_json(&ack);
            exit::COMPLETED
        }
        Err(e) => fail(&format!("tasks/cancel: {e}"), error_exit(&e)),
    };
    client.close().await;
    code
}
