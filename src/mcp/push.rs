//! Server pushes: `ServerPush` (what arrives unasked) and `Subscription`, one acknowledged
//! `subscriptions/listen` stream yielding task snapshots.
//!
//! Owns: the acknowledgement handshake, subscription-id filtering, telling the end of
//! this subscription from responses to other requests. Must not reconnect (the engine
//! decides that); the idle bound is the transport's (any byte counts as liveness).

use futures::StreamExt;
use serde_json::Value;
use std::time::Duration;

use super::error::McpError;
use super::http_reply::MessageStream;
use super::jsonrpc::{Incoming, RequestId};
use super::types::{InputRequest, Task, TaskId};

/// Something the server sent without being asked.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerPush {
    /// A task snapshot from a notification on any stream.
    Task(Task),
    /// Legacy: numeric progress of a task (from the call's progress token).
    Progress {
        task_id: TaskId,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// Legacy: a server-to-client input request tied to a task.
    InputRequest {
        task_id: TaskId,
        key: String,
        request: InputRequest,
    },
    /// The tool list changed.
    ToolsChanged,
    /// Legacy: an input request tied to none of our tasks, waiting under `key` for
    /// [`McpClient::answer_foreground`](super::McpClient::answer_foreground). `call` is
    /// the tag of the `tools/call` it came with: the one whose reply stream carried it
    /// (`on_call_stream`), or else the only call in flight.
    Foreground {
        key: String,
        request: InputRequest,
        call: Option<u64>,
        on_call_stream: bool,
    },
    /// A foreground request no longer needs an answer (the server cancelled the task it
    /// hosted here).
    ForegroundGone { key: String, reason: String },
    /// `notifications/elicitation/complete` (2025-11-25): the server says the URL-mode
    /// interaction `elicitation_id` is over.
    ElicitationComplete { elicitation_id: String },
    /// `roots/list` was answered from the config (for a task, or for the session).
    RootsShared {
        task_id: Option<TaskId>,
        roots: Vec<String>,
    },
}

/// What an open listen stream yields.
#[derive(Debug, Clone, PartialEq)]
pub enum SubscriptionEvent {
    Task(Task),
    /// The server ended the subscription gracefully.
    Ended,
}

/// One acknowledged `subscriptions/listen`.
pub struct Subscription {
    pub id: RequestId,
    /// Task ids the server agreed to push; `None` when the ack listed none (poll them all).
    pub accepted: Option<Vec<TaskId>>,
    stream: MessageStream,
    early: Vec<Task>,
}

fn is_task_notification(method: &str) -> bool {
    method == "notifications/tasks" || method == "notifications/tasks/status"
}

impl Subscription {
    /// Read up to the acknowledgement (within `ack_timeout`).
    pub(super) async fn acknowledge(
        id: RequestId,
        mut stream: MessageStream,
        ack_timeout: Duration,
    ) -> Result<Subscription, McpError> {
        let mut early = Vec::new();
        let deadline = tokio::time::Instant::now() + ack_timeout;
        loop {
            let next = tokio::time::timeout_at(deadline, stream.next())
                .await
                .map_err(|_| McpError::transport("no acknowledgement for subscriptions/listen"))?;
            match next {
                None => {
                    return Err(McpError::transport(
                        "listen stream closed before its acknowledgement",
                    ));
                }
                Some(Err(McpError::Decode(e))) => {
                    tracing::warn!("skipping a malformed message: {e}")
                }
                Some(Err(e)) => return Err(e),
                Some(Ok(Incoming::Response { id: rid, .. })) if !id.matches(&rid) => {
                    tracing::debug!(%rid, "ignoring a response to a request never sent here");
                }
                Some(Ok(Incoming::Response {
                    outcome: Err(e), ..
                })) => return Err(McpError::from_rpc(&e, false)),
                Some(Ok(Incoming::Response { outcome: Ok(_), .. })) => {
                    return Err(McpError::transport(
                        "listen ended before its acknowledgement",
                    ));
                }
                Some(Ok(Incoming::Notification { method, params })) => {
                    if method == "notifications/subscriptions/acknowledged" {
                        if let Some(sub) = Incoming::subscription_id(&params)
                            && !id.matches(sub)
                        {
                            continue;
                        }
                        let accepted = params
                            .pointer("/notifications/taskIds")
                            .and_then(Value::as_array)
                            .map(|a| {
                                a.iter()
                                    .filter_map(Value::as_str)
                                    .map(TaskId::new)
                                    .collect()
                            });
                        return Ok(Subscription {
                            id,
                            accepted,
                            stream,
                            early,
                        });
                    }
                    if is_task_notification(&method)
                        && let Ok(t) = Task::from_wire(&params)
                    {
                        early.push(t);
                    }
                }
                Some(Ok(Incoming::Request { .. })) => {}
            }
        }
    }

    /// The next task snapshot. `Err` when the stream broke or stayed silent too long.
    /// Only a response to this subscription's own request ends it; responses to ids it
    /// never sent are ignored.
    pub async fn next(&mut self) -> Result<SubscriptionEvent, McpError> {
        if !self.early.is_empty() {
            return Ok(SubscriptionEvent::Task(self.early.remove(0)));
        }
        loop {
            match self.stream.next().await {
                None => return Err(McpError::transport("listen stream closed")),
                Some(Err(McpError::Decode(e))) => {
                    tracing::warn!("skipping a malformed message: {e}")
                }
                Some(Err(e)) => return Err(e),
                Some(Ok(Incoming::Response { id, .. })) if !self.id.matches(&id) => {
                    tracing::debug!(%id, "ignoring a response to a request never sent here");
                }
                Some(Ok(Incoming::Response { outcome: Ok(_), .. })) => {
                    return Ok(SubscriptionEvent::Ended);
                }
                Some(Ok(Incoming::Response {
                    outcome: Err(e), ..
                })) => return Err(McpError::from_rpc(&e, false)),
                Some(Ok(Incoming::Notification { method, params })) => {
                    if method == "notifications/cancelled" {
                        return Ok(SubscriptionEvent::Ended);
                    }
                    if !is_task_notification(&method) {
                        continue;
                    }
                    if let Some(sub) = Incoming::subscription_id(&params)
                        && !self.id.matches(sub)
                    {
                        continue;
                    }
                    match Task::from_wire(&params) {
                        Ok(t) => return Ok(SubscriptionEvent::Task(t)),
                        Err(e) => tracing::warn!("ignoring a malformed task notification: {e}"),
                    }
                }
                Some(Ok(Incoming::Request { .. })) => {}
            }
        }
    }
}
