//! Writes to the ledger: creation, tracking, snapshots, events, answered keys, tombstones.
//!
//! Snapshots pass `mcp::judge` (first terminal state wins, older snapshots ignored). Every
//! method is one short transaction committed before it returns, and stamps the rows it
//! changed for the other processes sharing the file. Must not log task ids.

use rusqlite::params;
use serde_json::{Value, json};

use super::db::Db;
use super::tx::{Row, WriteTx, ensure_task, find_row, now_ms, push_event, to_sql_u64};
use crate::ids::{ServerId, TaskId};
use crate::ledger::{EventKind, NewTask, Tombstone};
use crate::mcp::types::{Era, Task};
use crate::mcp::{Verdict, judge};

impl Db {
    /// Insert a newly created task, with a `created` event. Idempotent: for a key already
    /// present the first creation data is kept (only columns still empty are filled in).
    /// Committed before returning, so a crash right after still lets polling resume.
    pub fn record_created(&self, new: NewTask<'_>) -> anyhow::Result<()> {
        let tx = self.write_tx()?;
        record_created_in(&tx, new)?;
        tx.commit()?;
        Ok(())
    }

    /// Track a task id we did not create, once its server confirmed it (e.g. `taskrail watch
    /// ID` after the first `tasks/get`): insert it if absent, with a `note` event and the
    /// snapshot. An existing record keeps its data (its era is filled in if unknown).
    pub fn record_tracked(
        &self,
        server: &ServerId,
        era: Option<Era>,
        task_id: &TaskId,
        session: Option<i64>,
    ) -> anyhow::Result<()> {
        let tx = self.write_tx()?;
        tracked_in(&tx, server, era, task_id, session)?;
        tx.commit()?;
        Ok(())
    }

    /// Store a newer snapshot and append timeline events: `status` when the status
    /// changed, `input_requested` for new input keys, and a `source` event (push, poll,
    /// resync) with its latency whenever the state changed. A snapshot for a terminal (or
    /// tombstoned) task is ignored unless it adds the payload the terminal snapshot lacked,
    /// as is a non-terminal one older than the stored one. Unknown task ids are inserted
    /// first: no id is ever dropped. Returns whether the stored state changed.
    pub fn record_snapshot(
        &self,
        server: &ServerId,
        task: &Task,
        source: EventKind,
        latency_ms: Option<u64>,
    ) -> anyhow::Result<bool> {
        let now = now_ms();
        if self.skip_unchanged(server, task, now)? {
            return Ok(false);
        }
        let tx = self.write_tx()?;
        let changed = apply_snapshot(&tx, server, task, source, latency_ms, now)?;
        tx.commit()?;
        Ok(changed)
    }

    /// A snapshot that would change nothing stored (the same state with only
    /// `lastUpdatedAt` bumped, a re-read of a finished task, an older one) costs no write
    /// transaction: judged on a plain read, its "last seen" kept for later (`lazy.rs`).
    /// Returns whether it was skipped.
    fn skip_unchanged(&self, server: &ServerId, task: &Task, now: i64) -> anyhow::Result<bool> {
        let Some(row) = find_row(&self.conn, server, &task.task_id)? else {
            return Ok(false);
        };
        let Some(prev) = row
            .snapshot
            .as_deref()
            .and_then(|s| serde_json::from_str::<Task>(s).ok())
        else {
            return Ok(false);
        };
        match judge(Some(&prev), row.terminal, task) {
            Verdict::AfterTerminal | Verdict::Stale => Ok(true),
            Verdict::Payload => Ok(false),
            Verdict::Accept if prev.same_state(task) && row.status == task.status.as_str() => {
                self.note_seen(row.id, now)?;
                Ok(true)
            }
            Verdict::Accept => Ok(false),
        }
    }

    /// [`Db::record_snapshot`] for many snapshots in one transaction (one commit for a
    /// burst of updates). Returns one "changed" flag per input, in order; all or nothing.
    pub fn record_snapshots(
        &self,
        batch: &[(ServerId, Task, EventKind, Option<u64>)],
    ) -> anyhow::Result<Vec<bool>> {
        let now = now_ms();
        let skipped = batch
            .iter()
            .map(|(server, task, _, _)| self.skip_unchanged(server, task, now))
            .collect::<anyhow::Result<Vec<bool>>>()?;
        if skipped.iter().all(|s| *s) {
            return Ok(vec![false; batch.len()]);
        }
        let tx = self.write_tx()?;
        let changed = batch
            .iter()
            .zip(&skipped)
            .map(|((server, task, source, latency), skip)| {
                if *skip {
                    return Ok(false);
                }
                apply_snapshot(&tx, server, task, *source, *latency, now)
            })
            .collect::<anyhow::Result<Vec<bool>>>()?;
        tx.commit()?;
        Ok(changed)
    }

    /// Append one event to a task's timeline (inserting the task id if unknown).
    /// `detail` must not carry secrets; it is stored as JSON. `cancel_requested` and
    /// `cancel_acked` also set the task's cancel state, which other processes see. A
    /// `polls` count is kept in memory and written with the next write (`lazy.rs`).
    pub fn record_event(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        kind: EventKind,
        latency_ms: Option<u64>,
        detail: &Value,
    ) -> anyhow::Result<()> {
        let now = now_ms();
        if kind == EventKind::Polls {
            // Bookkeeping: written with the next real write (`lazy.rs`).
            return self.defer_polls(server, task_id, now, detail);
        }
        let tx = self.write_tx()?;
        let (id, _) = ensure_task(&tx, server, task_id, None, now)?;
        push_event(&tx, id, now, kind, latency_ms, detail)?;
        let cancel_state = match kind {
            EventKind::CancelRequested => Some(1),
            EventKind::CancelAcked => Some(2),
            _ => None,
        };
        if let Some(state) = cancel_state {
            tx.prepare_cached(
                "UPDATE tasks SET cancel_state = max(cancel_state, ?2) WHERE id = ?1",
            )?
            .execute(params![id, state])?;
        }
        if kind == EventKind::CancelRequested && detail.get("by").is_some() {
            // The first cancel asked for is the one the task shows.
            tx.prepare_cached(
                "UPDATE tasks SET cancel_by = coalesce(cancel_by, ?2) WHERE id = ?1",
            )?
            .execute(params![id, detail.to_string()])?;
        }
        tx.touch(id)?;
        tx.commit()?;
        Ok(())
    }

    /// Remember that input `key` was answered (`action`: accept, decline, cancel, …).
    /// The first answer for a key wins; later calls for the same key change nothing.
    /// Does not add a timeline event: callers record `input_sent` with its latency.
    pub fn mark_answered(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        key: &str,
        action: &str,
    ) -> anyhow::Result<()> {
        let tx = self.write_tx()?;
        let now = now_ms();
        let (id, _) = ensure_task(&tx, server, task_id, None, now)?;
        let added = tx
            .prepare_cached(
                "INSERT OR IGNORE INTO answered_keys (task, input_key, action, answered_at)
             VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![id, key, action, now])?;
        if added > 0 {
            tx.touch(id)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Tombstone a task the server no longer knows (TTL passed, `-32602` on `tasks/get`), or
    /// whose legacy session the server dropped: it becomes terminal and expired, with the
    /// reason, and gets an `expired` event the first time.
    pub fn mark_ended(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        why: Tombstone,
    ) -> anyhow::Result<()> {
        let tx = self.write_tx()?;
        let now = now_ms();
        let (id, _) = ensure_task(&tx, server, task_id, None, now)?;
        if tombstone(&tx, id, now, why)? {
            tx.touch(id)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// [`Db::mark_ended`] with [`Tombstone::Expired`].
    pub fn mark_expired(&self, server: &ServerId, task_id: &TaskId) -> anyhow::Result<()> {
        self.mark_ended(server, task_id, Tombstone::Expired)
    }

    /// Remove a task id that was never confirmed by its server and has no history worth
    /// keeping (a mistyped id): only a bare tracked row with no snapshot is deleted.
    pub fn forget_unconfirmed(&self, server: &ServerId, task_id: &TaskId) -> anyhow::Result<bool> {
        let tx = self.write_tx()?;
        let n = tx
            .prepare_cached(
                "DELETE FROM tasks WHERE server = ?1 AND task_id = ?2 AND snapshot IS NULL
                 AND tool IS NULL AND terminal = 0",
            )?
            .execute(params![server, task_id])?;
        tx.commit()?;
        Ok(n > 0)
    }
}

/// [`Db::record_tracked`] inside a write transaction.
pub(super) fn tracked_in(
    tx: &WriteTx<'_>,
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
    tx.prepare_cached(
        "UPDATE tasks SET era = coalesce(era, ?2), session = coalesce(session, ?3)
         WHERE id = ?1",
    )?
    .execute(params![id, era.map(Era::as_str), session])?;
    Ok(())
}

/// Status of a task id stored before any snapshot of it (matches the schema default).
const UNKNOWN_STATUS: &str = "unknown";

/// [`Db::record_created`] inside a write transaction.
pub(super) fn record_created_in(tx: &WriteTx<'_>, new: NewTask<'_>) -> anyhow::Result<()> {
    let now = now_ms();
    let args = serde_json::to_string(new.arguments)?;
    let task = new.task;
    match find_row(tx, new.server, &task.task_id)? {
        Some(row) => {
            tx.prepare_cached(
                "UPDATE tasks SET era = coalesce(era, ?2), tool = coalesce(tool, ?3),
                         arguments = coalesce(arguments, ?4),
                         parent_task = coalesce(parent_task, ?5),
                         session = coalesce(session, ?6),
                         started_by = coalesce(started_by, ?7)
                     WHERE id = ?1",
            )?
            .execute(params![
                row.id,
                new.era.as_str(),
                new.tool,
                args,
                new.parent_task,
                new.session,
                new.started_by
            ])?;
            tx.touch(row.id)?;
        }
        None => {
            let terminal = task.status.is_terminal();
            tx.prepare_cached(
                "INSERT INTO tasks (server, task_id, era, tool, arguments, recorded_at,
                         server_created_at, snapshot, status, terminal, terminal_at, last_seen,
                         poll_interval_ms, ttl_ms, parent_task, session, started_by)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?6, ?12, ?13, ?14,
                         ?15, ?16)",
            )?
            .execute(params![
                new.server,
                task.task_id,
                new.era.as_str(),
                new.tool,
                args,
                now,
                task.created_at,
                serde_json::to_string(task)?,
                task.status.as_str(),
                terminal,
                terminal.then_some(now),
                to_sql_u64(task.poll_interval_ms),
                to_sql_u64(task.ttl_ms),
                new.parent_task,
                new.session,
                new.started_by,
            ])?;
            let id = tx.last_insert_rowid();
            tx.touch(id)?;
            let detail = json!({ "tool": new.tool, "status": task.status.as_str() });
            push_event(tx, id, now, EventKind::Created, None, &detail)?;
            push_input_requested(tx, id, now, None, task)?;
        }
    }
    Ok(())
}

/// Turn row `id` into a tombstone; false when it already was one.
pub(super) fn tombstone(
    tx: &WriteTx<'_>,
    id: i64,
    now: i64,
    why: Tombstone,
) -> anyhow::Result<bool> {
    let updated = tx
        .prepare_cached(
            "UPDATE tasks SET expired = 1, terminal = 1, terminal_at = coalesce(terminal_at, ?2),
             end_reason = ?3
         WHERE id = ?1 AND expired = 0",
        )?
        .execute(params![id, now, why.as_str()])?;
    if updated > 0 {
        let detail = json!({ "reason": why.as_str() });
        push_event(tx, id, now, EventKind::Expired, None, &detail)?;
    }
    Ok(updated > 0)
}

/// An `input_requested` event listing keys present in `task` but not in `prev`.
fn push_input_requested(
    tx: &WriteTx<'_>,
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
    let detail = json!({ "requests": fresh });
    push_event(tx, id, now, EventKind::InputRequested, None, &detail)
}

/// The snapshot acceptance rules, inside the caller's transaction.
fn apply_snapshot(
    tx: &WriteTx<'_>,
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
            tx.prepare_cached("UPDATE tasks SET snapshot = ?2, last_seen = ?3 WHERE id = ?1")?
                .execute(params![id, serde_json::to_string(task)?, now])?;
            let detail = json!({ "status": task.status.as_str(), "payload": true });
            push_event(tx, id, now, source, latency_ms, &detail)?;
            tx.touch(id)?;
            return Ok(true);
        }
        Verdict::AfterTerminal | Verdict::Stale => return Ok(false),
    }
    let terminal = task.status.is_terminal();
    let changed = prev.as_ref().is_none_or(|p| !p.same_state(task));
    if !changed {
        // Only `lastUpdatedAt` moved: nothing to store but when it was seen.
        return Ok(false);
    }
    tx.prepare_cached(
        "UPDATE tasks SET snapshot = ?2, status = ?3,
             server_created_at = coalesce(server_created_at, ?4), last_seen = ?5,
             poll_interval_ms = ?6, ttl_ms = ?7, terminal = ?8,
             terminal_at = CASE WHEN ?8 THEN ?5 ELSE NULL END
         WHERE id = ?1",
    )?
    .execute(params![
        id,
        serde_json::to_string(task)?,
        task.status.as_str(),
        task.created_at,
        now,
        to_sql_u64(task.poll_interval_ms),
        to_sql_u64(task.ttl_ms),
        terminal,
    ])?;
    tx.touch(id)?;
    if row.status != task.status.as_str() {
        let detail = json!({
            "from": row.status,
            "to": task.status.as_str(),
            "message": task.status_message,
        });
        push_event(tx, id, now, EventKind::Status, None, &detail)?;
    }
    push_input_requested(tx, id, now, prev.as_ref(), task)?;
    let detail = json!({ "status": task.status.as_str() });
    push_event(tx, id, now, source, latency_ms, &detail)?;
    Ok(true)
}
