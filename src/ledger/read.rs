//! Reads from the ledger (records, timelines, answered keys) and retention pruning.
//!
//! Owns the row → `TaskRecord` mapping. Stored JSON that no longer parses is dropped to
//! `None` rather than failing a whole listing. Must not log task ids.

use std::time::Duration;

use anyhow::bail;
use chrono::{DateTime, Utc};
use rusqlite::{OptionalExtension, Params, Row, params};
use serde::Serialize;
use serde_json::Value;

use super::db::{from_ms, from_sql_u64, now_ms};
use super::{EventKind, EventRecord, Ledger, TaskRecord, Tombstone};
use crate::ids::{ServerId, TaskId};
use crate::mcp::types::Era;

/// One answered input key with when and how it was answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AnsweredKey {
    pub key: String,
    pub action: String,
    pub at: DateTime<Utc>,
}

pub(super) const SELECT_TASK: &str = "
    SELECT t.server, t.task_id, t.era, t.tool, t.arguments, t.recorded_at,
           t.server_created_at, t.snapshot, t.status, t.terminal, t.terminal_at, t.expired,
           t.last_seen, t.poll_interval_ms, t.ttl_ms, t.parent_task,
           (SELECT json_group_array(a.input_key ORDER BY a.answered_at, a.input_key)
              FROM answered_keys a WHERE a.task = t.id),
           t.end_reason, t.cancel_state, t.started_by, t.session,
           t.changed_seq AS changed_seq, t.id AS row_id
      FROM tasks t";

pub(super) fn task_from_row(r: &Row<'_>) -> rusqlite::Result<TaskRecord> {
    let json = |i: usize| -> rusqlite::Result<Option<Value>> {
        Ok(r.get::<_, Option<String>>(i)?
            .and_then(|s| serde_json::from_str(&s).ok()))
    };
    let era = r
        .get::<_, Option<String>>(2)?
        .and_then(|s| match s.as_str() {
            "modern" => Some(Era::Modern),
            "legacy" => Some(Era::Legacy),
            _ => None,
        });
    let snapshot = r
        .get_ref(7)?
        .as_str_or_null()
        .ok()
        .flatten()
        .and_then(|s| serde_json::from_str(s).ok());
    let answered_keys = r
        .get::<_, Option<String>>(16)?
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default();
    Ok(TaskRecord {
        server: r.get(0)?,
        task_id: r.get(1)?,
        era,
        tool: r.get(3)?,
        arguments: json(4)?,
        recorded_at: from_ms(r.get(5)?),
        server_created_at: r.get(6)?,
        snapshot,
        status: r.get(8)?,
        terminal: r.get(9)?,
        terminal_at: r.get::<_, Option<i64>>(10)?.map(from_ms),
        expired: r.get(11)?,
        last_seen: r.get::<_, Option<i64>>(12)?.map(from_ms),
        poll_interval_ms: from_sql_u64(r.get(13)?),
        ttl_ms: from_sql_u64(r.get(14)?),
        parent_task: r.get(15)?,
        answered_keys,
        end: r
            .get::<_, Option<String>>(17)?
            .as_deref()
            .and_then(Tombstone::parse),
        cancel: match r.get::<_, i64>(18)? {
            1 => Some(false),
            2 => Some(true),
            _ => None,
        },
        started_by: r.get(19)?,
        session: r.get(20)?,
    })
}

impl Ledger {
    fn query_tasks<P: Params>(&self, tail: &str, params: P) -> anyhow::Result<Vec<TaskRecord>> {
        let mut stmt = self.conn.prepare_cached(&format!("{SELECT_TASK} {tail}"))?;
        let rows = stmt.query_map(params, task_from_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// The record for (server, task id), if stored.
    pub fn get(&self, server: &ServerId, task_id: &TaskId) -> anyhow::Result<Option<TaskRecord>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "{SELECT_TASK} WHERE t.server = ?1 AND t.task_id = ?2"
        ))?;
        Ok(stmt
            .query_row(params![server, task_id], task_from_row)
            .optional()?)
    }

    /// Tasks whose id starts with `prefix`, on any server (for a short id given to the
    /// CLI). An exact match sorts first, then newest first. An empty prefix is an error.
    pub fn find(&self, prefix: &str) -> anyhow::Result<Vec<TaskRecord>> {
        if prefix.is_empty() {
            bail!("empty task id prefix");
        }
        self.query_tasks(
            "WHERE substr(t.task_id, 1, length(?1)) = ?1
             ORDER BY t.task_id = ?1 DESC, t.recorded_at DESC, t.id DESC",
            params![prefix],
        )
    }

    /// Every task, newest first; terminal and expired ones only if `include_terminal`.
    pub fn list(&self, include_terminal: bool) -> anyhow::Result<Vec<TaskRecord>> {
        self.query_tasks(
            "WHERE ?1 OR t.terminal = 0 ORDER BY t.recorded_at DESC, t.id DESC",
            params![include_terminal],
        )
    }

    /// Tasks still to be watched (not terminal, not expired), newest first: what to resume
    /// polling after a restart.
    pub fn non_terminal(&self) -> anyhow::Result<Vec<TaskRecord>> {
        self.list(false)
    }

    /// A task's events in the order they were recorded (empty for an unknown task).
    /// Poll counts this connection still holds in memory are written first.
    pub fn timeline(
        &self,
        server: &ServerId,
        task_id: &TaskId,
    ) -> anyhow::Result<Vec<EventRecord>> {
        self.flush_pending()?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT e.at, e.kind, e.latency_ms, e.detail
               FROM events e JOIN tasks t ON t.id = e.task
              WHERE t.server = ?1 AND t.task_id = ?2
              ORDER BY e.id",
        )?;
        let rows = stmt.query_map(params![server, task_id], |r| {
            let kind: String = r.get(1)?;
            let detail: String = r.get(3)?;
            Ok(EventRecord {
                at: from_ms(r.get(0)?),
                kind: EventKind::parse(&kind).unwrap_or(EventKind::Note),
                latency_ms: from_sql_u64(r.get(2)?),
                detail: serde_json::from_str(&detail).unwrap_or(Value::Null),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Input keys already answered for a task, oldest answer first.
    pub fn answered_keys(
        &self,
        server: &ServerId,
        task_id: &TaskId,
    ) -> anyhow::Result<Vec<String>> {
        Ok(self
            .answered(server, task_id)?
            .into_iter()
            .map(|a| a.key)
            .collect())
    }

    /// Answered input keys with their action and time, oldest first.
    pub fn answered(
        &self,
        server: &ServerId,
        task_id: &TaskId,
    ) -> anyhow::Result<Vec<AnsweredKey>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT a.input_key, a.action, a.answered_at
               FROM answered_keys a JOIN tasks t ON t.id = a.task
              WHERE t.server = ?1 AND t.task_id = ?2
              ORDER BY a.answered_at, a.input_key",
        )?;
        let rows = stmt.query_map(params![server, task_id], |r| {
            Ok(AnsweredKey {
                key: r.get(0)?,
                action: r.get(1)?,
                at: from_ms(r.get(2)?),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Delete terminal (or expired) tasks that became so more than `older_than` ago, with
    /// their events and answered keys. Tasks still running are never pruned. Returns how
    /// many tasks were deleted.
    pub fn prune(&self, older_than: Duration) -> anyhow::Result<usize> {
        let age = i64::try_from(older_than.as_millis()).unwrap_or(i64::MAX);
        self.prune_before(from_ms(now_ms().saturating_sub(age)))
    }

    /// Delete terminal (or expired) tasks whose terminal time is before `cutoff`.
    pub fn prune_before(&self, cutoff: DateTime<Utc>) -> anyhow::Result<usize> {
        let tx = self.write_tx()?;
        let deleted = tx.execute(
            "DELETE FROM tasks WHERE terminal = 1 AND terminal_at < ?1",
            params![cutoff.timestamp_millis()],
        )?;
        tx.commit()?;
        if deleted > 0 {
            tracing::debug!(deleted, "pruned old terminal tasks from the ledger");
        }
        Ok(deleted)
    }
}

impl Ledger {
    /// Every server with an unfinished task, by id.
    pub fn servers_with_open_tasks(&self) -> anyhow::Result<Vec<crate::ids::ServerId>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT DISTINCT server FROM tasks WHERE terminal = 0 ORDER BY server",
        )?;
        let rows = stmt.query_map([], |r| r.get(0))?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

impl Ledger {
    /// A server's tasks, newest first (finished and expired ones only with
    /// `include_terminal`), handed to `each` in chunks of at most `chunk` records as they
    /// are read, so the caller works on one chunk while the next is read. Stops early
    /// when `each` returns false.
    pub fn scan_server(
        &self,
        server: &crate::ids::ServerId,
        include_terminal: bool,
        chunk: usize,
        mut each: impl FnMut(Vec<TaskRecord>) -> bool,
    ) -> anyhow::Result<()> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "{SELECT_TASK} WHERE t.server = ?1 AND (?2 OR t.terminal = 0)
             ORDER BY t.recorded_at DESC, t.id DESC"
        ))?;
        let mut rows = stmt.query_map(params![server, include_terminal], task_from_row)?;
        let chunk = chunk.max(1);
        loop {
            let batch = rows
                .by_ref()
                .take(chunk)
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let last = batch.len() < chunk;
            if batch.is_empty() || !each(batch) || last {
                return Ok(());
            }
        }
    }
}
