//! `LedgerHandle`: async access to a `Ledger` owned by one dedicated OS thread.
//!
//! Owns the ledger thread and its job queue so no SQLite call ever blocks the async
//! runtime. Jobs run one at a time, in the order they were sent. Must not log task ids.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;

use anyhow::anyhow;
use tokio::sync::oneshot;

use super::Ledger;

type Job = Box<dyn FnOnce(&Ledger) + Send + 'static>;

/// Cloneable, `Send + Sync` handle to a ledger running on its own thread. The thread
/// stops (closing the connection) when the last handle is dropped.
#[derive(Clone)]
pub struct LedgerHandle {
    jobs: mpsc::Sender<Job>,
    path: Arc<PathBuf>,
}

impl std::fmt::Debug for LedgerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LedgerHandle")
            .field("path", &self.path)
            .finish()
    }
}

impl LedgerHandle {
    /// Move `ledger` onto a new thread named `taskrail-ledger` and return a handle to it.
    ///
    /// # Panics
    /// If the OS refuses to create a thread.
    pub fn spawn(ledger: Ledger) -> LedgerHandle {
        let (jobs, queue) = mpsc::channel::<Job>();
        let path = Arc::new(ledger.path().to_path_buf());
        std::thread::Builder::new()
            .name("taskrail-ledger".into())
            .spawn(move || {
                for job in queue {
                    job(&ledger);
                }
            })
            .expect("spawning the ledger thread");
        LedgerHandle { jobs, path }
    }

    /// The ledger file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Run `f` on the ledger thread and await its result. A panic inside `f` is turned
    /// into an error and leaves the thread serving later calls.
    pub async fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Ledger) -> anyhow::Result<R> + Send + 'static,
    ) -> anyhow::Result<R> {
        let (reply, result) = oneshot::channel();
        let job: Job = Box::new(move |ledger| {
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| f(ledger)))
                .unwrap_or_else(|_| Err(anyhow!("ledger operation panicked")));
            // The caller may have stopped waiting; nothing to do then.
            let _ = reply.send(outcome);
        });
        self.jobs
            .send(job)
            .map_err(|_| anyhow!("the ledger thread has stopped"))?;
        result
            .await
            .map_err(|_| anyhow!("the ledger thread has stopped"))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::EventKind;
    use crate::mcp::types::{Era, Task, TaskStatus};
    use serde_json::json;

    fn task(id: &str, status: TaskStatus) -> Task {
        Task::from_wire(&json!({ "taskId": id, "status": status.as_str() })).unwrap()
    }

    fn assert_send_sync<T: Send + Sync + Clone + 'static>() {}

    #[tokio::test]
    async fn handle_round_trip() {
        assert_send_sync::<LedgerHandle>();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ledger.db");
        let handle = LedgerHandle::spawn(Ledger::open(&path).unwrap());
        assert_eq!(handle.path(), path.as_path());

        let created = task("handle-task-1", TaskStatus::Working);
        handle
            .call(move |l| l.record_created("srv", Era::Modern, "tool", &json!({}), &created, None))
            .await
            .unwrap();
        let other = handle.clone();
        let changed = tokio::spawn(async move {
            let done = task("handle-task-1", TaskStatus::Completed);
            other
                .call(move |l| l.record_snapshot("srv", &done, EventKind::Poll, Some(12)))
                .await
        })
        .await
        .unwrap()
        .unwrap();
        assert!(changed);
        let record = handle
            .call(|l| l.get("srv", "handle-task-1"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(record.status, "completed");
        assert!(record.terminal);
    }

    #[tokio::test]
    async fn panicking_call_is_an_error_and_thread_survives() {
        let dir = tempfile::tempdir().unwrap();
        let handle = LedgerHandle::spawn(Ledger::open(&dir.path().join("l.db")).unwrap());
        let err = handle
            .call(|_| -> anyhow::Result<()> { panic!("boom") })
            .await
            .unwrap_err();
        assert!(err.to_string().contains("panicked"), "{err}");
        let n = handle.call(|l| Ok(l.list(true)?.len())).await.unwrap();
        assert_eq!(n, 0);
    }
}
