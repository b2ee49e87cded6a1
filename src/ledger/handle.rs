//! `LedgerHandle`: async access to a `Ledger` owned by one dedicated OS thread.
//!
//! Owns the ledger thread and its job queue so no SQLite call ever blocks the async
//! runtime. Jobs run one at a time, in the order they were sent. Must not log task ids.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use anyhow::anyhow;
use tokio::sync::oneshot;

use super::{EventKind, Ledger};
use crate::ids::ServerId;
use crate::mcp::types::Task;

/// One snapshot to store: server, task, how it arrived, request latency.
pub type SnapshotWrite = (ServerId, Task, EventKind, Option<u64>);

enum Job {
    Call(Box<dyn FnOnce(&Ledger) + Send + 'static>),
    /// Queued without a reply; consecutive ones share one transaction.
    Snapshot(SnapshotWrite),
}

/// Snapshots written in one transaction at most.
const BATCH_MAX: usize = 512;

/// The ledger thread: runs jobs in order, folding runs of queued snapshots into one
/// `record_snapshots` transaction each.
fn serve(ledger: Ledger, queue: mpsc::Receiver<Job>, failure: Arc<Mutex<Option<String>>>) {
    let mut next: Option<Job> = None;
    loop {
        let job = match next.take() {
            Some(j) => j,
            None => match queue.recv() {
                Ok(j) => j,
                Err(_) => return,
            },
        };
        match job {
            Job::Call(f) => f(&ledger),
            Job::Snapshot(first) => {
                let mut batch = vec![first];
                while batch.len() < BATCH_MAX {
                    match queue.try_recv() {
                        Ok(Job::Snapshot(w)) => batch.push(w),
                        Ok(other) => {
                            next = Some(other);
                            break;
                        }
                        Err(_) => break,
                    }
                }
                if let Err(e) = write_batch(&ledger, &batch) {
                    tracing::warn!("ledger: {e:#}");
                    *failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(format!("{e:#}"));
                }
            }
        }
    }
}

/// One transaction for the batch; if it fails, each snapshot alone (so one bad
/// snapshot does not lose the others).
fn write_batch(ledger: &Ledger, batch: &[SnapshotWrite]) -> anyhow::Result<()> {
    let run = |f: &dyn Fn() -> anyhow::Result<()>| {
        std::panic::catch_unwind(AssertUnwindSafe(f))
            .unwrap_or_else(|_| Err(anyhow!("ledger operation panicked")))
    };
    if run(&|| ledger.record_snapshots(batch).map(drop)).is_ok() {
        return Ok(());
    }
    let mut last = Ok(());
    for (server, task, kind, latency) in batch {
        let r = run(&|| {
            ledger
                .record_snapshot(server, task, *kind, *latency)
                .map(drop)
        });
        if r.is_err() {
            last = r;
        }
    }
    last
}

/// Cloneable, `Send + Sync` handle to a ledger running on its own thread. The thread
/// stops (closing the connection) when the last handle is dropped.
#[derive(Clone)]
pub struct LedgerHandle {
    jobs: mpsc::Sender<Job>,
    path: Arc<PathBuf>,
    /// The last failure of a queued snapshot write, until someone takes it.
    failure: Arc<Mutex<Option<String>>>,
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
        let failure = Arc::new(Mutex::new(None));
        let thread_failure = failure.clone();
        std::thread::Builder::new()
            .name("taskrail-ledger".into())
            .spawn(move || serve(ledger, queue, thread_failure))
            .expect("spawning the ledger thread");
        LedgerHandle {
            jobs,
            path,
            failure,
        }
    }

    /// Queue a snapshot write without waiting for it: it runs after every job queued
    /// before it and before every job queued after it, so any later `call` sees it. Runs
    /// of queued snapshots share one transaction. A failure is kept for
    /// [`LedgerHandle::take_write_failure`].
    pub fn queue_snapshot(&self, write: SnapshotWrite) -> anyhow::Result<()> {
        self.jobs
            .send(Job::Snapshot(write))
            .map_err(|_| anyhow!("the ledger thread has stopped"))
    }

    /// The last queued-write failure since the previous call, if any.
    pub fn take_write_failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
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
        self.submit(f)?
            .await
            .map_err(|_| anyhow!("the ledger thread has stopped"))?
    }

    /// Queue `f` on the ledger thread now, without waiting: it runs after every job
    /// queued before it. The receiver yields its result (it may be dropped).
    pub fn submit<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Ledger) -> anyhow::Result<R> + Send + 'static,
    ) -> anyhow::Result<oneshot::Receiver<anyhow::Result<R>>> {
        let (reply, result) = oneshot::channel();
        let job = Job::Call(Box::new(move |ledger| {
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| f(ledger)))
                .unwrap_or_else(|_| Err(anyhow!("ledger operation panicked")));
            // The caller may have stopped waiting; nothing to do then.
            let _ = reply.send(outcome);
        }));
        self.jobs
            .send(job)
            .map_err(|_| anyhow!("the ledger thread has stopped"))?;
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TaskId;
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
            .call(move |l| {
                l.record_created(crate::ledger::NewTask {
                    server: &ServerId::named("srv"),
                    era: Era::Modern,
                    tool: "tool",
                    arguments: &json!({}),
                    task: &created,
                    parent_task: None,
                    session: None,
                    started_by: None,
                })
            })
            .await
            .unwrap();
        let other = handle.clone();
        let changed = tokio::spawn(async move {
            let done = task("handle-task-1", TaskStatus::Completed);
            other
                .call(move |l| {
                    l.record_snapshot(&ServerId::named("srv"), &done, EventKind::Poll, Some(12))
                })
                .await
        })
        .await
        .unwrap()
        .unwrap();
        assert!(changed);
        let record = handle
            .call(|l| l.get(&ServerId::named("srv"), &TaskId::new("handle-task-1")))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(record.status, "completed");
        assert!(record.terminal);
    }

    #[tokio::test]
    async fn queued_snapshots_are_seen_by_later_calls() {
        let dir = tempfile::tempdir().unwrap();
        let handle = LedgerHandle::spawn(Ledger::open(&dir.path().join("l.db")).unwrap());
        for (i, status) in [TaskStatus::Working, TaskStatus::Completed]
            .into_iter()
            .enumerate()
        {
            for n in 0..50 {
                let t = task(&format!("queued-{n}"), status.clone());
                handle
                    .queue_snapshot((ServerId::named("srv"), t, EventKind::Poll, Some(i as u64)))
                    .unwrap();
            }
        }
        let records = handle.call(|l| l.list(true)).await.unwrap();
        assert_eq!(records.len(), 50);
        assert!(
            records
                .iter()
                .all(|r| r.status == "completed" && r.terminal)
        );
        assert_eq!(handle.take_write_failure(), None);
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
