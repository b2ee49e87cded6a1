//! Who follows a task: a lease in the `follows` table, kept by its owner's heartbeat in
//! `owners` (one row per following process, renewed as long as it runs). One process polls
//! a task; the others mirror it from the feed, and take the lease over once it lapses or its
//! holder is gone (a dead process's leases are taken at once when its pid is visible under
//! `/proc`).
//!
//! Must not log task ids.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use rusqlite::{OptionalExtension, params};

use super::db::Db;
use super::tx::{WriteTx, now_ms};
use super::write::tracked_in;
use crate::ids::{ServerId, TaskId};
use crate::ledger::{Owner, owner_alive};
use crate::mcp::types::Era;

/// Until when the lease of follows row `f` holds: its own `until`, or its owner's
/// heartbeat if later.
macro_rules! lease_until {
    () => {
        "max(f.until, coalesce((SELECT o.until FROM owners o WHERE o.owner = f.owner), 0))"
    };
}

/// [`Db::claim`] inside a write transaction.
pub(super) fn claim_in(
    tx: &WriteTx<'_>,
    server: &ServerId,
    ids: &[TaskId],
    owner: &Owner,
    ttl: Duration,
) -> anyhow::Result<Vec<TaskId>> {
    let now = now_ms();
    let until = until(ttl);
    let mut owned = Vec::new();
    for id in ids {
        let row: Option<(i64, Option<String>, Option<i64>)> = tx
            .prepare_cached(concat!(
                "SELECT t.id, f.owner, ",
                lease_until!(),
                " FROM tasks t LEFT JOIN follows f ON f.task = t.id
                  WHERE t.server = ?1 AND t.task_id = ?2"
            ))?
            .query_row(params![server, id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()?;
        let Some((row, holder, held_until)) = row else {
            continue;
        };
        let free = match (&holder, held_until) {
            (None, _) => true,
            (Some(h), _) if h == owner.as_str() => true,
            (Some(h), Some(u)) => u < now || !owner_alive(h),
            (Some(_), None) => true,
        };
        if free {
            tx.prepare_cached(
                "INSERT INTO follows (task, owner, until) VALUES (?1, ?2, ?3)
                 ON CONFLICT (task) DO UPDATE SET owner = excluded.owner,
                     until = excluded.until",
            )?
            .execute(params![row, owner.as_str(), until])?;
            owned.push(id.clone());
        }
    }
    Ok(owned)
}

fn until(ttl: Duration) -> i64 {
    now_ms().saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX))
}

impl Db {
    /// Take or keep the lease on each task for `ttl`; returns the ids `owner` now follows.
    /// A task whose lease another live process holds is left to it. Ids not in the ledger
    /// are skipped.
    pub fn claim(
        &self,
        server: &ServerId,
        ids: &[TaskId],
        owner: &Owner,
        ttl: Duration,
    ) -> anyhow::Result<Vec<TaskId>> {
        let tx = self.write_tx()?;
        let owned = claim_in(&tx, server, ids, owner, ttl)?;
        tx.commit()?;
        Ok(owned)
    }

    /// Record a task followed by id (as [`Db::record_tracked`]) and take its lease, in
    /// one transaction. Returns whether `owner` now follows it.
    pub fn track_and_claim(
        &self,
        server: &ServerId,
        era: Option<Era>,
        task_id: &TaskId,
        session: Option<i64>,
        owner: &Owner,
        ttl: Duration,
    ) -> anyhow::Result<bool> {
        let tx = self.write_tx()?;
        tracked_in(&tx, server, era, task_id, session)?;
        let owned = claim_in(&tx, server, std::slice::from_ref(task_id), owner, ttl)?;
        tx.commit()?;
        Ok(!owned.is_empty())
    }

    /// Extend every lease `owner` holds to `ttl` from now: its heartbeat, one row however
    /// many tasks it follows. Heartbeats already lapsed (of processes gone) are cleared on
    /// the way; a lapsed heartbeat holds nothing.
    pub fn renew(&self, owner: &Owner, ttl: Duration) -> anyhow::Result<()> {
        // Not a `write_tx`: that would take the lazy poll bookkeeping along every period.
        let tx = self.conn.unchecked_transaction()?;
        tx.prepare_cached(
            "INSERT INTO owners (owner, until) VALUES (?1, ?2)
             ON CONFLICT (owner) DO UPDATE SET until = excluded.until",
        )?
        .execute(params![owner.as_str(), until(ttl)])?;
        tx.prepare_cached("DELETE FROM owners WHERE until < ?1")?
            .execute(params![now_ms()])?;
        tx.commit()?;
        Ok(())
    }

    /// Give up following these tasks (other processes may take them over at once).
    pub fn release(&self, server: &ServerId, ids: &[TaskId], owner: &Owner) -> anyhow::Result<()> {
        let tx = self.write_tx()?;
        for id in ids {
            tx.prepare_cached(
                "DELETE FROM follows WHERE owner = ?3
                    AND task = (SELECT id FROM tasks WHERE server = ?1 AND task_id = ?2)",
            )?
            .execute(params![server, id, owner.as_str()])?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Give up every lease `owner` holds, and its heartbeat (on shutdown).
    pub fn release_all(&self, owner: &Owner) -> anyhow::Result<()> {
        let tx = self.write_tx()?;
        tx.prepare_cached("DELETE FROM follows WHERE owner = ?1")?
            .execute(params![owner.as_str()])?;
        tx.prepare_cached("DELETE FROM owners WHERE owner = ?1")?
            .execute(params![owner.as_str()])?;
        tx.commit()?;
        Ok(())
    }

    /// The live process following a task, if any other than `me` (`None` when nobody does,
    /// or only a dead process or an expired lease).
    pub fn follower(
        &self,
        server: &ServerId,
        id: &TaskId,
        me: &Owner,
    ) -> anyhow::Result<Option<String>> {
        let row: Option<(String, i64)> = self
            .conn
            .prepare_cached(concat!(
                "SELECT f.owner, ",
                lease_until!(),
                " FROM follows f JOIN tasks t ON t.id = f.task
                  WHERE t.server = ?1 AND t.task_id = ?2"
            ))?
            .query_row(params![server, id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        Ok(row.and_then(|(owner, until)| {
            let live = owner != me.as_str() && until >= now_ms() && owner_alive(&owner);
            live.then_some(owner)
        }))
    }

    /// Which of `ids` (tasks of `server`) a live process other than `me` follows: what
    /// `follower` says for each, in one query (only other owners' leases are read, two
    /// ranges of the owner index, so a process that follows everything alone reads
    /// nothing).
    pub fn followed_by_others(
        &self,
        server: &ServerId,
        ids: &[TaskId],
        me: &Owner,
    ) -> anyhow::Result<HashSet<TaskId>> {
        let mut stmt = self.conn.prepare_cached(concat!(
            "SELECT t.task_id, f.owner FROM follows f INDEXED BY follows_by_owner
               JOIN tasks t ON t.id = f.task
              WHERE (f.owner < ?2 OR f.owner > ?2) AND t.server = ?1 AND ",
            lease_until!(),
            " >= ?3"
        ))?;
        let rows = stmt.query_map(params![server, me.as_str(), now_ms()], |r| {
            Ok((r.get::<_, TaskId>(0)?, r.get::<_, String>(1)?))
        })?;
        let mut wanted: Option<HashSet<&TaskId>> = None; // built only when another owner holds some
        let mut alive: HashMap<String, bool> = HashMap::new();
        let mut out = HashSet::new();
        for row in rows {
            let (id, owner) = row?;
            let wanted = wanted.get_or_insert_with(|| ids.iter().collect());
            if wanted.contains(&id) && *alive.entry(owner).or_insert_with_key(|o| owner_alive(o)) {
                out.insert(id);
            }
        }
        Ok(out)
    }
}
