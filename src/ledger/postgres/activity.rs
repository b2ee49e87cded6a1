//! The activity read (`Ledger::activity`) on PostgreSQL: the spans of the tasks alive since
//! a moment in one query, then their kept timeline entries in one more (by the row ids just
//! read, task by task, oldest first), instead of one timeline read per task.
//!
//! Must agree with `ledger::activity_from_reads` (the contract checks it); row-level
//! security applies as to every read (a role sees the activity of the tasks it may see).
//! Only the two detail fields the pictures need are picked out; must not log task ids
//! (none is read).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::db::{Pg, from_ms, from_sql_u64};
use crate::ids::ServerId;
use crate::ledger::activity::clip;
use crate::ledger::{Activity, ActivityEvent, ActivityLimits, EventKind, TaskSpan};

/// The tasks alive since `$1` (running, or ended at or after it), newest first.
const TASKS: &str = "SELECT id, server, recorded_at, terminal, terminal_at,
        CASE WHEN expired THEN 'expired' ELSE status END
   FROM tasks
  WHERE NOT terminal OR terminal_at >= $1
  ORDER BY recorded_at DESC, id DESC
  LIMIT $2";

/// The kept entries of the tasks `$1` (row ids, in the order the spans were read): every
/// status change, and the pushes and polls since `$2`; task by task, each one's in the
/// order they were written; the span's index, the kind as a number, and the detail only
/// where a field of it is needed.
const ENTRIES: &str = "SELECT k.n - 1, e.at,
        CASE e.kind WHEN 'status' THEN 0 WHEN 'push' THEN 1 WHEN 'poll' THEN 2
                    WHEN 'resync' THEN 3 ELSE 4 END,
        e.latency_ms,
        CASE WHEN e.kind IN ('status', 'polls') THEN e.detail END
   FROM unnest($1::bigint[]) WITH ORDINALITY AS k(task, n)
   JOIN events e ON e.task = k.task
  WHERE e.kind IN ('status', 'push', 'poll', 'resync', 'polls')
    AND (e.kind = 'status' OR e.at >= $2)
  ORDER BY k.n, e.id
  LIMIT $3";

impl Pg {
    /// See [`crate::ledger::Ledger::activity`].
    pub fn activity(
        &self,
        since: DateTime<Utc>,
        limits: ActivityLimits,
    ) -> anyhow::Result<Activity> {
        let since_ms = since.timestamp_millis();
        let task_limit = i64::try_from(limits.tasks.saturating_add(1)).unwrap_or(i64::MAX);
        let entry_limit = i64::try_from(limits.events.saturating_add(1)).unwrap_or(i64::MAX);
        self.read(|c| {
            let mut out = Activity::default();
            let mut rows: Vec<i64> = Vec::new();
            let mut servers: HashMap<String, ServerId> = HashMap::new();
            for r in c.query(TASKS, &[&since_ms, &task_limit])? {
                if out.tasks.len() == limits.tasks {
                    out.truncated = true;
                    break;
                }
                rows.push(r.get(0));
                // One id per server, shared by its spans.
                let name: &str = r.get(1);
                let server = match servers.get(name) {
                    Some(s) => s.clone(),
                    None => servers
                        .entry(name.to_string())
                        .or_insert_with(|| ServerId::stored(name))
                        .clone(),
                };
                let started = from_ms(r.get(2));
                let terminal: bool = r.get(3);
                let ended: Option<i64> = r.get(4);
                out.tasks.push(TaskSpan {
                    server,
                    started,
                    ended: terminal.then(|| ended.map_or(started, from_ms)),
                    status: clip(r.get::<_, Option<&str>>(5).unwrap_or("unknown")),
                });
            }
            if rows.is_empty() {
                return Ok(out);
            }
            for r in c.query(ENTRIES, &[&rows, &since_ms, &entry_limit])? {
                if out.events.len() >= limits.events {
                    out.truncated = true;
                    break;
                }
                let task = usize::try_from(r.get::<_, i64>(0)).unwrap_or(usize::MAX);
                if task < out.tasks.len() {
                    out.events.push(entry(task, r));
                }
            }
            Ok(out)
        })
    }
}

/// One kept entry of the task at index `task`, from a row of [`ENTRIES`].
fn entry(task: usize, r: ::postgres::Row) -> ActivityEvent {
    let kind = match r.get::<_, i32>(2) {
        0 => EventKind::Status,
        1 => EventKind::Push,
        2 => EventKind::Poll,
        3 => EventKind::Resync,
        _ => EventKind::Polls,
    };
    // Stored JSON that no longer parses says nothing, as in a timeline read.
    let detail: Value = r
        .get::<_, Option<&str>>(4)
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or(Value::Null);
    ActivityEvent {
        task,
        at: from_ms(r.get(1)),
        kind,
        latency_ms: from_sql_u64(r.get(3)),
        status: (kind == EventKind::Status)
            .then(|| detail.get("to").and_then(Value::as_str).map(clip))
            .flatten(),
        count: if kind == EventKind::Polls {
            detail.get("unchanged").and_then(Value::as_u64).unwrap_or(1)
        } else {
            1
        },
    }
}
