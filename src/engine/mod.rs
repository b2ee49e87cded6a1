//! The engine: one actor per server that follows tasks push-first with a paced polling
//! fallback, answers input and cancels on command, and reports owned `EngineEvent`s.
//!
//! Must not import ratatui or crossterm.

mod actor;
pub mod api;
pub mod conformance;
pub mod listen;
mod retry;
pub mod schedule;
pub mod stats;
pub mod tracker;

pub use api::*;

use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::mpsc;

use crate::ledger::LedgerHandle;
use crate::mcp::{ConnectOptions, Endpoint};

/// One server to follow.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    pub id: ServerId,
    pub endpoint: Endpoint,
    pub options: ConnectOptions,
    /// Per-server poll floor (overrides the engine's).
    pub poll_floor: Option<Duration>,
    /// Refuse cancel, answer and call.
    pub read_only: bool,
}

impl ServerSpec {
    /// An ad-hoc server named by its endpoint.
    pub fn new(endpoint: Endpoint, options: ConnectOptions) -> Self {
        Self {
            id: ServerId(endpoint.identity()),
            endpoint,
            options,
            poll_floor: None,
            read_only: false,
        }
    }
}

/// Engine-wide settings.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Poll period when the server gives no `pollIntervalMs`.
    pub default_poll: Duration,
    /// Never poll one task faster than this.
    pub poll_floor: Duration,
    /// Slow safety poll for tasks an acknowledged subscription pushes; also the longest
    /// poll interval of any task (a larger `pollIntervalMs` counts as this).
    pub safety_poll: Duration,
    /// `tasks/get` requests in flight per server.
    pub max_in_flight: usize,
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// Follow the ledger's unfinished tasks of each server at start.
    pub resume: bool,
    /// With `resume`: also report finished tasks (for the board's history).
    pub history: bool,
    /// Never open push streams (poll only).
    pub no_push: bool,
    /// Capacity of the event channel.
    pub event_capacity: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            default_poll: Duration::from_secs(2),
            poll_floor: Duration::from_millis(250),
            safety_poll: Duration::from_secs(60),
            max_in_flight: 16,
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
            resume: false,
            history: false,
            no_push: false,
            event_capacity: 4096,
        }
    }
}

/// Sends commands to the running engine.
#[derive(Clone)]
pub struct EngineHandle {
    tx: mpsc::Sender<EngineCommand>,
}

impl EngineHandle {
    pub async fn send(&self, cmd: EngineCommand) {
        let _ = self.tx.send(cmd).await;
    }

    pub fn sender(&self) -> mpsc::Sender<EngineCommand> {
        self.tx.clone()
    }
}

/// Start one actor per server and a router in front of them. The engine stops on
/// `EngineCommand::Shutdown` or when every handle is dropped.
pub fn spawn_engine(
    servers: Vec<ServerSpec>,
    ledger: Option<LedgerHandle>,
    cfg: EngineConfig,
) -> (
    EngineHandle,
    mpsc::Receiver<EngineEvent>,
    tokio::task::JoinHandle<()>,
) {
    let (ev_tx, ev_rx) = mpsc::channel(cfg.event_capacity);
    let (cmd_tx, mut cmd_rx) = mpsc::channel::<EngineCommand>(1024);
    let mut actors: HashMap<ServerId, mpsc::Sender<EngineCommand>> = HashMap::new();
    let mut joins = Vec::new();
    for spec in servers {
        let (tx, rx) = mpsc::channel(1024);
        actors.insert(spec.id.clone(), tx);
        let actor = actor::ServerActor::new(spec, cfg.clone(), ledger.clone(), ev_tx.clone());
        joins.push(tokio::spawn(actor.run(rx)));
    }
    let router = tokio::spawn(async move {
        while let Some(cmd) = cmd_rx.recv().await {
            let server = match &cmd {
                EngineCommand::Track { server, .. }
                | EngineCommand::CallTool { server, .. }
                | EngineCommand::Answer { server, .. }
                | EngineCommand::Cancel { server, .. }
                | EngineCommand::Forget { server, .. }
                | EngineCommand::Refresh { server, .. }
                | EngineCommand::ListTools { server } => server.clone(),
                EngineCommand::Shutdown => break,
            };
            match actors.get(&server) {
                Some(tx) => {
                    let _ = tx.send(cmd).await;
                }
                None => {
                    let text = format!("unknown server {server}");
                    let _ = ev_tx
                        .send(EngineEvent::Notice {
                            server: None,
                            level: NoticeLevel::Error,
                            text,
                        })
                        .await;
                }
            }
        }
        for tx in actors.values() {
            let _ = tx.send(EngineCommand::Shutdown).await;
        }
        drop(actors);
        for j in joins {
            let _ = j.await;
        }
    });
    (EngineHandle { tx: cmd_tx }, ev_rx, router)
}
