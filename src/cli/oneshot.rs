//! One-request subcommands: `tools` and `get` — straight on the MCP client, recorded in the
//! ledger, printing JSON (or a sanitized table); and the one `tasks/get` that refreshes
//! the ledger's record before `answer` judges a key by it.
//!
//! Owns: those two commands. Must not follow tasks (that is `follow`) nor answer or cancel
//! them (that is `intent`, through the engine).

use serde_json::Value;
use std::fmt::Write as _;

use super::answer_check::{KeyState, key_state};
use super::args::exit;
use super::output::{finish, say, tool_json};
use super::task_ref::TaskRef;
use super::{CliResult, Context, fail};
use crate::engine::ServerSpec;
use crate::ledger::{EventKind, TaskRecord};
use crate::mcp::{Era, McpClient, McpError, TaskId};
use crate::sanitize::sanitize_line;

fn error_exit(e: &McpError) -> u8 {
    match e {
        McpError::TaskNotFound { .. } | McpError::SessionLost => exit::UNKNOWN_TASK,
        _ => exit::CONNECTION,
    }
}

pub async fn tools(ctx: &Context, json_out: bool) -> CliResult {
    let (_, client) = ctx.connect().await?;
    let tools = match client.list_tools().await {
        Ok(t) => t,
        Err(e) => return Err(fail(&format!("tools/list: {e}"), exit::CONNECTION)),
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
    Ok(finish(&text, exit::COMPLETED))
}

pub async fn get(ctx: &Context, spec: ServerSpec, task: &TaskRef) -> CliResult {
    let task_id = &task.task_id;
    if let Some(why) = &spec.unreachable {
        return from_ledger(ctx, &spec, task, why).await;
    }
    let known = match ctx.ledger_call(|l| l.get(&spec.id, task_id)).await {
        Ok(rec) => match rec.as_ref().and_then(|r| r.session) {
            Some(s) => ctx.ledger_call(|l| l.session(s)).await,
            None => Ok(None),
        }
        .map(|session| (rec.is_some(), session)),
        Err(e) => Err(e),
    };
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
        None => ctx.connect_to(&spec).await.map(|c| (spec.clone(), c)),
    };
    let (spec, client) = connected?;
    let code = match fetch(&client, task_id).await {
        Ok(task) => {
            let era = client.era();
            ctx.record(&spec.id, |l, server| {
                track_snapshot(l, server, era, task_id, &task)
            })
            .await;
            let code = exit::of(crate::mcp::outcome(Some(&task), false));
            Ok(finish(&(crate::sanitize::json_pretty(&task) + "\n"), code))
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
                ctx.record(&spec.id, |l, server| l.mark_ended(server, task_id, why))
                    .await;
            }
            Err(fail(
                &format!("tasks/get: {}", task_id.mask(&e.to_string())),
                error_exit(&e),
            ))
        }
    };
    // A legacy session stays open: its other tasks may still be running.
    client.detach().await;
    code
}

/// `get` of a task on a server this process cannot reach: what the process that follows
/// it last recorded in the ledger (said on stderr, with who follows it).
async fn from_ledger(ctx: &Context, spec: &ServerSpec, task: &TaskRef, why: &str) -> CliResult {
    let (server, id) = (spec.id.clone(), task.task_id.clone());
    let rec = ctx.ledger_call(move |l| l.get(&server, &id)).await?;
    let Some(snapshot) = rec.as_ref().and_then(|r| r.snapshot.as_ref()) else {
        return Err(fail(
            &format!(
                "{} cannot be reached from this process ({why}), and the ledger has no \
                 snapshot of task {} yet",
                sanitize_line(spec.id.as_str(), 100),
                task.task_id
            ),
            exit::CONNECTION,
        ));
    };
    let (server, id, me) = (
        spec.id.clone(),
        task.task_id.clone(),
        crate::ledger::Owner::new(),
    );
    let follower = ctx
        .ledger_call(move |l| l.follower(&server, &id, &me))
        .await
        .ok()
        .flatten();
    let seen = rec
        .as_ref()
        .and_then(|r| r.last_seen)
        .map(|t| format!(", last recorded {}", t.format("%H:%M:%S UTC")))
        .unwrap_or_default();
    let who = match follower {
        Some(_) => "followed by another taskrail process",
        None => "no running process follows it now",
    };
    say!(
        "from the ledger ({who}{seen}): {} cannot be reached from this process",
        sanitize_line(spec.id.as_str(), 100)
    );
    let code = exit::of(crate::mcp::outcome(
        Some(snapshot),
        rec.as_ref().is_some_and(|r| r.expired),
    ));
    Ok(finish(
        &(crate::sanitize::json_pretty(snapshot) + "\n"),
        code,
    ))
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
            Ok(r) => task.result = Some(Box::new(r)),
            Err(e) => task.error = Some(Box::new(e)),
        }
    }
    Ok(task)
}

/// The ledger's record of the task, refreshed with one `tasks/get` when it cannot tell
/// whether `key` is asked (no snapshot, or one without the key that is not answered
/// either: the server may have asked since). A legacy task's requests come on its
/// session, not in snapshots: its record is taken as it is.
pub async fn record_for_answer(
    ctx: &Context,
    spec: &ServerSpec,
    task: &TaskRef,
    key: &str,
) -> Option<TaskRecord> {
    if spec.unreachable.is_some() {
        // Nothing to ask: the process that follows the task keeps the record fresh.
        return task.record.clone();
    }
    let stale = match key_state(task.record.as_ref(), key) {
        KeyState::Pending(_) | KeyState::Answered => false,
        KeyState::NotAsked { .. } | KeyState::Unknown => true,
    };
    let legacy = task
        .record
        .as_ref()
        .is_some_and(|r| r.era == Some(Era::Legacy));
    if !stale || legacy {
        return task.record.clone();
    }
    let Ok(client) = ctx.connect_to(spec).await else {
        return task.record.clone();
    };
    let fetched = client.get_task(&task.task_id).await;
    let era = client.era();
    client.detach().await;
    let Ok(snap) = fetched else {
        return task.record.clone();
    };
    ctx.record(&spec.id, |l, server| {
        track_snapshot(l, server, era, &task.task_id, &snap)
    })
    .await;
    ctx.ledger_call(|l| l.get(&spec.id, &task.task_id))
        .await
        .ok()
        .flatten()
}

/// Track task `id` and store its snapshot `snap` (both called now, in this order).
fn track_snapshot(
    l: &dyn crate::ledger::Ledger,
    server: &crate::ids::ServerId,
    era: Era,
    id: &TaskId,
    snap: &crate::mcp::types::Task,
) -> crate::ledger::Op<()> {
    let tracked = l.record_tracked(server, Some(era), id, None);
    let stored = l.record_snapshot(server, snap, EventKind::Poll, None);
    Box::pin(async move {
        tracked.await?;
        stored.await.map(drop)
    })
}
