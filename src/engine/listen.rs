//! Push streams of one connection: the modern `subscriptions/listen` manager (re-listen
//! on a changed task set, swap once acknowledged, reconnect with backoff) and the legacy
//! session GET stream.
//!
//! Owns: stream lifetimes. Must not touch task state: it reports `ListenMsg`s to the actor.

use futures::StreamExt;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

use crate::mcp::{McpClient, McpError, Subscription, SubscriptionEvent, Task, TaskId};

/// What the push side reports to its server actor.
#[derive(Debug)]
pub enum ListenMsg {
    /// A listen was acknowledged. `full_resync` after a lost stream (nothing is replayed).
    Subscribed {
        requested: BTreeSet<TaskId>,
        accepted: Option<Vec<TaskId>>,
        full_resync: bool,
    },
    Pushed(Task),
    /// The stream broke; retrying after `retry_in`.
    Lost {
        error: String,
        attempt: u32,
        retry_in: Duration,
    },
    /// The server has no push (e.g. `-32601`); poll only.
    Unavailable(String),
}

/// Exponential backoff with jitter: base·2^(attempt-1), capped, plus up to 25 %.
pub fn backoff(attempt: u32, base: Duration, max: Duration) -> Duration {
    let exp = base.saturating_mul(1u32 << attempt.saturating_sub(1).min(16));
    let capped = exp.min(max);
    capped + capped.mul_f64(fastrand::f64() * 0.25)
}

fn is_final(e: &McpError) -> bool {
    matches!(
        e,
        McpError::MethodNotFound { .. }
            | McpError::Unsupported(_)
            | McpError::MissingCapability { .. }
    ) || matches!(
        e,
        McpError::Http {
            status: 404 | 405 | 401 | 403,
            ..
        }
    )
}

async fn next_event(sub: &mut Option<Subscription>) -> Result<SubscriptionEvent, McpError> {
    match sub {
        Some(s) => s.next().await,
        None => std::future::pending().await,
    }
}

/// A replaced subscription, read until it goes quiet: what the server sent on it before
/// it registered the new listen may still be in flight.
struct Draining {
    sub: Subscription,
    until: tokio::time::Instant,
}

const DRAIN_QUIET: Duration = Duration::from_millis(150);
const DRAIN_MAX: Duration = Duration::from_secs(2);

async fn next_drained(draining: &mut Option<Draining>) -> Option<Task> {
    let Some(d) = draining.as_mut() else {
        return std::future::pending().await;
    };
    let quiet = (tokio::time::Instant::now() + DRAIN_QUIET).min(d.until);
    match tokio::time::timeout_at(quiet, d.sub.next()).await {
        Ok(Ok(SubscriptionEvent::Task(t))) => Some(t),
        _ => {
            *draining = None;
            None
        }
    }
}

/// Wait until `at`, or forever without it.
async fn sleep_until_opt(at: Option<tokio::time::Instant>) {
    match at {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// Keep one acknowledged listen open for the current set of task ids.
pub async fn run_listen(
    client: Arc<McpClient>,
    mut ids: watch::Receiver<BTreeSet<TaskId>>,
    out: mpsc::Sender<ListenMsg>,
    base: Duration,
    max: Duration,
) {
    let mut current: Option<Subscription> = None;
    let mut draining: Option<Draining> = None;
    let mut current_ids: BTreeSet<TaskId> = BTreeSet::new();
    let mut attempt = 0u32;
    let mut lost = false;
    // Set when the set of ids changed and a new listen may be needed.
    let mut recheck = true;
    // While set, id changes are gathered until then before one recheck.
    let mut settle: Option<tokio::time::Instant> = None;
    loop {
        let wanted = ids.borrow_and_update().clone();
        if recheck && wanted.is_empty() {
            current = None;
            current_ids.clear();
        } else if recheck && (current.is_none() || !wanted.is_subset(&current_ids)) {
            // Only a new task needs a new listen: when tasks end, the open stream keeps
            // serving the rest (notifications for finished tasks are ignored upstream).
            let list: Vec<TaskId> = wanted.iter().cloned().collect();
            // Keep reading the old stream until the new one is acknowledged.
            let opening = client.listen(&list);
            tokio::pin!(opening);
            let opened = loop {
                tokio::select! {
                    r = &mut opening => break r,
                    ev = next_event(&mut current) => match ev {
                        Ok(SubscriptionEvent::Task(t)) => {
                            if out.send(ListenMsg::Pushed(t)).await.is_err() {
                                return;
                            }
                        }
                        Ok(SubscriptionEvent::Ended) | Err(_) => {
                            current = None;
                            lost = true;
                        }
                    },
                    Some(t) = next_drained(&mut draining) => {
                        if out.send(ListenMsg::Pushed(t)).await.is_err() {
                            return;
                        }
                    }
                }
            };
            match opened {
                Ok(sub) => {
                    let msg = ListenMsg::Subscribed {
                        requested: wanted.clone(),
                        accepted: sub.accepted.clone(),
                        full_resync: lost,
                    };
                    if let Some(old) = current.replace(sub) {
                        draining = Some(Draining {
                            sub: old,
                            until: tokio::time::Instant::now() + DRAIN_MAX,
                        });
                    }
                    current_ids = wanted;
                    attempt = 0;
                    lost = false;
                    if out.send(msg).await.is_err() {
                        return;
                    }
                }
                Err(e) if is_final(&e) => {
                    let _ = out.send(ListenMsg::Unavailable(e.to_string())).await;
                    return;
                }
                Err(e) => {
                    attempt += 1;
                    lost = true;
                    current = None;
                    current_ids.clear();
                    let retry_in = backoff(attempt, base, max);
                    let lost_msg = ListenMsg::Lost {
                        error: e.to_string(),
                        attempt,
                        retry_in,
                    };
                    if out.send(lost_msg).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(retry_in).await;
                    continue;
                }
            }
        }
        recheck = false;
        tokio::select! {
            changed = ids.changed(), if settle.is_none() => {
                if changed.is_err() {
                    return;
                }
                // Let a burst of new tasks settle into one listen, still reading the
                // streams meanwhile (a blocking pause here delayed every notification).
                settle = Some(tokio::time::Instant::now() + Duration::from_millis(50));
            }
            _ = sleep_until_opt(settle) => {
                settle = None;
                recheck = true;
            }
            Some(t) = next_drained(&mut draining) => {
                if out.send(ListenMsg::Pushed(t)).await.is_err() {
                    return;
                }
            }
            ev = next_event(&mut current) => match ev {
                Ok(SubscriptionEvent::Task(t)) => {
                    if out.send(ListenMsg::Pushed(t)).await.is_err() {
                        return;
                    }
                }
                Ok(SubscriptionEvent::Ended) => {
                    lost = true;
                    current = None;
                    current_ids.clear();
                    recheck = true;
                }
                Err(e) => {
                    attempt += 1;
                    lost = true;
                    current = None;
                    current_ids.clear();
                    recheck = true;
                    let retry_in = backoff(attempt, base, max);
                    let lost_msg = ListenMsg::Lost { error: e.to_string(), attempt, retry_in };
                    if out.send(lost_msg).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(retry_in).await;
                }
            }
        }
    }
}

/// Legacy: read the session GET stream and hand every message to the client's dispatcher
/// (task status notifications and input requests come back as `ServerPush`es).
pub async fn run_legacy_stream(client: Arc<McpClient>, out: mpsc::Sender<ListenMsg>) {
    let mut stream = match client.open_legacy_stream().await {
        Ok(s) => s,
        Err(e) => {
            let _ = out.send(ListenMsg::Unavailable(e.to_string())).await;
            return;
        }
    };
    // Legacy push only speeds things up: every task keeps being polled (the spec says the
    // client must not rely on `notifications/tasks/status`).
    let subscribed = ListenMsg::Subscribed {
        requested: BTreeSet::new(),
        accepted: None,
        full_resync: false,
    };
    if out.send(subscribed).await.is_err() {
        return;
    }
    let mut attempt = 0;
    while let Some(item) = stream.next().await {
        match item {
            Ok(msg) => {
                attempt = 0;
                client.dispatch(msg).await;
            }
            Err(e) if is_final(&e) => {
                let _ = out.send(ListenMsg::Unavailable(e.to_string())).await;
                return;
            }
            Err(e) => {
                attempt += 1;
                let lost = ListenMsg::Lost {
                    error: e.to_string(),
                    attempt,
                    retry_in: Duration::from_millis(500),
                };
                if out.send(lost).await.is_err() {
                    return;
                }
            }
        }
    }
    let _ = out
        .send(ListenMsg::Unavailable("the GET stream ended".into()))
        .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let base = Duration::from_millis(100);
        let max = Duration::from_secs(2);
        let b1 = backoff(1, base, max);
        assert!(b1 >= base && b1 <= base.mul_f64(1.25));
        let b3 = backoff(3, base, max);
        assert!(b3 >= Duration::from_millis(400));
        let b20 = backoff(20, base, max);
        assert!(b20 >= max && b20 <= max.mul_f64(1.25));
    }
}
