//! `PgLedger`: async access to a `Pg` (one blocking PostgreSQL connection) owned by one
//! dedicated OS thread, as the SQLite backend does with its file.
//!
//! Owns the ledger thread and its job queue so no driver call ever blocks the async
//! runtime. Jobs run one at a time, in the order they were sent; between them the thread
//! runs its watches (a check every so often that wakes its owner only when it says so, so
//! a quiet ledger costs the async side nothing). Must not log task ids.

use std::panic::AssertUnwindSafe;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::anyhow;
use tokio::sync::{mpsc as async_mpsc, oneshot};

use crate::ledger::Op;

use super::db::Pg;
use crate::ledger::SnapshotWrite;

enum Job {
    Call(Box<dyn FnOnce(&Pg) + Send + 'static>),
    /// Queued without a reply; consecutive ones share one transaction.
    Snapshot(SnapshotWrite),
    /// Start a watch (see [`PgLedger::watch`]).
    Watch(Watch),
}

/// A check the ledger thread runs every `every`; when it says yes, `wake` gets a token
/// (one at most waits; a full channel already says "look"). Dropped once `wake` closes.
struct Watch {
    every: Duration,
    due: Instant,
    check: Box<dyn FnMut(&Pg) -> bool + Send + 'static>,
    wake: async_mpsc::Sender<()>,
}

/// Run the watches that are due; drop those whose owner went away. Returns when the
/// next one is due.
fn run_watches(ledger: &Pg, watches: &mut Vec<Watch>) -> Option<Instant> {
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
fn serve(ledger: Pg, queue: mpsc::Receiver<Job>, failure: Arc<Mutex<Option<String>>>) {
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
fn write_batch(ledger: &Pg, batch: &[SnapshotWrite]) -> anyhow::Result<()> {
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
pub struct PgLedger {
    jobs: mpsc::Sender<Job>,
    location: Arc<String>,
    /// The last failure of a queued snapshot write, until someone takes it.
    failure: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for PgLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgLedger")
            .field("location", &self.location)
            .finish()
    }
}

impl PgLedger {
    /// Move `ledger` onto a new thread named `taskrail-ledger` and return a handle to it.
    ///
    /// # Panics
    /// If the OS refuses to create a thread.
    pub fn spawn(ledger: Pg) -> PgLedger {
        let (jobs, queue) = mpsc::channel::<Job>();
        let location = Arc::new(ledger.location().to_string());
        let failure = Arc::new(Mutex::new(None));
        let thread_failure = failure.clone();
        std::thread::Builder::new()
            .name("taskrail-pg-ledger".into())
            .spawn(move || serve(ledger, queue, thread_failure))
            .expect("spawning the ledger thread");
        PgLedger {
            jobs,
            location,
            failure,
        }
    }

    /// Queue a snapshot write without waiting for it: it runs after every job queued
    /// before it and before every job queued after it, so any later `call` sees it. Runs
    /// of queued snapshots share one transaction. A failure is kept for
    /// [`PgLedger::take_write_failure`].
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

    /// The database, for people (no password).
    pub(super) fn location(&self) -> &str {
        &self.location
    }

    /// Run `check` on the ledger thread every `every` (the first time one `every` from
    /// now) and put a token in the returned receiver each time it returns true. The
    /// checks run between jobs, on the thread, without waking the async runtime while
    /// they say no. The watch ends when the receiver is dropped; the receiver ends when
    /// the ledger thread stops.
    pub(super) fn watch(
        &self,
        every: Duration,
        check: impl FnMut(&Pg) -> bool + Send + 'static,
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
        f: impl FnOnce(&Pg) -> anyhow::Result<R> + Send + 'static,
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
