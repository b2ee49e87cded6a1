//! The activity read (`Ledger::activity`) in SQL: the spans of the tasks alive since a
//! moment in one query, then their kept timeline entries (through the per-task index for a
//! few tasks, in one pass over the entries for many), with the two JSON fields needed
//! picked out by SQLite (no detail is parsed here).
//!
//! Must agree with `ledger::activity_from_reads` (the contract checks it); must not log
//! task ids (none is read).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use rusqlite::{named_params, params};

use super::db::Db;
use super::tx::{from_ms, from_sql_u64};
use crate::ids::ServerId;
use crate::ledger::activity::clip;
use crate::ledger::{Activity, ActivityEvent, ActivityLimits, EventKind, TaskSpan};

/// Up to this many tasks, their entries are looked up task by task; past it, read in one
/// pass over every entry.
const LOOKUPS: usize = 2_000;

/// The status a change moved to, and the count of a `polls` entry (columns 3 and 4).
macro_rules! ENTRY_FIELDS {
    () => {
        "CASE WHEN kind = 'status' AND json_valid(detail)
              THEN json_extract(detail, '$.to') END,
         CASE WHEN kind = 'polls' AND json_valid(detail)
              THEN json_extract(detail, '$.unchanged') END"
    };
}

/// An entry's kind as a number (no string read per row); the kinds are `ENTRY_FILTER`'s.
macro_rules! ENTRY_KIND {
    () => {
        "CASE kind WHEN 'status' THEN 0 WHEN 'push' THEN 1 WHEN 'poll' THEN 2
                   WHEN 'resync' THEN 3 ELSE 4 END"
    };
}

/// The entries kept: every status change, and the pushes and polls since `:since`.
macro_rules! ENTRY_FILTER {
    () => {
        "kind IN ('status', 'push', 'poll', 'resync', 'polls')
         AND (kind = 'status' OR at >= :since)"
    };
}

impl Db {
    /// See [`crate::ledger::Ledger::activity`].
    pub fn activity(
        &self,
        since: DateTime<Utc>,
        limits: ActivityLimits,
    ) -> anyhow::Result<Activity> {
        self.flush_pending()?;
        let since_ms = since.timestamp_millis();
        let mut out = Activity::default();
        let mut rows: Vec<i64> = Vec::new();
        let mut servers: HashMap<String, ServerId> = HashMap::new();
        {
            let mut stmt = self.conn.prepare_cached(
                "SELECT id, server, recorded_at, terminal, terminal_at,
                        CASE WHEN expired = 1 THEN 'expired' ELSE status END
                   FROM tasks
                  WHERE terminal = 0 OR terminal_at >= ?1
                  ORDER BY recorded_at DESC, id DESC
                  LIMIT ?2",
            )?;
            let limit = i64::try_from(limits.tasks.saturating_add(1)).unwrap_or(i64::MAX);
            let mut q = stmt.query(params![since_ms, limit])?;
            while let Some(r) = q.next()? {
                if out.tasks.len() == limits.tasks {
                    out.truncated = true;
                    break;
                }
                let started = from_ms(r.get(2)?);
                let terminal: bool = r.get(3)?;
                let ended: Option<i64> = r.get(4)?;
                rows.push(r.get(0)?);
                // Borrowed from the row; one id per server, shared by its spans.
                let name = r.get_ref(1)?.as_str().unwrap_or("");
                let server = match servers.get(name) {
                    Some(s) => s.clone(),
                    None => servers
                        .entry(name.to_string())
                        .or_insert_with(|| ServerId::stored(name))
                        .clone(),
                };
                out.tasks.push(TaskSpan {
                    server,
                    started,
                    ended: terminal.then(|| ended.map_or(started, from_ms)),
                    status: clip(r.get_ref(5)?.as_str().unwrap_or("unknown")),
                });
            }
        }
        let push =
            |out: &mut Activity, task: usize, r: &rusqlite::Row<'_>| -> rusqlite::Result<bool> {
                if out.events.len() >= limits.events {
                    out.truncated = true;
                    return Ok(false);
                }
                // The kind by its number in `ENTRY_KIND`.
                let kind = match r.get::<_, i64>(1)? {
                    0 => EventKind::Status,
                    1 => EventKind::Push,
                    2 => EventKind::Poll,
                    3 => EventKind::Resync,
                    _ => EventKind::Polls,
                };
                let status = match r.get_ref(3)? {
                    rusqlite::types::ValueRef::Text(t) => std::str::from_utf8(t).ok().map(clip),
                    _ => None,
                };
                let unchanged: Option<i64> = r.get::<_, Option<i64>>(4).unwrap_or(None);
                out.events.push(ActivityEvent {
                    task,
                    at: from_ms(r.get(0)?),
                    kind,
                    latency_ms: from_sql_u64(r.get(2)?),
                    status,
                    count: if kind == EventKind::Polls {
                        unchanged.and_then(|n| u64::try_from(n).ok()).unwrap_or(1)
                    } else {
                        1
                    },
                });
                Ok(true)
            };
        if rows.len() <= LOOKUPS {
            // Few tasks: each one's entries through the per-task index.
            let mut stmt = self.conn.prepare_cached(concat!(
                "SELECT at, ",
                ENTRY_KIND!(),
                ", latency_ms, ",
                ENTRY_FIELDS!(),
                " FROM events WHERE task = :task AND ",
                ENTRY_FILTER!(),
                " ORDER BY id"
            ))?;
            'tasks: for (i, row) in rows.iter().enumerate() {
                let mut q = stmt.query(named_params! { ":task": row, ":since": since_ms })?;
                while let Some(r) = q.next()? {
                    if !push(&mut out, i, r)? {
                        break 'tasks;
                    }
                }
            }
        } else {
            // Many: one pass over the entries in the order they were written (so each
            // task's come oldest first), keeping those of the tasks read.
            let index: HashMap<i64, usize> =
                rows.iter().enumerate().map(|(i, row)| (*row, i)).collect();
            let mut stmt = self.conn.prepare_cached(concat!(
                "SELECT at, ",
                ENTRY_KIND!(),
                ", latency_ms, ",
                ENTRY_FIELDS!(),
                ", task FROM events WHERE ",
                ENTRY_FILTER!(),
                " ORDER BY id"
            ))?;
            let mut q = stmt.query(named_params! { ":since": since_ms })?;
            while let Some(r) = q.next()? {
                let Some(&i) = index.get(&r.get::<_, i64>(5)?) else {
                    continue;
                };
                if !push(&mut out, i, r)? {
                    break;
                }
            }
        }
        Ok(out)
    }
}
