//! The embedded demo MCP tasks server: options, start/stop, and the shared state every
//! request handler sees. It speaks the modern protocol with the tasks extension and the
//! legacy experimental core tasks, and can inject faults. It never uses the client code.

mod catalog;
mod forms;
mod http;
mod legacy;
mod legacy_wire;
mod modern;
mod session;
mod sign_in;
pub mod stats;
mod store;
mod tools;
mod wire;

use std::collections::HashSet;
use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;
use axum::serve::ListenerExt as _;
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use catalog::ToolCall;
use store::{Outcome, Scope, Store};
use tools::Work;

/// Command-line options of `taskrail demo` / `taskrail serve-demo`.
#[derive(clap::Args, Debug, Clone)]
pub struct DemoOptions {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Speak only the legacy 2025-11-25 protocol (initialize + session, experimental core tasks).
    #[arg(long)]
    pub legacy: bool,
    /// Close every listen/GET SSE stream this often.
    #[arg(long, value_name = "SECS")]
    pub drop_streams_every: Option<f64>,
    /// Answer this fraction of POSTs with 503 + Retry-After (never initialize/server/discover).
    #[arg(long, value_name = "P", default_value_t = 0.0)]
    pub http_503_rate: f64,
    /// Acknowledge tasks/update and tasks/cancel at once but apply them this much later.
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub ack_delay: u64,
    /// Now and then answer tasks/get with an older snapshot, even after a terminal one.
    #[arg(long)]
    pub stale_snapshots: bool,
    /// Refuse subscriptions/listen with -32601 (HTTP 404), like FastMCP.
    #[arg(long)]
    pub no_push: bool,
    /// Suggested poll interval put on every task.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub poll_interval: u64,
    /// Task time-to-live; tasks are purged after createdAt + ttl.
    #[arg(long, value_name = "MS", default_value_t = 600_000)]
    pub ttl: u64,
    /// Seed for the fault-injection randomness (reproducible chaos).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Multiply every simulated work duration (0.05 = 20x faster; tests use this).
    #[arg(long, value_name = "F", default_value_t = 1.0)]
    pub time_scale: f64,
}

impl Default for DemoOptions {
    fn default() -> Self {
        DemoOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            legacy: false,
            drop_streams_every: None,
            http_503_rate: 0.0,
            ack_delay: 0,
            stale_snapshots: false,
            no_push: false,
            poll_interval: 1000,
            ttl: 600_000,
            seed: None,
            time_scale: 1.0,
        }
    }
}

impl DemoOptions {
    fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            (0.0..=1.0).contains(&self.http_503_rate),
            "--http-503-rate must be between 0 and 1"
        );
        anyhow::ensure!(
            self.time_scale.is_finite() && self.time_scale >= 0.0,
            "--time-scale must be a non-negative number"
        );
        if let Some(secs) = self.drop_streams_every {
            anyhow::ensure!(
                secs.is_finite() && secs > 0.0,
                "--drop-streams-every must be a positive number of seconds"
            );
        }
        anyhow::ensure!(self.ttl > 0, "--ttl must be positive");
        Ok(())
    }
}

/// State shared by every handler of one server.
pub(crate) struct App {
    opts: DemoOptions,
    store: Arc<Store>,
    stats: stats::Stats,
    sessions: session::Sessions,
    rng: Mutex<fastrand::Rng>,
    /// Ticks on every `--drop-streams-every` period; open streams end on a tick.
    drops: watch::Sender<u64>,
    shutdown: CancellationToken,
    /// Tasks whose replies go out as SSE (see `ToolCall::streams_reply`).
    sse_tasks: Mutex<HashSet<String>>,
    /// The out-of-band pages of `sign_in`.
    sign_ins: Arc<sign_in::SignIns>,
}

impl App {
    /// A seeded coin flip that lands `true` with probability `p`.
    fn coin(&self, p: f64) -> bool {
        p > 0.0 && self.rng.lock().unwrap_or_else(|e| e.into_inner()).f64() < p
    }

    /// Resolves when a long-lived stream opened now must end (drop tick or shutdown).
    fn stream_end(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut drops = self.drops.subscribe();
        let shutdown = self.shutdown.clone();
        async move {
            tokio::select! {
                _ = drops.changed() => {}
                _ = shutdown.cancelled() => {}
            }
        }
    }

    fn streams_reply(&self, task_id: &str) -> bool {
        self.sse_tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(task_id)
    }

    /// Register a task (durable before this returns); the caller then starts its work.
    fn create_task(
        &self,
        scope: Scope,
        ttl_ms: u64,
        call: &ToolCall,
    ) -> (String, Value, CancellationToken) {
        let created = self.store.create(
            scope,
            ttl_ms,
            self.opts.poll_interval,
            &call.opening_message(),
        );
        self.stats.task_created();
        if call.streams_reply() {
            self.sse_tasks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(created.0.clone());
        }
        tracing::debug!(task = %short(&created.0), "task created");
        created
    }

    /// Run a tool behind a task until it ends.
    fn spawn_work(&self, task_id: String, cancel: CancellationToken, call: ToolCall) {
        let store = self.store.clone();
        let scale = self.opts.time_scale;
        let sign_ins = self.sign_ins.clone();
        tokio::spawn(async move {
            let mut work = Work::for_task(store.clone(), task_id.clone(), cancel, scale)
                .with_sign_ins(sign_ins);
            let outcome = tools::run(call, &mut work).await;
            let label = match &outcome {
                Outcome::Result(_) => "result",
                Outcome::Error(_) => "error",
                Outcome::Cancelled(_) => "cancelled",
            };
            let applied = store.finish(&task_id, outcome);
            tracing::debug!(task = %short(&task_id), label, applied, "task work ended");
        });
    }
}

/// A task id shortened for logs (ids are bearer secrets).
fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// A running demo server.
pub struct DemoServer {
    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    pub addr: SocketAddr,
    app: Arc<App>,
    server: JoinHandle<()>,
}

impl DemoServer {
    /// Bind `opts.listen` and start serving in the background.
    pub async fn start(opts: DemoOptions) -> anyhow::Result<DemoServer> {
        opts.validate()?;
        let listener = tokio::net::TcpListener::bind(opts.listen)
            .await
            .with_context(|| format!("binding {}", opts.listen))?;
        let addr = listener.local_addr().context("reading the bound address")?;
        let rng = match opts.seed {
            Some(seed) => fastrand::Rng::with_seed(seed),
            None => fastrand::Rng::new(),
        };
        let app = Arc::new(App {
            store: Arc::new(Store::new()),
            stats: stats::Stats::new(),
            sessions: session::Sessions::default(),
            rng: Mutex::new(rng),
            drops: watch::channel(0).0,
            shutdown: CancellationToken::new(),
            sse_tasks: Mutex::new(HashSet::new()),
            sign_ins: Arc::new(sign_in::SignIns::default()),
            opts,
        });
        app.sign_ins.set_base(format!("http://{addr}"));
        spawn_housekeeping(&app);
        let router = http::router(app.clone());
        let shutdown = app.shutdown.clone();
        let server = tokio::spawn(async move {
            // Notifications are small writes in bursts: without TCP_NODELAY each one after
            // the first waits for the client's delayed ACK (40 ms on Linux).
            let listener = listener.tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
            let serve = axum::serve(listener, router)
                .with_graceful_shutdown(async move { shutdown.cancelled().await });
            if let Err(err) = serve.await {
                tracing::error!(%err, "demo server stopped with an error");
            }
        });
        let url = format!("http://{addr}/mcp");
        tracing::info!(%url, legacy = app.opts.legacy, "demo server listening");
        Ok(DemoServer {
            url,
            addr,
            app,
            server,
        })
    }

    /// The same JSON as `GET /stats`.
    pub fn stats(&self) -> Value {
        self.app.stats.to_json()
    }

    /// When the server started, and every task notification it sent since (relative times).
    pub fn push_log(&self) -> (std::time::Instant, Vec<stats::PushRecord>) {
        (self.app.stats.started(), self.app.stats.pushes())
    }

    /// Stop serving: end every stream and every task's work, then wait (briefly) for the
    /// listener to close.
    pub async fn shutdown(self) {
        self.app.shutdown.cancel();
        self.app.store.shutdown();
        let mut server = self.server;
        if tokio::time::timeout(Duration::from_secs(3), &mut server)
            .await
            .is_err()
        {
            tracing::warn!("demo server did not stop in time; aborting it");
            server.abort();
        }
    }
}

/// TTL sweeps and the stream-drop ticker.
fn spawn_housekeeping(app: &Arc<App>) {
    let sweeper = app.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    let purged = sweeper.store.sweep(chrono::Utc::now());
                    if purged > 0 {
                        tracing::debug!(purged, "expired tasks purged");
                    }
                }
                _ = sweeper.shutdown.cancelled() => break,
            }
        }
    });
    if let Some(secs) = app.opts.drop_streams_every {
        let dropper = app.clone();
        tokio::spawn(async move {
            let period = Duration::from_secs_f64(secs);
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
            loop {
                tokio::select! {
                    _ = tick.tick() => {
                        dropper.drops.send_modify(|n| *n += 1);
                        tracing::debug!("dropping open streams");
                    }
                    _ = dropper.shutdown.cancelled() => break,
                }
            }
        });
    }
}

/// `taskrail serve-demo`: start, print the URL alone on the first stdout line, serve until
/// Ctrl-C or SIGTERM.
pub async fn run_serve_demo(opts: DemoOptions) -> anyhow::Result<()> {
    let server = DemoServer::start(opts).await?;
    let written = {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", server.url).and_then(|()| out.flush())
    };
    match written {
        // Nobody reads the URL (stdout closed): nothing to serve for.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            server.shutdown().await;
            return Ok(());
        }
        other => other.context("writing the URL to stdout")?,
    }
    wait_for_signal().await?;
    tracing::info!("demo server shutting down");
    server.shutdown().await;
    Ok(())
}

#[cfg(unix)]
async fn wait_for_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r.context("waiting for Ctrl-C")?,
        _ = term.recv() => {}
    }
    Ok(())
}

#[cfg(not(unix))]
async fn wait_for_signal() -> anyhow::Result<()> {
    tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")
}
