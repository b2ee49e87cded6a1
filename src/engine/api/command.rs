//! What flows down: the `EngineCommand`s the UI, the CLI and the proxy send the engine, the
//! proxy's own asks, and who asked for a cancel.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{InputResponse, ServerId, TaskId};
use crate::mcp::Task;

/// User intent sent to the engine.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineCommand {
    /// Follow a task (from the ledger, the CLI, or an earlier run) until it is terminal.
    Track { server: ServerId, task_id: TaskId },
    /// Call a tool; `call_id` correlates the `CallFinished` event.
    CallTool {
        server: ServerId,
        call_id: u64,
        tool: String,
        arguments: Value,
        /// The task this call re-runs, if any (linked in the ledger).
        parent_task: Option<TaskId>,
    },
    /// Record a task that a `tools/call` sent by someone else through this engine's
    /// connection created (a proxy's host), before anything reports it, and follow it;
    /// `CallFinished` with `call_id` says whether it was stored.
    RecordCreated {
        server: ServerId,
        call_id: u64,
        tool: String,
        arguments: Value,
        task: Task,
        /// The client that made the call (sanitized), shown as who started the task.
        started_by: Option<String>,
        /// A task of the proxy's own for a call the server answers blocking: recorded with
        /// origin `proxy`, never polled; its snapshots come as `LocalUpdate`, and answers
        /// and cancels for it are handed back as `LocalAsked`.
        local: bool,
    },
    /// A newer snapshot of a task of the proxy's own (`RecordCreated` with `local`).
    LocalUpdate { server: ServerId, task: Task },
    /// The proxy carried out a `LocalAsked` (`error`: why it could not).
    LocalDone {
        server: ServerId,
        task_id: TaskId,
        /// The outbox request it carried out, if any.
        request: Option<i64>,
        ask: LocalAsk,
        error: Option<String>,
    },
    /// Answer some of a task's pending input requests (one `tasks/update`).
    Answer {
        server: ServerId,
        task_id: TaskId,
        responses: BTreeMap<String, InputResponse>,
    },
    /// `tasks/cancel`, then keep following until the task is terminal; `by` is recorded.
    Cancel {
        server: ServerId,
        task_id: TaskId,
        by: CancelBy,
    },
    /// Stop following a task (it stays in the ledger).
    Forget { server: ServerId, task_id: TaskId },
    /// `tasks/get` now: one task, or every tracked task of the server.
    Refresh {
        server: ServerId,
        task_id: Option<TaskId>,
    },
    /// Fetch `tools/list`.
    ListTools { server: ServerId },
    /// Answer a foreground input request (`ForegroundInputRequested`).
    AnswerForeground {
        server: ServerId,
        key: String,
        response: InputResponse,
    },
    /// Sign in to the server now (the browser opens; `SignInStarted` tells the URL).
    SignIn { server: ServerId },
    /// The redirect URL the browser ended on, pasted by the user (when the browser could
    /// not reach taskrail's loopback listener, e.g. over SSH).
    SignInRedirect { server: ServerId, url: String },
    /// Close every connection and stop.
    Shutdown,
}

/// What someone asked of a task of the proxy's own, for the proxy to carry out.
#[derive(Debug, Clone, PartialEq)]
pub enum LocalAsk {
    /// Answer input keys (the server's requests on the call's stream).
    Answer(BTreeMap<String, Value>),
    /// Stop the call (`notifications/cancelled` upstream).
    Cancel(CancelBy),
}

/// Who asked for a cancel, and why: recorded in the task's timeline and row, so cancels
/// can be told apart.
#[derive(Debug, Clone, PartialEq)]
pub struct CancelBy {
    /// `dashboard`, `cli`, or `host NAME` (a proxied agent host).
    pub by: String,
    /// The reason given (a host's `notifications/cancelled` reason), if any.
    pub reason: Option<String>,
}

impl CancelBy {
    pub fn dashboard() -> CancelBy {
        CancelBy {
            by: "dashboard".into(),
            reason: None,
        }
    }

    pub fn cli() -> CancelBy {
        CancelBy {
            by: "cli".into(),
            reason: None,
        }
    }

    /// A proxied host (its name, sanitized by the caller) with its reason.
    pub fn host(name: Option<&str>, reason: Option<&str>) -> CancelBy {
        CancelBy {
            by: format!("host {}", name.unwrap_or("(unnamed)")),
            reason: reason.map(str::to_string),
        }
    }

    /// As stored: `{"by", "reason"}`.
    pub fn detail(&self) -> Value {
        serde_json::json!({ "by": self.by, "reason": self.reason })
    }

    /// Read back from a stored detail (an outbox request's payload); `None` for none.
    pub fn from_detail(v: &Value) -> Option<CancelBy> {
        Some(CancelBy {
            by: crate::sanitize::sanitize_line(v.get("by")?.as_str()?, 80),
            reason: v
                .get("reason")
                .and_then(Value::as_str)
                .map(|r| crate::sanitize::sanitize_line(r, 300)),
        })
    }
}
