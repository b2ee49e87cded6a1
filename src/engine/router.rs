//! The router in front of the server actors: routes commands by server, hands the shared
//! ledger's news (tasks other processes recorded, outbox requests and outcomes) to the
//! actor of each server — starting an actor for a server first seen in the ledger when the
//! engine adopts every task (one that only mirrors the ledger when this process cannot
//! reach the server) — and gives the leases up when the engine stops.
//!
//! Must not touch task state.

use std::collections::HashMap;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::actor::{ActorMsg, ServerActor};
use super::api::{EngineCommand, EngineEvent, NoticeLevel, ServerId};
use super::{EngineConfig, ServerSpec};
use crate::ledger::{Changes, LedgerHandle, Owner};

/// How often the ledger's reachability is looked at (a read of two counters, no I/O).
const LEDGER_HEALTH_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

pub(super) struct Router {
    cfg: EngineConfig,
    ledger: Option<LedgerHandle>,
    events: mpsc::Sender<EngineEvent>,
    owner: Owner,
    actors: HashMap<ServerId, mpsc::Sender<ActorMsg>>,
    joins: Vec<JoinHandle<()>>,
}

impl Router {
    pub(super) fn new(
        cfg: EngineConfig,
        ledger: Option<LedgerHandle>,
        events: mpsc::Sender<EngineEvent>,
    ) -> Router {
        Router {
            cfg,
            ledger,
            events,
            owner: Owner::new(),
            actors: HashMap::new(),
            joins: Vec::new(),
        }
    }

    fn start_actor(&mut self, spec: ServerSpec) {
        let (tx, rx) = mpsc::channel(1024);
        self.actors.insert(spec.id.clone(), tx);
        let actor = ServerActor::new(
            spec,
            self.cfg.clone(),
            self.ledger.clone(),
            self.events.clone(),
            self.owner.clone(),
        );
        self.joins.push(tokio::spawn(actor.run(rx)));
    }

    /// The actor of `server`, started on first sight when the engine adopts ledger tasks.
    fn actor_for(&mut self, server: &ServerId) -> Option<mpsc::Sender<ActorMsg>> {
        if let Some(tx) = self.actors.get(server) {
            return Some(tx.clone());
        }
        if !self.cfg.adopt {
            return None;
        }
        self.start_actor(self.spec_of(server));
        self.actors.get(server).cloned()
    }

    /// The spec of a server first seen in the ledger: the resolver's when it can reach
    /// it, else one that only mirrors the ledger (every task is shown, whoever follows it).
    fn spec_of(&self, server: &ServerId) -> ServerSpec {
        match self.cfg.resolve.as_ref().and_then(|r| (r.0)(server)) {
            Some(spec) if spec.id == *server => ServerSpec { lazy: true, ..spec },
            _ => ServerSpec::unreachable(server.clone()),
        }
    }

    pub(super) async fn run(
        mut self,
        servers: Vec<ServerSpec>,
        mut commands: mpsc::Receiver<EngineCommand>,
    ) {
        // The feed starts from "now", taken before any actor reads the ledger to resume,
        // so a write in between is seen twice rather than never (folding in is idempotent).
        let (feed_tx, mut feed_rx) = mpsc::channel::<Changes>(16);
        let mut feed = None;
        if let Some(ledger) = self.ledger.clone() {
            match ledger.feed_cursor().await {
                Ok(cursor) => {
                    feed = Some(tokio::spawn(super::feed::run(
                        ledger,
                        self.owner.clone(),
                        cursor,
                        self.cfg.feed_interval,
                        self.cfg.lease_ttl,
                        feed_tx,
                    )));
                }
                Err(e) => tracing::warn!("ledger: no feed of other processes: {e:#}"),
            }
        }
        if self.cfg.adopt && self.cfg.resume {
            self.start_ledger_servers(&servers).await;
        }
        for spec in servers {
            if !self.actors.contains_key(&spec.id) {
                self.start_actor(spec);
            }
        }
        let mut health = tokio::time::interval(LEDGER_HEALTH_EVERY);
        health.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut offline = None;
        loop {
            tokio::select! {
                cmd = commands.recv() => match cmd {
                    None | Some(EngineCommand::Shutdown) => break,
                    Some(cmd) => self.route(cmd).await,
                },
                Some(changes) = feed_rx.recv() => self.news(changes).await,
                _ = health.tick(), if self.ledger.is_some() => {
                    let now = self.ledger.as_ref().and_then(|l| l.offline());
                    if now != offline {
                        offline = now;
                        let _ = self.events.send(EngineEvent::LedgerOffline { waiting: now }).await;
                    }
                }
            }
        }
        if let Some(f) = feed {
            f.abort();
        }
        for tx in self.actors.values() {
            let _ = tx.send(ActorMsg::Command(EngineCommand::Shutdown)).await;
        }
        self.actors.clear();
        for j in std::mem::take(&mut self.joins) {
            let _ = j.await;
        }
        if let Some(ledger) = &self.ledger
            && let Err(e) = ledger.release_all(&self.owner).await
        {
            tracing::warn!("ledger: releasing leases failed: {e:#}");
        }
    }

    /// With `adopt`: an actor for every server the ledger has tasks of (unfinished ones
    /// only, without `history`), besides the given ones; one that only mirrors the ledger
    /// for a server this process cannot reach.
    async fn start_ledger_servers(&mut self, given: &[ServerSpec]) {
        let Some(ledger) = &self.ledger else { return };
        let stored = if self.cfg.history {
            ledger.servers().await
        } else {
            ledger.servers_with_open_tasks().await
        };
        let stored = match stored {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("ledger: listing servers failed: {e:#}");
                return;
            }
        };
        for server in stored {
            if given.iter().any(|s| s.id == server) || self.actors.contains_key(&server) {
                continue;
            }
            let spec = self.spec_of(&server);
            self.start_actor(spec);
        }
    }

    async fn route(&mut self, cmd: EngineCommand) {
        let server = match &cmd {
            EngineCommand::Track { server, .. }
            | EngineCommand::CallTool { server, .. }
            | EngineCommand::RecordCreated { server, .. }
            | EngineCommand::LocalUpdate { server, .. }
            | EngineCommand::LocalDone { server, .. }
            | EngineCommand::Answer { server, .. }
            | EngineCommand::Cancel { server, .. }
            | EngineCommand::Forget { server, .. }
            | EngineCommand::Refresh { server, .. }
            | EngineCommand::SignIn { server }
            | EngineCommand::SignInRedirect { server, .. }
            | EngineCommand::ListTools { server }
            | EngineCommand::AnswerForeground { server, .. } => server.clone(),
            EngineCommand::Shutdown => return,
        };
        match self.actors.get(&server) {
            Some(tx) => {
                let _ = tx.send(ActorMsg::Command(cmd)).await;
            }
            None => {
                let text = format!("unknown server {server}");
                let _ = self
                    .events
                    .send(EngineEvent::Notice {
                        server: None,
                        level: NoticeLevel::Error,
                        text,
                    })
                    .await;
            }
        }
    }

    async fn news(&mut self, changes: Changes) {
        for rec in changes.tasks {
            if let Some(tx) = self.actor_for(&rec.server.clone()) {
                let _ = tx.send(ActorMsg::Ledger(Box::new(rec))).await;
            }
        }
        for req in changes.requests {
            if let Some(tx) = self.actors.get(&req.server) {
                let _ = tx.send(ActorMsg::Request(req)).await;
            }
        }
        for outcome in changes.outcomes {
            if let Some(tx) = self.actors.get(&outcome.server) {
                let _ = tx.send(ActorMsg::Outcome(outcome)).await;
            }
        }
        // Pruned by another process: no actor follows them any more, nothing shows them.
        for (server, task_id) in changes.removed {
            if let Some(tx) = self.actors.get(&server) {
                let forget = EngineCommand::Forget {
                    server: server.clone(),
                    task_id: task_id.clone(),
                };
                let _ = tx.send(ActorMsg::Command(forget)).await;
            }
            let _ = self
                .events
                .send(EngineEvent::TaskRemoved { server, task_id })
                .await;
        }
    }
}
