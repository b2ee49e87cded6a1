//! Legacy (2025-11-25) sessions: a server keeps a session's tasks only for that session, so
//! rejoining a task after a restart needs the session id. The id is a secret, stored here
//! only (the file is 0600): never logged, exported or shown.
//!
//! Owns the `sessions` table and "session lost", which tombstones every live task of the
//! session with [`Tombstone::SessionLost`].

use rusqlite::{OptionalExtension, params};
use serde_json::Value;

use super::db::Db;
use super::tx::now_ms;
use super::write::tombstone;
use crate::ids::{ServerId, TaskId};
use crate::ledger::{SessionRecord, Tombstone};

impl Db {
    /// Remember a session (idempotent per server and session id). Returns its row id.
    pub fn record_session(
        &self,
        server: &ServerId,
        session_id: &str,
        protocol_version: &str,
        capabilities: &Value,
        server_name: Option<&str>,
    ) -> anyhow::Result<i64> {
        let tx = self.write_tx()?;
        tx.prepare_cached(
            "INSERT INTO sessions (server, session_id, protocol_version, capabilities,
                 server_name, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT (server, session_id) DO NOTHING",
        )?
        .execute(params![
            server,
            session_id,
            protocol_version,
            serde_json::to_string(capabilities)?,
            server_name,
            now_ms()
        ])?;
        let id: i64 = tx
            .prepare_cached("SELECT id FROM sessions WHERE server = ?1 AND session_id = ?2")?
            .query_row(params![server, session_id], |r| r.get(0))?;
        tx.commit()?;
        Ok(id)
    }

    /// A session by row id.
    pub fn session(&self, id: i64) -> anyhow::Result<Option<SessionRecord>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT id, server, session_id, protocol_version, capabilities, server_name,
                        lost_at IS NOT NULL
                   FROM sessions WHERE id = ?1",
            )?
            .query_row(params![id], |r| {
                Ok(SessionRecord {
                    id: r.get(0)?,
                    server: r.get(1)?,
                    session_id: r.get(2)?,
                    protocol_version: r.get(3)?,
                    capabilities: r
                        .get::<_, String>(4)
                        .ok()
                        .and_then(|s| serde_json::from_str(&s).ok())
                        .unwrap_or(Value::Null),
                    server_name: r.get(5)?,
                    lost: r.get(6)?,
                })
            })
            .optional()?)
    }

    /// The server dropped session `id`: mark it lost and tombstone its unfinished tasks.
    /// Returns the tasks that ended.
    pub fn session_lost(&self, id: i64) -> anyhow::Result<Vec<TaskId>> {
        let tx = self.write_tx()?;
        let now = now_ms();
        tx.prepare_cached("UPDATE sessions SET lost_at = coalesce(lost_at, ?2) WHERE id = ?1")?
            .execute(params![id, now])?;
        let rows: Vec<(i64, TaskId)> = {
            let mut stmt =
                tx.prepare("SELECT id, task_id FROM tasks WHERE session = ?1 AND terminal = 0")?;
            let rows = stmt.query_map(params![id], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let mut ended = Vec::new();
        for (row, task_id) in rows {
            if tombstone(&tx, row, now, Tombstone::SessionLost)? {
                tx.touch(row)?;
                ended.push(task_id);
            }
        }
        tx.commit()?;
        Ok(ended)
    }
}
