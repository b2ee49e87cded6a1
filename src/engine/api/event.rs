//! What flows up: the `EngineEvent`s (facts, past tense) the engine reports, with where a
//! foreground input request came from and how loud a notice is.

use std::time::Duration;

use super::command::LocalAsk;
use super::hint::Hint;
use super::known::{KnownTask, TaskNote};
use super::outcome::{CallResult, Failure};
use super::{ServerId, TaskId, Tombstone, UpdateSource};
use crate::mcp::{Era, InputRequest, Task, ToolInfo};

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
