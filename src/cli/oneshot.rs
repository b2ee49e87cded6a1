//! One-request subcommands: `tools` and `get` — straight on the MCP client, recorded in the
//! ledger, printing JSON (or a sanitized table).
//!
//! Owns: those two commands. Must not follow tasks (that is `follow`) nor answer or cancel
//! them (that is `intent`, through the engine).

use super::args::exit;
use super::output::{print_json_pretty, show};
use super::{Context, fail};
use crate::ledger::EventKind;
use crate::mcp::{Era, McpClient, McpError, TaskId, TaskStatus};
use crate::sanitize::sanitize_line;

fn error_exit(e: &McpError) -> u8 {
    match e {
        McpError::TaskNotFound { .. } | McpError::SessionLost => exit::UNKNOWN_TASK,
        _ => exit::CONNECTION,
    }
}

pub async fn tools(ctx: &Context, json_out: bool) -> u8 {
    let (_, client) = match ctx.connect().await {
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

pub async fn get(ctx: &Context, task_id: &TaskId) -> u8 {
    let spec = match ctx.single() {
        Ok(s) => s,
        Err(code) => return code,
    };
    let (server, id) = (spec.id.clone(), task_id.clone());
    let known = ctx
        .ledger_call(move |l| {
            let rec = l.get(&server, &id)?;
            let session = match rec.as_ref().and_then(|r| r.session) {
                Some(s) => l.session(s)?,
                None => None,
            };
            Ok((rec.is_some(), session))
        })
        .await;
    let (in_ledger, session) = known.unwrap_or((false, None));
    // A legacy task lives in its session: rejoin it rather than starting a new one.
    let connected = match session.filter(|s| !s.lost) {
        Some(s) => {
            let legacy = crate::mcp::LegacySession {
                session_id: s.session_id,
                protocol_version: s.protocol_version,
                capabilities: s.capabilities,
                server_name: s.server_name,
            };
            McpClient::rejoin(spec.endpoint.clone(), spec.options.clone(), &legacy)
                .map(|(c, _)| (spec.clone(), c))
                .map_err(|e| fail(&format!("cannot reach {}: {e}", spec.id), exit::CONNECTION))
        }
        None => ctx.connect().await,
    };
    let (spec, client) = match connected {
        Ok(c) => c,
        Err(code) => return code,
    };
    let code = match fetch(&client, task_id).await {
        Ok(task) => {
            let (era, id, snap) = (client.era(), task_id.clone(), task.clone());
            ctx.record(&spec.id, move |l, server| {
                l.record_tracked(server, Some(era), &id, None)?;
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
            // Only a task the ledger already holds becomes a tombstone: a mistyped id
            // leaves nothing behind.
            let why = match e {
                McpError::TaskNotFound { .. } => Some(crate::ledger::Tombstone::Expired),
                McpError::SessionLost => Some(crate::ledger::Tombstone::SessionLost),
                _ => None,
            };
            if let (Some(why), true) = (why, in_ledger) {
                let id = task_id.clone();
                ctx.record(&spec.id, move |l, server| l.mark_ended(server, &id, why))
                    .await;
            }
            fail(
                &format!("tasks/get: {}", task_id.mask(&e.to_string())),
                error_exit(&e),
            )
        }
    };
    // A legacy session stays open: its other tasks may still be running.
    client.detach().await;
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
