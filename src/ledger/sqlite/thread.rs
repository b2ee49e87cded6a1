//! `SqliteLedger`: async access to a `Db` owned by one dedicated OS thread.
//!
//! Owns the ledger thread and its job queue so no SQLite call ever blocks the async
//! runtime. Jobs run one at a time, in the order they were sent; between them the thread
//! runs its watches (a check every so often that wakes its owner only when it says so, so
//! a quiet ledger costs the async side nothing). Must not log task ids.

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::anyhow;
use tokio::sync::{mpsc as async_mpsc, oneshot};

use crate::ledger::Op;

use super::db::Db;
use crate::ledger::SnapshotWrite;

enum Job {
    Call(Box<dyn FnOnce(&Db) + Send + 'static>),
    /// Queued without a reply; consecutive ones share one transaction.
    Snapshot(SnapshotWrite),
    /// Start a watch (see [`SqliteLedger::watch`]).
    Watch(Watch),
}

/// A check the ledger thread runs every `every`; when it says yes, `wake` gets a token
/// (one at most waits; a full channel already says "look"). Dropped once `wake` closes.
struct Watch {
    every: Duration,
    due: Instant,
    check: Box<dyn FnMut(&Db) -> bool + Send + 'static>,
    wake: async_mpsc::Sender<()>,
}

/// Run the watches that are due; drop those whose owner went away. Returns when the
/// next one is due.
fn run_watches(ledger: &Db, watches: &mut Vec<Watch>) -> Option<Instant> {
    if watches.is_empty() {
        return None;
    }
    let now = Instant::now();
    watches.retain_mut(|w| {
        if w.wake.is_closed() {
            return false;
        }
        if w.due <= now {
            w.due = now + w.every;
            let check = &mut w.check;
            // A panicking check counts as "look": the owner's read reports the trouble.
            let look = std::panic::catch_unwind(AssertUnwindSafe(|| check(ledger))).unwrap_or(true);
            if look && w.wake.try_send(()).is_err() && w.wake.is_closed() {
                return false;
            }
        }
        true
    });
    watches.iter().map(|w| w.due).min()
}

/// Snapshots written in one transaction at most.
const BATCH_MAX: usize = 512;

/// The ledger thread: runs jobs in order, folding runs of queued snapshots into one
/// `record_snapshots` transaction each.
fn serve(ledger: Db, queue: mpsc::Receiver<Job>, failure: Arc<Mutex<Option<String>>>) {
    let mut next: Option<Job> = None;
    let mut watches: Vec<Watch> = Vec::new();
    loop {
        let due = run_watches(&ledger, &mut watches);
        let job = match next.take() {
            Some(j) => j,
            None => {
                let received = match due {
                    None => queue.recv().map_err(|_| RecvTimeoutError::Disconnected),
                    Some(at) => queue.recv_timeout(at.saturating_duration_since(Instant::now())),
                };
                match received {
                    Ok(j) => j,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
        };
        match job {
            Job::Watch(w) => watches.push(w),
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
fn write_batch(ledger: &Db, batch: &[SnapshotWrite]) -> anyhow::Result<()> {
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
pub struct SqliteLedger {
    jobs: mpsc::Sender<Job>,
    path: Arc<PathBuf>,
    /// The last failure of a queued snapshot write, until someone takes it.
    failure: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for SqliteLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteLedger")
            .field("path", &self.path)
            .finish()
    }
}

impl SqliteLedger {
    /// Move `ledger` onto a new thread named `taskrail-ledger` and return a handle to it.
    ///
    /// # Panics
    /// If the OS refuses to create a thread.
    pub fn spawn(ledger: Db) -> SqliteLedger {
        let (jobs, queue) = mpsc::channel::<Job>();
        let path = Arc::new(ledger.path().to_path_buf());
        let failure = Arc::new(Mutex::new(None));
        let thread_failure = failure.clone();
        std::thread::Builder::new()
            .name("taskrail-ledger".into())
            .spawn(move || serve(ledger, queue, thread_failure))
            .expect("spawning the ledger thread");
        SqliteLedger {
            jobs,
            path,
            failure,
        }
    }

    /// Queue a snapshot write without waiting for it: it runs after every job queued
    /// before it and before every job queued after it, so any later `call` sees it. Runs
    /// of queued snapshots share one transaction. A failure is kept for
    /// [`SqliteLedger::take_write_failure`].
    pub(super) fn queue_snapshot(&self, write: SnapshotWrite) -> anyhow::Result<()> {
        self.jobs
            .send(Job::Snapshot(write))
            .map_err(|_| anyhow!("the ledger thread has stopped"))
    }

    /// The last queued-write failure since the previous call, if any.
    pub(super) fn take_write_failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// The ledger file's path.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// Run `check` on the ledger thread every `every` (the first time one `every` from
    /// now) and put a token in the returned receiver each time it returns true. The
    /// checks run between jobs, on the thread, without waking the async runtime while
    /// they say no. The watch ends when the receiver is dropped; the receiver ends when
    /// the ledger thread stops.
    pub(super) fn watch(
        &self,
        every: Duration,
        check: impl FnMut(&Db) -> bool + Send + 'static,
    ) -> anyhow::Result<async_mpsc::Receiver<()>> {
        let (wake, woken) = async_mpsc::channel(1);
        self.jobs
            .send(Job::Watch(Watch {
                every,
                due: Instant::now() + every,
                check: Box::new(check),
                wake,
            }))
            .map_err(|_| anyhow!("the ledger thread has stopped"))?;
        Ok(woken)
    }

    /// Queue `f` on the ledger thread now (it runs after every job queued before it) and
    /// return its result to await; dropping the future leaves the job queued. A panic
    /// inside `f` is turned into an error and leaves the thread serving later jobs.
    pub(super) fn op<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Db) -> anyhow::Result<R> + Send + 'static,
    ) -> Op<R> {
        let (reply, result) = oneshot::channel();
        let job = Job::Call(Box::new(move |ledger| {
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| f(ledger)))
                .unwrap_or_else(|_| Err(anyhow!("ledger operation panicked")));
            // The caller may have stopped waiting; nothing to do then.
            let _ = reply.send(outcome);
        }));
        let sent = self.jobs.send(job);
        Box::pin(async move {
            sent.map_err(|_| anyhow!("the ledger thread has stopped"))?;
            result
                .await
                .map_err(|_| anyhow!("the ledger thread has stopped"))?
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::ServerId;
    use crate::ledger::EventKind;
    use crate::mcp::types::{Task, TaskStatus};
    use serde_json::json;

    fn task(id: &str, status: TaskStatus) -> Task {
        Task::from_wire(&json!({ "taskId": id, "status": status.as_str() })).unwrap()
    }

    #[tokio::test]
    async fn panicking_call_is_an_error_and_thread_survives() {
        let dir = tempfile::tempdir().unwrap();
        let handle = SqliteLedger::spawn(Db::open(&dir.path().join("l.db")).unwrap());
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
        let handle = SqliteLedger::spawn(Db::open(&dir.path().join("l.db")).unwrap());
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
        let handle = SqliteLedger::spawn(Db::open(&path).unwrap());
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
