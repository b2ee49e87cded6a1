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
    /// Another taskrail process recorded it in the shared ledger.
    Ledger,
}

impl UpdateSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Push => "push",
            Self::Poll => "poll",
            Self::Resync => "resync",
            Self::Ledger => "ledger",
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

/// A task's notes in words (sanitized, bounded), from its ledger row.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaskNote {
    /// `host agentx (user cancelled)`: who asked for the cancel, and why.
    pub cancel_by: Option<String>,
    /// `agentx stopped waiting after 4.0 s`: a proxied host stopped waiting.
    pub host: Option<String>,
    /// Why it did (`McpError: … Request timed out`), when it said.
    pub host_reason: Option<String>,
}

impl TaskNote {
    /// The notes of a ledger row, if it has any.
    pub fn of(rec: &crate::ledger::TaskRecord) -> Option<TaskNote> {
        let line = |s: &str, n: usize| crate::sanitize::sanitize_line(s, n);
        let cancel_by = rec.cancel_by.as_ref().and_then(|c| {
            let by = line(c.get("by")?.as_str()?, 80);
            Some(match c.get("reason").and_then(Value::as_str) {
                Some(r) if !r.is_empty() => format!("{by} ({})", line(r, 120)),
                _ => by,
            })
        });
        let host = rec.host_note.as_ref().map(|n| {
            let who = n.get("host").and_then(Value::as_str).map(|h| line(h, 60));
            let mut text = match who {
                Some(w) => format!("{w} stopped waiting"),
                None => "its client stopped waiting".to_string(),
            };
            if let Some(a) = n.get("afterS").and_then(Value::as_f64) {
                text.push_str(&format!(" after {a:.1} s"));
            }
            text
        });
        let host_reason = rec
            .host_note
            .as_ref()
            .and_then(|n| n.get("reason")?.as_str().map(|r| line(r, 160)));
        (cancel_by.is_some() || host.is_some()).then_some(TaskNote {
            cancel_by,
            host,
            host_reason,
        })
    }
}

/// What a `CallTool` came to.
#[derive(Debug, Clone, PartialEq)]
pub enum CallResult {
    /// A task was created (its snapshots follow as `TaskUpdated`). `stored` is false when
    /// the ledger write failed: the task runs on the server but will not survive a restart.
    Task { task_id: TaskId, stored: bool },
    /// The server answered with a plain `CallToolResult`.
    Plain { result: Value },
    /// The call failed; `code` is the JSON-RPC error code when the server refused it with
    /// one (`-32602`: invalid arguments or an unknown tool).
    Error { message: String, code: Option<i64> },
    /// Refused before anything was sent (e.g. a read-only server).
    Refused { reason: String },
}

/// Why an answer or a cancel did not happen.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// Refused here before anything was sent (read-only server, finished task, key already
    /// answered): the reason in words.
    Refused(String),
    /// Sent (or handed to the process that follows the task) and it failed.
    Failed(String),
    /// The server no longer knows the task (or its session).
    Gone(String),
}

impl Failure {
    pub fn text(&self) -> &str {
        match self {
            Failure::Refused(s) | Failure::Failed(s) | Failure::Gone(s) => s,
        }
    }

    /// The failure of a request that reached the server.
    pub fn of(e: &crate::mcp::McpError, task_id: &TaskId) -> Failure {
        let text = task_id.mask(&e.to_string());
        match e {
            crate::mcp::McpError::TaskNotFound { .. } | crate::mcp::McpError::SessionLost => {
                Failure::Gone(text)
            }
            _ => Failure::Failed(text),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text())
    }
}

/// Why a followed task stopped being followed without a terminal state.
pub use crate::ledger::Tombstone;

/// What the engine knows of a task when it starts reporting it.
#[derive(Debug, Clone, PartialEq)]
pub struct KnownTask {
    pub task_id: TaskId,
    pub tool: Option<String>,
    pub arguments: Option<Value>,
    /// When taskrail first recorded the task.
    pub recorded_at: chrono::DateTime<chrono::Utc>,
    pub last: Option<Task>,
    /// Set for a tombstone.
    pub end: Option<Tombstone>,
    pub parent_task: Option<TaskId>,
    /// Input keys of `last` still waiting for an answer (answered ones, here or by another
    /// process, are left out: never prompt for them again).
    pub pending: Vec<String>,
    /// A cancel was requested (`Some(false)`) or acknowledged (`Some(true)`).
    pub cancel: Option<bool>,
    /// The client that started the task, when it was not taskrail (a proxied agent host).
    pub started_by: Option<String>,
    /// A finished task read without its payload: its arguments, result (unless a tool
    /// error) and error data are only in the ledger.
    pub lean: bool,
}

impl KnownTask {
    /// A task known by its id only, first recorded at `recorded_at`.
    pub fn new(task_id: TaskId, recorded_at: chrono::DateTime<chrono::Utc>) -> KnownTask {
        KnownTask {
            task_id,
            tool: None,
            arguments: None,
            recorded_at,
            last: None,
            end: None,
            parent_task: None,
            pending: Vec::new(),
            cancel: None,
            started_by: None,
            lean: false,
        }
    }
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
    /// A server met in the ledger's history, not connected to: nothing of it is live.
    ServerIdle {
        server: ServerId,
    },
    /// The ledger's database could not be reached (`Some(writes kept here, waiting)`), or
    /// is back with every kept write replayed (`None`).
    LedgerOffline {
        waiting: Option<usize>,
    },
    /// The task left the ledger (another process pruned it): it is no longer shown.
    TaskRemoved {
        server: ServerId,
        task_id: TaskId,
    },
    /// This process cannot reach the server (`why`, in words): its tasks are shown as the
    /// ledger records them, and answers and cancels go through the outbox to the process
    /// that follows each task.
    ServerUnreachable {
        server: ServerId,
        why: String,
    },
    /// Push went on or off (e.g. the server answered `subscriptions/listen` with `-32601`).
    PushChanged {
        server: ServerId,
        push: bool,
    },
    /// The server is failing; tasks keep their last state and are retried.
    ServerDegraded {
        server: ServerId,
        reason: String,
    },
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
        task: KnownTask,
    },
    /// Finished tasks read from the ledger on start, one chunk at a time (each as a
    /// `TaskKnown` would say it); `more`: about how many are still to come, so a reader
    /// can make room once.
    TasksResumed {
        server: ServerId,
        tasks: Vec<KnownTask>,
        more: usize,
    },
    /// Someone asked something of a task of the proxy's own (`RecordCreated` with `local`):
    /// the proxy carries it out and reports with `LocalDone`.
    LocalAsked {
        server: ServerId,
        task_id: TaskId,
        request: Option<i64>,
        ask: LocalAsk,
    },
    /// What people and hosts did about a task, as the ledger says: who asked to cancel it,
    /// a proxied host that stopped waiting while it ran on.
    TaskNoted {
        server: ServerId,
        task_id: TaskId,
        note: TaskNote,
    },
    /// A new snapshot (already checked: never older than what was reported before,
    /// never after a terminal one), with the input keys still waiting for an answer.
    TaskUpdated {
        server: ServerId,
        task: Task,
        source: UpdateSource,
        latency_ms: Option<u64>,
        pending: Vec<String>,
    },
    /// The task ended without a terminal state: the server no longer knows it (`-32602`)
    /// or dropped its legacy session. A tombstone.
    TaskExpired {
        server: ServerId,
        task_id: TaskId,
        why: Tombstone,
    },
    /// An id given to follow is unknown to its server: nothing was recorded.
    TaskNotFound {
        server: ServerId,
        task_id: TaskId,
    },
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
        error: Failure,
    },
    /// A cancel was requested (`acked`: the server acknowledged it; the task may still
    /// finish otherwise), here or by another process.
    CancelSent {
        server: ServerId,
        task_id: TaskId,
        acked: bool,
    },
    CancelFailed {
        server: ServerId,
        task_id: TaskId,
        error: Failure,
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
        /// Durations in milliseconds of the `tasks/get` requests answered since the last
        /// report, oldest first (the latest 64 at most).
        latencies_ms: Vec<u32>,
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
    ToolsListFailed {
        server: ServerId,
        error: String,
    },
    /// The server wants a signed-in user (no sign-in, or it lapsed); nothing else helps.
    SignInRequired {
        server: ServerId,
        reason: String,
    },
    /// A sign-in began: the user opens `url` (the browser was started when `browser`).
    SignInStarted {
        server: ServerId,
        url: String,
        browser: bool,
    },
    /// A redirect was ignored during a sign-in (not the answer to it).
    SignInIgnored {
        server: ServerId,
        reason: String,
    },
    /// Signed in; the server is being (re)connected.
    SignedIn {
        server: ServerId,
    },
    SignInFailed {
        server: ServerId,
        error: String,
    },
    /// The server broke a rule of the tasks protocol (a hint for its authors).
    ServerMisbehaved {
        server: ServerId,
        hint: Hint,
        /// Which task or request showed it (sanitized by the reducer).
        detail: String,
    },
}

impl EngineEvent {
    /// A `TaskUpdated` in which every input request of `task` is still pending (a task
    /// nobody answered yet).
    pub fn snapshot(
        server: ServerId,
        task: Task,
        source: UpdateSource,
        latency_ms: Option<u64>,
    ) -> EngineEvent {
        let pending = task.input_requests.keys().cloned().collect();
        EngineEvent::TaskUpdated {
            server,
            task,
            source,
            latency_ms,
            pending,
        }
    }
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
