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
use crate::ledger::{EventKind, LedgerHandle};
use crate::mcp::{
    CallOutcome, Era, ErrorObject, McpClient, McpError, ServerPush, Task, TaskStatus, ToolInfo,
};

mod commands;
mod foreground;
mod ingest;
mod polling;

type Connected = Result<(Arc<McpClient>, mpsc::Receiver<ServerPush>), McpError>;

/// Results of spawned network calls.
pub(super) enum Internal {
    Connected(Connected),
    Polled {
        task_id: TaskId,
        observed: u64,
        result: Result<Task, McpError>,
        latency_ms: u64,
        source: UpdateSource,
    },
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
        result: Result<(), McpError>,
    },
    Cancelled {
        task_id: TaskId,
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
    tasks: HashMap<TaskId, TrackedTask>,
    schedule: Schedule,
    seq: u64,
    in_flight: usize,
    internal_tx: mpsc::Sender<Internal>,
    internal_rx: mpsc::Receiver<Internal>,
    listen_ids: watch::Sender<BTreeSet<TaskId>>,
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
    /// Input requests outside any task, waiting for the person.
    foreground: super::foreground::Foreground,
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
            foreground: Default::default(),
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
                _ = sleep_opt(self.foreground.next_deadline()) => self.expire_foreground().await,
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
        let server = self.spec.id.clone();
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
        tr.terminal = rec.terminal
            || rec
                .snapshot
                .as_ref()
                .is_some_and(|s| s.status.is_terminal());
        let follow = !tr.terminal && !tr.expired;
        // A finished task needs no snapshot here (it is never polled or merged again):
        // the board keeps the only copy.
        if follow {
            tr.last = rec.snapshot.clone();
        }
        self.emit(EngineEvent::TaskKnown {
            server: self.id(),
            task_id: rec.task_id.clone(),
            tool: rec.tool,
            arguments: rec.arguments,
            recorded_at: rec.recorded_at,
            last: rec.snapshot,
            expired: rec.expired,
            parent_task: rec.parent_task,
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
                self.foreground_reconnected().await;
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
                let ids: Vec<TaskId> = self.followed_ids().into_iter().collect();
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

    fn followed_ids(&self) -> BTreeSet<TaskId> {
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
