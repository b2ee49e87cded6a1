//! The SQLite backend on the ledger's worker thread (`ledger/worker.rs`): a `SqliteLedger`
//! is the worker holding one `Db` (the file's connection).

use super::db::Db;
use crate::ledger::SnapshotWrite;
use crate::ledger::worker::{Store, Worker};

/// Cloneable, `Send + Sync` handle to the SQLite ledger's thread.
pub type SqliteLedger = Worker<Db>;

impl Store for Db {
    fn location(&self) -> String {
        self.path().display().to_string()
    }

    fn write_snapshots(&self, batch: &[SnapshotWrite]) -> anyhow::Result<()> {
        self.record_snapshots(batch).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::ServerId;
    use crate::ledger::EventKind;
    use crate::mcp::types::{Task, TaskStatus};
    use serde_json::json;
    use std::sync::Arc;
    use std::time::Duration;

    fn task(id: &str, status: TaskStatus) -> Task {
        Task::from_wire(&json!({ "taskId": id, "status": status.as_str() })).unwrap()
    }

    #[tokio::test]
    async fn panicking_call_is_an_error_and_thread_survives() {
        let dir = tempfile::tempdir().unwrap();
        let handle =
            SqliteLedger::spawn(Db::open(&dir.path().join("l.db")).unwrap(), "test-ledger");
        let err = handle
            .op(|_| -> anyhow::Result<()> { panic!("boom") })
            .await
            .unwrap_err();
        assert!(err.to_string().contains("panicked"), "{err}");
        let n = handle.op(|l| Ok(l.list(true)?.len())).await.unwrap();
        assert_eq!(n, 0);
    }

    #[tokio::test]
    async fn a_watch_wakes_only_when_its_check_says_so_and_ends_with_its_receiver() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let dir = tempfile::tempdir().unwrap();
        let handle =
            SqliteLedger::spawn(Db::open(&dir.path().join("l.db")).unwrap(), "test-ledger");
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let mut woken = handle
            .watch(Duration::from_millis(5), move |_| {
                counted.fetch_add(1, Ordering::SeqCst) + 1 == 3
            })
            .unwrap();
        tokio::time::timeout(Duration::from_secs(10), woken.recv())
            .await
            .expect("the third check wakes the receiver")
            .expect("the ledger thread is running");
        assert!(calls.load(Ordering::SeqCst) >= 3);
        // Checks that say no put nothing in the receiver.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(woken.try_recv().is_err(), "only the third check said yes");
        // Jobs still run while the watch does.
        let n = handle.op(|l| Ok(l.list(true)?.len())).await.unwrap();
        assert_eq!(n, 0);
        // Without its receiver the watch ends: the count stops growing.
        drop(woken);
        tokio::time::sleep(Duration::from_millis(50)).await;
        handle.op(|_| Ok(())).await.unwrap();
        let after = calls.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(calls.load(Ordering::SeqCst), after);
    }

    #[tokio::test]
    async fn the_other_writes_check_sees_a_second_connection_commit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.db");
        let handle = SqliteLedger::spawn(Db::open(&path).unwrap(), "test-ledger");
        let mut woken = handle
            .watch(Duration::from_millis(5), Db::other_writes())
            .unwrap();
        // The first check always says "look".
        tokio::time::timeout(Duration::from_secs(10), woken.recv())
            .await
            .unwrap()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(woken.try_recv().is_err(), "nobody wrote");
        let other = Db::open(&path).unwrap();
        other
            .record_snapshot(
                &ServerId::named("srv"),
                &task("watched-1", TaskStatus::Working),
                EventKind::Poll,
                None,
            )
            .unwrap();
        tokio::time::timeout(Duration::from_secs(10), woken.recv())
            .await
            .expect("another connection's commit wakes the watch")
            .unwrap();
    }
}
