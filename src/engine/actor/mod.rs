//! One actor per server: connects (with backoff), follows tasks push-first with a paced
//! polling fallback, runs calls, answers and cancels, and reports `EngineEvent`s.
//!
//! Owns: the connection (and the legacy sessions it rejoins), the followed tasks and their
//! schedule. A task is polled only by the process holding its lease in the shared ledger;
//! the others mirror what that process records. Network calls run in spawned tasks whose
//! results come back as `Internal` messages, so the actor never blocks on the network.
//! Must not import ratatui or crossterm.

use futures::FutureExt;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::api::*;
use super::conformance::{Conformance, Finding};
use super::listen::{ListenMsg, run_legacy_stream, run_listen};
use super::schedule::Schedule;
use super::stats::RequestStats;
use super::tracker::TrackedTask;
use super::{EngineConfig, ServerSpec};
use crate::ledger::{
    EventKind, Ledger, LedgerHandle, Op, OutboxKind, OutboxOutcome, OutboxRequest, Owner,
    TaskRecord,
};
use crate::mcp::{
    CallOutcome, Era, ErrorObject, McpClient, McpError, ServerPush, Task, TaskStatus, ToolInfo,
};

mod calls;
mod cancel;
mod commands;
mod connect;
mod follow;
mod foreground;
mod ingest;
mod outbox;
mod polling;
mod requests;
mod signin;
mod traced;

type Connected = Result<super::Connection, McpError>;

/// What the router hands an actor.
pub(in crate::engine) enum ActorMsg {
    Command(EngineCommand),
    /// A task row another process changed in the shared ledger.
    Ledger(Box<TaskRecord>),
    /// Another process asks us, the follower of the task, to answer or cancel it.
    Request(OutboxRequest),
    /// How a request we left for the follower of a task ended.
    Outcome(OutboxOutcome),
}

/// Results of spawned network calls.
pub(super) enum Internal {
    Connected(Connected),
    ResultFetched {
        task_id: TaskId,
        result: Result<Result<Value, ErrorObject>, McpError>,
    },
    Called {
        call_id: u64,
        tool: String,
        arguments: Value,
        parent: Option<TaskId>,
        result: Result<CallOutcome, McpError>,
    },
    Answered {
        task_id: TaskId,
        responses: BTreeMap<String, Value>,
        /// The outbox request this answer carries out, if another process asked for it.
        request: Option<i64>,
        result: Result<(), McpError>,
    },
    Cancelled {
        task_id: TaskId,
        request: Option<i64>,
        result: Result<Option<Task>, McpError>,
    },
    Tools(Result<Vec<ToolInfo>, McpError>),
    Listen(ListenMsg),
    SignedIn(Result<(), String>),
    /// Another process stored a sign-in for this server.
    SignInStored,
    /// A push from a rejoined legacy session.
    SessionPush(ServerPush),
}

/// A request this actor left in the outbox for another process, until its outcome.
pub(super) struct Awaited {
    pub task_id: TaskId,
    pub kind: OutboxKind,
    pub keys: Vec<String>,
    pub deadline: Instant,
}

pub(super) struct ServerActor {
    spec: ServerSpec,
    cfg: EngineConfig,
    ledger: Option<LedgerHandle>,
    events: mpsc::Sender<EngineEvent>,
    owner: Owner,
    client: Option<Arc<McpClient>>,
    push_rx: Option<mpsc::Receiver<ServerPush>>,
    /// The ledger row of the home connection's legacy session.
    home_session: Option<i64>,
    /// Legacy sessions of other connections (earlier runs, other processes), rejoined.
    sessions: HashMap<i64, Arc<McpClient>>,
    /// Sessions the server dropped: their tasks are tombstones.
    lost_sessions: HashSet<i64>,
    /// A task was created in the home session: never end it (a DELETE may cancel them).
    created_in_session: bool,
    /// Boxed: a table of thousands of finished tasks stays small (and cheap to grow).
    tasks: HashMap<TaskId, Box<TrackedTask>, crate::ids::IdHasher>,
    schedule: Schedule,
    seq: u64,
    /// `tasks/get` requests in flight (their number is the slots taken).
    requests: requests::Requests,
    internal_tx: mpsc::Sender<Internal>,
    internal_rx: mpsc::Receiver<Internal>,
    listen_ids: watch::Sender<BTreeSet<TaskId>>,
    /// When `listen_ids` is recomputed next (changes within one settle share one walk).
    listen_due: Option<Instant>,
    push_task: Option<JoinHandle<()>>,
    push_on: bool,
    subscribed: BTreeSet<TaskId>,
    backoff_until: Option<Instant>,
    connect_attempt: u32,
    connecting: bool,
    transport_failures: u32,
    degraded: bool,
    stats: RequestStats,
    /// Calls, answers, cancels and tool listings waiting for the first connection.
    queued: Vec<EngineCommand>,
    conformance: Conformance,
    connect_task: Option<JoinHandle<()>>,
    sign_in: signin::SignIn,
    /// Requests we left for the follower of a task.
    awaited: HashMap<i64, Awaited>,
    /// Outbox requests we are carrying out (each once).
    serving: HashSet<i64>,
    /// Seconds of the 1 Hz tick so far.
    ticks: u64,
    /// Input requests outside any task, waiting for the person.
    foreground: super::foreground::Foreground,
}

/// Unchanged polls are written as a count at least this often (seconds).
const QUIET_FLUSH_TICKS: u64 = 60;

/// How long changes to the set of pushed tasks gather before it is recomputed (and the
/// listen loop re-listens: a burst of new tasks shares one `subscriptions/listen`).
const LISTEN_SETTLE: Duration = Duration::from_millis(50);

fn ledger_kind(source: UpdateSource) -> EventKind {
    match source {
        UpdateSource::Create => EventKind::Created,
        UpdateSource::Push => EventKind::Push,
        UpdateSource::Poll => EventKind::Poll,
        UpdateSource::Resync | UpdateSource::Ledger => EventKind::Resync,
    }
}

impl ServerActor {
    pub(in crate::engine) fn new(
        spec: ServerSpec,
        cfg: EngineConfig,
        ledger: Option<LedgerHandle>,
        events: mpsc::Sender<EngineEvent>,
        owner: Owner,
    ) -> Self {
        let (internal_tx, internal_rx) = mpsc::channel(1024);
        let (listen_ids, _) = watch::channel(BTreeSet::new());
        Self {
            spec,
            cfg,
            ledger,
            events,
            owner,
            client: None,
            push_rx: None,
            home_session: None,
            sessions: HashMap::new(),
            lost_sessions: HashSet::new(),
            created_in_session: false,
            tasks: HashMap::default(),
            schedule: Schedule::default(),
            seq: 0,
            requests: requests::Requests::default(),
            internal_tx,
            internal_rx,
            listen_ids,
            listen_due: None,
            push_task: None,
            push_on: false,
            subscribed: BTreeSet::new(),
            backoff_until: None,
            connect_attempt: 0,
            connecting: false,
            transport_failures: 0,
            degraded: false,
            stats: RequestStats::default(),
            queued: Vec::new(),
            conformance: Conformance::default(),
            connect_task: None,
            sign_in: signin::SignIn::default(),
            awaited: HashMap::new(),
            serving: HashSet::new(),
            ticks: 0,
            foreground: Default::default(),
        }
    }

    fn id(&self) -> ServerId {
        self.spec.id.clone()
    }

    async fn emit(&self, ev: EngineEvent) {
        self.trace(&ev).await;
        let _ = self.events.send(ev).await;
    }

    async fn notice(&self, level: NoticeLevel, text: String) {
        self.emit(EngineEvent::Notice {
            server: Some(self.id()),
            level,
            text,
        })
        .await;
    }

    /// Report conformance findings (hints for the server's authors).
    async fn hints(&self, findings: impl IntoIterator<Item = Finding>) {
        for (hint, detail) in findings {
            tracing::info!(server = %self.spec.id, "conformance: {}: {detail}", hint.title());
            self.emit(EngineEvent::ServerMisbehaved {
                server: self.id(),
                hint,
                detail,
            })
            .await;
        }
    }

    /// Call a ledger operation now (`op` names it) and await it; a failure is logged and
    /// shown, and gives `None` (as does having no ledger).
    fn ledger<R: Send + 'static>(
        &self,
        op: impl FnOnce(&dyn Ledger) -> Op<R>,
    ) -> impl Future<Output = Option<R>> + '_ {
        // Called here, not when awaited: the operation is queued in call order.
        let pending = self.ledger.as_deref().map(op);
        async move {
            match pending?.await {
                Ok(r) => Some(r),
                // The header says the database is away; one notice per failed read would
                // bury everything else.
                Err(e)
                    if e.downcast_ref::<crate::ledger::Offline>().is_some()
                        || self.ledger_offline() =>
                {
                    tracing::debug!("ledger: {e:#}");
                    None
                }
                Err(e) => {
                    tracing::warn!("ledger: {e:#}");
                    self.notice(NoticeLevel::Error, format!("ledger write failed: {e:#}"))
                        .await;
                    None
                }
            }
        }
    }

    /// The ledger's database cannot be reached now (`ledger/backlog.rs`).
    fn ledger_offline(&self) -> bool {
        self.ledger.as_ref().is_some_and(|l| l.offline().is_some())
    }

    /// Call a ledger operation without waiting for it (it runs before any later one).
    fn ledger_queue(&self, op: impl FnOnce(&dyn Ledger) -> Op<()>) {
        if let Some(ledger) = self.ledger.as_deref()
            && let Some(Err(e)) = op(ledger).now_or_never()
        {
            tracing::warn!("ledger: {e:#}");
        }
    }

    /// A `TaskUpdated` for `task` with the keys the tracker still counts as pending.
    fn updated(&self, task: Task, source: UpdateSource, latency_ms: Option<u64>) -> EngineEvent {
        let pending = self
            .tasks
            .get(&task.task_id)
            .map(|t| t.pending_keys())
            .unwrap_or_default();
        EngineEvent::TaskUpdated {
            server: self.id(),
            task,
            source,
            latency_ms,
            pending,
        }
    }

    pub(in crate::engine) async fn run(mut self, mut inbox: mpsc::Receiver<ActorMsg>) {
        if let Some(why) = self.spec.unreachable.clone() {
            self.emit(EngineEvent::ServerUnreachable {
                server: self.id(),
                why,
            })
            .await;
        }
        if self.cfg.resume {
            self.resume_from_ledger().await;
        }
        if self.spec.unreachable.is_none() {
            if !self.spec.lazy || !self.followed_ids().is_empty() {
                self.start_connect(Duration::ZERO);
            } else {
                self.emit(EngineEvent::ServerIdle { server: self.id() })
                    .await;
            }
        }
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let due = self
                .schedule
                .next_wake()
                .map(|d| self.backoff_until.map_or(d, |b| d.max(b)));
            tokio::select! {
                msg = inbox.recv() => match msg {
                    None | Some(ActorMsg::Command(EngineCommand::Shutdown)) => break,
                    Some(ActorMsg::Command(cmd)) => self.on_command(cmd).await,
                    Some(ActorMsg::Ledger(rec)) => self.on_ledger_record(*rec).await,
                    Some(ActorMsg::Request(req)) => self.on_request(req).await,
                    Some(ActorMsg::Outcome(outcome)) => self.on_outcome(outcome).await,
                },
                Some(msg) = self.internal_rx.recv() => self.on_internal(msg).await,
                Some(joined) = self.requests.next() => self.on_request_joined(joined).await,
                Some(push) = recv_opt(&mut self.push_rx) => self.on_push(push).await,
                _ = sleep_opt(due) => self.poll_due().await,
                _ = sleep_opt(self.foreground.next_deadline()) => self.expire_foreground().await,
                _ = sleep_opt(self.listen_due) => self.listen_ids_now(),
                _ = tick.tick() => self.on_tick().await,
            }
        }
        self.shutdown().await;
    }

    async fn shutdown(&mut self) {
        let ids: Vec<TaskId> = self.tasks.keys().cloned().collect();
        for id in ids {
            self.flush_quiet_polls(&id);
        }
        // Queued snapshots are on disk before the engine stops.
        self.ledger(|l| l.flush()).await;
        if let Some(t) = self.push_task.take() {
            t.abort();
        }
        self.requests.abort_all();
        for (id, a) in std::mem::take(&mut self.awaited) {
            self.ledger_queue(|l| l.abandon_request(id, "the requester stopped waiting"));
            tracing::debug!(task = %a.task_id, "gave up waiting for an outbox request");
        }
        if let Some(c) = self.client.take() {
            if self.followed_ids().is_empty() && !self.created_in_session {
                c.close().await;
            } else {
                c.detach().await;
            }
        }
        // Rejoined sessions live on for their tasks; what we held open in them is let go.
        for (_, c) in std::mem::take(&mut self.sessions) {
            c.detach().await;
        }
    }

    fn followed_ids(&self) -> BTreeSet<TaskId> {
        self.tasks
            .iter()
            .filter(|(_, t)| t.live())
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Tasks this engine polls (it holds their lease).
    fn owned_ids(&self) -> Vec<TaskId> {
        self.tasks
            .iter()
            .filter(|(_, t)| t.live() && t.owned && !t.provisional)
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The set of tasks to be pushed may have changed: recompute it within
    /// [`LISTEN_SETTLE`] (one walk of every task for a burst of changes, not one each).
    fn update_listen_ids(&mut self) {
        if self.listen_due.is_none() {
            self.listen_due = Some(Instant::now() + LISTEN_SETTLE);
        }
    }

    fn listen_ids_now(&mut self) {
        self.listen_due = None;
        // Only owned tasks of the home connection are pushed to us.
        let ids: BTreeSet<TaskId> = self
            .tasks
            .iter()
            .filter(|(_, t)| t.live() && t.owned && !t.local && !self.foreign_session(t))
            .map(|(id, _)| id.clone())
            .collect();
        self.listen_ids.send_if_modified(|cur| {
            if *cur != ids {
                *cur = ids;
                true
            } else {
                false
            }
        });
    }

    /// `text` with every followed task's full id replaced by its short form (server error
    /// texts echo ids; logs and notices must not carry them).
    fn mask_ids(&self, text: &str) -> String {
        self.tasks
            .keys()
            .fold(text.to_string(), |t, id| id.mask(&t))
    }

    /// The one read-only check every mutating path goes through.
    async fn refuse_read_only(&self, what: &str) -> Option<Failure> {
        let refused = self.spec.refuse(what)?;
        self.notice(NoticeLevel::Warn, refused.text().to_string())
            .await;
        Some(refused)
    }

    async fn on_internal(&mut self, msg: Internal) {
        match msg {
            Internal::Connected(r) => self.on_connected(r).await,
            Internal::ResultFetched { task_id, result } => self.on_result(task_id, result).await,
            Internal::Called {
                call_id,
                tool,
                arguments,
                parent,
                result,
            } => {
                self.on_called(call_id, tool, arguments, parent, result)
                    .await
            }
            Internal::Answered {
                task_id,
                responses,
                request,
                result,
            } => self.on_answered(task_id, responses, request, result).await,
            Internal::Cancelled {
                task_id,
                request,
                result,
            } => self.on_cancelled(task_id, request, result).await,
            Internal::Tools(Ok(tools)) => {
                self.emit(EngineEvent::ToolsListed {
                    server: self.id(),
                    tools,
                })
                .await
            }
            Internal::Tools(Err(e)) => {
                self.stats.error();
                self.emit(EngineEvent::ToolsListFailed {
                    server: self.id(),
                    error: e.to_string(),
                })
                .await
            }
            Internal::Listen(m) => self.on_listen(m).await,
            Internal::SignedIn(r) => self.on_signed_in(r).await,
            Internal::SignInStored => self.on_sign_in_stored().await,
            Internal::SessionPush(p) => self.on_push(p).await,
        }
    }

    async fn on_tick(&mut self) {
        if let Some(e) = self.ledger.as_ref().and_then(|l| l.take_write_failure()) {
            self.notice(NoticeLevel::Error, format!("ledger write failed: {e}"))
                .await;
        }
        self.expire_awaited().await;
        if self.spec.unreachable.is_none() {
            self.take_over_lapsed().await;
        }
        self.ticks = self.ticks.wrapping_add(1);
        // As often as leases are renewed: a lease lost meanwhile is found within one period.
        let renew_ticks = (self.cfg.lease_ttl.as_secs() / 3).max(1);
        if self.ticks.is_multiple_of(renew_ticks) {
            self.drop_lost_leases().await;
        }
        if self.ticks.is_multiple_of(QUIET_FLUSH_TICKS) {
            let quiet: Vec<TaskId> = self
                .tasks
                .iter()
                .filter(|(_, t)| t.quiet_polls > 0)
                .map(|(id, _)| id.clone())
                .collect();
            for id in quiet {
                self.flush_quiet_polls(&id);
            }
        }
        if let Some(sample) = self.stats.sample() {
            self.emit(EngineEvent::Stats {
                server: self.id(),
                requests_total: sample.total,
                requests_per_sec: sample.rate,
                errors_total: sample.errors,
                latencies_ms: sample.latencies_ms,
            })
            .await;
        }
    }
}

async fn recv_opt<T>(rx: &mut Option<mpsc::Receiver<T>>) -> Option<T> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

async fn sleep_opt(due: Option<Instant>) {
    match due {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}
