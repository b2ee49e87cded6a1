//! The ledger as a live feed shared by several processes: `PRAGMA data_version` tells, for
//! the price of one pragma, whether another connection committed since we last looked; only
//! then are the task rows changed since our cursor read (every write stamps the rows it
//! touches with a growing change number), with the outbox requests and outcomes that
//! concern this process.
//!
//! Must not log task ids. Reads are bounded: at most [`FEED_BATCH`] rows per call.

use rusqlite::params;

use super::db::Db;
use super::read::{SELECT_TASK, task_from_row};
use crate::ledger::{Changes, Cursor};

/// Task rows returned by one [`Db::changes`] call at most; `more` says to ask again.
pub const FEED_BATCH: usize = 2000;

impl Db {
    /// The cursor of "now": a reader starting here sees only later changes.
    pub fn feed_cursor(&self) -> anyhow::Result<Cursor> {
        let seq: i64 =
            self.conn
                .query_row("SELECT value FROM meta WHERE key = 'change_seq'", [], |r| {
                    r.get(0)
                })?;
        let id: i64 = self
            .conn
            .query_row("SELECT coalesce(max(id), 0) FROM tasks", [], |r| r.get(0))?;
        self.data_version_changed()?;
        Ok((seq, id))
    }

    /// SQLite's `PRAGMA data_version` for this connection: it changes when another
    /// connection commits.
    pub fn data_version(&self) -> anyhow::Result<i64> {
        Ok(self
            .conn
            .prepare_cached("PRAGMA data_version")?
            .query_row([], |r| r.get(0))?)
    }

    /// A check for [`LedgerHandle::watch`](super::LedgerHandle::watch): true when another
    /// connection committed since its previous call (and on the first call, or when the
    /// ledger cannot be read, so that the reader looks and reports).
    pub fn other_writes() -> impl FnMut(&Db) -> bool + Send + 'static {
        let mut seen = None;
        move |ledger| match ledger.data_version() {
            Ok(v) => seen.replace(v) != Some(v),
            Err(_) => true,
        }
    }

    /// Whether another connection committed since the last call (the first call says yes).
    fn data_version_changed(&self) -> anyhow::Result<bool> {
        let v = self.data_version()?;
        Ok(self.data_version.replace(Some(v)) != Some(v))
    }

    /// What changed since `since`, or `None` when no other connection wrote since the last
    /// call (`force` skips that check, e.g. after a batch that had `more`). `owner` is this
    /// process's follower token: requests for the tasks it follows and outcomes of the
    /// requests it made come along.
    pub fn changes(
        &self,
        since: Cursor,
        owner: &str,
        force: bool,
    ) -> anyhow::Result<Option<Changes>> {
        if !self.data_version_changed()? && !force {
            return Ok(None);
        }
        let mut stmt = self.conn.prepare_cached(&format!(
            "{SELECT_TASK} WHERE (t.changed_seq, t.id) > (?1, ?2)
             ORDER BY t.changed_seq, t.id LIMIT ?3"
        ))?;
        let mut cursor = since;
        let mut tasks = Vec::new();
        let mut rows = stmt.query(params![since.0, since.1, FEED_BATCH as i64 + 1])?;
        let mut more = false;
        while let Some(row) = rows.next()? {
            if tasks.len() == FEED_BATCH {
                more = true;
                break;
            }
            let seq: i64 = row.get("changed_seq")?;
            let id: i64 = row.get("row_id")?;
            cursor = (seq, id);
            tasks.push(task_from_row(row)?);
        }
        drop(rows);
        drop(stmt);
        let requests = self.open_requests(owner)?;
        let outcomes = self.outcomes_since(owner, since.0)?;
        let mut stmt = self.conn.prepare_cached(
            "SELECT seq, server, task_id FROM removed WHERE seq > ?1 ORDER BY seq LIMIT ?2",
        )?;
        let mut removed = Vec::new();
        let mut last_removed = None;
        let mut rows = stmt.query(params![since.0, FEED_BATCH as i64])?;
        while let Some(row) = rows.next()? {
            last_removed = Some(row.get::<_, i64>(0)?);
            removed.push((row.get(1)?, row.get(2)?));
        }
        // A prune stamps no task row: the cursor moves past it once every task row up to
        // it was read (a prune's number is its own: no task row has it).
        if let Some(seq) = last_removed
            && !more
            && removed.len() < FEED_BATCH
            && seq > cursor.0
        {
            cursor = (seq, 0);
        }
        Ok(Some(Changes {
            cursor,
            tasks,
            requests,
            outcomes,
            removed,
            more,
        }))
    }
}
