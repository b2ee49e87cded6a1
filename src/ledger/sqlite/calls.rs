//! A proxy's calls in the ledger: which task serves a host's blocking `tools/call` (by the
//! call's key), whether its result reached a host, and what a host that stopped waiting
//! left behind. Every proxy process on the ledger reads the same rows, so a host that
//! restarts its proxy between attempts is attached to the work already running.
//!
//! Owns the `call_key`, `delivery`, `host_note` and `origin` columns. Must not decide when a call is
//! the same (that is `proxy::attach`).

use rusqlite::params;
use serde_json::Value;

use super::db::Db;
use super::leases::claim_in;
use super::read::SELECT_TASK;
use super::tx::{ensure_task, now_ms, push_event};
use super::write::record_created_in;
use crate::ids::{ServerId, TaskId};
use crate::ledger::{Delivery, EventKind, NewTask, Owner, TaskRecord};

impl Db {
    /// Record a task of a proxy's own (see [`super::Origin::Proxy`]) and take its lease,
    /// in one transaction: no other process ever sees it without its origin or its owner.
    pub fn record_proxy_task(
        &self,
        new: NewTask<'_>,
        owner: &Owner,
        ttl: std::time::Duration,
    ) -> anyhow::Result<()> {
        let tx = self.write_tx()?;
        record_created_in(&tx, new)?;
        let (id, _) = ensure_task(&tx, new.server, &new.task.task_id, None, now_ms())?;
        tx.prepare_cached("UPDATE tasks SET origin = 'proxy' WHERE id = ?1")?
            .execute(params![id])?;
        claim_in(
            &tx,
            new.server,
            std::slice::from_ref(&new.task.task_id),
            owner,
            ttl,
        )?;
        tx.commit()?;
        Ok(())
    }

    /// `task` serves a blocking call with key `key`; a host waits for it.
    pub fn set_call(&self, server: &ServerId, task_id: &TaskId, key: &str) -> anyhow::Result<()> {
        let tx = self.write_tx()?;
        let (id, _) = ensure_task(&tx, server, task_id, None, now_ms())?;
        tx.prepare_cached("UPDATE tasks SET call_key = ?2, delivery = 0 WHERE id = ?1")?
            .execute(params![id, key])?;
        tx.commit()?;
        Ok(())
    }

    /// Where the call's result stands now (a settled call stays settled).
    pub fn set_delivery(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        delivery: Delivery,
    ) -> anyhow::Result<()> {
        let tx = self.write_tx()?;
        let (id, _) = ensure_task(&tx, server, task_id, None, now_ms())?;
        tx.prepare_cached("UPDATE tasks SET delivery = ?2 WHERE id = ?1 AND delivery < 2")?
            .execute(params![id, delivery as i64])?;
        tx.commit()?;
        Ok(())
    }

    /// A host stopped waiting for the task, which runs on: `note` (`{"host", "afterS",
    /// "reason"}`) is kept on the row and in the timeline, and a repeated call may attach.
    pub fn host_gave_up(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        note: &Value,
    ) -> anyhow::Result<()> {
        let tx = self.write_tx()?;
        let now = now_ms();
        let (id, _) = ensure_task(&tx, server, task_id, None, now)?;
        push_event(&tx, id, now, EventKind::HostGaveUp, None, note)?;
        tx.prepare_cached(
            "UPDATE tasks SET host_note = ?2,
                    delivery = CASE WHEN delivery < 2 THEN 1 ELSE delivery END
              WHERE id = ?1",
        )?
        .execute(params![id, note.to_string()])?;
        tx.touch(id)?;
        tx.commit()?;
        Ok(())
    }

    /// A repeated call was attached to the task (`detail`: `{"host"}`); a host waits again.
    pub fn attached(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        detail: &Value,
    ) -> anyhow::Result<()> {
        let tx = self.write_tx()?;
        let now = now_ms();
        let (id, _) = ensure_task(&tx, server, task_id, None, now)?;
        push_event(&tx, id, now, EventKind::Attached, None, detail)?;
        tx.prepare_cached("UPDATE tasks SET delivery = 0 WHERE id = ?1 AND delivery = 1")?
            .execute(params![id])?;
        tx.touch(id)?;
        tx.commit()?;
        Ok(())
    }

    /// The newest task of `server` with call key `key` whose host stopped waiting before
    /// its result, still within its TTL, and not a tombstone (its work may be lost).
    pub fn undelivered(&self, server: &ServerId, key: &str) -> anyhow::Result<Option<TaskRecord>> {
        let now = now_ms();
        let mut stmt = self.conn.prepare_cached(&format!(
            "{SELECT_TASK} WHERE t.server = ?1 AND t.call_key = ?2 AND t.delivery = 1
               AND t.expired = 0
               AND (t.ttl_ms IS NULL OR t.recorded_at + t.ttl_ms > ?3)
             ORDER BY t.recorded_at DESC, t.id DESC LIMIT 1"
        ))?;
        let mut rows = stmt.query_map(params![server, key, now], super::read::task_from_row)?;
        Ok(rows.next().transpose()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ledger() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let l = Db::open(&dir.path().join("l.db")).unwrap_or_else(|e| panic!("{e}"));
        (dir, l)
    }

    #[test]
    fn a_call_is_attachable_only_between_giving_up_and_delivery() -> anyhow::Result<()> {
        let (_d, l) = ledger();
        let (s, t) = (ServerId::named("s"), TaskId::new("t1"));
        l.set_call(&s, &t, "k")?;
        assert!(l.undelivered(&s, "k")?.is_none(), "a host still waits");
        l.host_gave_up(&s, &t, &json!({ "host": "h", "reason": "timed out" }))?;
        let found = l.undelivered(&s, "k")?.map(|r| r.task_id);
        assert_eq!(found, Some(t.clone()));
        assert!(l.undelivered(&s, "other")?.is_none());
        assert!(l.undelivered(&ServerId::named("s2"), "k")?.is_none());
        let rec = l.get(&s, &t)?.map(|r| r.host_note);
        assert_eq!(rec.flatten().map(|n| n["host"].clone()), Some(json!("h")));
        l.attached(&s, &t, &json!({ "host": "h" }))?;
        assert!(
            l.undelivered(&s, "k")?.is_none(),
            "attached: a host waits again"
        );
        l.set_delivery(&s, &t, Delivery::Undelivered)?;
        l.set_delivery(&s, &t, Delivery::Settled)?;
        assert!(
            l.undelivered(&s, "k")?.is_none(),
            "delivered once, never again"
        );
        l.host_gave_up(&s, &t, &json!({}))?;
        assert!(l.undelivered(&s, "k")?.is_none(), "settled stays settled");
        let kinds: Vec<EventKind> = l.timeline(&s, &t)?.into_iter().map(|e| e.kind).collect();
        assert!(kinds.contains(&EventKind::HostGaveUp) && kinds.contains(&EventKind::Attached));
        Ok(())
    }
}
