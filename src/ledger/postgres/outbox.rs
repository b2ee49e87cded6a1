//! The outbox on a shared database: answers and cancels asked for on any machine, carried
//! out by the task's follower, their outcomes read back by the requester through the feed
//! (`sqlite/outbox.rs` has the same rules). A request is written as its requester's role
//! and seen with its task. Must not log task ids.

use serde_json::{Value, json};

use super::db::{Pg, now_ms, touch};
use crate::ids::{ServerId, TaskId};
use crate::ledger::{OutboxKind, OutboxOutcome, OutboxRequest};

/// At most this many requests or outcomes per read.
const OPEN_MAX: i64 = 1000;

impl Pg {
    pub fn request(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        kind: OutboxKind,
        payload: &Value,
        requester: &str,
    ) -> anyhow::Result<Option<i64>> {
        self.write(|tx| {
            let Some(task) = tx.query_opt(
                "SELECT id FROM tasks WHERE server = $1 AND task_id = $2",
                &[&server.as_str(), &task_id.as_str()],
            )?
            else {
                return Ok(None);
            };
            let task: i64 = task.get(0);
            let id: i64 = tx
                .query_one(
                    "INSERT INTO outbox (task, kind, payload, requester, requested_at)
                     VALUES ($1, $2, $3, $4, $5) RETURNING id",
                    &[
                        &task,
                        &kind.as_str(),
                        &serde_json::to_string(payload)?,
                        &requester,
                        &now_ms(),
                    ],
                )?
                .get(0);
            touch(tx, task)?;
            Ok(Some(id))
        })
    }

    pub fn complete_request(&self, id: i64, error: Option<&str>) -> anyhow::Result<()> {
        let outcome = json!({ "ok": error.is_none(), "error": error });
        self.write(|tx| {
            tx.execute(
                "UPDATE outbox SET done_at = $2, done_seq = nextval('change_seq'), outcome = $3
                  WHERE id = $1 AND done_at IS NULL",
                &[&id, &now_ms(), &serde_json::to_string(&outcome)?],
            )?;
            Ok(())
        })
    }

    pub fn open_requests(&self, owner: &str) -> anyhow::Result<Vec<OutboxRequest>> {
        let rows = self.read(|c| {
            Ok(c.query(
                "SELECT o.id, t.server, t.task_id, o.kind, o.payload
                   FROM outbox o JOIN follows f ON f.task = o.task JOIN tasks t ON t.id = o.task
                  WHERE o.done_at IS NULL AND f.owner = $1
                  ORDER BY o.id LIMIT $2",
                &[&owner, &OPEN_MAX],
            )?)
        })?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                Some(OutboxRequest {
                    id: r.get(0),
                    server: ServerId::stored(r.get(1)),
                    task_id: TaskId::new(r.get(2)),
                    kind: OutboxKind::parse(r.get(3))?,
                    payload: serde_json::from_str(r.get(4)).unwrap_or(Value::Null),
                })
            })
            .collect())
    }

    pub fn outcomes_since(
        &self,
        requester: &str,
        since: i64,
    ) -> anyhow::Result<Vec<OutboxOutcome>> {
        let rows = self.read(|c| {
            Ok(c.query(
                "SELECT o.id, t.server, t.task_id, o.kind, o.payload, o.outcome
                   FROM outbox o JOIN tasks t ON t.id = o.task
                  WHERE o.requester = $1 AND o.done_seq > $2
                  ORDER BY o.done_seq LIMIT $3",
                &[&requester, &since, &OPEN_MAX],
            )?)
        })?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                let outcome: Value = r
                    .get::<_, Option<&str>>(5)
                    .and_then(|o| serde_json::from_str(o).ok())
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
                Some(OutboxOutcome {
                    id: r.get(0),
                    server: ServerId::stored(r.get(1)),
                    task_id: TaskId::new(r.get(2)),
                    kind: OutboxKind::parse(r.get(3))?,
                    payload: serde_json::from_str(r.get(4)).unwrap_or(Value::Null),
                    error,
                })
            })
            .collect())
    }

    pub fn abandon_request(&self, id: i64, why: &str) -> anyhow::Result<()> {
        self.complete_request(id, Some(why))
    }
}
