//! Server identities in stored rows: an older ledger may key a server by its URL where the
//! config now names it (or by a URL spelt differently). `canonicalize_servers` moves such
//! rows to the canonical id, merging a task stored under both, so nothing is orphaned.
//!
//! Must not log task ids.

use rusqlite::params;

use super::db::Db;
use crate::ids::ServerId;

impl Db {
    /// Re-key every stored server id `s` with `canon(s) != s` to `canon(s)`. A task stored
    /// under both keeps the canonical row, which gains the other row's events and answered
    /// keys. Returns how many task rows moved or merged.
    pub fn canonicalize_servers(
        &self,
        canon: impl Fn(&ServerId) -> ServerId,
    ) -> anyhow::Result<usize> {
        let stored: Vec<ServerId> = {
            let mut stmt = self
                .conn
                .prepare("SELECT server FROM tasks UNION SELECT server FROM sessions")?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let renames: Vec<(ServerId, ServerId)> = stored
            .into_iter()
            .filter_map(|s| {
                let c = canon(&s);
                (c != s).then_some((s, c))
            })
            .collect();
        if renames.is_empty() {
            return Ok(0);
        }
        let tx = self.write_tx()?;
        let mut moved = 0;
        for (from, to) in &renames {
            // Tasks stored under both ids: fold the alias row into the canonical one.
            let dupes: Vec<(i64, i64)> = {
                let mut stmt = tx.prepare(
                    "SELECT a.id, c.id FROM tasks a JOIN tasks c
                        ON c.task_id = a.task_id AND c.server = ?2
                     WHERE a.server = ?1",
                )?;
                let rows = stmt.query_map(params![from, to], |r| Ok((r.get(0)?, r.get(1)?)))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            for (alias, keep) in dupes {
                tx.execute(
                    "UPDATE events SET task = ?2 WHERE task = ?1",
                    params![alias, keep],
                )?;
                tx.execute(
                    "INSERT OR IGNORE INTO answered_keys (task, input_key, action, answered_at)
                     SELECT ?2, input_key, action, answered_at FROM answered_keys WHERE task = ?1",
                    params![alias, keep],
                )?;
                tx.execute("DELETE FROM tasks WHERE id = ?1", params![alias])?;
                tx.touch(keep)?;
                moved += 1;
            }
            let ids: Vec<i64> = {
                let mut stmt = tx.prepare("SELECT id FROM tasks WHERE server = ?1")?;
                let rows = stmt.query_map(params![from], |r| r.get(0))?;
                rows.collect::<rusqlite::Result<_>>()?
            };
            tx.execute(
                "UPDATE tasks SET server = ?2 WHERE server = ?1",
                params![from, to],
            )?;
            for id in ids {
                tx.touch(id)?;
                moved += 1;
            }
            tx.execute(
                "UPDATE OR IGNORE sessions SET server = ?2 WHERE server = ?1",
                params![from, to],
            )?;
        }
        tx.commit()?;
        if moved > 0 {
            tracing::info!(moved, "ledger: server ids made canonical");
        }
        Ok(moved)
    }
}
