//! The outage spool's file: writes to a shared ledger made while its database could not be
//! reached, kept in order in a local SQLite file (`pg-spool.db` beside the user's data)
//! until they are replayed (`ledger/postgres/spool.rs` says what a write is and replays
//! them).
//!
//! Owns the file and which process replays which rows: a process replays its own; one that
//! starts adopts the rows of processes of this machine that are gone (a `kill -9` during an
//! outage loses nothing: the next start replays them). Rows are opaque text here. Must not
//! log them (they hold task ids).

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use rusqlite::{Connection, OptionalExtension, params};

use crate::ledger::backlog::Backlog;
use crate::ledger::{Owner, owner_alive};

/// The spool file of one ledger, for one process.
pub struct Spool {
    conn: Connection,
    /// Which ledger the rows are for (its location: database, hosts, role, schema).
    ledger: String,
    /// This process's token: the rows it replays.
    owner: String,
    backlog: Arc<Backlog>,
}

impl Spool {
    /// Open (or create) the spool at `path` for `ledger`, adopting the rows of this
    /// machine's processes that are gone.
    pub fn open(path: &Path, ledger: &str, backlog: Arc<Backlog>) -> anyhow::Result<Spool> {
        crate::ledger::private_file::prepare_file(path)?;
        let conn = Connection::open(path)
            .with_context(|| format!("opening the ledger's spool {}", path.display()))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS spool (
                 seq    INTEGER PRIMARY KEY AUTOINCREMENT,
                 ledger TEXT NOT NULL,
                 owner  TEXT NOT NULL,
                 at     INTEGER NOT NULL,
                 write  TEXT NOT NULL
             );
             CREATE INDEX IF NOT EXISTS spool_ledger ON spool (ledger, owner, seq);",
        )
        .with_context(|| format!("preparing the ledger's spool {}", path.display()))?;
        let spool = Spool {
            conn,
            ledger: ledger.to_string(),
            owner: Owner::new().as_str().to_string(),
            backlog,
        };
        spool.adopt_orphans()?;
        spool.count()?;
        Ok(spool)
    }

    /// Take over the rows of this ledger left by processes that are gone.
    fn adopt_orphans(&self) -> anyhow::Result<()> {
        let owners: Vec<String> = {
            let mut q = self
                .conn
                .prepare("SELECT DISTINCT owner FROM spool WHERE ledger = ?1 AND owner != ?2")?;
            q.query_map(params![self.ledger, self.owner], |r| r.get(0))?
                .collect::<Result<_, _>>()?
        };
        for gone in owners.iter().filter(|o| !owner_alive(o)) {
            self.conn.execute(
                "UPDATE spool SET owner = ?1 WHERE ledger = ?2 AND owner = ?3",
                params![self.owner, self.ledger, gone],
            )?;
        }
        Ok(())
    }

    /// How many of our rows wait (also told to the backlog gauge).
    fn count(&self) -> anyhow::Result<usize> {
        let n: i64 = self.conn.query_row(
            "SELECT count(*) FROM spool WHERE ledger = ?1 AND owner = ?2",
            params![self.ledger, self.owner],
            |r| r.get(0),
        )?;
        let n = usize::try_from(n).unwrap_or(0);
        self.backlog.set_waiting(n);
        Ok(n)
    }

    /// Whether any of our rows wait.
    pub fn pending(&self) -> bool {
        self.backlog.waiting() > 0
    }

    /// Keep `text` (one write), made at `at` (ms since the epoch), after every row kept
    /// before it.
    pub fn push(&self, text: &str, at: i64) -> anyhow::Result<()> {
        self.conn
            .execute(
                "INSERT INTO spool (ledger, owner, at, write) VALUES (?1, ?2, ?3, ?4)",
                params![self.ledger, self.owner, at, text],
            )
            .context("keeping a write in the ledger's local spool")?;
        self.backlog.set_waiting(self.backlog.waiting() + 1);
        Ok(())
    }

    /// The oldest of our rows: its number, when it was made, and the write as kept.
    pub fn first(&self) -> anyhow::Result<Option<(i64, i64, String)>> {
        let row: Option<(i64, i64, String)> = self
            .conn
            .query_row(
                "SELECT seq, at, write FROM spool WHERE ledger = ?1 AND owner = ?2
                 ORDER BY seq LIMIT 1",
                params![self.ledger, self.owner],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()?;
        Ok(row)
    }

    /// Row `seq` is in the database now (or can never be): forget it.
    pub fn done(&self, seq: i64) -> anyhow::Result<()> {
        self.conn
            .execute("DELETE FROM spool WHERE seq = ?1", params![seq])?;
        self.count().map(drop)
    }

    /// Row `seq` cannot be read by this build: keep it for a newer one, out of our way.
    pub fn set_aside(&self, seq: i64) -> anyhow::Result<()> {
        self.conn.execute(
            "UPDATE spool SET owner = 'unreadable' WHERE seq = ?1",
            params![seq],
        )?;
        self.count().map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_come_back_in_order_and_a_gone_processs_rows_are_adopted_by_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pg-spool.db");
        let first = Spool::open(&path, "ledger A", Arc::default()).unwrap();
        first.push("one", 10).unwrap();
        first.push("two", 20).unwrap();
        let other = Spool::open(&path, "ledger B", Arc::default()).unwrap();
        other.push("nine", 30).unwrap();
        assert!(first.pending());
        // A process that is gone (a pid no process has, on this machine).
        let gone = format!(
            "{}:dead@{}",
            u32::MAX - 1,
            crate::ledger::owner::machine_id()
        );
        first
            .conn
            .execute(
                "UPDATE spool SET owner = ?1 WHERE ledger = 'ledger A'",
                [&gone],
            )
            .unwrap();
        drop(first);

        let next = Spool::open(&path, "ledger A", Arc::default()).unwrap();
        assert!(next.pending(), "the gone process's rows are ours now");
        let (seq, at, text) = next.first().unwrap().unwrap();
        assert_eq!((at, text.as_str()), (10, "one"));
        next.done(seq).unwrap();
        let (seq, at, text) = next.first().unwrap().unwrap();
        assert_eq!((at, text.as_str()), (20, "two"));
        next.done(seq).unwrap();
        assert!(
            next.first().unwrap().is_none(),
            "another ledger's rows are not ours"
        );
        assert!(!next.pending());
    }

    #[test]
    fn a_row_set_aside_is_kept_but_no_longer_ours() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pg-spool.db");
        let spool = Spool::open(&path, "L", Arc::default()).unwrap();
        spool.push("{\"op\":\"from_the_future\"}", 1).unwrap();
        let (seq, _, _) = spool.first().unwrap().unwrap();
        spool.set_aside(seq).unwrap();
        assert!(spool.first().unwrap().is_none());
        let kept: i64 = spool
            .conn
            .query_row("SELECT count(*) FROM spool", [], |r| r.get(0))
            .unwrap();
        assert_eq!(kept, 1, "kept for a newer build");
    }
}
