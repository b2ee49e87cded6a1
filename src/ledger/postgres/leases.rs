//! Who follows a task on a shared database: a lease in `follows`, kept by its owner's
//! heartbeat in `owners` — the SQLite backend's rules (`sqlite/leases.rs`). An owner names
//! its machine and pid; only this machine's pids are judged by `/proc` (`owner_alive`),
//! another machine's holder only by its lease time. Must not log task ids.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use ::postgres::GenericClient;

use super::db::{Pg, now_ms};
use super::write::tracked_in;
use crate::ids::{ServerId, TaskId};
use crate::ledger::{Owner, owner_alive};
use crate::mcp::types::Era;

/// When a lease lapses: its own time or its owner's heartbeat, whichever is later.
const LEASE_UNTIL: &str =
    "greatest(f.until, coalesce((SELECT o.until FROM owners o WHERE o.owner = f.owner), 0))";

fn until(ttl: Duration) -> i64 {
    now_ms().saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX))
}

/// Take the free leases of `ids` inside the caller's transaction; the ids now ours.
pub(super) fn claim_in(
    tx: &mut impl GenericClient,
    server: &ServerId,
    ids: &[TaskId],
    owner: &Owner,
    ttl: Duration,
) -> anyhow::Result<Vec<TaskId>> {
    let now = now_ms();
    let until = until(ttl);
    let mut owned = Vec::new();
    for id in ids {
        let row = tx.query_opt(
            &format!(
                "SELECT t.id, f.owner, {LEASE_UNTIL} FROM tasks t
                   LEFT JOIN follows f ON f.task = t.id
                  WHERE t.server = $1 AND t.task_id = $2
                  FOR UPDATE OF t"
            ),
            &[&server.as_str(), &id.as_str()],
        )?;
        let Some(row) = row else { continue };
        let (task, holder, held_until): (i64, Option<String>, Option<i64>) =
            (row.get(0), row.get(1), row.get(2));
        let free = match (&holder, held_until) {
            (None, _) => true,
            (Some(h), _) if h == owner.as_str() => true,
            (Some(h), Some(u)) => u < now || !owner_alive(h),
            (Some(_), None) => true,
        };
        if free {
            tx.execute(
                "INSERT INTO follows (task, owner, until) VALUES ($1, $2, $3)
                 ON CONFLICT (task) DO UPDATE SET owner = excluded.owner,
                     until = excluded.until",
                &[&task, &owner.as_str(), &until],
            )?;
            owned.push(id.clone());
        }
    }
    Ok(owned)
}

impl Pg {
    pub fn claim(
        &self,
        server: &ServerId,
        ids: &[TaskId],
        owner: &Owner,
        ttl: Duration,
    ) -> anyhow::Result<Vec<TaskId>> {
        self.write(|tx| claim_in(tx, server, ids, owner, ttl))
    }

    pub fn track_and_claim(
        &self,
        server: &ServerId,
        era: Option<Era>,
        task_id: &TaskId,
        session: Option<i64>,
        owner: &Owner,
        ttl: Duration,
    ) -> anyhow::Result<bool> {
        self.write(|tx| {
            tracked_in(tx, server, era, task_id, session)?;
            let owned = claim_in(tx, server, std::slice::from_ref(task_id), owner, ttl)?;
            Ok(!owned.is_empty())
        })
    }

    pub fn renew(&self, owner: &Owner, ttl: Duration) -> anyhow::Result<()> {
        self.read(|c| {
            let mut tx = c.transaction()?;
            tx.execute(
                "INSERT INTO owners (owner, until) VALUES ($1, $2)
                 ON CONFLICT (owner) DO UPDATE SET until = excluded.until",
                &[&owner.as_str(), &until(ttl)],
            )?;
            tx.execute("DELETE FROM owners WHERE until < $1", &[&now_ms()])?;
            tx.commit()?;
            Ok(())
        })
    }

    pub fn release(&self, server: &ServerId, ids: &[TaskId], owner: &Owner) -> anyhow::Result<()> {
        self.write(|tx| {
            for id in ids {
                tx.execute(
                    "DELETE FROM follows WHERE owner = $3
                        AND task = (SELECT id FROM tasks WHERE server = $1 AND task_id = $2)",
                    &[&server.as_str(), &id.as_str(), &owner.as_str()],
                )?;
            }
            Ok(())
        })
    }

    pub fn release_all(&self, owner: &Owner) -> anyhow::Result<()> {
        self.write(|tx| {
            tx.execute("DELETE FROM follows WHERE owner = $1", &[&owner.as_str()])?;
            tx.execute("DELETE FROM owners WHERE owner = $1", &[&owner.as_str()])?;
            Ok(())
        })
    }

    pub fn follower(
        &self,
        server: &ServerId,
        id: &TaskId,
        me: &Owner,
    ) -> anyhow::Result<Option<String>> {
        let row = self.read(|c| {
            Ok(c.query_opt(
                &format!(
                    "SELECT f.owner, {LEASE_UNTIL} FROM follows f JOIN tasks t ON t.id = f.task
                      WHERE t.server = $1 AND t.task_id = $2"
                ),
                &[&server.as_str(), &id.as_str()],
            )?)
        })?;
        Ok(row.and_then(|r| {
            let (owner, until): (String, i64) = (r.get(0), r.get(1));
            let live = owner != me.as_str() && until >= now_ms() && owner_alive(&owner);
            live.then_some(owner)
        }))
    }

    pub fn followed_by_others(
        &self,
        server: &ServerId,
        ids: &[TaskId],
        me: &Owner,
    ) -> anyhow::Result<HashSet<TaskId>> {
        let rows = self.read(|c| {
            Ok(c.query(
                &format!(
                    "SELECT t.task_id, f.owner FROM follows f JOIN tasks t ON t.id = f.task
                      WHERE f.owner <> $2 AND t.server = $1 AND {LEASE_UNTIL} >= $3"
                ),
                &[&server.as_str(), &me.as_str(), &now_ms()],
            )?)
        })?;
        let wanted: HashSet<&str> = ids.iter().map(TaskId::as_str).collect();
        let mut alive: HashMap<String, bool> = HashMap::new();
        let mut out = HashSet::new();
        for r in &rows {
            let (id, owner): (&str, String) = (r.get(0), r.get(1));
            if wanted.contains(id) && *alive.entry(owner).or_insert_with_key(|o| owner_alive(o)) {
                out.insert(TaskId::new(id));
            }
        }
        Ok(out)
    }
}
