//! One actor per server: connects (with backoff), follows tasks push-first with a paced
//! polling fallback, runs calls, answers and cancels, and reports `EngineEvent`s.
//!
//! Owns: the connection, the followed tasks and their schedule. Network calls run in
//! spawned tasks whose results come back as `Internal` messages, so the actor never
//! blocks on the network. Must not import ratatui or crossterm.

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::api::*;
use super::conformance::{Conformance, Finding};
use super::listen::{ListenMsg, backoff, run_legacy_stream, run_listen};
use super::schedule::Schedule;
use super::stats::RequestStats;
use super::tracker::TrackedTask;
use super::{EngineConfig, ServerSpec};
use crate::ledger::{EventKind, LedgerHandle, short_id};
use crate::mcp::{
    CallOutcome, Era, ErrorObject, McpClient, McpError, ServerPush, Task, TaskStatus, ToolInfo,
};

type Connected = Result<(Arc<McpClient>, mpsc::Receiver<ServerPush>), McpError>;

/// Results of spawned network calls.
pub(super) enum Internal {
    Connected(Connected),
    Polled {
        task_id: String,
        observed: u64,
        result: Result<Task, McpError>,
        latency_ms: u64,
        source: UpdateSource,
    },
    ResultFetched {
        task_id: String,
        result: Result<Result<Value, ErrorObject>, McpError>,
    },
    Called {
        call_id: u64,
        tool: String,
        arguments: Value,
        parent: Option<String>,
        result: Result<CallOutcome, McpError>,
    },
    Answered {
        task_id: String,
        responses: BTreeMap<String, Value>,
        result: Result<(), McpError>,
    },
    Cancelled {
        task_id: String,
        result: Result<Option<Task>, McpError>,
    },
    Tools(Result<Vec<ToolInfo>, McpError>),
    Listen(ListenMsg),
}

pub(super) struct ServerActor {
    spec: ServerSpec,
    cfg: EngineConfig,
    ledger: Option<LedgerHandle>,
    events: mpsc::Sender<EngineEvent>,
    client: Option<Arc<McpClient>>,
    push_rx: Option<mpsc::Receiver<ServerPush>>,
    tasks: HashMap<String, TrackedTask>,
    schedule: Schedule,
    seq: u64,
    in_flight: usize,
    internal_tx: mpsc::Sender<Internal>,
    internal_rx: mpsc::Receiver<Internal>,
    listen_ids: watch::Sender<BTreeSet<String>>,
    push_task: Option<JoinHandle<()>>,
    push_on: bool,
    subscribed: BTreeSet<String>,
    backoff_until: Option<Instant>,
    connect_attempt: u32,
    connecting: bool,
    transport_failures: u32,
    degraded: bool,
    stats: RequestStats,
    /// Calls, answers, cancels and tool listings waiting for the first connection.
    queued: Vec<EngineCommand>,
    conformance: Conformance,
}

fn ledger_kind(source: UpdateSource) -> EventKind {
    match source {
        UpdateSource::Create => EventKind::Created,
        UpdateSource::Push => EventKind::Push,
        UpdateSource::Poll => EventKind::Poll,
        UpdateSource::Resync => EventKind::Resync,
    }
}

impl ServerActor {
    pub(super) fn new(
        spec: ServerSpec,
        cfg: EngineConfig,
        ledger: Option<LedgerHandle>,
        events: mpsc::Sender<EngineEvent>,
    ) -> Self {
        let (internal_tx, internal_rx) = mpsc::channel(1024);
        let (listen_ids, _) = watch::channel(BTreeSet::new());
        Self {
            spec,
            cfg,
            ledger,
            events,
            client: None,
            push_rx: None,
            tasks: HashMap::new(),
            schedule: Schedule::default(),
            seq: 0,
            in_flight: 0,
            internal_tx,
            internal_rx,
            listen_ids,
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
        }
    }

    fn id(&self) -> ServerId {
        self.spec.id.clone()
    }

    async fn emit(&self, ev: EngineEvent) {
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

    async fn ledger<R: Send + 'static>(
        &self,
        f: impl FnOnce(&crate::ledger::Ledger) -> anyhow::Result<R> + Send + 'static,
    ) -> Option<R> {
        let ledger = self.ledger.as_ref()?;
        match ledger.call(f).await {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!("ledger: {e:#}");
                self.notice(NoticeLevel::Error, format!("ledger write failed: {e:#}"))
                    .await;
                None
            }
        }
    }

    pub(super) async fn run(mut self, mut commands: mpsc::Receiver<EngineCommand>) {
        if self.cfg.resume {
            self.resume_from_ledger().await;
        }
        self.start_connect(Duration::ZERO);
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let due = self
                .schedule
                .next_due()
                .map(|d| self.backoff_until.map_or(d, |b| d.max(b)));
            tokio::select! {
                cmd = commands.recv() => match cmd {
                    None | Some(EngineCommand::Shutdown) => break,
                    Some(cmd) => self.on_command(cmd).await,
                },
                Some(msg) = self.internal_rx.recv() => self.on_internal(msg).await,
                Some(push) = recv_opt(&mut self.push_rx) => self.on_push(push).await,
                _ = sleep_opt(due) => self.poll_due().await,
                _ = tick.tick() => self.emit_stats().await,
            }
        }
        // Queued snapshots are on disk before the engine stops.
        self.ledger(|_| Ok(())).await;
        if let Some(t) = self.push_task.take() {
            t.abort();
        }
        if let Some(c) = self.client.take() {
            if self.followed_ids().is_empty() {
                c.close().await;
            } else {
                c.detach().await;
            }
        }
    }

    async fn resume_from_ledger(&mut self) {
        let server = self.spec.id.0.clone();
        let history = self.cfg.history;
        let Some(records) = self.ledger(move |l| l.list(history)).await else {
            return;
        };
        for rec in records.into_iter().filter(|r| r.server == server) {
            self.adopt(rec).await;
        }
        self.update_listen_ids();
    }

    /// Start following a ledger record: report it, then poll it unless it is finished.
    async fn adopt(&mut self, rec: crate::ledger::TaskRecord) {
        let mut tr = TrackedTask {
            answered: rec.answered_keys.iter().cloned().collect(),
            expired: rec.expired,
            ..Default::default()
        };
        if let Some(snap) = &rec.snapshot {
            tr.terminal = snap.status.is_terminal();
            tr.last = Some(snap.clone());
        }
        tr.terminal |= rec.terminal;
        let follow = !tr.terminal && !tr.expired;
        self.emit(EngineEvent::TaskKnown {
            server: self.id(),
            task_id: rec.task_id.clone(),
            tool: rec.tool.clone(),
            arguments: rec.arguments.clone(),
            recorded_at: rec.recorded_at,
            last: rec.snapshot.clone(),
            expired: rec.expired,
            parent_task: rec.parent_task.clone(),
        })
        .await;
        self.tasks.insert(rec.task_id.clone(), tr);
        if follow {
            self.schedule.set(&rec.task_id, Instant::now());
        }
    }

    fn start_connect(&mut self, delay: Duration) {
        if self.connecting {
            return;
        }
        self.connecting = true;
        let endpoint = self.spec.endpoint.clone();
        let options = self.spec.options.clone();
        let tx = self.internal_tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let result = McpClient::connect(endpoint, options).await;
            let _ = tx.send(Internal::Connected(result)).await;
        });
    }

    async fn on_connected(&mut self, result: Connected) {
        self.connecting = false;
        match result {
            Ok((client, push_rx)) => {
                let info = client.info();
                self.connect_attempt = 0;
                self.transport_failures = 0;
                self.degraded = false;
                self.client = Some(client.clone());
                self.push_rx = Some(push_rx);
                self.emit(EngineEvent::ServerConnected {
                    server: self.id(),
                    era: info.era,
                    push: false,
                    server_name: info.name.clone(),
                })
                .await;
                if !info.tasks {
                    self.notice(
                        NoticeLevel::Warn,
                        "the server does not offer tasks; calls will return plain results".into(),
                    )
                    .await;
                }
                self.start_push(client, info.era, info.tasks);
                let now = Instant::now();
                let ids: Vec<String> = self.followed_ids().into_iter().collect();
                for id in ids {
                    self.schedule.set(&id, now);
                }
                for cmd in std::mem::take(&mut self.queued) {
                    Box::pin(self.on_command(cmd)).await;
                }
            }
            Err(e) => {
                self.connect_attempt += 1;
                let retry_in = backoff(
                    self.connect_attempt,
                    self.cfg.backoff_base,
                    self.cfg.backoff_max,
                );
                let reason = e.to_string();
                tracing::warn!(server = %self.spec.id, "connect failed: {reason}");
                self.degraded = true;
                self.emit(EngineEvent::ServerDegraded {
                    server: self.id(),
                    reason,
                })
                .await;
                self.emit(EngineEvent::Reconnecting {
                    server: self.id(),
                    attempt: self.connect_attempt,
                    retry_in,
                })
                .await;
                self.start_connect(retry_in);
            }
        }
    }

    fn start_push(&mut self, client: Arc<McpClient>, era: Era, tasks: bool) {
        if let Some(t) = self.push_task.take() {
            t.abort();
        }
        self.push_on = false;
        self.subscribed.clear();
        if !tasks || self.cfg.no_push {
            return;
        }
        let (tx, mut rx) = mpsc::channel::<ListenMsg>(1024);
        let internal = self.internal_tx.clone();
        tokio::spawn(async move {
            while let Some(m) = rx.recv().await {
                if internal.send(Internal::Listen(m)).await.is_err() {
                    break;
                }
            }
        });
        let (base, max) = (self.cfg.backoff_base, self.cfg.backoff_max);
        self.push_task = Some(match era {
            Era::Modern => tokio::spawn(run_listen(
                client,
                self.listen_ids.subscribe(),
                tx,
                base,
                max,
            )),
            Era::Legacy => tokio::spawn(run_legacy_stream(client, tx)),
        });
    }

    fn followed_ids(&self) -> BTreeSet<String> {
        self.tasks
            .iter()
            .filter(|(_, t)| !t.terminal && !t.expired)
            .map(|(id, _)| id.clone())
            .collect()
    }

    fn update_listen_ids(&mut self) {
        let ids = self.followed_ids();
        self.listen_ids.send_if_modified(|cur| {
            if *cur != ids {
                *cur = ids;
                true
            } else {
                false
            }
        });
    }

    async fn refuse_read_only(&self, what: &str) -> bool {
        if self.spec.read_only {
            self.notice(
                NoticeLevel::Warn,
                format!("{what} refused: the server is read-only"),
            )
            .await;
        }
        self.spec.read_only
    }

    async fn on_command(&mut self, cmd: EngineCommand) {
        let needs_connection = matches!(
            cmd,
            EngineCommand::CallTool { .. }
                | EngineCommand::Answer { .. }
                | EngineCommand::Cancel { .. }
                | EngineCommand::ListTools { .. }
        );
        if needs_connection && self.client.is_none() {
            if self.queued.len() < 1024 {
                self.queued.push(cmd);
            }
            return;
        }
        match cmd {
            EngineCommand::Track { task_id, .. } => self.track(task_id).await,
            EngineCommand::CallTool {
                call_id,
                tool,
                arguments,
                parent_task,
                ..
            } => {
                if self.refuse_read_only("call").await {
                    let result = CallResult::Error {
                        message: "read-only server".into(),
                    };
                    self.emit(EngineEvent::CallFinished {
                        server: self.id(),
                        call_id,
                        tool,
                        result,
                    })
                    .await;
                    return;
                }
                let Some(client) = self.client.clone() else {
                    let result = CallResult::Error {
                        message: "not connected".into(),
                    };
                    self.emit(EngineEvent::CallFinished {
                        server: self.id(),
                        call_id,
                        tool,
                        result,
                    })
                    .await;
                    return;
                };
                self.stats.request();
                let tx = self.internal_tx.clone();
                tokio::spawn(async move {
                    let result = call_with_retry(&client, &tool, &arguments).await;
                    let _ = tx
                        .send(Internal::Called {
                            call_id,
                            tool,
                            arguments,
                            parent: parent_task,
                            result,
                        })
                        .await;
                });
            }
            EngineCommand::Answer {
                task_id, responses, ..
            } => self.answer(task_id, responses).await,
            EngineCommand::Cancel { task_id, .. } => self.cancel(task_id).await,
            EngineCommand::Forget { task_id, .. } => {
                self.tasks.remove(&task_id);
                self.schedule.remove(&task_id);
                self.update_listen_ids();
            }
            EngineCommand::Refresh { task_id, .. } => {
                let ids: Vec<String> = match task_id {
                    Some(id) => vec![id],
                    None => self.followed_ids().into_iter().collect(),
                };
                for id in ids {
                    if self.tasks.contains_key(&id) {
                        self.start_get(&id, UpdateSource::Poll);
                    }
                }
            }
            EngineCommand::ListTools { .. } => {
                let Some(client) = self.client.clone() else {
                    self.emit(EngineEvent::ToolsListFailed {
                        server: self.id(),
                        error: "not connected".into(),
                    })
                    .await;
                    return;
                };
                self.stats.request();
                let tx = self.internal_tx.clone();
                tokio::spawn(async move {
                    let _ = tx.send(Internal::Tools(client.list_tools().await)).await;
                });
            }
            EngineCommand::Shutdown => {}
        }
    }

    async fn track(&mut self, task_id: String) {
        if self.tasks.contains_key(&task_id) {
            self.start_get(&task_id, UpdateSource::Resync);
            return;
        }
        let server = self.spec.id.0.clone();
        let era = self.client.as_ref().map(|c| c.era());
        let id = task_id.clone();
        let rec = self
            .ledger(move |l| {
                l.record_tracked(&server, era, &id)?;
                l.get(&server, &id)
            })
            .await
            .flatten();
        match rec {
            Some(rec) => self.adopt(rec).await,
            None => {
                self.emit(EngineEvent::TaskKnown {
                    server: self.id(),
                    task_id: task_id.clone(),
                    tool: None,
                    arguments: None,
                    recorded_at: chrono::Utc::now(),
                    last: None,
                    expired: false,
                    parent_task: None,
                })
                .await;
                self.tasks.insert(task_id.clone(), TrackedTask::default());
                self.schedule.set(&task_id, Instant::now());
            }
        }
        self.update_listen_ids();
    }

    async fn answer(&mut self, task_id: String, responses: BTreeMap<String, Value>) {
        let keys: Vec<String> = responses.keys().cloned().collect();
        if self.refuse_read_only("answer").await {
            self.emit(EngineEvent::AnswerFailed {
                server: self.id(),
                task_id,
                keys,
                error: "read-only server".into(),
            })
            .await;
            return;
        }
        let answered: Vec<String> = self
            .tasks
            .get(&task_id)
            .map(|t| {
                keys.iter()
                    .filter(|k| t.answered.contains(*k))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        if !answered.is_empty() {
            let error = format!("already answered: {}", answered.join(", "));
            self.emit(EngineEvent::AnswerFailed {
                server: self.id(),
                task_id,
                keys,
                error,
            })
            .await;
            return;
        }
        let Some(client) = self.client.clone() else {
            self.emit(EngineEvent::AnswerFailed {
                server: self.id(),
                task_id,
                keys,
                error: "not connected".into(),
            })
            .await;
            return;
        };
        self.stats.request();
        let tx = self.internal_tx.clone();
        tokio::spawn(async move {
            let result =
                super::retry::retry_transient(|| client.update_task(&task_id, &responses)).await;
            let _ = tx
                .send(Internal::Answered {
                    task_id,
                    responses,
                    result,
                })
                .await;
        });
    }

    async fn cancel(&mut self, task_id: String) {
        if self.refuse_read_only("cancel").await {
            self.emit(EngineEvent::CancelFailed {
                server: self.id(),
                task_id,
                error: "read-only server".into(),
            })
            .await;
            return;
        }
        let Some(client) = self.client.clone() else {
            self.emit(EngineEvent::CancelFailed {
                server: self.id(),
                task_id,
                error: "not connected".into(),
            })
            .await;
            return;
        };
        if let Some(t) = self.tasks.get_mut(&task_id) {
            if t.cancel_in_flight {
                return;
            }
            t.cancel_in_flight = true;
        }
        let (server, id) = (self.spec.id.0.clone(), task_id.clone());
        self.ledger(move |l| {
            l.record_event(&server, &id, EventKind::CancelRequested, None, &json!({}))
        })
        .await;
        self.stats.request();
        let tx = self.internal_tx.clone();
        tokio::spawn(async move {
            let result = super::retry::retry_transient(|| client.cancel_task(&task_id)).await;
            let _ = tx.send(Internal::Cancelled { task_id, result }).await;
        });
    }

    /// Send one `tasks/get` unless one is already in flight for the task.
    fn start_get(&mut self, task_id: &str, source: UpdateSource) -> bool {
        let Some(client) = self.client.clone() else {
            return false;
        };
        let Some(tr) = self.tasks.get_mut(task_id) else {
            return false;
        };
        if tr.poll_in_flight {
            return false;
        }
        tr.poll_in_flight = true;
        tr.last_get = Some(Instant::now());
        self.in_flight += 1;
        self.seq += 1;
        self.stats.request();
        let observed = self.seq;
        let tx = self.internal_tx.clone();
        let task_id = task_id.to_string();
        tokio::spawn(async move {
            let started = Instant::now();
            let result = client.get_task(&task_id).await;
            let latency_ms = started.elapsed().as_millis() as u64;
            let _ = tx
                .send(Internal::Polled {
                    task_id,
                    observed,
                    result,
                    latency_ms,
                    source,
                })
                .await;
        });
        true
    }

    async fn poll_due(&mut self) {
        let now = Instant::now();
        if self.backoff_until.is_some_and(|b| b > now) {
            return;
        }
        self.backoff_until = None;
        while self.in_flight < self.cfg.max_in_flight {
            let Some(id) = self.schedule.pop_due(now) else {
                break;
            };
            let source = if self.tasks.get(&id).is_some_and(|t| t.last.is_none()) {
                UpdateSource::Resync
            } else {
                UpdateSource::Poll
            };
            if self.client.is_none() {
                // Reconnecting: try again once connected (on_connected reschedules everything).
                continue;
            }
            self.start_get(&id, source);
        }
        if self.in_flight >= self.cfg.max_in_flight
            && let Some(due) = self.schedule.next_due()
            && due <= now
        {
            // Saturated: the next completion will call us again.
            self.backoff_until = Some(now + Duration::from_millis(20));
        }
    }

    /// Next poll time for a task after a successful observation.
    fn poll_delay(&self, task_id: &str) -> Duration {
        let tr = self.tasks.get(task_id);
        let base = self.poll_interval(task_id);
        let base = if tr.is_some_and(|t| t.pushed) {
            base.max(self.cfg.safety_poll)
        } else {
            base
        };
        // Jitter only ever adds, so the rate never exceeds one request per interval.
        base + base.mul_f64(fastrand::f64() * 0.1)
    }

    /// `max(pollIntervalMs, floor)`, or the default when the server gives no hint.
    fn poll_interval(&self, task_id: &str) -> Duration {
        let hinted = self
            .tasks
            .get(task_id)
            .and_then(|t| t.last.as_ref())
            .and_then(|t| t.poll_interval_ms)
            .map(Duration::from_millis);
        let floor = self.spec.poll_floor.unwrap_or(self.cfg.poll_floor);
        hinted.unwrap_or(self.cfg.default_poll).max(floor)
    }

    /// Poll again soon (after an answer or a cancel), but never sooner than one
    /// interval after the previous `tasks/get`.
    fn poll_soon(&mut self, task_id: &str) {
        let follow = self
            .tasks
            .get(task_id)
            .is_some_and(|t| !t.pushed && !t.terminal && !t.expired);
        if !follow {
            return;
        }
        let mut due = Instant::now() + Duration::from_millis(300);
        if let Some(last) = self.tasks.get(task_id).and_then(|t| t.last_get) {
            due = due.max(last + self.poll_interval(task_id));
        }
        self.schedule.set_if_earlier(task_id, due);
    }

    async fn on_internal(&mut self, msg: Internal) {
        match msg {
            Internal::Connected(r) => self.on_connected(r).await,
            Internal::Polled {
                task_id,
                observed,
                result,
                latency_ms,
                source,
            } => {
                self.in_flight = self.in_flight.saturating_sub(1);
                if let Some(t) = self.tasks.get_mut(&task_id) {
                    t.poll_in_flight = false;
                }
                self.on_polled(task_id, observed, result, latency_ms, source)
                    .await;
                if self
                    .backoff_until
                    .is_some_and(|b| b <= Instant::now() + Duration::from_millis(20))
                {
                    self.backoff_until = None;
                }
            }
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
                result,
            } => self.on_answered(task_id, responses, result).await,
            Internal::Cancelled { task_id, result } => self.on_cancelled(task_id, result).await,
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
        }
    }

    async fn on_polled(
        &mut self,
        task_id: String,
        observed: u64,
        result: Result<Task, McpError>,
        latency_ms: u64,
        source: UpdateSource,
    ) {
        if !self.tasks.contains_key(&task_id) {
            return;
        }
        match result {
            Ok(task) => {
                self.transport_failures = 0;
                if self.degraded {
                    self.degraded = false;
                    if let Some(c) = &self.client {
                        let info = c.info();
                        self.emit(EngineEvent::ServerConnected {
                            server: self.id(),
                            era: info.era,
                            push: self.push_on,
                            server_name: info.name,
                        })
                        .await;
                    }
                }
                if let Some(t) = self.tasks.get_mut(&task_id) {
                    t.consecutive_errors = 0;
                }
                self.conformance.found(&task_id);
                let terminal_before = self.tasks.get(&task_id).is_some_and(|t| t.terminal);
                if terminal_before {
                    self.check_terminal(&task, source).await;
                    self.merge_payload(&task_id, task.result, task.error).await;
                    return;
                }
                self.apply(task, observed, source, Some(latency_ms)).await;
                self.reschedule(&task_id);
            }
            Err(McpError::TaskNotFound { message }) => {
                let finding = self.conformance.not_found(&task_id);
                self.hints(finding).await;
                self.expire(&task_id, &message).await
            }
            Err(e) => self.on_request_error(&task_id, e).await,
        }
    }

    fn reschedule(&mut self, task_id: &str) {
        let follow = self
            .tasks
            .get(task_id)
            .is_some_and(|t| !t.terminal && !t.expired);
        if follow {
            let due = Instant::now() + self.poll_delay(task_id);
            self.schedule.set(task_id, due);
        } else {
            self.schedule.remove(task_id);
        }
    }

    async fn on_request_error(&mut self, task_id: &str, e: McpError) {
        self.stats.error();
        let attempts = match self.tasks.get_mut(task_id) {
            Some(t) => {
                t.consecutive_errors += 1;
                t.consecutive_errors
            }
            None => 1,
        };
        let mut delay = backoff(attempts, self.cfg.backoff_base, self.cfg.backoff_max)
            .max(self.poll_delay(task_id));
        if let Some(ra) = e.retry_after() {
            delay = delay.max(ra);
            self.backoff_until = Some(Instant::now() + ra);
        }
        if matches!(
            e,
            McpError::Http {
                status: 401 | 403,
                ..
            }
        ) {
            // Credentials will not fix themselves: back off hard, no retry storm.
            delay = delay.max(Duration::from_secs(60));
            self.backoff_until = Some(Instant::now() + Duration::from_secs(60));
        }
        if matches!(e, McpError::Transport(_)) {
            self.transport_failures += 1;
        }
        if !self.degraded {
            self.degraded = true;
            self.emit(EngineEvent::ServerDegraded {
                server: self.id(),
                reason: e.to_string(),
            })
            .await;
        }
        tracing::debug!(server = %self.spec.id, task = %short_id(task_id), "tasks/get failed: {e}");
        self.schedule.set(task_id, Instant::now() + delay);
        let stdio = matches!(self.spec.endpoint, crate::mcp::Endpoint::Stdio { .. });
        if stdio && self.transport_failures >= 2 && !self.connecting {
            // The child process died: start it again (tasks are server-durable, connections are not).
            self.client = None;
            self.push_rx = None;
            self.transport_failures = 0;
            self.connect_attempt += 1;
            let retry_in = backoff(
                self.connect_attempt,
                self.cfg.backoff_base,
                self.cfg.backoff_max,
            );
            self.emit(EngineEvent::Reconnecting {
                server: self.id(),
                attempt: self.connect_attempt,
                retry_in,
            })
            .await;
            self.start_connect(retry_in);
        }
    }

    async fn expire(&mut self, task_id: &str, message: &str) {
        if let Some(t) = self.tasks.get_mut(task_id) {
            if t.terminal {
                return;
            }
            t.expired = true;
        }
        self.schedule.remove(task_id);
        let (server, id) = (self.spec.id.0.clone(), task_id.to_string());
        self.ledger(move |l| l.mark_expired(&server, &id)).await;
        tracing::info!(server = %self.spec.id, task = %short_id(task_id), "task unknown to the server: {message}");
        self.emit(EngineEvent::TaskExpired {
            server: self.id(),
            task_id: task_id.to_string(),
        })
        .await;
        self.update_listen_ids();
    }

    /// Fold one snapshot into the task, persist it, and report what changed.
    async fn apply(
        &mut self,
        task: Task,
        observed: u64,
        source: UpdateSource,
        latency_ms: Option<u64>,
    ) {
        let task_id = task.task_id.clone();
        let Some(tr) = self.tasks.get_mut(&task_id) else {
            return;
        };
        let pushed = tr.pushed;
        let r = tr.ingest(task.clone(), observed);
        if !r.applied {
            return;
        }
        let findings =
            self.conformance
                .snapshot(&task, source, pushed, r.changed, chrono::Utc::now());
        self.hints(findings).await;
        let era = self.client.as_ref().map(|c| c.era());
        if (r.changed || source != UpdateSource::Poll)
            && let Some(ledger) = &self.ledger
        {
            // Queued, not awaited: later ledger calls still see it (the ledger runs jobs
            // in order), and a burst of snapshots shares one transaction.
            let write = (
                self.spec.id.0.clone(),
                task.clone(),
                ledger_kind(source),
                latency_ms,
            );
            if let Err(e) = ledger.queue_snapshot(write) {
                self.notice(NoticeLevel::Error, format!("ledger write failed: {e:#}"))
                    .await;
            }
        }
        self.emit(EngineEvent::TaskUpdated {
            server: self.id(),
            task: task.clone(),
            source,
            latency_ms,
        })
        .await;
        // The ledger records `input_requested` with the snapshot itself.
        for (key, request) in r.new_inputs {
            self.emit(EngineEvent::InputRequested {
                server: self.id(),
                task_id: task_id.clone(),
                key,
                request,
            })
            .await;
        }
        for key in r.reused_keys {
            let finding = self.conformance.key_reused(&task_id, &key);
            self.hints(finding).await;
            self.notice(
                NoticeLevel::Warn,
                format!(
                    "server bug: input key {key:?} of task {} was reused for a different request",
                    short_id(&task_id)
                ),
            )
            .await;
            self.emit(EngineEvent::InputKeyReused {
                server: self.id(),
                task_id: task_id.clone(),
                key,
            })
            .await;
        }
        if r.became_terminal {
            self.schedule.remove(&task_id);
            self.update_listen_ids();
            let needs_payload = matches!(task.status, TaskStatus::Completed | TaskStatus::Failed)
                && task.result.is_none()
                && task.error.is_none();
            if needs_payload {
                match era {
                    Some(Era::Legacy) => self.fetch_result(&task_id),
                    _ => {
                        self.start_get(&task_id, UpdateSource::Resync);
                    }
                }
            }
        } else if era == Some(Era::Legacy) && task.status == TaskStatus::InputRequired {
            // Legacy servers deliver the input request on the stream of a `tasks/result` call.
            self.fetch_result(&task_id);
        }
    }

    /// Legacy: open `tasks/result` (it blocks until the task ends, and carries input requests meanwhile).
    fn fetch_result(&mut self, task_id: &str) {
        let Some(client) = self.client.clone() else {
            return;
        };
        let Some(tr) = self.tasks.get_mut(task_id) else {
            return;
        };
        if tr.result_in_flight {
            return;
        }
        tr.result_in_flight = true;
        self.stats.request();
        let tx = self.internal_tx.clone();
        let task_id = task_id.to_string();
        tokio::spawn(async move {
            let result = client.task_result(&task_id).await;
            let _ = tx.send(Internal::ResultFetched { task_id, result }).await;
        });
    }

    async fn on_result(
        &mut self,
        task_id: String,
        result: Result<Result<Value, ErrorObject>, McpError>,
    ) {
        if let Some(t) = self.tasks.get_mut(&task_id) {
            t.result_in_flight = false;
        }
        match result {
            Ok(Ok(v)) => {
                let terminal = self.tasks.get(&task_id).is_some_and(|t| t.terminal);
                if !terminal {
                    // The call returned: the task has ended; learn its status now.
                    self.start_get(&task_id, UpdateSource::Poll);
                }
                self.merge_payload(&task_id, Some(v), None).await;
            }
            Ok(Err(err)) => {
                if !self.tasks.get(&task_id).is_some_and(|t| t.terminal) {
                    self.start_get(&task_id, UpdateSource::Poll);
                }
                self.merge_payload(&task_id, None, Some(err)).await;
            }
            Err(McpError::TaskNotFound { message }) => self.expire(&task_id, &message).await,
            Err(e) => tracing::debug!(task = %short_id(&task_id), "tasks/result failed: {e}"),
        }
    }

    /// Attach the payload of a terminal task (legacy `tasks/result`, or the one
    /// `tasks/get` after a terminal `CreateTaskResult`). Before the task is known to be
    /// terminal the payload is kept until the terminal snapshot arrives.
    async fn merge_payload(
        &mut self,
        task_id: &str,
        result: Option<Value>,
        error: Option<ErrorObject>,
    ) {
        if result.is_none() && error.is_none() {
            return;
        }
        let Some(tr) = self.tasks.get_mut(task_id) else {
            return;
        };
        let Some(last) = tr.last.as_mut() else { return };
        if !tr.terminal || last.result.is_some() || last.error.is_some() {
            if !tr.terminal {
                last.result = result.or(last.result.take());
                last.error = error.or(last.error.take());
            }
            return;
        }
        last.result = result;
        last.error = error;
        let task = last.clone();
        let server = self.spec.id.0.clone();
        let snap = task.clone();
        self.ledger(move |l| l.record_snapshot(&server, &snap, EventKind::Resync, None))
            .await;
        self.emit(EngineEvent::TaskUpdated {
            server: self.id(),
            task,
            source: UpdateSource::Resync,
            latency_ms: None,
        })
        .await;
    }

    async fn on_called(
        &mut self,
        call_id: u64,
        tool: String,
        arguments: Value,
        parent: Option<String>,
        result: Result<CallOutcome, McpError>,
    ) {
        let result = match result {
            Ok(CallOutcome::Task(task)) => {
                let task_id = task.task_id.clone();
                let era = self.client.as_ref().map(|c| c.era()).unwrap_or(Era::Modern);
                let declared = self.client.as_ref().is_none_or(|c| c.info().tasks);
                let finding = self.conformance.created(&task_id, era, declared);
                self.hints(finding).await;
                let (server, t, a, tl, p) = (self.spec.id.0.clone(), task.clone(), arguments.clone(), tool.clone(), parent.clone());
                // The id is committed to the ledger before anything reports it.
                self.ledger(move |l| l.record_created(&server, era, &tl, &a, &t, p.as_deref())).await;
                self.emit(EngineEvent::TaskKnown {
                    server: self.id(),
                    task_id: task_id.clone(),
                    tool: Some(tool.clone()),
                    arguments: Some(arguments),
                    recorded_at: chrono::Utc::now(),
                    last: None,
                    expired: false,
                    parent_task: parent,
                })
                .await;
                self.tasks.entry(task_id.clone()).or_default();
                self.seq += 1;
                let seq = self.seq;
                self.apply(task, seq, UpdateSource::Create, None).await;
                self.reschedule(&task_id);
                self.update_listen_ids();
                if self.client.as_ref().is_some_and(|c| c.era() == Era::Legacy) {
                    // Legacy input requests and the final payload arrive on `tasks/result`.
                    self.fetch_result(&task_id);
                }
                CallResult::Task { task_id }
            }
            Ok(CallOutcome::Complete(result)) => CallResult::Plain { result },
            Ok(CallOutcome::InputRequired { .. }) => CallResult::Error {
                message: "the server asked for input before creating a task (multi round-trip input), which taskrail does not answer".into(),
            },
            Err(e) => {
                self.stats.error();
                CallResult::Error { message: e.to_string() }
            }
        };
        self.emit(EngineEvent::CallFinished {
            server: self.id(),
            call_id,
            tool,
            result,
        })
        .await;
    }

    async fn on_answered(
        &mut self,
        task_id: String,
        responses: BTreeMap<String, Value>,
        result: Result<(), McpError>,
    ) {
        let keys: Vec<String> = responses.keys().cloned().collect();
        match result {
            Ok(()) => {
                if let Some(t) = self.tasks.get_mut(&task_id) {
                    t.answered.extend(keys.iter().cloned());
                }
                let server = self.spec.id.0.clone();
                let id = task_id.clone();
                self.ledger(move |l| {
                    for (key, resp) in &responses {
                        let action = resp
                            .get("action")
                            .and_then(Value::as_str)
                            .unwrap_or("accept");
                        l.mark_answered(&server, &id, key, action)?;
                        l.record_event(
                            &server,
                            &id,
                            EventKind::InputSent,
                            None,
                            &json!({ "key": key, "action": action }),
                        )?;
                    }
                    Ok(())
                })
                .await;
                self.emit(EngineEvent::AnswerSent {
                    server: self.id(),
                    task_id: task_id.clone(),
                    keys,
                })
                .await;
                // Learn soon whether the server moved on (it may lag: eventual consistency).
                self.poll_soon(&task_id);
            }
            Err(e) => {
                self.stats.error();
                self.emit(EngineEvent::AnswerFailed {
                    server: self.id(),
                    task_id,
                    keys,
                    error: e.to_string(),
                })
                .await;
            }
        }
    }

    async fn on_cancelled(&mut self, task_id: String, result: Result<Option<Task>, McpError>) {
        if let Some(t) = self.tasks.get_mut(&task_id) {
            t.cancel_in_flight = false;
        }
        match result {
            Ok(snapshot) => {
                if let Some(t) = self.tasks.get_mut(&task_id) {
                    t.cancel_requested = true;
                }
                let (server, id) = (self.spec.id.0.clone(), task_id.clone());
                self.ledger(move |l| {
                    l.record_event(&server, &id, EventKind::CancelAcked, None, &json!({}))
                })
                .await;
                self.emit(EngineEvent::CancelSent {
                    server: self.id(),
                    task_id: task_id.clone(),
                })
                .await;
                if let Some(task) = snapshot.filter(|t| t.task_id == task_id) {
                    self.seq += 1;
                    let seq = self.seq;
                    self.apply(task, seq, UpdateSource::Poll, None).await;
                }
                // Keep following until the task is terminal: it may complete anyway.
                self.poll_soon(&task_id);
            }
            Err(e) => {
                self.stats.error();
                let error = match e {
                    McpError::TaskNotFound { .. } => {
                        "nothing to cancel: the task is unknown to the server or already finished"
                            .to_string()
                    }
                    other => other.to_string(),
                };
                self.emit(EngineEvent::CancelFailed {
                    server: self.id(),
                    task_id: task_id.clone(),
                    error,
                })
                .await;
                self.start_get(&task_id, UpdateSource::Poll);
            }
        }
    }

    async fn on_push(&mut self, push: ServerPush) {
        match push {
            ServerPush::Task(task) => self.pushed(task).await,
            ServerPush::Progress {
                task_id,
                progress,
                total,
                ..
            } => {
                if self.tasks.contains_key(&task_id) {
                    self.emit(EngineEvent::Progress {
                        server: self.id(),
                        task_id,
                        progress,
                        total,
                    })
                    .await;
                }
            }
            ServerPush::InputRequest { task_id, .. } => {
                // Legacy: the request is merged into the task's next snapshot; fetch it now.
                if self.tasks.contains_key(&task_id) {
                    self.start_get(&task_id, UpdateSource::Poll);
                }
            }
            ServerPush::ToolsChanged => {}
        }
    }

    async fn pushed(&mut self, task: Task) {
        // Notifications for tasks we do not follow are ignored.
        if !self.tasks.contains_key(&task.task_id) {
            return;
        }
        self.seq += 1;
        let seq = self.seq;
        let id = task.task_id.clone();
        if self.tasks.get(&id).is_some_and(|t| t.terminal) {
            self.check_terminal(&task, UpdateSource::Push).await;
            self.merge_payload(&id, task.result, task.error).await;
            return;
        }
        self.apply(task, seq, UpdateSource::Push, None).await;
        self.reschedule(&id);
    }

    async fn on_listen(&mut self, msg: ListenMsg) {
        match msg {
            ListenMsg::Subscribed {
                requested,
                accepted,
                full_resync,
            } => {
                let accepted: BTreeSet<String> = match accepted {
                    Some(a) => a.into_iter().collect(),
                    None => BTreeSet::new(),
                };
                let newly: Vec<String> = if full_resync {
                    requested.iter().cloned().collect()
                } else {
                    requested.difference(&self.subscribed).cloned().collect()
                };
                for (id, t) in self.tasks.iter_mut() {
                    t.pushed = accepted.contains(id);
                }
                self.subscribed = requested;
                if !self.push_on {
                    self.push_on = true;
                    self.emit(EngineEvent::PushChanged {
                        server: self.id(),
                        push: true,
                    })
                    .await;
                }
                // Nothing is replayed: fetch each newly subscribed task once.
                for id in newly {
                    if self
                        .tasks
                        .get(&id)
                        .is_some_and(|t| !t.terminal && !t.expired)
                    {
                        self.start_get(&id, UpdateSource::Resync);
                    }
                }
                let ids: Vec<String> = self.followed_ids().into_iter().collect();
                for id in ids {
                    self.reschedule(&id);
                }
            }
            ListenMsg::Pushed(task) => self.pushed(task).await,
            ListenMsg::Lost {
                error,
                attempt,
                retry_in,
            } => {
                tracing::info!(server = %self.spec.id, "push stream lost: {error}");
                self.subscribed.clear();
                for t in self.tasks.values_mut() {
                    t.pushed = false;
                }
                let now = Instant::now();
                let ids: Vec<String> = self.followed_ids().into_iter().collect();
                for id in ids {
                    let due = now + self.poll_delay(&id);
                    self.schedule.set_if_earlier(&id, due);
                }
                if self.push_on {
                    self.push_on = false;
                    self.emit(EngineEvent::PushChanged {
                        server: self.id(),
                        push: false,
                    })
                    .await;
                }
                self.emit(EngineEvent::Reconnecting {
                    server: self.id(),
                    attempt,
                    retry_in,
                })
                .await;
            }
            ListenMsg::Unavailable(why) => {
                tracing::info!(server = %self.spec.id, "no push: {why}");
                for t in self.tasks.values_mut() {
                    t.pushed = false;
                }
                if self.push_on {
                    self.push_on = false;
                }
                self.emit(EngineEvent::PushChanged {
                    server: self.id(),
                    push: false,
                })
                .await;
                let ids: Vec<String> = self.followed_ids().into_iter().collect();
                for id in ids {
                    let due = Instant::now() + self.poll_delay(&id);
                    self.schedule.set_if_earlier(&id, due);
                }
            }
        }
    }

    /// A snapshot of a task already terminal must repeat that terminal state.
    async fn check_terminal(&mut self, task: &Task, source: UpdateSource) {
        let first = self
            .tasks
            .get(&task.task_id)
            .and_then(|t| t.last.as_ref())
            .map(|t| t.status.clone());
        if let Some(first) = first {
            let finding = self.conformance.after_terminal(&first, task, source);
            self.hints(finding).await;
        }
    }

    async fn emit_stats(&mut self) {
        if let Some(e) = self.ledger.as_ref().and_then(|l| l.take_write_failure()) {
            self.notice(NoticeLevel::Error, format!("ledger write failed: {e}"))
                .await;
        }
        if let Some((total, rate, errors)) = self.stats.sample() {
            self.emit(EngineEvent::Stats {
                server: self.id(),
                requests_total: total,
                requests_per_sec: rate,
                errors_total: errors,
            })
            .await;
        }
    }
}

/// `tools/call`, sent again (at most twice) when the server refuses it with 429 or 503:
/// it was not processed, and `Retry-After` says when to come back.
async fn call_with_retry(
    client: &McpClient,
    tool: &str,
    arguments: &Value,
) -> Result<CallOutcome, McpError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match client.call_tool(tool, arguments.clone(), None).await {
            Err(McpError::Http {
                status: 429 | 503,
                retry_after,
                ..
            }) if attempt < 3 => {
                let wait = retry_after
                    .unwrap_or(Duration::from_secs(1))
                    .min(Duration::from_secs(30));
                tokio::time::sleep(wait).await;
            }
            other => return other,
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
