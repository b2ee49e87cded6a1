//! The crash-safe task ledger: every task id taskrail ever receives, behind the `Ledger`
//! trait (`api.rs`), with two backends (`sqlite/`, the embedded default, and `postgres/`,
//! a team's shared ledger) and one contract suite every backend passes (`contract/`).
//!
//! Owns the durable record of tasks (creation data, last snapshot, answered input keys,
//! a per-task event timeline, leases, the outbox, sessions, the feed other processes read)
//! so polling can resume after a crash or restart, and the backend-neutral records those
//! are made of (this file, `records.rs`, `owner.rs`). Task ids are bearer secrets: nothing
//! here logs a full id. Must not import ratatui or crossterm, and never receives headers or
//! tokens.

mod activity;
mod api;
pub(crate) mod backlog;
#[cfg(test)]
mod contract;
mod duration;
pub mod export;
mod lean;
mod location;
mod open;
mod owner;
mod pg_url;
pub mod postgres;
mod private_file;
mod records;
pub mod sqlite;
mod worker;

pub use activity::{Activity, ActivityEvent, ActivityLimits, TaskSpan, activity_from_reads};
pub use api::{Canon, Ledger, LedgerHandle, Op, all};
pub use backlog::Offline;
pub use duration::parse_duration;
pub use location::Location;
pub use open::{open, open_at};
pub use owner::{Owner, owner_alive};
pub use pg_url::{PgUrl, Resolved as PgResolved, SslMode};
pub use records::{
    AnsweredKey, Changes, Cursor, Delivery, NewTask, OutboxKind, OutboxOutcome, OutboxRequest,
    SessionRecord, SnapshotWrite,
};

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::ids::{ServerId, TaskId};
use crate::mcp::types::{Era, Task};

/// Default retention for terminal tasks when the caller prunes at start-up.
pub const DEFAULT_RETENTION: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// What happened to a task, as stored in its timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Created,
    Status,
    InputRequested,
    InputSent,
    CancelRequested,
    CancelAcked,
    Push,
    Poll,
    /// Polls that changed nothing, counted (so the timeline tells the request rate).
    Polls,
    Resync,
    Expired,
    Error,
    Note,
    /// A proxied host stopped waiting for the task (its timeout, or it went away); the
    /// task runs on.
    HostGaveUp,
    /// A host's repeated call was attached to the task instead of running anew.
    Attached,
    /// The W3C trace context of the task's span (`traceparent`, `tracestate`), so a later
    /// process continues the same trace. Not something that happened to the task.
    Trace,
}

impl EventKind {
    /// Every kind, in declaration order.
    pub const ALL: [EventKind; 16] = [
        EventKind::Created,
        EventKind::Status,
        EventKind::InputRequested,
        EventKind::InputSent,
        EventKind::CancelRequested,
        EventKind::CancelAcked,
        EventKind::Push,
        EventKind::Poll,
        EventKind::Polls,
        EventKind::Resync,
        EventKind::Expired,
        EventKind::Error,
        EventKind::Note,
        EventKind::HostGaveUp,
        EventKind::Attached,
        EventKind::Trace,
    ];

    /// The stored (and displayed) name, e.g. `input_requested`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Created => "created",
            EventKind::Status => "status",
            EventKind::InputRequested => "input_requested",
            EventKind::InputSent => "input_sent",
            EventKind::CancelRequested => "cancel_requested",
            EventKind::CancelAcked => "cancel_acked",
            EventKind::Push => "push",
            EventKind::Poll => "poll",
            EventKind::Polls => "polls",
            EventKind::Resync => "resync",
            EventKind::Expired => "expired",
            EventKind::Error => "error",
            EventKind::Note => "note",
            EventKind::HostGaveUp => "host_gave_up",
            EventKind::Attached => "attached",
            EventKind::Trace => "trace",
        }
    }

    /// Inverse of [`EventKind::as_str`].
    pub fn parse(s: &str) -> Option<EventKind> {
        EventKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl std::fmt::Display for EventKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One task as the ledger knows it (serialized in the wire's camelCase, as every
/// `--json` output is).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    /// Server identity string the caller keyed the task by.
    pub server: ServerId,
    /// The full task id (a bearer secret: show [`short_id`] of it).
    pub task_id: TaskId,
    /// `None` for a task tracked by id before we learnt the server's era.
    pub era: Option<Era>,
    pub tool: Option<String>,
    pub arguments: Option<Value>,
    /// When taskrail first stored this id.
    pub recorded_at: DateTime<Utc>,
    /// The server's raw `createdAt`, if any snapshot carried one.
    pub server_created_at: Option<String>,
    /// The last accepted snapshot.
    pub snapshot: Option<Task>,
    /// Last status (`working`, …), or `unknown` before the first snapshot.
    pub status: String,
    pub terminal: bool,
    /// When the task became terminal (or was tombstoned) as seen by taskrail.
    pub terminal_at: Option<DateTime<Utc>>,
    /// Tombstone: the server no longer knows the task (TTL passed or deleted), or dropped
    /// the legacy session it lived in; [`TaskRecord::end`] says which.
    pub expired: bool,
    pub end: Option<Tombstone>,
    pub last_seen: Option<DateTime<Utc>>,
    pub poll_interval_ms: Option<u64>,
    pub ttl_ms: Option<u64>,
    /// The task this one re-runs, if any (same server).
    pub parent_task: Option<TaskId>,
    /// Input keys already answered, oldest first. Never prompt for these again.
    pub answered_keys: Vec<String>,
    /// A cancel was requested (`Some(false)`) or acknowledged (`Some(true)`), by any process.
    pub cancel: Option<bool>,
    /// The client that asked for the call, when it was not taskrail itself (a proxied host).
    pub started_by: Option<String>,
    /// The legacy session the task lives in (a `sessions` row), if any.
    #[serde(skip)]
    pub session: Option<i64>,
    /// Who asked for the cancel and why (`{"by", "reason"}`), when one was asked for.
    pub cancel_by: Option<Value>,
    /// What a proxied host last did about the task: gave up waiting (`{"host", "afterS",
    /// "reason"}`) while the task ran on.
    pub host_note: Option<Value>,
    /// Whose task id this is: a server's, or a proxy's own for a blocking call.
    pub origin: Origin,
    /// Read without its payload (a finished task resumed): `arguments`, the snapshot's
    /// `result` (unless it is a tool error) and the error's `data` stay in the ledger.
    #[serde(skip)]
    pub lean: bool,
}

/// Whose id a task has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// The server's: it answered the call with a task.
    #[default]
    Server,
    /// A proxy's own: the server answered blocking, and the proxy tracks the call as a task
    /// while it runs. Only that proxy process can follow it.
    Proxy,
}

/// Why a tombstone ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tombstone {
    /// The server answered "unknown task" (TTL passed, or it was deleted).
    Expired,
    /// The legacy session the task belonged to is gone from the server.
    SessionLost,
    /// A proxy's own task whose proxy ended while the call ran: the server may have
    /// finished it, but nobody can learn how.
    ProxyLost,
}

impl Tombstone {
    pub fn as_str(self) -> &'static str {
        match self {
            Tombstone::Expired => "expired",
            Tombstone::SessionLost => "session_lost",
            Tombstone::ProxyLost => "proxy_lost",
        }
    }

    pub fn parse(s: &str) -> Option<Tombstone> {
        match s {
            "expired" => Some(Tombstone::Expired),
            "session_lost" => Some(Tombstone::SessionLost),
            "proxy_lost" => Some(Tombstone::ProxyLost),
            _ => None,
        }
    }

    /// How a person reads it.
    pub fn describe(self) -> &'static str {
        match self {
            Tombstone::Expired => "expired or never existed",
            Tombstone::SessionLost => "session lost",
            Tombstone::ProxyLost => {
                "lost: the proxy ended while the call was running; the server may have finished it"
            }
        }
    }
}

/// One entry of a task's timeline.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventRecord {
    pub at: DateTime<Utc>,
    pub kind: EventKind,
    pub latency_ms: Option<u64>,
    pub detail: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_kind_names_round_trip() {
        for kind in EventKind::ALL {
            assert_eq!(EventKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(EventKind::parse("bogus"), None);
    }
}
