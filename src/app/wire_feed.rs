//! The wire view's feed in the loop: the hub's records come in on a bounded channel, and
//! the hub is told whether the view is open (it sends only then, or while `--wire` writes).
//! Must not hold records (the state's rings do).

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::engine::WireHub;
use crate::state::State;
use crate::state::views::wire::WireRecord;
use crate::state::wire::is_open;

/// Records queued for the loop (more are dropped by the hub until it catches up).
const QUEUE: usize = 1024;

pub(super) struct WireFeed {
    hub: Option<Arc<WireHub>>,
    rx: mpsc::Receiver<WireRecord>,
    /// The view is open (records change the screen).
    pub watching: bool,
}

impl WireFeed {
    pub fn new(hub: Option<Arc<WireHub>>) -> WireFeed {
        let (tx, rx) = mpsc::channel(QUEUE);
        if let Some(h) = &hub {
            h.set_feed(Some(tx));
        }
        WireFeed {
            hub,
            rx,
            watching: false,
        }
    }

    pub fn enabled(&self) -> bool {
        self.hub.is_some()
    }

    pub async fn recv(&mut self) -> Option<WireRecord> {
        self.rx.recv().await
    }

    /// Tell the hub when the view opens or closes.
    pub fn follow(&mut self, state: &State) {
        let open = is_open(state);
        if open != self.watching {
            self.watching = open;
            if let Some(h) = &self.hub {
                h.set_watching(open);
            }
        }
    }
}
