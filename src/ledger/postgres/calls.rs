//! A proxy's calls on a shared database: which task serves a host's blocking `tools/call`
//! (by the call's key), whether its result reached a host, what a host that stopped waiting
//! left behind (`sqlite/calls.rs` has the same rules); and moving rows keyed by an old
//! server id to the configured one. Must not log task ids.

use serde_json::Value;

use super::db::{Pg, ensure_task, now_ms, push_event, touch};
use super::leases::claim_in;
use super::read::query_tasks;
use super::write::record_created_in;
use crate::ids::{ServerId, TaskId};
use crate::ledger::{Delivery, EventKind, NewTask, Owner, TaskRecord};

impl Pg {
    pub fn record_proxy_task(
        &self,
        new: NewTask<'_>,
        owner: &Owner,
        ttl: std::time::Duration,
    ) -> anyhow::Result<()> {
        self.write(|tx| {
            record_created_in(tx, new)?;
            let (id, _) = ensure_task(tx, new.server, &new.task.task_id, None, now_ms())?;
            tx.execute("UPDATE tasks SET origin = 'proxy' WHERE id = $1", &[&id])?;
            claim_in(
                tx,
                new.server,
                std::slice::from_ref(&new.task.task_id),
                owner,
                ttl,
            )?;
            Ok(())
        })
    }

    pub fn set_call(&self, server: &ServerId, task_id: &TaskId, key: &str) -> anyhow::Result<()> {
        self.write(|tx| {
            let (id, _) = ensure_task(tx, server, task_id, None, now_ms())?;
            tx.execute(
                "UPDATE tasks SET call_key = $2, delivery = 0 WHERE id = $1",
                &[&id, &key],
            )?;
            Ok(())
        })
    }

    pub fn set_delivery(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        delivery: Delivery,
    ) -> anyhow::Result<()> {
        self.write(|tx| {
            let (id, _) = ensure_task(tx, server, task_id, None, now_ms())?;
            tx.execute(
                "UPDATE tasks SET delivery = $2 WHERE id = $1 AND delivery < 2",
                &[&id, &(delivery as i16)],
            )?;
            Ok(())
        })
    }

    pub fn host_gave_up(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        note: &Value,
    ) -> anyhow::Result<()> {
        let now = now_ms();
        self.write(|tx| {
            let (id, _) = ensure_task(tx, server, task_id, None, now)?;
            push_event(tx, id, now, EventKind::HostGaveUp, None, note)?;
            tx.execute(
                "UPDATE tasks SET host_note = $2,
                        delivery = CASE WHEN delivery < 2 THEN 1 ELSE delivery END
                  WHERE id = $1",
                &[&id, &note.to_string()],
            )?;
            Ok(())
        })
    }

    pub fn attached(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        detail: &Value,
    ) -> anyhow::Result<()> {
        let now = now_ms();
        self.write(|tx| {
            let (id, _) = ensure_task(tx, server, task_id, None, now)?;
            push_event(tx, id, now, EventKind::Attached, None, detail)?;
            tx.execute(
                "UPDATE tasks SET delivery = 0 WHERE id = $1 AND delivery = 1",
                &[&id],
            )?;
            touch(tx, id)?;
            Ok(())
        })
    }

    pub fn undelivered(&self, server: &ServerId, key: &str) -> anyhow::Result<Option<TaskRecord>> {
        let now = now_ms();
        self.read(|c| {
            Ok(query_tasks(
                c,
                "WHERE t.server = $1 AND t.call_key = $2 AND t.delivery = 1
                   AND NOT t.expired
                   AND (t.ttl_ms IS NULL OR t.recorded_at + t.ttl_ms > $3)
                 ORDER BY t.recorded_at DESC, t.id DESC LIMIT 1",
                &[&server.as_str(), &key, &now],
            )?
            .pop())
        })
    }

    /// Move rows keyed by an old server id to `canon`'s, folding a task stored under both
    /// into the canonical row; how many rows moved.
    pub fn canonicalize_servers(
        &self,
        canon: impl Fn(&ServerId) -> ServerId,
    ) -> anyhow::Result<usize> {
        let stored: Vec<ServerId> = self.read(|c| {
            Ok(c.query(
                "SELECT server FROM tasks UNION SELECT server FROM sessions",
                &[],
            )?
            .iter()
            .map(|r| ServerId::stored(r.get(0)))
            .collect())
        })?;
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
        self.write(|tx| {
            let mut moved = 0;
            for (from, to) in &renames {
                let (from, to) = (from.as_str(), to.as_str());
                let dupes = tx.query(
                    "SELECT a.id, c.id FROM tasks a JOIN tasks c
                        ON c.task_id = a.task_id AND c.server = $2
                     WHERE a.server = $1",
                    &[&from, &to],
                )?;
                for d in &dupes {
                    let (alias, keep): (i64, i64) = (d.get(0), d.get(1));
                    tx.execute(
                        "UPDATE events SET task = $2 WHERE task = $1",
                        &[&alias, &keep],
                    )?;
                    tx.execute(
                        "INSERT INTO answered_keys (task, input_key, action, answered_at)
                         SELECT $2, input_key, action, answered_at FROM answered_keys
                          WHERE task = $1
                         ON CONFLICT DO NOTHING",
                        &[&alias, &keep],
                    )?;
                    tx.execute("DELETE FROM tasks WHERE id = $1", &[&alias])?;
                    touch(tx, keep)?;
                    moved += 1;
                }
                moved += tx.execute(
                    "UPDATE tasks SET server = $2 WHERE server = $1",
                    &[&from, &to],
                )? as usize;
                tx.execute(
                    "UPDATE sessions SET server = $2 WHERE server = $1
                        AND NOT EXISTS (SELECT FROM sessions s2
                                         WHERE s2.server = $2
                                           AND s2.session_ref = sessions.session_ref)",
                    &[&from, &to],
                )?;
            }
            Ok(moved)
        })
    }
}
