//! Ledger subcommands: `ls`, `timeline` and `prune`. No network.
//!
//! Owns: presenting ledger records. Task ids are shown short in tables, in full in JSON.

use serde_json::json;
use std::fmt::Write as _;

use super::args::exit;
use super::output::{finish, record_json, shown, shown_short};
use super::task_ref::{Need, resolve};
use super::{CliResult, Context, fail};
use crate::ledger::{EventRecord, TaskRecord, parse_duration};
use crate::sanitize::sanitize_line;

pub async fn ls(ctx: &Context, all: bool, json_out: bool) -> CliResult {
    let records = ctx.ledger_call(move |l| l.list(all)).await?;
    let mut text = String::new();
    if json_out {
        for r in &records {
            text.push_str(&crate::sanitize::json_line(&record_json(r)));
            text.push('\n');
        }
        return Ok(finish(&text, exit::COMPLETED));
    }
    if records.is_empty() {
        let more = if all {
            ""
        } else {
            " in progress (use --all for finished ones)"
        };
        return Ok(finish(&format!("no tasks{more}\n"), exit::COMPLETED));
    }
    let _ = writeln!(
        text,
        "{:<10} {:<16} {:<20} {:<24} SERVER",
        "TASK", "STATUS", "TOOL", "RECORDED"
    );
    for r in &records {
        let status = ls_status(r);
        let _ = writeln!(
            text,
            "{:<10} {:<16} {:<20} {:<24} {}",
            shown_short(r.task_id.as_str()),
            sanitize_line(&status, 16),
            sanitize_line(r.tool.as_deref().unwrap_or("-"), 20),
            r.recorded_at.format("%Y-%m-%d %H:%M:%S"),
            sanitize_line(r.server.as_str(), 60)
        );
    }
    Ok(finish(&text, exit::COMPLETED))
}

/// A record's status as `ls` shows it: a tombstone's kind, `tool error` for a tool that
/// reported an error (however the server ended it: the outcome the board and the exit
/// codes give, `task_rules::outcome`), else the last status.
fn ls_status(r: &TaskRecord) -> String {
    use crate::mcp::{Outcome, outcome};
    if r.expired {
        return match r.end {
            Some(crate::ledger::Tombstone::SessionLost) => "session lost",
            Some(crate::ledger::Tombstone::ProxyLost) => "lost",
            Some(crate::ledger::Tombstone::Expired) | None => "expired",
        }
        .to_string();
    }
    match outcome(r.snapshot.as_ref(), false) {
        Some(Outcome::ToolError) => "tool error".to_string(),
        _ => r.status.clone(),
    }
}

/// The one ledger task `given` names (full id or unique prefix, on `--server` if given),
/// with its timeline.
pub async fn find_with_timeline(
    ctx: &Context,
    given: &str,
) -> CliResult<(TaskRecord, Vec<EventRecord>)> {
    let server = match ctx.servers.as_slice() {
        [] => None,
        [one] => Some(ctx.spec(one)?.id),
        _ => return Err(fail("this command takes at most one --server", exit::USAGE)),
    };
    let found = resolve(ctx, given, server.as_ref(), Need::Record).await?;
    let Some(rec) = found.record else {
        return Err(fail("the task is not in the ledger", exit::UNKNOWN_TASK));
    };
    let (server, id) = (rec.server.clone(), rec.task_id.clone());
    let events = ctx.ledger_call(move |l| l.timeline(&server, &id)).await?;
    Ok((rec, events))
}

pub async fn timeline(ctx: &Context, given: &str, json_out: bool) -> CliResult {
    let (rec, events) = find_with_timeline(ctx, given).await?;
    let mut text = String::new();
    if json_out {
        for e in &events {
            let line = json!({ "server": rec.server, "taskId": rec.task_id, "at": e.at, "kind": e.kind, "latencyMs": e.latency_ms, "detail": e.detail });
            text.push_str(&crate::sanitize::json_line(&line));
            text.push('\n');
        }
        return Ok(finish(&text, exit::COMPLETED));
    }
    let _ = writeln!(
        text,
        "task {} on {}",
        shown_short(rec.task_id.as_str()),
        shown(rec.server.as_str())
    );
    for e in &events {
        let latency = e.latency_ms.map(|l| format!(" {l} ms")).unwrap_or_default();
        let detail = if e.detail.as_object().is_some_and(|o| o.is_empty()) {
            String::new()
        } else {
            sanitize_line(&e.detail.to_string(), 120)
        };
        let _ = writeln!(
            text,
            "{}  {:<16}{latency:>8}  {detail}",
            e.at.format("%Y-%m-%d %H:%M:%S%.3f"),
            e.kind.as_str()
        );
    }
    Ok(finish(&text, exit::COMPLETED))
}

pub async fn prune(ctx: &Context, older_than: &str) -> CliResult {
    let age = match parse_duration(older_than) {
        Ok(d) => d,
        Err(e) => return Err(fail(&format!("--older-than: {e:#}"), exit::USAGE)),
    };
    match ctx.ledger_call(move |l| l.prune(age)).await {
        Ok(n) => Ok(finish(
            &format!(
                "pruned {n} finished task{}\n",
                if n == 1 { "" } else { "s" }
            ),
            exit::COMPLETED,
        )),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::Task;
    use serde_json::json;

    #[test]
    fn a_tool_error_reads_tool_error_however_the_server_ended_it() {
        let with = |status: &str, result: serde_json::Value| {
            let mut r = crate::cli::task_ref::record_fixture("s", "t1");
            r.snapshot = Some(
                Task::from_wire(&json!({"taskId": "t1", "status": status, "result": result}))
                    .unwrap_or_else(|e| panic!("{e}")),
            );
            r.status = status.into();
            r.terminal = true;
            r
        };
        let error = json!({"content": [], "isError": true});
        assert_eq!(ls_status(&with("completed", error.clone())), "tool error");
        assert_eq!(ls_status(&with("failed", error)), "tool error");
        assert_eq!(
            ls_status(&with("completed", json!({"content": []}))),
            "completed"
        );
        let mut gone = with("working", json!(null));
        gone.expired = true;
        gone.end = Some(crate::ledger::Tombstone::SessionLost);
        assert_eq!(ls_status(&gone), "session lost");
    }
}
