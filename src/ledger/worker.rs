//! The ledger's worker thread, shared by every backend: async access to one connection
//! (a SQLite file, a PostgreSQL session) owned by one dedicated OS thread.
//!
//! Owns the thread and its job queue so no driver call ever blocks the async runtime.
//! Jobs run one at a time, in the order they were sent; runs of queued snapshots share one
//! transaction; between jobs the thread runs its watches (a check every so often that wakes
//! its owner only when it says so, so a quiet ledger costs the async side nothing). Must
//! not log task ids.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::anyhow;
use tokio::sync::{mpsc as async_mpsc, oneshot};

use crate::ledger::backlog::Backlog;
use crate::ledger::{Op, SnapshotWrite};

/// What the worker needs of a backend's connection beyond the jobs it is sent.
pub(crate) trait Store: Send + 'static {
    /// Where the ledger is, for people (a path; a URL without its password).
    fn location(&self) -> String;
    /// Record `batch` in one transaction.
    fn write_snapshots(&self, batch: &[SnapshotWrite]) -> anyhow::Result<()>;
    /// The gauge of writes kept while the database cannot be reached, for a backend that
    /// keeps them.
    fn backlog(&self) -> Option<Arc<Backlog>> {
        None
    }
}

enum Job<C> {
    Call(Box<dyn FnOnce(&C) + Send + 'static>),
    /// Queued without a reply; consecutive ones share one transaction.
    Snapshot(SnapshotWrite),
    /// Start a watch (see [`Worker::watch`]).
    Watch(Watch<C>),
}

/// A check the ledger thread runs every `every`; when it says yes, `wake` gets a token
/// (one at most waits; a full channel already says "look"). Dropped once `wake` closes.
struct Watch<C> {
    every: Duration,
    due: Instant,
    check: Box<dyn FnMut(&C) -> bool + Send + 'static>,
    wake: async_mpsc::Sender<()>,
}

/// Run the watches that are due; drop those whose owner went away. Returns when the
/// next one is due.
fn run_watches<C>(ledger: &C, watches: &mut Vec<Watch<C>>) -> Option<Instant> {
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
fn serve<C: Store>(ledger: C, queue: mpsc::Receiver<Job<C>>, failure: Arc<Mutex<Option<String>>>) {
    let mut next: Option<Job<C>> = None;
    let mut watches: Vec<Watch<C>> = Vec::new();
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
fn write_batch<C: Store>(ledger: &C, batch: &[SnapshotWrite]) -> anyhow::Result<()> {
    let run = |f: &dyn Fn() -> anyhow::Result<()>| {
        std::panic::catch_unwind(AssertUnwindSafe(f))
            .unwrap_or_else(|_| Err(anyhow!("ledger operation panicked")))
    };
    if run(&|| ledger.write_snapshots(batch)).is_ok() {
        return Ok(());
    }
    let mut last = Ok(());
    for write in batch {
        let r = run(&|| ledger.write_snapshots(std::slice::from_ref(write)));
        if r.is_err() {
            last = r;
        }
    }
    last
}

/// Cloneable, `Send + Sync` handle to a ledger running on its own thread. The thread
/// stops (closing the connection) when the last handle is dropped.
pub struct Worker<C> {
    jobs: mpsc::Sender<Job<C>>,
    /// Where the ledger is, for people (a path; a URL without its password).
    location: Arc<String>,
    /// The last failure of a queued snapshot write, until someone takes it.
    failure: Arc<Mutex<Option<String>>>,
    /// Writes kept while the database cannot be reached (a backend that keeps them).
    backlog: Option<Arc<Backlog>>,
}

// Not derived: a derive would ask `C: Clone`, and the connection is never cloned.
impl<C> Clone for Worker<C> {
    fn clone(&self) -> Self {
        Worker {
            jobs: self.jobs.clone(),
            location: self.location.clone(),
            failure: self.failure.clone(),
            backlog: self.backlog.clone(),
        }
    }
}

impl<C> std::fmt::Debug for Worker<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LedgerWorker")
            .field("location", &self.location)
            .finish()
    }
}

impl<C: Store> Worker<C> {
    /// Move `ledger` onto a new thread named `thread` and return a handle to it.
    ///
    /// # Panics
    /// If the OS refuses to create a thread.
    pub fn spawn(ledger: C, thread: &str) -> Worker<C> {
        let (jobs, queue) = mpsc::channel::<Job<C>>();
        let location = Arc::new(ledger.location());
        let backlog = ledger.backlog();
        let failure = Arc::new(Mutex::new(None));
        let thread_failure = failure.clone();
        std::thread::Builder::new()
            .name(thread.into())
            .spawn(move || serve(ledger, queue, thread_failure))
            .expect("spawning the ledger thread");
        Worker {
            jobs,
            location,
            failure,
            backlog,
        }
    }

    /// `Some(writes waiting)` while the database cannot be reached or kept writes wait
    /// to be replayed (`ledger/backlog.rs`).
    pub(crate) fn offline(&self) -> Option<usize> {
        self.backlog.as_ref().and_then(|b| b.state())
    }

    /// Queue a snapshot write without waiting for it: it runs after every job queued
    /// before it and before every job queued after it, so any later `call` sees it. Runs
    /// of queued snapshots share one transaction. A failure is kept for
    /// [`Worker::take_write_failure`].
    pub(crate) fn queue_snapshot(&self, write: SnapshotWrite) -> anyhow::Result<()> {
        self.jobs
            .send(Job::Snapshot(write))
            .map_err(|_| anyhow!("the ledger thread has stopped"))
    }

    /// The last queued-write failure since the previous call, if any.
    pub(crate) fn take_write_failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// Where the ledger is, for people (a path; a URL without its password).
    pub(crate) fn location(&self) -> &str {
        &self.location
    }

    /// Run `check` on the ledger thread every `every` (the first time one `every` from
    /// now) and put a token in the returned receiver each time it returns true. The
    /// checks run between jobs, on the thread, without waking the async runtime while
    /// they say no. The watch ends when the receiver is dropped; the receiver ends when
    /// the ledger thread stops.
    pub(crate) fn watch(
        &self,
        every: Duration,
        check: impl FnMut(&C) -> bool + Send + 'static,
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
    pub(crate) fn op<R: Send + 'static>(
        &self,
        f: impl FnOnce(&C) -> anyhow::Result<R> + Send + 'static,
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
