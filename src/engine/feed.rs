//! The shared ledger's feed, for one engine: every `feed_interval` it asks the ledger what
//! other processes wrote (one `PRAGMA data_version` when nothing did), and it renews the
//! leases of the tasks this engine follows. What it finds goes to the router.
//!
//! Must not touch task state: it only reads the ledger and passes the news on.

use std::time::Duration;

use tokio::sync::mpsc;

use crate::ledger::{Changes, LedgerHandle, Owner};

/// Run until the router stops listening. `cursor` is where the feed starts.
pub(super) async fn run(
    ledger: LedgerHandle,
    owner: Owner,
    mut cursor: (i64, i64),
    interval: Duration,
    lease_ttl: Duration,
    out: mpsc::Sender<Changes>,
) {
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut renew = tokio::time::interval(lease_ttl / 3);
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut more = false;
    let mut failing = false;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = renew.tick() => {
                let o = owner.clone();
                if let Err(e) = ledger.call(move |l| l.renew(&o, lease_ttl)).await {
                    tracing::warn!("ledger: renewing leases failed: {e:#}");
                }
                continue;
            }
            _ = out.closed() => return,
        }
        let o = owner.as_str().to_string();
        let force = more;
        match ledger.call(move |l| l.changes(cursor, &o, force)).await {
            Ok(Some(changes)) => {
                failing = false;
                cursor = changes.cursor;
                more = changes.more;
                if out.send(changes).await.is_err() {
                    return;
                }
                if more {
                    tick.reset_immediately();
                }
            }
            Ok(None) => failing = false,
            Err(e) => {
                if !failing {
                    tracing::warn!("ledger: reading other processes' changes failed: {e:#}");
                }
                failing = true;
            }
        }
    }
}
