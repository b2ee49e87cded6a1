//! The outbox: answers and cancels asked for by a process that does not follow the task,
//! carried out by the one that does (only it can reach a stdio server or a legacy stream).
//! The requester sees the outcome through the feed. A request waits at most until it is
//! done or its requester gives up; nothing here runs anything.
//!
//! Must not log task ids.

use rusqlite::{OptionalExtension, params};
use serde_json::{Value, json};

use super::db::Db;
use super::tx::now_ms;
use crate::ids::{ServerId, TaskId};
use crate::ledger::{OutboxKind, OutboxOutcome, OutboxRequest};

/// Open requests read per call at most.
const OPEN_MAX: i64 = 1000;

impl Db {
    /// Ask the process following a task to carry out `kind`. Returns the request's id.
    pub fn request(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        kind: OutboxKind,
        payload: &Value,
        requester: &str,
    ) -> anyhow::Result<Option<i64>> {
        let tx = self.write_tx()?;
        let task: Option<i64> = tx
            .prepare_cached("SELECT id FROM tasks WHERE server = ?1 AND task_id = ?2")?
            .query_row(params![server, task_id], |r| r.get(0))
            .optional()?;
        let Some(task) = task else {
            return Ok(None);
        };
        tx.prepare_cached(
            "INSERT INTO outbox (task, kind, payload, requester, requested_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?
        .execute(params![
            task,
            kind.as_str(),
            serde_json::to_string(payload)?,
            requester,
            now_ms()
        ])?;
        let id = tx.last_insert_rowid();
        tx.touch(task)?;
        tx.commit()?;
        Ok(Some(id))
    }

    /// Record how request `id` ended (`error`: `None` on success). Only the first call counts.
    pub fn complete_request(&self, id: i64, error: Option<&str>) -> anyhow::Result<()> {
        let tx = self.write_tx()?;
        let seq = tx.seq()?;
        let outcome = json!({ "ok": error.is_none(), "error": error });
        tx.prepare_cached(
            "UPDATE outbox SET done_at = ?2, done_seq = ?3, outcome = ?4
              WHERE id = ?1 AND done_at IS NULL",
        )?
        .execute(params![id, now_ms(), seq, serde_json::to_string(&outcome)?])?;
        tx.commit()?;
        Ok(())
    }

    /// Open requests for the tasks `owner` follows, oldest first.
    pub fn open_requests(&self, owner: &str) -> anyhow::Result<Vec<OutboxRequest>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT o.id, t.server, t.task_id, o.kind, o.payload
               FROM outbox o JOIN follows f ON f.task = o.task JOIN tasks t ON t.id = o.task
              WHERE o.done_at IS NULL AND f.owner = ?1
              ORDER BY o.id LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![owner, OPEN_MAX], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, ServerId>(1)?,
                r.get::<_, TaskId>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, server, task_id, kind, payload) = row?;
            let Some(kind) = OutboxKind::parse(&kind) else {
                continue;
            };
            out.push(OutboxRequest {
                id,
                server,
                task_id,
                kind,
                payload: serde_json::from_str(&payload).unwrap_or(Value::Null),
            });
        }
        Ok(out)
    }

    /// Requests `requester` made that finished after change number `since`.
    pub fn outcomes_since(
        &self,
        requester: &str,
        since: i64,
    ) -> anyhow::Result<Vec<OutboxOutcome>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT o.id, t.server, t.task_id, o.kind, o.payload, o.outcome
               FROM outbox o JOIN tasks t ON t.id = o.task
              WHERE o.requester = ?1 AND o.done_seq > ?2
              ORDER BY o.done_seq LIMIT ?3",
        )?;
        let rows = stmt.query_map(params![requester, since, OPEN_MAX], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, ServerId>(1)?,
                r.get::<_, TaskId>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, Option<String>>(5)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, server, task_id, kind, payload, outcome) = row?;
            let Some(kind) = OutboxKind::parse(&kind) else {
                continue;
            };
            let outcome: Value = outcome
                .and_then(|o| serde_json::from_str(&o).ok())
                .unwrap_or(Value::Null);
            let error = match outcome.get("ok").and_then(Value::as_bool) {
                Some(true) => None,
                _ => Some(
                    outcome
                        .get("error")
                        .and_then(Value::as_str)
                        .unwrap_or("the request failed")
                        .to_string(),
                ),
            };
            out.push(OutboxOutcome {
                id,
                server,
                task_id,
                kind,
                payload: serde_json::from_str(&payload).unwrap_or(Value::Null),
                error,
            });
        }
        Ok(out)
    }

    /// Give up request `id` (its requester stopped waiting): it is closed as failed unless
    /// it was already done.
    pub fn abandon_request(&self, id: i64, why: &str) -> anyhow::Result<()> {
        self.complete_request(id, Some(why))
    }
}
