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
    let text = if json_out {
        let list: Vec<Value> = tools.iter().map(tool_json).collect();
        crate::sanitize::json_pretty(&list) + "\n"
    } else {
        tools_table(&tools, columns())
    };
    Ok(finish(&text, exit::COMPLETED))
}

/// The width to print for: `COLUMNS`, else the terminal's, else 100.
fn columns() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c > 0)
        .or_else(crate::prompt::stdout_width)
        .unwrap_or(100)
}

/// The longest tool name printed (the protocol's names are at most 128 characters).
const NAME_MAX: usize = 256;

/// `tools` as a table `columns` wide: every name whole (it is what the user types), padded
/// to the longest, and its task-support hint whole; the description cut to what is left.
fn tools_table(tools: &[crate::mcp::ToolInfo], columns: usize) -> String {
    use unicode_width::UnicodeWidthStr;
    let names: Vec<String> = tools
        .iter()
        .map(|t| sanitize_line(&t.name, NAME_MAX))
        .collect();
    let name_w = names.iter().map(|n| n.width()).max().unwrap_or(0);
    let room = columns.saturating_sub(name_w + 1).max(20);
    let mut text = String::new();
    for (t, name) in tools.iter().zip(&names) {
        let hint = t
            .task_support
            .as_deref()
            .map(|s| format!(" [task: {}]", sanitize_line(s, 20)))
            .unwrap_or_default();
        // The task-support hint stays whole too; the description takes what is left.
        let desc = t.description.as_deref().unwrap_or_default();
        let desc = sanitize_line(desc, room.saturating_sub(hint.width()));
        let line = format!("{desc}{hint}");
        let pad = name_w - name.width();
        let _ = writeln!(text, "{name}{:pad$} {line}", "");
    }
    text
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
            let shown = super::output::public(serde_json::to_value(&task).unwrap_or_default());
            Ok(finish(&(crate::sanitize::json_pretty(&shown) + "\n"), code))
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
) -> CliResult<Option<TaskRecord>> {
    if spec.unreachable.is_some() {
        // Nothing to ask: the process that follows the task keeps the record fresh.
        return Ok(task.record.clone());
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
        return Ok(task.record.clone());
    }
    let Ok(client) = ctx.connect_to(spec).await else {
        return Ok(task.record.clone());
    };
    let fetched = client.get_task(&task.task_id).await;
    let era = client.era();
    client.detach().await;
    let snap = match fetched {
        Ok(snap) => snap,
        // Neither the ledger nor the server knows it: nothing to answer, nothing recorded.
        Err(e @ McpError::TaskNotFound { .. }) if task.record.is_none() => {
            return Err(fail(
                &format!("answer: {}", task.task_id.mask(&e.to_string())),
                exit::UNKNOWN_TASK,
            ));
        }
        Err(_) => return Ok(task.record.clone()),
    };
    ctx.record(&spec.id, |l, server| {
        track_snapshot(l, server, era, &task.task_id, &snap)
    })
    .await;
    Ok(ctx
        .ledger_call(|l| l.get(&spec.id, &task.task_id))
        .await
        .ok()
        .flatten())
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

#[cfg(test)]
mod table_tests {
    use super::*;

    #[test]
    fn tool_names_are_never_cut_the_description_is() {
        let tool = |name: &str, d: &str| crate::mcp::ToolInfo {
            name: name.into(),
            title: None,
            description: Some(d.into()),
            input_schema: serde_json::json!({}),
            task_support: Some("optional".into()),
        };
        let long = "trigger-elicitation-request-async";
        let tools = [tool(long, &"words ".repeat(40)), tool("x", "short")];
        for columns in [20, 60, 80, 200] {
            let table = tools_table(&tools, columns);
            let lines: Vec<&str> = table.lines().collect();
            assert!(
                lines[0].starts_with(&format!("{long} ")),
                "{columns}: {table}"
            );
            let pad = " ".repeat(long.len() - 1);
            assert!(lines[1].starts_with(&format!("x{pad} ")), "{table}");
            if columns >= 60 {
                assert!(lines[1].contains(" short [task: optional]"), "{table}");
                assert!(
                    lines.iter().all(|l| l.chars().count() <= columns),
                    "{table}"
                );
            }
        }
        assert!(
            tools_table(&tools, 80)
                .lines()
                .all(|l| l.ends_with("[task: optional]"))
        );
    }
}
