//! The engine: one actor per server that follows tasks push-first with a paced polling
//! fallback, answers input and cancels on command, and reports owned `EngineEvent`s.
//!
//! Must not import ratatui or crossterm.

mod actor;
pub mod api;
pub mod conformance;
pub(crate) mod feed;
mod foreground;
pub mod listen;
mod retry;
mod router;
pub mod schedule;
pub mod stats;
pub mod tracker;

/// The wire hub, for the dashboard's wire view (see `mcp::wire`).
pub use crate::mcp::wire::WireHub;
pub use api::*;

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

use crate::ledger::LedgerHandle;
use crate::mcp::{ConnectOptions, Endpoint, McpClient, McpError, ServerPush};

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
    /// How the actor opens (and reopens) its connection; `None`: [`McpClient::connect`].
    pub connector: Option<Connector>,
    /// This process cannot reach the server (why, in words): its actor never connects,
    /// mirrors what the ledger records of its tasks, and leaves answers and cancels in
    /// the outbox for the process that follows each task.
    pub unreachable: Option<String>,
    /// Connect only once there is a live task to follow or a command for the server (a
    /// server met in the ledger's history: its finished tasks need no connection).
    pub lazy: bool,
}

/// A connection and the pushes of its server, as [`McpClient::connect`] returns them.
pub type Connection = (Arc<McpClient>, mpsc::Receiver<ServerPush>);

/// Opens the connection of one server's actor: a proxy gives the engine the connection
/// it forwards its host's requests through, so both share one session (or child process).
#[derive(Clone)]
pub struct Connector(pub Arc<ConnectFn>);

/// The function behind a [`Connector`].
pub type ConnectFn = dyn Fn(
        Endpoint,
        ConnectOptions,
    ) -> futures::future::BoxFuture<'static, Result<Connection, McpError>>
    + Send
    + Sync;

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Connector")
    }
}

impl ServerSpec {
    /// An ad-hoc server named by its endpoint.
    pub fn new(endpoint: Endpoint, options: ConnectOptions) -> Self {
        Self {
            id: ServerId::ad_hoc(&endpoint.identity()),
            endpoint,
            options,
            poll_floor: None,
            read_only: false,
            connector: None,
            unreachable: None,
            lazy: false,
        }
    }

    /// A server first seen in the ledger that this process cannot reach: its tasks are
    /// shown as the ledger has them, and followed by whichever process holds their lease.
    pub fn unreachable(id: ServerId) -> Self {
        let why = if id.as_str().starts_with("stdio:") {
            "a stdio server: its tasks are followed by the process that started it"
        } else {
            "not a server this process can connect to (not in its config)"
        };
        let endpoint =
            Endpoint::parse(id.as_str()).unwrap_or(Endpoint::Http { url: String::new() });
        Self {
            id,
            unreachable: Some(why.to_string()),
            ..Self::new(endpoint, ConnectOptions::default())
        }
    }

    /// The one read-only rule: `what` (call, answer, cancel) is refused on a read-only
    /// server, before anything is sent to it.
    pub fn refuse(&self, what: &str) -> Option<Failure> {
        self.read_only
            .then(|| Failure::Refused(format!("{what} refused: {} is read-only", self.id)))
    }
}

/// Turns a server id found in the ledger into a spec the engine can connect to (`None`:
/// not reachable from here, e.g. an ad-hoc stdio server of another process).
#[derive(Clone)]
pub struct Resolver(pub Arc<ResolveFn>);

/// The function behind a [`Resolver`].
pub type ResolveFn = dyn Fn(&ServerId) -> Option<ServerSpec> + Send + Sync;

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Resolver")
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
    /// While push is on, one server's safety polls together come about once per
    /// `safety_spacing`: a pushed task's period is the larger of `safety_poll` and this
    /// times the tasks subscribed (60 s up to 60 tasks; 1,000 tasks: ~17 min each).
    pub safety_spacing: Duration,
    /// `tasks/get` requests in flight per server.
    pub max_in_flight: usize,
    /// Reconnects, push-stream restarts and failed polls wait this long.
    pub backoff: crate::mcp::backoff::Backoff,
    /// Follow the ledger's unfinished tasks of each server at start.
    pub resume: bool,
    /// With `resume`: also report finished tasks (for the board's history).
    pub history: bool,
    /// Follow every task another process records in the ledger, on any server `resolve`
    /// can reach (the dashboard); otherwise only tasks this engine was asked to follow.
    pub adopt: bool,
    /// Finds the spec of a server first seen in the ledger (with `adopt`).
    pub resolve: Option<Resolver>,
    /// Never open push streams (poll only).
    pub no_push: bool,
    /// Capacity of the event channel.
    pub event_capacity: usize,
    /// How often the shared ledger is checked for other processes' writes.
    pub feed_interval: Duration,
    /// How long a lease on a followed task lasts without renewal.
    pub lease_ttl: Duration,
    /// How long a foreground input request waits for the person before the engine
    /// answers it on their behalf (`cancel`, or a refusal for sampling).
    pub foreground_wait: Duration,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            default_poll: Duration::from_secs(2),
            poll_floor: Duration::from_millis(250),
            safety_poll: Duration::from_secs(60),
            safety_spacing: Duration::from_secs(1),
            max_in_flight: 16,
            backoff: crate::mcp::backoff::Backoff {
                base: Duration::from_millis(500),
                max: Duration::from_secs(30),
            },
            resume: false,
            history: false,
            adopt: false,
            resolve: None,
            no_push: false,
            event_capacity: 4096,
            feed_interval: Duration::from_millis(250),
            lease_ttl: Duration::from_secs(10),
            foreground_wait: Duration::from_secs(600),
        }
    }
}

impl EngineConfig {
    /// When a pushed task's next safety poll comes, with `subscribed` tasks on its
    /// server's subscription: drawn between these two (never sooner than the task's own
    /// interval). Spread from half the period to 1.1 times it, so the safety polls of
    /// tasks subscribed together do not come back together; the period is `safety_poll`,
    /// longer when so many tasks are subscribed that their safety polls together would
    /// come more often than one per `safety_spacing`.
    pub fn safety_poll_range(&self, subscribed: usize) -> (Duration, Duration) {
        let subscribed = u32::try_from(subscribed).unwrap_or(u32::MAX);
        let period = self
            .safety_poll
            .max(self.safety_spacing.saturating_mul(subscribed));
        (period / 2, period.mul_f64(1.1))
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

/// Start one actor per server, a router in front of them and, with a ledger, the feed of
/// other processes' writes. The engine stops on `EngineCommand::Shutdown` or when every
/// handle is dropped; it then gives up the leases it held.
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
    let (cmd_tx, cmd_rx) = mpsc::channel::<EngineCommand>(1024);
    let router = router::Router::new(cfg, ledger, ev_tx);
    let join = tokio::spawn(router.run(servers, cmd_rx));
    (EngineHandle { tx: cmd_tx }, ev_rx, join)
}
