//! Legacy (2025-11-25) sessions on a shared database. A session id is a credential: it
//! never goes into PostgreSQL. This build does not yet keep the id on the machine that
//! opened the session, so recording a legacy session on a PostgreSQL ledger is refused
//! with a clear error (the task still runs; it cannot be rejoined after a restart), and a
//! session row written elsewhere cannot be followed here. "Session lost" works on the rows
//! there are. Must not log task ids or session ids.

use anyhow::bail;
use serde_json::Value;

use super::db::{Pg, now_ms, touch};
use super::write::tombstone;
use crate::ids::{ServerId, TaskId};
use crate::ledger::{SessionRecord, Tombstone};

/// Why a legacy session is not stored.
const NOT_KEPT: &str = "a legacy (2025-11-25) session id is a credential and is never \
    stored in a shared PostgreSQL ledger; this build cannot yet keep it on this machine \
    instead, so legacy tasks on a PostgreSQL ledger cannot be rejoined after a restart";

impl Pg {
    pub fn record_session(
        &self,
        _server: &ServerId,
        _session_id: &str,
        _protocol_version: &str,
        _capabilities: &Value,
        _server_name: Option<&str>,
    ) -> anyhow::Result<i64> {
        bail!(NOT_KEPT)
    }

    pub fn session(&self, id: i64) -> anyhow::Result<Option<SessionRecord>> {
        let exists = self.read(|c| {
            Ok(c.query_opt("SELECT 1 FROM sessions WHERE id = $1", &[&id])?
                .is_some())
        })?;
        if exists {
            bail!(NOT_KEPT);
        }
        Ok(None)
    }

    pub fn session_lost(&self, id: i64) -> anyhow::Result<Vec<TaskId>> {
        let now = now_ms();
        self.write(|tx| {
            tx.execute(
                "UPDATE sessions SET lost_at = coalesce(lost_at, $2) WHERE id = $1",
                &[&id, &now],
            )?;
            let rows = tx.query(
                "SELECT id, task_id FROM tasks WHERE session = $1 AND NOT terminal",
                &[&id],
            )?;
            let mut ended = Vec::new();
            for r in &rows {
                let row: i64 = r.get(0);
                if tombstone(tx, row, now, Tombstone::SessionLost)? {
                    touch(tx, row)?;
                    ended.push(TaskId::new(r.get(1)));
                }
            }
            Ok(ended)
        })
    }
}
