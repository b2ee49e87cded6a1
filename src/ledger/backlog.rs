//! A ledger's backlog: whether its database can be reached now, and how many writes wait
//! on this machine to be replayed into it. Written by the backend's thread, read by
//! anyone (the header's "ledger offline — N writes waiting") without a round trip.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The error of an operation that needed the database while it could not be reached
/// (writes are kept meanwhile; reads fail with this). Callers that show the outage
/// elsewhere can tell it from other failures with `downcast_ref`.
#[derive(Debug)]
pub struct Offline {
    /// Why, in words (the driver's reason).
    pub why: String,
}

impl std::fmt::Display for Offline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the ledger's database cannot be reached: {}", self.why)
    }
}

impl std::error::Error for Offline {}

/// Shared between a backend's thread (writer) and its handle (readers).
#[derive(Debug, Default)]
pub struct Backlog {
    offline: AtomicBool,
    waiting: AtomicUsize,
}

impl Backlog {
    pub fn set_offline(&self, offline: bool) {
        self.offline.store(offline, Ordering::Relaxed);
    }

    pub fn set_waiting(&self, n: usize) {
        self.waiting.store(n, Ordering::Relaxed);
    }

    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// `Some(writes waiting)` while the database cannot be reached or writes still wait
    /// to be replayed; `None` when all is well.
    pub fn state(&self) -> Option<usize> {
        let waiting = self.waiting();
        (self.offline.load(Ordering::Relaxed) || waiting > 0).then_some(waiting)
    }
}
