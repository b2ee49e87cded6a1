//! `taskrail proxy`: the MCP server an agent host starts (stdio) or reaches by URL
//! (Streamable HTTP), in front of one upstream server. Requests go through unchanged, in
//! the host's protocol version; a `tools/call` asks the upstream for a task, and every task
//! that comes back is recorded in the shared ledger before the host hears of it, then
//! followed by this process's own engine (which holds its lease), so a dashboard on the
//! same ledger shows it live, answers its input and cancels it.
//!
//! Owns: the host-facing server and the wiring of one engine to the connection it forwards
//! through. Must not decide task facts (the engine does) and must not import the dashboard
//! layers (`state`, `ui`, `app`).
//!
//! Inside, imports go one way: the host session's data (`cancel`, `host`) at the bottom,
//! the handlers above it (`attach` owns which upstream task serves a host's call; `call`,
//! `tasks`, `follow`, `input`, `forward`, `job`, `tracked`, `signin`), `dispatch` routing a host's
//! messages to them on top, and the transports (`http`, `stdio`) that feed `dispatch`.

mod attach;
mod board;
mod call;
mod cancel;
mod dispatch;
mod era;
mod follow;
mod forward;
mod host;
mod http;
mod input;
mod job;
mod signin;
mod stdio;
mod tasks;
pub mod tokens;
mod tracked;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::engine::{
    Connection, Connector, EngineCommand, EngineConfig, EngineHandle, Failure, ServerId,
    ServerSpec, TaskId, spawn_engine,
};
use crate::ledger::LedgerHandle;
use crate::mcp::{ErrorObject, InputSupport, McpClient, Tapped};

pub use http::{Listener, serve_http};
pub use stdio::serve_stdio;

use board::{Ack, Board};
use host::{Host, Principal};

/// What one proxy needs: the upstream (with its config entry's headers), the shared
/// ledger, and the engine settings.
pub struct ProxyOptions {
    pub upstream: ServerSpec,
    pub ledger: LedgerHandle,
    pub engine: EngineConfig,
    /// Answer a waiting host by then with "still running" (see `--answer-within`).
    pub answer_within: Option<Duration>,
    /// The same for one host (by the name it is known by), before `answer_within`.
    pub answer_within_for: std::collections::HashMap<String, Duration>,
    /// Attach a repeated call to the earlier call's work (off with `--no-reattach`).
    pub reattach: bool,
    /// A blocking call still running after this long is tracked as a task of the proxy's
    /// own (`--track-after`).
    pub track_after: Duration,
}

/// The proxy's shared core: the upstream connection, its engine and the board mirroring
/// it, and the hosts it serves.
pub struct Proxy {
    server: ServerId,
    request_timeout: Duration,
    call_timeout: Duration,
    upstream: watch::Receiver<Option<Arc<McpClient>>>,
    engine: EngineHandle,
    board: Arc<Board>,
    next_call: AtomicU64,
    hosts: Mutex<Vec<Weak<Host>>>,
    routes: forward::Routes,
    /// The first host's client capabilities (the upstream connects once they are known).
    host_caps: watch::Sender<Option<Value>>,
    /// `requestState`s handed to 2026-07-28 hosts asked for input, and their tasks.
    resumes: Mutex<std::collections::HashMap<String, crate::mcp::TaskId>>,
    stdio_upstream: bool,
    ledger: LedgerHandle,
    answer_within: Option<Duration>,
    answer_within_for: std::collections::HashMap<String, Duration>,
    reattach: bool,
    /// The blocking calls hosts wait for here.
    calls: attach::Calls,
    /// Calls forwarded upstream, tracked as tasks of our own once they run long.
    tracker: tracked::Tracker,
    track_after: Duration,
    /// Tools whose `tools/list` entry (as hosts saw it through here) has an output schema:
    /// a host's SDK rejects a plain-text result from them unless it is an error.
    structured_tools: Mutex<std::collections::HashSet<String>>,
    /// Where the messages of hosts are reported (the upstream's tap: one server, both sides).
    wire: Option<crate::mcp::wire::WireTap>,
}

/// A started proxy; [`Running::stop`] ends it.
pub struct Running {
    pub proxy: Arc<Proxy>,
    engine: tokio::task::JoinHandle<()>,
    helpers: Vec<tokio::task::JoinHandle<()>>,
}

/// A JSON-RPC error object.
pub(crate) fn rpc_error(code: i64, message: impl Into<String>) -> ErrorObject {
    ErrorObject {
        code,
        message: message.into(),
        data: None,
    }
}

/// The connector that hands the engine the connection the proxy forwards through, and
/// taps what the server sends unasked.
fn sharing_connector(
    current: watch::Sender<Option<Arc<McpClient>>>,
    tap: mpsc::Sender<Tapped>,
    host_caps: watch::Receiver<Option<Value>>,
    no_push: bool,
) -> Connector {
    let current = Arc::new(current);
    Connector(Arc::new(move |endpoint, mut options| {
        let (current, tap, mut host_caps) = (current.clone(), tap.clone(), host_caps.clone());
        Box::pin(async move {
            // A legacy session declares its client's capabilities once: the first host's.
            let caps = host_caps
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|c| c.clone());
            options.capabilities = caps.map(|c| upstream_capabilities(&c, &options.input));
            let (client, pushes): Connection = McpClient::connect(endpoint, options).await?;
            client.tap(tap);
            let info = client.info();
            if info.era == crate::mcp::Era::Legacy && (!info.tasks || no_push) {
                // The engine opens a legacy session's GET stream only for task pushes; the
                // host still wants list changes and log messages from it.
                tokio::spawn(read_session_stream(Arc::downgrade(&client)));
            }
            current.send_replace(Some(client.clone()));
            Ok((client, pushes))
        })
    }))
}

/// What the proxy declares upstream for a host declaring `caps` and a config entry
/// offering `input`: the host's sampling, roots and elicitation (it can answer them), what
/// taskrail answers itself (form and URL elicitation, where the dashboard answers a task's
/// input; the config's sampling; the config's roots, answered here instead of the host's),
/// and no client-side tasks (requests for them are not routed back).
fn upstream_capabilities(caps: &Value, input: &InputSupport) -> Value {
    let mut out = caps.as_object().cloned().unwrap_or_default();
    out.remove("tasks");
    out.remove("extensions");
    let Value::Object(mut ours) = input.legacy() else {
        return Value::Object(out);
    };
    ours.remove("tasks");
    if let Some(roots) = ours.remove("roots") {
        out.insert("roots".into(), roots);
    }
    for (kind, offer) in ours {
        let entry = out.entry(kind).or_insert_with(|| serde_json::json!({}));
        if let (Some(entry), Value::Object(offer)) = (entry.as_object_mut(), offer) {
            for (k, v) in offer {
                entry.entry(k).or_insert(v);
            }
        }
    }
    Value::Object(out)
}

/// Feed a legacy session's GET stream to its client (and so to the tap) while it lasts.
async fn read_session_stream(client: Weak<McpClient>) {
    use futures::StreamExt;
    let Some(c) = client.upgrade() else { return };
    let Ok(mut stream) = c.open_legacy_stream().await else {
        return;
    };
    drop(c);
    while let Some(item) = stream.next().await {
        let Some(c) = client.upgrade() else { return };
        match item {
            Ok(msg) => c.dispatch(msg).await,
            Err(e) => tracing::debug!("the session stream: {e}"),
        }
    }
}

impl Proxy {
    /// Start the engine on the upstream and the proxy's own helpers.
    pub fn start(opts: ProxyOptions) -> Running {
        let ProxyOptions {
            mut upstream,
            ledger,
            engine,
            answer_within,
            answer_within_for,
            reattach,
            track_after,
        } = opts;
        let (current_tx, current_rx) = watch::channel(None);
        let (tap_tx, tap_rx) = mpsc::channel(1024);
        let (caps_tx, caps_rx) = watch::channel(None);
        upstream.connector = Some(sharing_connector(
            current_tx,
            tap_tx,
            caps_rx,
            engine.no_push,
        ));
        let cfg = EngineConfig {
            resume: false,
            history: false,
            adopt: false,
            resolve: None,
            ..engine
        };
        let server = upstream.id.clone();
        let stdio_upstream = matches!(upstream.endpoint, crate::mcp::Endpoint::Stdio { .. });
        let wire = upstream.options.wire.clone();
        let (request_timeout, call_timeout) = (
            upstream.options.request_timeout,
            upstream.options.call_timeout,
        );
        let (handle, events, join) = spawn_engine(vec![upstream], Some(ledger.clone()), cfg);
        let board = Arc::new(Board::default());
        let proxy = Arc::new(Proxy {
            server,
            request_timeout,
            call_timeout,
            upstream: current_rx,
            engine: handle,
            board: board.clone(),
            next_call: AtomicU64::new(1),
            hosts: Mutex::new(Vec::new()),
            routes: forward::Routes::default(),
            host_caps: caps_tx,
            resumes: Mutex::new(std::collections::HashMap::new()),
            stdio_upstream,
            ledger,
            answer_within,
            answer_within_for,
            reattach,
            calls: attach::Calls::default(),
            tracker: tracked::Tracker::default(),
            track_after,
            structured_tools: Mutex::new(std::collections::HashSet::new()),
            wire,
        });
        let helpers = vec![
            tokio::spawn(engine_events(Arc::downgrade(&proxy), board, events)),
            tokio::spawn(forward::from_upstream(Arc::downgrade(&proxy), tap_rx)),
        ];
        Running {
            proxy,
            engine: join,
            helpers,
        }
    }

    /// The upstream connection, waiting for it (within the request timeout).
    /// A sign-in the upstream wants ends the wait at once: no retry can cure it.
    pub(crate) async fn upstream(&self) -> Result<Arc<McpClient>, ErrorObject> {
        let mut rx = self.upstream.clone();
        let mut sign_in = self.board.sign_in();
        let connected = async {
            tokio::select! {
                biased;
                c = rx.wait_for(Option::is_some) => c.ok().and_then(|c| c.clone()),
                _ = sign_in.wait_for(Option::is_some) => None,
            }
        };
        match tokio::time::timeout(self.request_timeout, connected).await {
            Ok(Some(c)) => Ok(c),
            _ => Err(self.unreachable()),
        }
    }

    fn unreachable(&self) -> ErrorObject {
        if let Some(why) = self.board.sign_in().borrow().clone() {
            return rpc_error(-32603, why);
        }
        let why = self
            .board
            .trouble()
            .unwrap_or_else(|| "not connected".into());
        rpc_error(
            -32603,
            format!(
                "the upstream server {} is not reachable: {why}",
                self.server
            ),
        )
    }

    /// Calls forwarded upstream that have not ended.
    pub fn calls_running(&self) -> usize {
        self.tracker.live()
    }

    /// Wait until every forwarded call ended, or `limit` passed.
    pub async fn calls_ended(&self, limit: Duration) -> bool {
        self.tracker.wait_idle(limit).await
    }

    /// How long host `name` may wait before it is answered "still running".
    fn answer_within(&self, name: &str) -> Option<Duration> {
        self.answer_within_for
            .get(name)
            .copied()
            .or(self.answer_within)
    }

    fn call_id(&self) -> u64 {
        self.next_call.fetch_add(1, Ordering::Relaxed)
    }

    async fn command(&self, cmd: EngineCommand) {
        self.engine.send(cmd).await;
    }

    /// Answer input keys of a task through the engine (each key is sent once); the outcome
    /// once acknowledged.
    async fn answer(
        &self,
        task_id: &TaskId,
        responses: std::collections::BTreeMap<String, Value>,
    ) -> Result<(), Failure> {
        let keys: Vec<String> = responses.keys().cloned().collect();
        let mut acks = self.board.acks();
        self.command(EngineCommand::Answer {
            server: self.server.clone(),
            task_id: task_id.clone(),
            responses,
        })
        .await;
        board::wait_ack(&mut acks, self.request_timeout, |a| match a {
            Ack::Answer {
                task_id: t,
                keys: k,
                result,
            } if t == task_id && k.iter().any(|k| keys.contains(k)) => Some(result.clone()),
            _ => None,
        })
        .await
    }

    /// Cancel a task through the engine for `by`; the outcome once acknowledged.
    async fn cancel(&self, task_id: &TaskId, by: crate::engine::CancelBy) -> Result<(), Failure> {
        let mut acks = self.board.acks();
        self.command(EngineCommand::Cancel {
            server: self.server.clone(),
            task_id: task_id.clone(),
            by,
        })
        .await;
        board::wait_ack(&mut acks, self.request_timeout, |a| match a {
            Ack::Cancel { task_id: t, result } if t == task_id => Some(result.clone()),
            _ => None,
        })
        .await
    }

    /// Serve a new host session.
    fn host(&self, link: Option<host::Outbound>, principal: Principal) -> Arc<Host> {
        let host = Arc::new(Host::new(link, principal));
        let mut hosts = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        hosts.retain(|h| h.strong_count() > 0);
        hosts.push(Arc::downgrade(&host));
        host
    }

    /// A host declared its capabilities (the first one decides the upstream session's).
    fn host_declared(&self, caps: &Value) {
        self.host_caps.send_if_modified(|c| {
            if c.is_some() {
                return false;
            }
            *c = Some(caps.clone());
            true
        });
    }

    fn hosts(&self) -> Vec<Arc<Host>> {
        let hosts = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        hosts.iter().filter_map(Weak::upgrade).collect()
    }
}

impl Running {
    /// Stop: the engine gives its leases up (a dashboard takes the tasks over); with a stdio
    /// upstream, whose process ends with the proxy, unfinished tasks become tombstones.
    pub async fn stop(self) {
        let proxy = self.proxy;
        // Hosts still waiting here are gone with the proxy: their calls stay attachable.
        attach::abandon_all(&proxy).await;
        proxy.command(EngineCommand::Shutdown).await;
        let _ = tokio::time::timeout(Duration::from_secs(5), self.engine).await;
        if proxy.stdio_upstream {
            proxy.end_stdio_tasks().await;
        }
        proxy.end_tracked_calls().await;
        for h in self.helpers {
            h.abort();
        }
    }
}

impl Proxy {
    /// Calls tracked here that still run end with the proxy: no other process can learn
    /// how they end, so they are recorded as lost.
    async fn end_tracked_calls(&self) {
        let live = self.tracker.tracked_ids();
        if live.is_empty() {
            return;
        }
        let n = live.len();
        let lost = crate::ledger::Tombstone::ProxyLost;
        let ends = live
            .iter()
            .map(|id| self.ledger.mark_ended(&self.server, id, lost));
        let write = crate::ledger::all(ends.collect());
        match write.await {
            Ok(()) => {
                tracing::warn!("{n} running call(s) lost: the proxy stopped before they ended")
            }
            Err(e) => tracing::warn!("ledger: {e:#}"),
        }
    }

    /// The tasks of a stdio upstream live in its process, which ends with the proxy:
    /// record the unfinished ones as ended ("session lost").
    async fn end_stdio_tasks(&self) {
        let live = self.board.live();
        if live.is_empty() {
            return;
        }
        let n = live.len();
        let lost = crate::ledger::Tombstone::SessionLost;
        let ends = live
            .iter()
            .map(|id| self.ledger.mark_ended(&self.server, id, lost));
        let write = crate::ledger::all(ends.collect());
        match write.await {
            Ok(()) => tracing::info!("{n} unfinished task(s) ended with the stdio upstream"),
            Err(e) => tracing::warn!("ledger: {e:#}"),
        }
    }
}

/// Fold the engine's events into the board until the engine stops; what someone asks of a
/// call the proxy tracks goes to the tracker.
async fn engine_events(
    proxy: Weak<Proxy>,
    board: Arc<Board>,
    mut events: mpsc::Receiver<crate::engine::EngineEvent>,
) {
    while let Some(ev) = events.recv().await {
        match ev {
            crate::engine::EngineEvent::LocalAsked {
                task_id,
                request,
                ask,
                ..
            } => {
                let Some(proxy) = proxy.upgrade() else { break };
                tokio::spawn(async move {
                    proxy.tracker.carry_out(&proxy, task_id, request, ask).await
                });
            }
            other => {
                let signed_out = board.sign_in().borrow().is_some();
                board.apply(other);
                if signed_out && board.sign_in().borrow().is_none() {
                    let Some(proxy) = proxy.upgrade() else { break };
                    proxy.tools_changed();
                }
            }
        }
    }
}

/// The `_meta` object of request params, if any.
pub(crate) fn meta(params: &Value) -> Option<&serde_json::Map<String, Value>> {
    params.get("_meta").and_then(Value::as_object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn upstream_capabilities_follow_the_host() {
        let plain = InputSupport::default();
        let caps = upstream_capabilities(
            &json!({
                "sampling": {}, "roots": {"listChanged": true}, "tasks": {"requests": {}},
                "elicitation": {"form": {"applyDefaults": true}}
            }),
            &plain,
        );
        assert!(caps["sampling"].is_object());
        assert_eq!(caps["roots"]["listChanged"], true);
        assert_eq!(caps["elicitation"]["form"]["applyDefaults"], true);
        assert!(caps["elicitation"]["url"].is_object());
        assert!(caps.get("tasks").is_none());
        let bare = upstream_capabilities(&json!({}), &plain);
        assert_eq!(bare, json!({"elicitation": {"form": {}, "url": {}}}));
    }

    #[test]
    fn upstream_capabilities_add_what_the_config_offers() {
        let configured = InputSupport {
            sampling: true,
            roots: Some(vec!["file:///work/repo".into()]),
        };
        let caps = upstream_capabilities(&json!({"roots": {"listChanged": true}}), &configured);
        assert!(caps["sampling"].is_object());
        // The config's roots are answered here: no list changes are promised.
        assert_eq!(caps["roots"]["listChanged"], false);
        assert!(caps.get("tasks").is_none());
    }
}
