//! The shared ledger's feed, for one engine: the ledger thread checks every
//! `feed_interval` whether other processes wrote (one `PRAGMA data_version`, without
//! waking this task while nothing did); then the feed reads what they wrote and passes it
//! to the router. It also renews the leases of the tasks this engine follows.
//!
//! Must not touch task state: it only reads the ledger and passes the news on.

use std::time::Duration;

use tokio::sync::mpsc;

use crate::ledger::{Changes, LedgerHandle, Owner};

/// Run until the router stops listening. `cursor` is where the feed starts. (Also run
/// alone by `bench feed-scale`'s watchers: the dashboard's own feed path.)
pub(crate) async fn run(
    ledger: LedgerHandle,
    owner: Owner,
    mut cursor: (i64, i64),
    interval: Duration,
    lease_ttl: Duration,
    out: mpsc::Sender<Changes>,
) {
    let mut woken = match ledger.changed(interval) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!("ledger: no feed of other processes: {e:#}");
            return;
        }
    };
    let mut renew = tokio::time::interval(lease_ttl / 3);
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut more = false;
    let mut failing = false;
    loop {
        if !more {
            tokio::select! {
                w = woken.recv() => if w.is_none() { return },
                _ = renew.tick() => {
                    if let Err(e) = ledger.renew(&owner, lease_ttl).await {
                        tracing::warn!("ledger: renewing leases failed: {e:#}");
                    }
                    continue;
                }
                _ = out.closed() => return,
            }
        }
        match ledger.changes(cursor, owner.as_str(), true).await {
            Ok(Some(changes)) => {
                failing = false;
                cursor = changes.cursor;
                more = changes.more;
                if out.send(changes).await.is_err() {
                    return;
                }
            }
            Ok(None) => {
                failing = false;
                more = false;
            }
            Err(e) => {
                if !failing {
                    tracing::warn!("ledger: reading other processes' changes failed: {e:#}");
                }
                failing = true;
                more = false;
            }
        }
    }
}
