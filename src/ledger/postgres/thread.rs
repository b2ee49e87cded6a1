//! The PostgreSQL backend on the ledger's worker thread (`ledger/worker.rs`): a `PgLedger`
//! is the worker holding one `Pg` (one blocking PostgreSQL connection).

use super::db::Pg;
use crate::ledger::SnapshotWrite;
use crate::ledger::worker::{Store, Worker};

/// Cloneable, `Send + Sync` handle to the PostgreSQL ledger's thread.
pub type PgLedger = Worker<Pg>;

impl Store for Pg {
    fn location(&self) -> String {
        Pg::location(self).to_string()
    }

    fn write_snapshots(&self, batch: &[SnapshotWrite]) -> anyhow::Result<()> {
        self.record_snapshots(batch).map(drop)
    }
}
