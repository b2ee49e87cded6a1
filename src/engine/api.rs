//! The engine's vocabulary: `EngineCommand`s flow down from the UI and CLI, owned
//! `EngineEvent`s (facts, past tense) flow up. Plain data, no behaviour.
//!
//! Must not import ratatui or crossterm.

use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

use crate::mcp::{Era, InputRequest, Task, ToolInfo};

pub use crate::ids::{ServerId, TaskId};

/// How a task snapshot reached us.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UpdateSource {
    /// The `CreateTaskResult` of our own `tools/call`.
    Create,
    /// A `notifications/tasks` (or legacy `notifications/tasks/status`) push.
    Push,
    /// A paced `tasks/get`.
    Poll,
    /// The one `tasks/get` after a (re)subscribe or a restart.
    Resync,
}

impl UpdateSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Push => "push",
            Self::Poll => "poll",
            Self::Resync => "resync",
        }
    }
}

/// The answer to one input request, as placed under its key in `inputResponses`
/// (`{"action":"accept","content":{…}}`, `{"action":"decline"}`, `{"action":"cancel"}`).
pub type InputResponse = Value;

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
    /// Answer some of a task's pending input requests (one `tasks/update`).
    Answer {
        server: ServerId,
        task_id: TaskId,
        responses: BTreeMap<String, InputResponse>,
    },
    /// `tasks/cancel`, then keep following until the task is terminal.
    Cancel { server: ServerId, task_id: TaskId },
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
    /// Close every connection and stop.
    Shutdown,
}

/// What a `CallTool` came to.
#[derive(Debug, Clone, PartialEq)]
pub enum CallResult {
    /// A task was created (its snapshots follow as `TaskUpdated`).
    Task { task_id: TaskId },
    /// The server answered with a plain `CallToolResult`.
    Plain { result: Value },
    /// The call failed.
    Error { message: String },
}

/// Where a foreground input request (one tied to no task) came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputOrigin {
    /// Asked during our `CallTool` `call_id`: on the call's reply stream (legacy), as the
    /// call's multi-round-trip `input_required` result (modern), or as a URL the call's
    /// `-32042` error requires before it is sent again (2025-11-25).
    Call { call_id: u64, tool: String },
    /// Asked on the session stream, tied to no call we know.
    Session,
}

/// Severity of a notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum NoticeLevel {
    Info,
    Warn,
    Error,
}

/// Facts reported by the engine.
#[derive(Debug, Clone, PartialEq)]
pub enum EngineEvent {
    /// Connected (or reconnected) and the era is known.
    ServerConnected {
        server: ServerId,
        era: Era,
        /// Whether push (listen stream or legacy GET stream) is in use.
        push: bool,
        server_name: Option<String>,
    },
    /// Push went on or off (e.g. the server answered `subscriptions/listen` with `-32601`).
    PushChanged { server: ServerId, push: bool },
    /// The server is failing; tasks keep their last state and are retried.
    ServerDegraded { server: ServerId, reason: String },
    /// A connection or stream is being re-established after `retry_in`.
    Reconnecting {
        server: ServerId,
        attempt: u32,
        retry_in: Duration,
    },
    /// A task is being followed: sent once per task before any network traffic, with
    /// what the ledger knows (tasks carry no tool name on the wire, so it comes from here).
    TaskKnown {
        server: ServerId,
        task_id: TaskId,
        tool: Option<String>,
        arguments: Option<Value>,
        /// When we first recorded the task.
        recorded_at: chrono::DateTime<chrono::Utc>,
        last: Option<Task>,
        expired: bool,
        parent_task: Option<TaskId>,
    },
    /// A new snapshot (already checked: never older than what was reported before,
    /// never after a terminal one).
    TaskUpdated {
        server: ServerId,
        task: Task,
        source: UpdateSource,
        latency_ms: Option<u64>,
    },
    /// The server no longer knows the task (`-32602`): an expired tombstone.
    TaskExpired { server: ServerId, task_id: TaskId },
    /// A new input request (reported once per key; answered keys never again).
    InputRequested {
        server: ServerId,
        task_id: TaskId,
        key: String,
        request: InputRequest,
    },
    /// A key reappeared with a different request: a server bug, not re-prompted.
    InputKeyReused {
        server: ServerId,
        task_id: TaskId,
        key: String,
    },
    /// `tasks/update` acknowledged for these keys.
    AnswerSent {
        server: ServerId,
        task_id: TaskId,
        keys: Vec<String>,
    },
    AnswerFailed {
        server: ServerId,
        task_id: TaskId,
        keys: Vec<String>,
        error: String,
    },
    /// `tasks/cancel` acknowledged (intent recorded; the task may still finish otherwise).
    CancelSent { server: ServerId, task_id: TaskId },
    CancelFailed {
        server: ServerId,
        task_id: TaskId,
        error: String,
    },
    /// Outcome of a `CallTool` command.
    CallFinished {
        server: ServerId,
        call_id: u64,
        tool: String,
        result: CallResult,
    },
    /// `tools/list` result.
    ToolsListed {
        server: ServerId,
        tools: Vec<ToolInfo>,
    },
    /// A numeric progress report tied to a task (legacy `notifications/progress`).
    Progress {
        server: ServerId,
        task_id: TaskId,
        progress: f64,
        total: Option<f64>,
    },
    /// Request statistics, about once a second while anything happens.
    Stats {
        server: ServerId,
        requests_total: u64,
        requests_per_sec: f64,
        errors_total: u64,
    },
    /// Something the user should read.
    Notice {
        server: Option<ServerId>,
        level: NoticeLevel,
        text: String,
    },
    /// A server asked for input outside any task. Answer with `AnswerForeground` within
    /// `expires_in`; after that the engine answers on the person's behalf (`cancel`, or a
    /// refusal for sampling) and reports `ForegroundInputClosed`.
    ForegroundInputRequested {
        server: ServerId,
        key: String,
        origin: InputOrigin,
        request: InputRequest,
        expires_in: Duration,
    },
    /// A foreground request no longer takes an answer (sanitized by the reducer).
    ForegroundInputClosed {
        server: ServerId,
        key: String,
        reason: String,
    },
    /// `notifications/elicitation/complete` (2025-11-25): the URL-mode interaction
    /// `elicitation_id` is over.
    UrlElicitationCompleted {
        server: ServerId,
        elicitation_id: String,
    },
    /// `roots/list` was answered from the config (for a task, or for the session).
    RootsShared {
        server: ServerId,
        task_id: Option<TaskId>,
        roots: Vec<String>,
    },
    /// `tools/list` failed (or could not be sent): whoever waits for the tools stops.
    ToolsListFailed { server: ServerId, error: String },
    /// The server broke a rule of the tasks protocol (a hint for its authors).
    ServerMisbehaved {
        server: ServerId,
        hint: Hint,
        /// Which task or request showed it (sanitized by the reducer).
        detail: String,
    },
}

/// A conformance problem a server showed; each is reported with the evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hint {
    /// A `CreateTaskResult` whose immediate `tasks/get` said "unknown task".
    NonDurableCreate,
    /// An input key reappeared with a different request.
    InputKeyReused,
    /// A terminal task later reported another state.
    TerminalChanged,
    /// A live task snapshot without `pollIntervalMs`.
    PollIntervalMissing,
    /// Tasks were created although `server/discover` did not declare the extension.
    DiscoverWithoutExtension,
    /// A subscribed task changed, and only polling saw it.
    PushNotDelivered,
}

impl Hint {
    pub const ALL: [Hint; 6] = [
        Hint::NonDurableCreate,
        Hint::InputKeyReused,
        Hint::TerminalChanged,
        Hint::PollIntervalMissing,
        Hint::DiscoverWithoutExtension,
        Hint::PushNotDelivered,
    ];

    /// A short name for lists and logs.
    pub fn title(self) -> &'static str {
        match self {
            Hint::NonDurableCreate => "non-durable task creation",
            Hint::InputKeyReused => "input key reused",
            Hint::TerminalChanged => "terminal state changed",
            Hint::PollIntervalMissing => "pollIntervalMs missing",
            Hint::DiscoverWithoutExtension => "tasks extension missing in server/discover",
            Hint::PushNotDelivered => "push acknowledged but not delivered",
        }
    }

    /// What the server's authors should change.
    pub fn advice(self) -> &'static str {
        match self {
            Hint::NonDurableCreate => {
                "Task creation is strongly consistent: store the task before returning \
                 CreateTaskResult, so the next tasks/get finds it."
            }
            Hint::InputKeyReused => {
                "Input request keys are unique for the life of a task: mint a new key \
                 for every new request."
            }
            Hint::TerminalChanged => {
                "Terminal is forever: once completed, failed or cancelled, every later \
                 tasks/get and notification must report that same state."
            }
            Hint::PollIntervalMissing => {
                "Put pollIntervalMs on every live task so clients poll at the pace you \
                 can serve (clients fall back to their own default)."
            }
            Hint::DiscoverWithoutExtension => {
                "Declare io.modelcontextprotocol/tasks under capabilities.extensions in \
                 the server/discover reply when you create tasks."
            }
            Hint::PushNotDelivered => {
                "A task acknowledged in subscriptions/listen must get a \
                 notifications/tasks message for each change of its state."
            }
        }
    }
}
