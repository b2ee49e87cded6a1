//! One write transaction and the row-level steps every write shares: the change number
//! it stamps rows with, finding or inserting a task row, appending an event, and the
//! conversions between stored integers and times. Must not log task ids.

use std::cell::Cell;

use anyhow::Context;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};
use serde_json::Value;

use crate::ids::{ServerId, TaskId};
use crate::ledger::EventKind;
use crate::mcp::types::Era;

/// A write transaction that stamps the task rows it changes with one new change number
/// (`meta.change_seq + 1`), so other processes can ask for "what changed since N".
pub(super) struct WriteTx<'c> {
    tx: Transaction<'c>,
    seq: Cell<Option<i64>>,
}

impl<'c> WriteTx<'c> {
    /// Begin a transaction that takes the write lock up front, so a concurrent writer
    /// waits in `busy_timeout` instead of failing on a lock upgrade.
    pub(super) fn begin(conn: &'c Connection) -> anyhow::Result<WriteTx<'c>> {
        let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
            .context("starting a ledger write transaction")?;
        Ok(WriteTx {
            tx,
            seq: Cell::new(None),
        })
    }
}

impl<'c> std::ops::Deref for WriteTx<'c> {
    type Target = Transaction<'c>;
    fn deref(&self) -> &Transaction<'c> {
        &self.tx
    }
}

impl WriteTx<'_> {
    /// This transaction's change number (taken on first use).
    pub(super) fn seq(&self) -> rusqlite::Result<i64> {
        if let Some(s) = self.seq.get() {
            return Ok(s);
        }
        let s: i64 = self
            .tx
            .prepare_cached(
                "UPDATE meta SET value = value + 1 WHERE key = 'change_seq' RETURNING value",
            )?
            .query_row([], |r| r.get(0))?;
        self.seq.set(Some(s));
        Ok(s)
    }

    /// Mark a task row as changed by this transaction.
    pub(super) fn touch(&self, task_row: i64) -> rusqlite::Result<()> {
        let seq = self.seq()?;
        self.tx
            .prepare_cached("UPDATE tasks SET changed_seq = ?2 WHERE id = ?1")?
            .execute(rusqlite::params![task_row, seq])?;
        Ok(())
    }

    pub(super) fn commit(self) -> rusqlite::Result<()> {
        self.tx.commit()
    }
}

/// The parts of a stored task that writes need.
pub(super) struct Row {
    pub(super) id: i64,
    pub(super) terminal: bool,
    pub(super) status: String,
    pub(super) snapshot: Option<String>,
}

pub(super) fn find_row(
    conn: &rusqlite::Connection,
    server: &ServerId,
    task_id: &TaskId,
) -> rusqlite::Result<Option<Row>> {
    conn.prepare_cached(
        "SELECT id, terminal, status, snapshot FROM tasks WHERE server = ?1 AND task_id = ?2",
    )?
    .query_row(params![server, task_id], |r| {
        Ok(Row {
            id: r.get(0)?,
            terminal: r.get(1)?,
            status: r.get(2)?,
            snapshot: r.get(3)?,
        })
    })
    .optional()
}

/// The row id for (server, task id), inserting a bare tracked row if absent.
pub(super) fn ensure_task(
    tx: &WriteTx<'_>,
    server: &ServerId,
    task_id: &TaskId,
    era: Option<Era>,
    now: i64,
) -> rusqlite::Result<(i64, bool)> {
    if let Some(row) = find_row(tx, server, task_id)? {
        return Ok((row.id, false));
    }
    tx.prepare_cached(
        "INSERT INTO tasks (server, task_id, era, recorded_at) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(params![server, task_id, era.map(Era::as_str), now])?;
    let id = tx.last_insert_rowid();
    tx.touch(id)?;
    Ok((id, true))
}

pub(super) fn push_event(
    tx: &WriteTx<'_>,
    task: i64,
    at: i64,
    kind: EventKind,
    latency_ms: Option<u64>,
    detail: &Value,
) -> anyhow::Result<()> {
    tx.prepare_cached(
        "INSERT INTO events (task, at, kind, latency_ms, detail) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        task,
        at,
        kind.as_str(),
        to_sql_u64(latency_ms),
        serde_json::to_string(detail)?
    ])?;
    Ok(())
}

/// Milliseconds since the Unix epoch, now.
pub(super) fn now_ms() -> i64 {
    Utc::now().timestamp_millis()
}

/// Stored milliseconds → timestamp (out-of-range values clamp to the epoch).
pub(super) fn from_ms(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

/// Optional u64 → SQLite integer (values beyond `i64::MAX` saturate).
pub(super) fn to_sql_u64(v: Option<u64>) -> Option<i64> {
    v.map(|v| i64::try_from(v).unwrap_or(i64::MAX))
}

/// SQLite integer → optional u64 (negative values are dropped).
pub(super) fn from_sql_u64(v: Option<i64>) -> Option<u64> {
    v.and_then(|v| u64::try_from(v).ok())
}
