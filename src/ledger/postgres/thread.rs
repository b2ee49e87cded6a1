//! The PostgreSQL backend on the ledger's worker thread (`ledger/worker.rs`): a `PgLedger`
//! is the worker holding one `Pg` (one blocking PostgreSQL connection).

use std::sync::Arc;

use super::db::Pg;
use super::spool::Write;
use crate::ledger::SnapshotWrite;
use crate::ledger::backlog::Backlog;
use crate::ledger::worker::{Store, Worker};

/// Cloneable, `Send + Sync` handle to the PostgreSQL ledger's thread.
pub type PgLedger = Worker<Pg>;

impl Store for Pg {
    fn location(&self) -> String {
        Pg::location(self).to_string()
    }

    fn write_snapshots(&self, batch: &[SnapshotWrite]) -> anyhow::Result<()> {
        self.through(&Write::snapshots(batch)).map(drop)
    }

    fn backlog(&self) -> Option<Arc<Backlog>> {
        Some(Pg::backlog(self))
    }
}
