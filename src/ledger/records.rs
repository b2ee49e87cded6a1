//! The records the ledger takes and gives back, whatever backend stores them: a new task,
//! a queued snapshot, a call's delivery, outbox requests and outcomes, sessions, answered
//! keys and the feed's changes. Plain data: no storage, no I/O.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use super::TaskRecord;
use crate::ids::{ServerId, TaskId};
use crate::mcp::types::{Era, Task};

use super::EventKind;

/// One snapshot to store: server, task, how it arrived, request latency.
pub type SnapshotWrite = (ServerId, Task, EventKind, Option<u64>);

/// A task our own `tools/call` created, as [`Ledger::record_created`](super::Ledger::record_created) stores it.
#[derive(Debug, Clone, Copy)]
pub struct NewTask<'a> {
    pub server: &'a ServerId,
    pub era: Era,
    pub tool: &'a str,
    pub arguments: &'a Value,
    pub task: &'a Task,
    /// The task this call re-runs, if any.
    pub parent_task: Option<&'a TaskId>,
    /// The legacy session the task belongs to (a [`Ledger::record_session`](super::Ledger::record_session) row).
    pub session: Option<i64>,
    /// The client that asked for the call (a proxied agent host), if not taskrail itself.
    pub started_by: Option<&'a str>,
}

/// Where a call's result stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// A host waits for it.
    Waiting = 0,
    /// Its host stopped waiting before the result: a repeated call may attach.
    Undelivered = 1,
    /// A host received the result (or asked to stop the work): never handed out again.
    Settled = 2,
}

/// What is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutboxKind {
    /// `payload` is the `{key: response}` map of one `tasks/update`.
    Answer,
    Cancel,
}

impl OutboxKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxKind::Answer => "answer",
            OutboxKind::Cancel => "cancel",
        }
    }

    pub fn parse(s: &str) -> Option<OutboxKind> {
        match s {
            "answer" => Some(OutboxKind::Answer),
            "cancel" => Some(OutboxKind::Cancel),
            _ => None,
        }
    }
}

/// An open request, for the process following its task.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxRequest {
    pub id: i64,
    pub server: ServerId,
    pub task_id: TaskId,
    pub kind: OutboxKind,
    pub payload: Value,
}

/// A finished request, for the process that made it.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxOutcome {
    pub id: i64,
    pub server: ServerId,
    pub task_id: TaskId,
    pub kind: OutboxKind,
    pub payload: Value,
    /// `None` on success, else why it failed.
    pub error: Option<String>,
}

/// One legacy session taskrail opened.
#[derive(Clone, PartialEq)]
pub struct SessionRecord {
    pub id: i64,
    pub server: ServerId,
    /// The `Mcp-Session-Id` (a secret).
    pub session_id: String,
    pub protocol_version: String,
    /// The server's `initialize` capabilities.
    pub capabilities: Value,
    pub server_name: Option<String>,
    pub lost: bool,
}

impl std::fmt::Debug for SessionRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionRecord")
            .field("id", &self.id)
            .field("server", &self.server)
            .field("session_id", &"<secret>")
            .field("protocol_version", &self.protocol_version)
            .field("lost", &self.lost)
            .finish()
    }
}

/// One answered input key with when and how it was answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AnsweredKey {
    pub key: String,
    pub action: String,
    pub at: DateTime<Utc>,
}

/// Where a reader of the feed is: the last (change number, row id) it has seen.
pub type Cursor = (i64, i64);

/// What other processes changed since a cursor.
#[derive(Debug, Default)]
pub struct Changes {
    /// Pass this to the next call.
    pub cursor: Cursor,
    /// Task rows changed since the previous cursor (by anyone, this process included),
    /// oldest change first.
    pub tasks: Vec<TaskRecord>,
    /// Open requests for tasks the caller follows.
    pub requests: Vec<OutboxRequest>,
    /// Outcomes of requests the caller made, finished since the previous cursor.
    pub outcomes: Vec<OutboxOutcome>,
    /// Tasks a prune removed since the previous cursor (may repeat: dropping is
    /// idempotent).
    pub removed: Vec<(ServerId, TaskId)>,
    /// The batch was cut (a backend reads a bounded number of rows per call): call again
    /// at once.
    pub more: bool,
}
