//! Writes to the PostgreSQL ledger: creation, tracking, snapshots, events, answered keys,
//! tombstones — the SQLite backend's rules (`sqlite/write.rs`) over the same columns.
//!
//! Snapshots pass `mcp::judge` (first terminal state wins, older snapshots ignored). Every
//! method is one short transaction under the feed lock (`db.rs`); the `stamp()` trigger
//! stamps each changed task row. A snapshot that changes nothing writes nothing (not even
//! "last seen": a shared database is not written for a poll that learnt nothing). Must not
//! log task ids.

use ::postgres::GenericClient;
use serde_json::{Value, json};

use super::db::{Pg, Row, ensure_task, find_row, now_ms, push_event, to_sql_u64, touch};
use crate::ids::{ServerId, TaskId};
use crate::ledger::{EventKind, NewTask, SnapshotWrite, Tombstone};
use crate::mcp::types::{Era, Task};
use crate::mcp::{Verdict, judge};

/// Status of a task id stored before any snapshot of it (matches the schema default).
const UNKNOWN_STATUS: &str = "unknown";

impl Pg {
    pub fn record_created(&self, new: NewTask<'_>) -> anyhow::Result<()> {
        self.write(|tx| record_created_in(tx, new))
    }

    pub fn record_tracked(
        &self,
        server: &ServerId,
        era: Option<Era>,
        task_id: &TaskId,
        session: Option<i64>,
    ) -> anyhow::Result<()> {
        self.write(|tx| tracked_in(tx, server, era, task_id, session))
    }

    pub fn record_snapshots(&self, batch: &[SnapshotWrite]) -> anyhow::Result<Vec<bool>> {
        let skipped = self.read(|c| {
            batch
                .iter()
                .map(|(server, task, _, _)| skip_unchanged(c, server, task))
                .collect::<anyhow::Result<Vec<bool>>>()
        })?;
        if skipped.iter().all(|s| *s) {
            return Ok(vec![false; batch.len()]);
        }
        let now = now_ms();
        self.write(|tx| {
            batch
                .iter()
                .zip(&skipped)
                .map(|((server, task, source, latency), skip)| {
                    if *skip {
                        return Ok(false);
                    }
                    apply_snapshot(tx, server, task, *source, *latency, now)
                })
                .collect()
        })
    }

    pub fn record_event(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        kind: EventKind,
        latency_ms: Option<u64>,
        detail: &Value,
    ) -> anyhow::Result<()> {
        let now = now_ms();
        self.write(|tx| {
            let (id, _) = ensure_task(tx, server, task_id, None, now)?;
            push_event(tx, id, now, kind, latency_ms, detail)?;
            let cancel_state: Option<i16> = match kind {
                EventKind::CancelRequested => Some(1),
                EventKind::CancelAcked => Some(2),
                _ => None,
            };
            if let Some(state) = cancel_state {
                tx.execute(
                    "UPDATE tasks SET cancel_state = greatest(cancel_state, $2) WHERE id = $1",
                    &[&id, &state],
                )?;
            }
            if kind == EventKind::CancelRequested && detail.get("by").is_some() {
                tx.execute(
                    "UPDATE tasks SET cancel_by = coalesce(cancel_by, $2) WHERE id = $1",
                    &[&id, &detail.to_string()],
                )?;
            }
            if kind != EventKind::Polls {
                touch(tx, id)?;
            }
            Ok(())
        })
    }

    pub fn mark_answered(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        key: &str,
        action: &str,
    ) -> anyhow::Result<()> {
        let now = now_ms();
        self.write(|tx| {
            let (id, _) = ensure_task(tx, server, task_id, None, now)?;
            let added = tx.execute(
                "INSERT INTO answered_keys (task, input_key, action, answered_at)
                 VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                &[&id, &key, &action, &now],
            )?;
            if added > 0 {
                touch(tx, id)?;
            }
            Ok(())
        })
    }

    pub fn mark_ended(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        why: Tombstone,
    ) -> anyhow::Result<()> {
        let now = now_ms();
        self.write(|tx| {
            let (id, _) = ensure_task(tx, server, task_id, None, now)?;
            tombstone(tx, id, now, why)?;
            Ok(())
        })
    }

    pub fn forget_unconfirmed(&self, server: &ServerId, task_id: &TaskId) -> anyhow::Result<bool> {
        self.write(|tx| {
            let n = tx.execute(
                "DELETE FROM tasks WHERE server = $1 AND task_id = $2 AND snapshot IS NULL
                 AND tool IS NULL AND NOT terminal",
                &[&server.as_str(), &task_id.as_str()],
            )?;
            Ok(n > 0)
        })
    }
}

/// Whether a snapshot would change nothing stored (judged on a plain read).
fn skip_unchanged(
    c: &mut impl GenericClient,
    server: &ServerId,
    task: &Task,
) -> anyhow::Result<bool> {
    let Some(row) = find_row(c, server, &task.task_id)? else {
        return Ok(false);
    };
    let Some(prev) = row
        .snapshot
        .as_deref()
        .and_then(|s| serde_json::from_str::<Task>(s).ok())
    else {
        return Ok(false);
    };
    Ok(match judge(Some(&prev), row.terminal, task) {
        Verdict::AfterTerminal | Verdict::Stale => true,
        Verdict::Payload => false,
        Verdict::Accept => prev.same_state(task) && row.status == task.status.as_str(),
    })
}

/// [`Pg::record_tracked`] inside a write transaction.
pub(super) fn tracked_in(
    tx: &mut impl GenericClient,
    server: &ServerId,
    era: Option<Era>,
    task_id: &TaskId,
    session: Option<i64>,
) -> anyhow::Result<()> {
    let now = now_ms();
    let (id, inserted) = ensure_task(tx, server, task_id, era, now)?;
    if inserted {
        push_event(
            tx,
            id,
            now,
            EventKind::Note,
            None,
            &json!({ "tracked": true }),
        )?;
    }
    tx.execute(
        "UPDATE tasks SET era = coalesce(era, $2), session = coalesce(session, $3)
         WHERE id = $1",
        &[&id, &era.map(Era::as_str), &session],
    )?;
    Ok(())
}

/// [`Pg::record_created`] inside a write transaction.
pub(super) fn record_created_in(
    tx: &mut impl GenericClient,
    new: NewTask<'_>,
) -> anyhow::Result<()> {
    let now = now_ms();
    let args = serde_json::to_string(new.arguments)?;
    let task = new.task;
    let parent = new.parent_task.map(TaskId::as_str);
    match find_row(tx, new.server, &task.task_id)? {
        Some(row) => {
            tx.execute(
                "UPDATE tasks SET era = coalesce(era, $2), tool = coalesce(tool, $3),
                        arguments = coalesce(arguments, $4),
                        parent_task = coalesce(parent_task, $5),
                        session = coalesce(session, $6),
                        started_by = coalesce(started_by, $7)
                    WHERE id = $1",
                &[
                    &row.id,
                    &new.era.as_str(),
                    &new.tool,
                    &args,
                    &parent,
                    &new.session,
                    &new.started_by,
                ],
            )?;
        }
        None => {
            let terminal = task.status.is_terminal();
            let id: i64 = tx
                .query_one(
                    "INSERT INTO tasks (server, task_id, era, tool, arguments, recorded_at,
                        server_created_at, snapshot, status, terminal, terminal_at, last_seen,
                        poll_interval_ms, ttl_ms, parent_task, session, started_by)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $6, $12, $13, $14,
                        $15, $16)
                    RETURNING id",
                    &[
                        &new.server.as_str(),
                        &task.task_id.as_str(),
                        &new.era.as_str(),
                        &new.tool,
                        &args,
                        &now,
                        &task.created_at,
                        &serde_json::to_string(task)?,
                        &task.status.as_str(),
                        &terminal,
                        &terminal.then_some(now),
                        &to_sql_u64(task.poll_interval_ms),
                        &to_sql_u64(task.ttl_ms),
                        &parent,
                        &new.session,
                        &new.started_by,
                    ],
                )?
                .get(0);
            let detail = json!({ "tool": new.tool, "status": task.status.as_str() });
            push_event(tx, id, now, EventKind::Created, None, &detail)?;
            push_input_requested(tx, id, now, None, task)?;
        }
    }
    Ok(())
}

/// Turn row `id` into a tombstone; false when it already was one.
pub(super) fn tombstone(
    tx: &mut impl GenericClient,
    id: i64,
    now: i64,
    why: Tombstone,
) -> anyhow::Result<bool> {
    let updated = tx.execute(
        "UPDATE tasks SET expired = true, terminal = true,
             terminal_at = coalesce(terminal_at, $2), end_reason = $3
         WHERE id = $1 AND NOT expired",
        &[&id, &now, &why.as_str()],
    )?;
    if updated > 0 {
        let detail = json!({ "reason": why.as_str() });
        push_event(tx, id, now, EventKind::Expired, None, &detail)?;
    }
    Ok(updated > 0)
}

/// An `input_requested` event listing keys present in `task` but not in `prev`.
fn push_input_requested(
    tx: &mut impl GenericClient,
    id: i64,
    now: i64,
    prev: Option<&Task>,
    task: &Task,
) -> anyhow::Result<()> {
    let fresh: Vec<Value> = task
        .input_requests
        .iter()
        .filter(|(k, _)| prev.is_none_or(|p| !p.input_requests.contains_key(*k)))
        .map(|(k, req)| json!({ "key": k, "method": req.method }))
        .collect();
    if fresh.is_empty() {
        return Ok(());
    }
    push_event(
        tx,
        id,
        now,
        EventKind::InputRequested,
        None,
        &json!({ "requests": fresh }),
    )
}

/// The snapshot acceptance rules, inside the caller's transaction.
fn apply_snapshot(
    tx: &mut impl GenericClient,
    server: &ServerId,
    task: &Task,
    source: EventKind,
    latency_ms: Option<u64>,
    now: i64,
) -> anyhow::Result<bool> {
    let row = match find_row(tx, server, &task.task_id)? {
        Some(row) => row,
        None => Row {
            id: ensure_task(tx, server, &task.task_id, None, now)?.0,
            terminal: false,
            status: UNKNOWN_STATUS.to_string(),
            snapshot: None,
        },
    };
    let id = row.id;
    let prev: Option<Task> = row
        .snapshot
        .as_deref()
        .and_then(|s| serde_json::from_str(s).ok());
    match judge(prev.as_ref(), row.terminal, task) {
        Verdict::Accept => {}
        Verdict::Payload => {
            tx.execute(
                "UPDATE tasks SET snapshot = $2, last_seen = $3 WHERE id = $1",
                &[&id, &serde_json::to_string(task)?, &now],
            )?;
            let detail = json!({ "status": task.status.as_str(), "payload": true });
            push_event(tx, id, now, source, latency_ms, &detail)?;
            return Ok(true);
        }
        Verdict::AfterTerminal | Verdict::Stale => return Ok(false),
    }
    let terminal = task.status.is_terminal();
    if prev.as_ref().is_some_and(|p| p.same_state(task)) {
        return Ok(false);
    }
    tx.execute(
        "UPDATE tasks SET snapshot = $2, status = $3,
             server_created_at = coalesce(server_created_at, $4), last_seen = $5,
             poll_interval_ms = $6, ttl_ms = $7, terminal = $8,
             terminal_at = CASE WHEN $8 THEN $5::bigint ELSE NULL END
         WHERE id = $1",
        &[
            &id,
            &serde_json::to_string(task)?,
            &task.status.as_str(),
            &task.created_at,
            &now,
            &to_sql_u64(task.poll_interval_ms),
            &to_sql_u64(task.ttl_ms),
            &terminal,
        ],
    )?;
    if row.status != task.status.as_str() {
        let detail = json!({
            "from": row.status,
            "to": task.status.as_str(),
            "message": task.status_message,
        });
        push_event(tx, id, now, EventKind::Status, None, &detail)?;
    }
    push_input_requested(tx, id, now, prev.as_ref(), task)?;
    push_event(
        tx,
        id,
        now,
        source,
        latency_ms,
        &json!({ "status": task.status.as_str() }),
    )?;
    Ok(true)
}
