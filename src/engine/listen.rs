//! Push streams of one connection: the modern `subscriptions/listen` manager (re-listen
//! on a changed task set, swap once acknowledged, reconnect with backoff) and the legacy
//! session GET stream.
//!
//! Owns: stream lifetimes, including giving up: a stream that ended or failed
//! [`MAX_FAILED_STREAMS`] times in a row without proving itself (a push, or [`STABLE`]
//! open) turns push off for [`GIVE_UP_PAUSE`], then it is tried afresh. Must not touch
//! task state: it reports `ListenMsg`s to the actor.

use futures::StreamExt;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};

use crate::mcp::backoff::Backoff;
use crate::mcp::get_stream::reconnect_delay;
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
    /// The stream kept ending or failing: push is off for a while, and why.
    GaveUp(String),
}

/// A listen open this long (or one that delivered a push) was healthy: the next failure
/// starts the backoff again.
pub const STABLE: Duration = Duration::from_secs(30);
/// Streams in a row that ended or failed early before push is turned off.
pub const MAX_FAILED_STREAMS: u32 = 6;
/// How long push stays off after that (tasks are polled meanwhile).
pub const GIVE_UP_PAUSE: Duration = Duration::from_secs(300);

/// Why push was turned off, for the notice.
fn give_up_reason(attempts: u32, last: &str) -> String {
    format!("the push stream ended or failed {attempts} times in a row (last: {last})")
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

/// The listen in use and when it was acknowledged.
struct Current {
    sub: Subscription,
    since: tokio::time::Instant,
}

async fn next_current(current: &mut Option<Current>) -> Result<SubscriptionEvent, McpError> {
    match current {
        Some(c) => c.sub.next().await,
        None => std::future::pending().await,
    }
}

/// Keep one acknowledged listen open for the current set of task ids. Every re-listen
/// after a stream that ended or failed waits a growing backoff; after
/// [`MAX_FAILED_STREAMS`] such streams in a row push is given up ([`ListenMsg::GaveUp`])
/// for [`GIVE_UP_PAUSE`].
pub async fn run_listen(
    client: Arc<McpClient>,
    mut ids: watch::Receiver<BTreeSet<TaskId>>,
    out: mpsc::Sender<ListenMsg>,
    backoff: Backoff,
) {
    let mut current: Option<Current> = None;
    let mut draining: Option<Draining> = None;
    let mut current_ids: BTreeSet<TaskId> = BTreeSet::new();
    // Streams in a row that ended or failed without proving themselves.
    let mut attempt = 0u32;
    let mut lost = false;
    // Set when the set of ids changed and a new listen may be needed (the actor already
    // gathers a burst of changes into one: no settling here too).
    let mut recheck = true;
    // A stream ended or failed: count it, tell the actor, wait (long after too many).
    macro_rules! stream_lost {
        ($why:expr, $since:expr) => {{
            let why: String = $why;
            let since: Option<tokio::time::Instant> = $since;
            if since.is_some_and(|s| s.elapsed() >= STABLE) {
                attempt = 0;
            }
            attempt += 1;
            lost = true;
            current = None;
            current_ids.clear();
            recheck = true;
            if attempt >= MAX_FAILED_STREAMS {
                let gave_up = ListenMsg::GaveUp(give_up_reason(attempt, &why));
                if out.send(gave_up).await.is_err() {
                    return;
                }
                attempt = 0;
                tokio::time::sleep(GIVE_UP_PAUSE).await;
                continue;
            }
            let retry_in = backoff.jittered(attempt);
            let lost_msg = ListenMsg::Lost {
                error: why,
                attempt,
                retry_in,
            };
            if out.send(lost_msg).await.is_err() {
                return;
            }
            tokio::time::sleep(retry_in).await;
        }};
    }
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
                    ev = next_current(&mut current) => match ev {
                        Ok(SubscriptionEvent::Task(t)) => {
                            attempt = 0;
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
                    let fresh = Current {
                        sub,
                        since: tokio::time::Instant::now(),
                    };
                    if let Some(old) = current.replace(fresh) {
                        draining = Some(Draining {
                            sub: old.sub,
                            until: tokio::time::Instant::now() + DRAIN_MAX,
                        });
                    }
                    current_ids = wanted;
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
                    stream_lost!(e.to_string(), None);
                    continue;
                }
            }
        }
        recheck = false;
        tokio::select! {
            changed = ids.changed() => {
                if changed.is_err() {
                    return;
                }
                recheck = true;
            }
            Some(t) = next_drained(&mut draining) => {
                if out.send(ListenMsg::Pushed(t)).await.is_err() {
                    return;
                }
            }
            ev = next_current(&mut current) => match ev {
                Ok(SubscriptionEvent::Task(t)) => {
                    attempt = 0;
                    if out.send(ListenMsg::Pushed(t)).await.is_err() {
                        return;
                    }
                }
                Ok(SubscriptionEvent::Ended) => {
                    let since = current.as_ref().map(|c| c.since);
                    stream_lost!("the server ended the subscription".to_string(), since);
                }
                Err(e) => {
                    let since = current.as_ref().map(|c| c.since);
                    stream_lost!(e.to_string(), since);
                }
            }
        }
    }
}

/// Legacy: read the session GET stream and hand every message to the client's dispatcher
/// (task status notifications and input requests come back as `ServerPush`es).
pub async fn run_legacy_stream(client: Arc<McpClient>, out: mpsc::Sender<ListenMsg>) {
    loop {
        let mut stream = match client.open_legacy_stream().await {
            Ok(s) => s,
            Err(e) => {
                let _ = out.send(ListenMsg::Unavailable(e.to_string())).await;
                return;
            }
        };
        // Legacy push only speeds things up: every task keeps being polled (the spec says
        // the client must not rely on `notifications/tasks/status`).
        let subscribed = ListenMsg::Subscribed {
            requested: BTreeSet::new(),
            accepted: None,
            full_resync: false,
        };
        if out.send(subscribed).await.is_err() {
            return;
        }
        let mut attempt = 0;
        let why = loop {
            match stream.next().await {
                Some(Ok(msg)) => {
                    attempt = 0;
                    client.dispatch(msg).await;
                }
                None => {
                    let _ = out
                        .send(ListenMsg::Unavailable("the GET stream ended".into()))
                        .await;
                    return;
                }
                Some(Err(e)) if is_final(&e) => {
                    let _ = out.send(ListenMsg::Unavailable(e.to_string())).await;
                    return;
                }
                Some(Err(e)) if attempt + 1 >= MAX_FAILED_STREAMS => {
                    break give_up_reason(attempt + 1, &e.to_string());
                }
                Some(Err(e)) => {
                    attempt += 1;
                    let lost = ListenMsg::Lost {
                        error: e.to_string(),
                        attempt,
                        retry_in: reconnect_delay(attempt, None),
                    };
                    if out.send(lost).await.is_err() {
                        return;
                    }
                }
            }
        };
        drop(stream);
        if out.send(ListenMsg::GaveUp(why)).await.is_err() {
            return;
        }
        tokio::time::sleep(GIVE_UP_PAUSE).await;
    }
}
