//! The SQLite backend: the ledger in one file shared by every taskrail process on the
//! machine (WAL, `busy_timeout`, mode 0600), served by one thread per process.
//!
//! Owns everything SQLite: `Db` (one connection and the SQL of each concern), the thread
//! that runs its jobs in order (batching queued snapshots, surviving a panicking job), and
//! the `Ledger` trait's implementation over it. Nothing outside this folder names
//! rusqlite. Must not log task ids.

mod activity;
mod backend;
mod calls;
mod db;
mod feed;
mod identity;
mod ids;
mod lazy;
mod leases;
mod outbox;
mod read;
mod schema;
mod sessions;
mod spool;
mod thread;
mod tx;
mod write;

#[cfg(test)]
mod durability_tests;
#[cfg(test)]
mod shared_tests;
#[cfg(test)]
mod store_tests;

use std::path::Path;
use std::sync::Arc;

use crate::ledger::LedgerHandle;

pub use spool::Spool;

/// Open (creating if needed) the SQLite ledger at `path` on a thread of its own.
pub fn open(path: &Path) -> anyhow::Result<LedgerHandle> {
    let db = db::Db::open(path)?;
    Ok(Arc::new(thread::SqliteLedger::spawn(db, "taskrail-ledger")))
}
