//! Opening the ledger file: location, permissions, connection pragmas and migrations.
//!
//! Owns `Db` (one `rusqlite::Connection`) and the helpers every query shares (clock,
//! write transactions, time conversion). Must not log task ids.

use std::cell::{Cell, RefCell};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use rusqlite::{Connection, Transaction, TransactionBehavior};
use serde_json::Value;

use super::lazy::Lazy;
use super::schema::{MIGRATIONS, SCHEMA_VERSION};
use super::tx::WriteTx;
use crate::ids::{ServerId, TaskId};

/// How long a writer waits for another process's write lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The durable task ledger: one SQLite connection to one file.
///
/// Every write is a short `BEGIN IMMEDIATE` transaction, committed before the method
/// returns, so a dashboard and a CLI process can share the file.
pub struct Db {
    pub(super) conn: Connection,
    path: PathBuf,
    /// `PRAGMA data_version` when the feed last looked (changes when another connection
    /// commits).
    pub(super) data_version: Cell<Option<i64>>,
    /// Poll bookkeeping not written yet (`lazy.rs`).
    pub(super) lazy: RefCell<Lazy>,
}

impl Drop for Db {
    fn drop(&mut self) {
        if let Err(e) = self.flush_pending() {
            tracing::warn!("ledger: writing poll bookkeeping on close failed: {e:#}");
        }
    }
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("path", &self.path).finish()
    }
}

impl Db {
    /// Open (creating if needed) the ledger at `path` and bring its schema up to date.
    ///
    /// Creates missing parent directories (mode 0700 on Unix), creates the file with mode
    /// 0600 and tightens an existing file to 0600. Fails if the file was written by a newer
    /// taskrail with a schema version this build does not know.
    pub fn open(path: &Path) -> anyhow::Result<Db> {
        crate::ledger::private_file::prepare_file(path)?;
        let conn =
            Connection::open(path).with_context(|| format!("opening ledger {}", path.display()))?;
        configure(&conn).with_context(|| format!("configuring ledger {}", path.display()))?;
        migrate(&conn, path)?;
        Ok(Db {
            conn,
            path: path.to_path_buf(),
            data_version: Cell::new(None),
            lazy: RefCell::new(Lazy::default()),
        })
    }

    /// The file this ledger was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Start a write transaction that takes the write lock up front, so a concurrent writer
    /// waits in `busy_timeout` instead of failing on a lock upgrade. Pending poll
    /// bookkeeping is written first, in the same transaction.
    pub(super) fn write_tx(&self) -> anyhow::Result<WriteTx<'_>> {
        let tx = WriteTx::begin(&self.conn)?;
        let pending = std::mem::take(&mut *self.lazy.borrow_mut());
        pending.write(&tx)?;
        Ok(tx)
    }

    /// Remember that task row `row` was seen unchanged at `at` (written lazily).
    pub(super) fn note_seen(&self, row: i64, at: i64) -> anyhow::Result<()> {
        self.lazy.borrow_mut().note_seen(row, at);
        self.flush_if_due()
    }

    /// Keep a `polls` event for later (written lazily).
    pub(super) fn defer_polls(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        at: i64,
        detail: &Value,
    ) -> anyhow::Result<()> {
        self.lazy
            .borrow_mut()
            .defer_polls(server, task_id, at, detail);
        self.flush_if_due()
    }

    /// Write what is pending now, in a transaction of its own if there is anything.
    pub fn flush_pending(&self) -> anyhow::Result<()> {
        if self.lazy.borrow().is_empty() {
            return Ok(());
        }
        self.write_tx()?.commit()?;
        Ok(())
    }

    fn flush_if_due(&self) -> anyhow::Result<()> {
        if self.lazy.borrow().due() {
            self.flush_pending()?;
        }
        Ok(())
    }

    /// Whether anything waits to be written (tests).
    #[cfg(test)]
    pub(super) fn has_pending(&self) -> bool {
        !self.lazy.borrow().is_empty()
    }
}

/// Prepared statements kept per connection: room for every statement the ledger runs
/// (about 40, some in a few variants). rusqlite's default of 16 is fewer, so hot ones
/// would be evicted and parsed again.
const STATEMENT_CACHE: usize = 128;

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    let mode = wal_mode(conn)?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!(%mode, "ledger could not switch to WAL journal mode");
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "foreign_keys", true)?;
    Ok(())
}

/// Switch the file to WAL (kept in the file, so only its first opener switches). Two
/// processes opening a new ledger at once race for the switch, and SQLite reports the
/// loser busy at once without its busy handler: retried until [`BUSY_TIMEOUT`].
fn wal_mode(conn: &Connection) -> rusqlite::Result<String> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        let current: String = conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
        if current.eq_ignore_ascii_case("wal") {
            return Ok(current);
        }
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

/// Read `PRAGMA user_version`.
pub(super) fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |r| r.get(0))
}

/// Apply every pending migration in one transaction, or refuse a newer schema.
fn migrate(conn: &Connection, path: &Path) -> anyhow::Result<()> {
    let tx = Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
        .with_context(|| format!("locking ledger {} for migration", path.display()))?;
    let current = user_version(&tx)?;
    if current > SCHEMA_VERSION {
        bail!(
            "ledger {} has schema version {current}, newer than the {SCHEMA_VERSION} this \
             taskrail understands; upgrade taskrail or use another --db",
            path.display()
        );
    }
    if current < 0 {
        bail!(
            "ledger {} has an invalid schema version {current}",
            path.display()
        );
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        tx.execute_batch(sql)
            .with_context(|| format!("applying ledger migration {}", i + 1))?;
    }
    if current < SCHEMA_VERSION {
        tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        tracing::debug!(
            from = current,
            to = SCHEMA_VERSION,
            "migrated ledger schema"
        );
    }
    tx.commit().context("committing ledger migration")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_db() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested").join("dir").join("ledger.db");
        (dir, path)
    }

    #[test]
    fn open_creates_parents_and_sets_pragmas() {
        let (_dir, path) = temp_db();
        let ledger = Db::open(&path).unwrap();
        assert_eq!(ledger.path(), path.as_path());
        let c = &ledger.conn;
        let mode: String = c
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode.to_ascii_lowercase(), "wal");
        let sync: i64 = c
            .pragma_query_value(None, "synchronous", |r| r.get(0))
            .unwrap();
        assert_eq!(sync, 1, "synchronous=NORMAL");
        let fk: i64 = c
            .pragma_query_value(None, "foreign_keys", |r| r.get(0))
            .unwrap();
        assert_eq!(fk, 1);
        let busy: i64 = c
            .pragma_query_value(None, "busy_timeout", |r| r.get(0))
            .unwrap();
        assert_eq!(busy, 5000);
    }

    #[test]
    fn migrations_set_user_version_and_reopen_cleanly() {
        let (_dir, path) = temp_db();
        {
            let ledger = Db::open(&path).unwrap();
            assert_eq!(user_version(&ledger.conn).unwrap(), SCHEMA_VERSION);
        }
        let ledger = Db::open(&path).unwrap();
        assert_eq!(user_version(&ledger.conn).unwrap(), SCHEMA_VERSION);
        let tables: i64 = ledger
            .conn
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' \
                 AND name IN ('tasks', 'answered_keys', 'events')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(tables, 3);
    }

    #[test]
    fn future_schema_version_is_rejected() {
        let (_dir, path) = temp_db();
        {
            let ledger = Db::open(&path).unwrap();
            ledger
                .conn
                .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
                .unwrap();
        }
        let err = Db::open(&path).unwrap_err().to_string();
        assert!(err.contains("newer"), "{err}");
        assert!(err.contains(&format!("{}", SCHEMA_VERSION + 1)), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn new_file_is_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let (_dir, path) = temp_db();
        let _ledger = Db::open(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let parent = std::fs::metadata(path.parent().unwrap()).unwrap();
        assert_eq!(
            parent.permissions().mode() & 0o077,
            0,
            "parent dir is private"
        );
    }

    #[cfg(unix)]
    #[test]
    fn existing_world_readable_file_is_tightened() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        std::fs::write(&path, b"").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let _ledger = Db::open(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // SQLite gives its side files the database file's permissions.
        let wal = path.with_extension("db-wal");
        if wal.exists() {
            let mode = std::fs::metadata(&wal).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
        }
    }
}
