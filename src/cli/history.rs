//! Ledger subcommands: `ls`, `timeline` and `prune`. No network.
//!
//! Owns: presenting ledger records. Task ids are shown short in tables, in full in JSON.

use serde_json::json;

use super::args::exit;
use super::output::{print_json, show, shown, shown_short};
use super::{Context, fail};
use crate::ledger::{EventRecord, TaskRecord, parse_duration};
use crate::sanitize::sanitize_line;

pub async fn ls(ctx: &Context, all: bool, json_out: bool) -> u8 {
    let records = match ctx.ledger_call(move |l| l.list(all)).await {
        Ok(r) => r,
        Err(code) => return code,
    };
    if json_out {
        for r in &records {
            print_json(r);
        }
        return exit::COMPLETED;
    }
    if records.is_empty() {
        show(format!(
            "no tasks{}",
            if all {
                ""
            } else {
                " in progress (use --all for finished ones)"
            }
        ));
        return exit::COMPLETED;
    }
    show(format!(
        "{:<10} {:<16} {:<20} {:<24} SERVER",
        "TASK", "STATUS", "TOOL", "RECORDED"
    ));
    for r in &records {
        let status = if r.expired {
            r.end
                .map_or("expired", |e| match e {
                    crate::ledger::Tombstone::Expired => "expired",
                    crate::ledger::Tombstone::SessionLost => "session lost",
                })
                .to_string()
        } else {
            r.status.clone()
        };
        show(format!(
            "{:<10} {:<16} {:<20} {:<24} {}",
            shown_short(r.task_id.as_str()),
            sanitize_line(&status, 16),
            sanitize_line(r.tool.as_deref().unwrap_or("-"), 20),
            r.recorded_at.format("%Y-%m-%d %H:%M:%S"),
            sanitize_line(r.server.as_str(), 60)
        ));
    }
    exit::COMPLETED
}

/// The one ledger task whose id starts with `prefix`, with its timeline.
pub async fn find_with_timeline(
    ctx: &Context,
    prefix: &str,
) -> Result<(TaskRecord, Vec<EventRecord>), u8> {
    let p = prefix.to_string();
    let found = ctx.ledger_call(move |l| l.find(&p)).await?;
    let rec = match found.as_slice() {
        [one] => one.clone(),
        [] => {
            return Err(fail(
                &format!("no task in the ledger starts with {prefix:?}"),
                exit::UNKNOWN_TASK,
            ));
        }
        _ => {
            return Err(fail(
                &format!(
                    "{} tasks start with {prefix:?}: give more of the id",
                    found.len()
                ),
                exit::USAGE,
            ));
        }
    };
    let (server, id) = (rec.server.clone(), rec.task_id.clone());
    let events = ctx.ledger_call(move |l| l.timeline(&server, &id)).await?;
    Ok((rec, events))
}

pub async fn timeline(ctx: &Context, prefix: &str, json_out: bool) -> u8 {
    let (rec, events) = match find_with_timeline(ctx, prefix).await {
        Ok(found) => found,
        Err(code) => return code,
    };
    if json_out {
        for e in &events {
            let line = json!({ "server": rec.server, "taskId": rec.task_id, "at": e.at, "kind": e.kind, "latencyMs": e.latency_ms, "detail": e.detail });
            print_json(&line);
        }
        return exit::COMPLETED;
    }
    show(format!(
        "task {} on {}",
        shown_short(rec.task_id.as_str()),
        shown(rec.server.as_str())
    ));
    for e in &events {
        let latency = e.latency_ms.map(|l| format!(" {l} ms")).unwrap_or_default();
        let detail = if e.detail.as_object().is_some_and(|o| o.is_empty()) {
            String::new()
        } else {
            sanitize_line(&e.detail.to_string(), 120)
        };
        show(format!(
            "{}  {:<16}{latency:>8}  {detail}",
            e.at.format("%Y-%m-%d %H:%M:%S%.3f"),
            e.kind.as_str()
        ));
    }
    exit::COMPLETED
}

pub async fn prune(ctx: &Context, older_than: &str) -> u8 {
    let age = match parse_duration(older_than) {
        Ok(d) => d,
        Err(e) => return fail(&format!("--older-than: {e:#}"), exit::USAGE),
    };
    match ctx.ledger_call(move |l| l.prune(age)).await {
        Ok(n) => {
            show(format!(
                "pruned {n} finished task{}",
                if n == 1 { "" } else { "s" }
            ));
            exit::COMPLETED
        }
        Err(code) => code,
    }
}
