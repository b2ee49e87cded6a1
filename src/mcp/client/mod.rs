//! `McpClient`: era detection (modern `server/discover`, legacy `initialize`), the task
//! methods of both eras behind one model (`tasks.rs`), and server pushes turned into
//! `ServerPush`.
//!
//! Owns: `_meta` on every modern request, routing headers, request ids, legacy session
//! recovery. Must not import ratatui or crossterm, and must not pace or retry tasks
//! (that is the engine's job).

use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::mpsc;

use super::endpoint::{ConnectOptions, Endpoint};
use super::error::McpError;
use super::foreground::{ForegroundRequests, ReplyTo};
use super::hosted::HostedTasks;
use super::http::Routing;
use super::http_reply::MessageStream;
use super::input;
use super::jsonrpc::{self, Inbound, Incoming, RequestId};
use super::legacy::PendingInputs;
use super::param_headers;
use super::push::{ServerPush, Subscription};
use super::transport::Transport;
use super::types::*;

mod handshake;
mod held;
mod inbound;
mod passthrough;
mod tasks;
mod traced;

/// A connected MCP server.
pub struct McpClient {
    transport: Transport,
    endpoint: Endpoint,
    opts: ConnectOptions,
    next_id: AtomicI64,
    info: Mutex<Option<ServerInfo>>,
    tools: Mutex<HashMap<String, ToolInfo>>,
    pub(super) pending_inputs: PendingInputs,
    progress_tokens: Mutex<HashMap<String, TaskId>>,
    push_tx: mpsc::Sender<ServerPush>,
    untracked_elicitation: Mutex<Option<ElicitationHandler>>,
    /// Where unasked server messages go raw (see [`McpClient::tap`]).
    tap: Mutex<Option<mpsc::Sender<Tapped>>>,
    /// Requests the server holds open (sent without a timeout): cancelled on `detach`.
    held: held::Held,
    /// Legacy input requests tied to none of our tasks, until answered.
    pub(super) foreground: ForegroundRequests,
    /// Tasks a legacy server asked us to run (its elicitations and samplings).
    pub(super) hosted: HostedTasks,
    /// `tools/call`s in flight: JSON-RPC id → the caller's tag.
    calls: Mutex<HashMap<RequestId, u64>>,
    /// This client, for work that outlives one dispatch (a hosted task's `tasks/result`).
    me: std::sync::OnceLock<Weak<McpClient>>,
    /// Legacy: whether the session's GET stream is up (`None`: none was opened).
    session_stream: tokio::sync::watch::Sender<Option<bool>>,
    /// [`McpClient::modern_meta`], built on first use.
    meta: std::sync::OnceLock<Map<String, Value>>,
}

/// Answers an `elicitation/create` that belongs to no task (its params → the result).
pub type ElicitationHandler = Arc<dyn Fn(&Value) -> Value + Send + Sync>;

/// A message the server sent unasked, for the tap, with the request whose reply stream
/// carried it (when the transport can tell).
pub type Tapped = (Incoming, Option<RequestId>);

/// Marks a request in flight under a tag for as long as it lives.
struct InFlight<'a> {
    calls: &'a Mutex<HashMap<RequestId, u64>>,
    id: RequestId,
}

impl<'a> InFlight<'a> {
    fn new(calls: &'a Mutex<HashMap<RequestId, u64>>, id: &RequestId, tag: u64) -> Self {
        calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.clone(), tag);
        InFlight {
            calls,
            id: id.clone(),
        }
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
    }
}

/// A legacy session, enough to rejoin it from another connection or process: the server
/// keeps a session's tasks for that session only.
#[derive(Clone, PartialEq)]
pub struct LegacySession {
    /// `Mcp-Session-Id` (a secret: never logged).
    pub session_id: String,
    pub protocol_version: String,
    /// The server's `initialize` capabilities.
    pub capabilities: Value,
    pub server_name: Option<String>,
}

impl std::fmt::Debug for LegacySession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LegacySession")
            .field("session_id", &"<secret>")
            .field("protocol_version", &self.protocol_version)
            .finish()
    }
}

type Connection = (Arc<McpClient>, mpsc::Receiver<ServerPush>);

/// Whether a legacy server says it does not know our session: HTTP 404 as the spec asks,
/// or (the TypeScript SDK's servers) a 400 whose JSON-RPC error names the session.
fn is_unknown_session(e: &McpError) -> bool {
    match e {
        McpError::Http { status: 404, .. } => true,
        McpError::Rpc { code, message, .. } => {
            *code == -32000 && message.to_ascii_lowercase().contains("session")
        }
        _ => false,
    }
}

impl McpClient {
    /// Connect and detect the era. Returns the client and the channel of server pushes
    /// (task notifications on any stream, legacy input requests, progress).
    pub async fn connect(endpoint: Endpoint, opts: ConnectOptions) -> Result<Connection, McpError> {
        let (client, push_rx) = Self::open(endpoint, opts, 1)?;
        let info = client.detect().await?;
        *client.info.lock().unwrap_or_else(|e| e.into_inner()) = Some(info);
        Ok((client, push_rx))
    }

    /// Rejoin a legacy HTTP session without a handshake (it was initialized by an earlier
    /// connection, maybe of another process). Nothing is sent until the first request; a
    /// session the server dropped answers it with [`McpError::SessionLost`].
    pub fn rejoin(
        endpoint: Endpoint,
        opts: ConnectOptions,
        session: &LegacySession,
    ) -> Result<Connection, McpError> {
        if !matches!(endpoint, Endpoint::Http { .. }) {
            return Err(McpError::Unsupported(
                "only an HTTP session can be rejoined".into(),
            ));
        }
        // Request ids are unique within a session, which earlier connections (of this or
        // another process, maybe still running) used too: start far from theirs.
        let first_id = 1 + (uuid::Uuid::new_v4().as_u128() >> 80) as i64;
        let (client, push_rx) = Self::open(endpoint, opts, first_id)?;
        client.transport.set_session_id(session.session_id.clone());
        client
            .transport
            .set_protocol_version(Some(session.protocol_version.clone()));
        let caps = session.capabilities.clone();
        *client.info.lock().unwrap_or_else(|e| e.into_inner()) = Some(ServerInfo {
            era: Era::Legacy,
            protocol_version: session.protocol_version.clone(),
            tasks: caps.get("tasks").is_some_and(Value::is_object),
            capabilities: caps,
            name: session.server_name.clone(),
            version: None,
            instructions: None,
        });
        Ok((client, push_rx))
    }

    /// The legacy HTTP session this client runs in, if any.
    pub fn legacy_session(&self) -> Option<LegacySession> {
        let info = self.info();
        if info.era != Era::Legacy {
            return None;
        }
        Some(LegacySession {
            session_id: self.transport.session_id()?,
            protocol_version: info.protocol_version,
            capabilities: info.capabilities,
            server_name: info.name,
        })
    }

    /// A legacy input request received by an earlier connection, still waiting for its
    /// answer (its `reply_to` carries the server's request id).
    pub fn expect_answer(&self, task_id: &TaskId, key: &str, request: &InputRequest) {
        let Some(id) = request.reply_to.as_ref().and_then(RequestId::from_value) else {
            return;
        };
        self.pending_inputs
            .insert(task_id, key, id, request.clone());
    }

    fn open(
        endpoint: Endpoint,
        opts: ConnectOptions,
        first_id: i64,
    ) -> Result<Connection, McpError> {
        let (inbound_tx, mut inbound_rx) = mpsc::channel::<Inbound>(1024);
        let (push_tx, push_rx) = mpsc::channel::<ServerPush>(1024);
        let transport = Transport::open(&endpoint, &opts, inbound_tx)?;
        let client = Arc::new(McpClient {
            transport,
            endpoint,
            opts,
            next_id: AtomicI64::new(first_id),
            info: Mutex::new(None),
            tools: Mutex::new(HashMap::new()),
            pending_inputs: PendingInputs::default(),
            progress_tokens: Mutex::new(HashMap::new()),
            push_tx,
            untracked_elicitation: Mutex::new(None),
            tap: Mutex::new(None),
            held: held::Held::default(),
            foreground: ForegroundRequests::default(),
            hosted: HostedTasks::default(),
            calls: Mutex::new(HashMap::new()),
            me: std::sync::OnceLock::new(),
            session_stream: tokio::sync::watch::channel(None).0,
            meta: std::sync::OnceLock::new(),
        });
        let weak: Weak<McpClient> = Arc::downgrade(&client);
        let _ = client.me.set(weak.clone());
        tokio::spawn(async move {
            while let Some(Inbound { msg, via }) = inbound_rx.recv().await {
                let Some(client) = weak.upgrade() else { break };
                client.dispatch_via(msg, via.as_ref()).await;
            }
        });
        Ok((client, push_rx))
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    pub fn options(&self) -> &ConnectOptions {
        &self.opts
    }

    /// What the server said about itself (set once connected).
    pub fn info(&self) -> ServerInfo {
        self.info
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .expect("info is set by connect before the client is handed out")
    }

    /// The connected era (read in place: it is asked on every request).
    pub fn era(&self) -> Era {
        self.info
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .expect("info is set by connect before the client is handed out")
            .era
    }

    fn id(&self) -> RequestId {
        RequestId::Num(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// The modern per-request `_meta` block: the tasks extension, and the input kinds
    /// answered for this server (`ConnectOptions::input`).
    pub fn modern_meta(&self) -> &Map<String, Value> {
        self.meta.get_or_init(|| self.build_meta())
    }

    fn build_meta(&self) -> Map<String, Value> {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
            "io.modelcontextprotocol/clientInfo": { "name": self.opts.client_name, "version": self.opts.client_version },
            "io.modelcontextprotocol/clientCapabilities": self.opts.input.modern()
        });
        match meta {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn with_meta(&self, params: Value, era: Era) -> Value {
        let mut params = match params {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        if era == Era::Modern {
            let meta = params.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                for (k, v) in self.modern_meta() {
                    if !meta.contains_key(k) {
                        meta.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        Value::Object(params)
    }

    /// Send one request in `era` and wait for the result, within `timeout`. A `tag`
    /// names the request while it is in flight, so server requests that arrive on its
    /// reply stream can say which call they belong to.
    async fn raw_request(
        &self,
        era: Era,
        method: &str,
        params: Value,
        routing: Routing<'_>,
        timeout: Option<Duration>,
        tag: Option<u64>,
    ) -> Result<Value, McpError> {
        let id = self.id();
        // Without a timeout the server holds the request until it has an answer.
        let _held = match timeout {
            None => Some(self.held.hold(&id)?),
            Some(_) => None,
        };
        let mut params = self.with_meta(params, era);
        let span = self.trace_begin(era, method, &mut params);
        let msg = jsonrpc::request(&id, method, params);
        let _in_flight = tag.map(|t| InFlight::new(&self.calls, &id, t));
        let fut = self.transport.request(&id, &msg, routing);
        let reply = match timeout {
            Some(t) => match tokio::time::timeout(t, fut).await {
                Ok(r) => r,
                Err(_) => Err(McpError::Transport(format!(
                    "{method} timed out after {} s",
                    t.as_secs()
                ))),
            },
            None => fut.await,
        };
        super::trace_hook::end(span, &reply);
        reply?.map_err(|e| McpError::from_rpc(&e, method.starts_with("tasks/")))
    }

    /// The tag of the call whose reply stream carried a server message. A message on no
    /// call's stream (stdio has one stream for everything; a legacy server may ask on the
    /// session stream while it handles a call) belongs to the call in flight when there is
    /// exactly one.
    /// The flag says whether it came on that call's own reply stream.
    pub(super) fn call_tag(&self, via: Option<&RequestId>) -> Option<(u64, bool)> {
        let calls = self.calls.lock().unwrap_or_else(|e| e.into_inner());
        match via {
            Some(via) => calls.get(via).map(|t| (*t, true)),
            None if calls.len() == 1 => calls.values().next().map(|t| (*t, false)),
            None => None,
        }
    }

    /// A request in the connected era; a legacy session that expired (404) is re-initialized once.
    async fn request(
        &self,
        method: &str,
        params: Value,
        name: Option<&str>,
        timeout: Option<Duration>,
    ) -> Result<Value, McpError> {
        self.request_with_headers(method, params, name, &[], timeout, None)
            .await
    }

    /// [`McpClient::request`] with `Mcp-Param-*` headers and a tag.
    async fn request_with_headers(
        &self,
        method: &str,
        params: Value,
        name: Option<&str>,
        param_headers: &[(String, String)],
        timeout: Option<Duration>,
        tag: Option<u64>,
    ) -> Result<Value, McpError> {
        let era = self.era();
        let routing = Routing {
            method: Some(method),
            name,
            params: param_headers,
        };
        match self
            .raw_request(era, method, params, routing, timeout, tag)
            .await
        {
            Err(e)
                if era == Era::Legacy && self.transport.has_session() && is_unknown_session(&e) =>
            {
                // The session and its tasks are gone; a new one needs `reinitialize`.
                self.transport.reset_session();
                Err(McpError::SessionLost)
            }
            other => other,
        }
    }

    /// Start a new legacy session after the old one was lost.
    pub async fn reinitialize(&self) -> Result<(), McpError> {
        self.transport.reset_session();
        let info = self.initialize().await?;
        *self.info.lock().unwrap_or_else(|e| e.into_inner()) = Some(info);
        Ok(())
    }

    /// Every tool, across pages.
    pub async fn list_tools(&self) -> Result<Vec<ToolInfo>, McpError> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..100 {
            let params = match &cursor {
                Some(c) => json!({ "cursor": c }),
                None => json!({}),
            };
            let result = self
                .request("tools/list", params, None, Some(self.opts.request_timeout))
                .await?;
            out.extend(
                result
                    .get("tools")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(ToolInfo::from_wire),
            );
            cursor = result
                .get("nextCursor")
                .and_then(Value::as_str)
                .map(str::to_string);
            if cursor.is_none() {
                break;
            }
        }
        // A tool whose `x-mcp-header` annotations break the rules is not offered.
        out.retain(|t| match param_headers::annotations(&t.input_schema) {
            Ok(_) => true,
            Err(why) => {
                tracing::warn!(tool = %t.name, "hiding a tool with an invalid annotation: {why}");
                false
            }
        });
        let mut cache = self.tools.lock().unwrap_or_else(|e| e.into_inner());
        cache.clear();
        cache.extend(out.iter().map(|t| (t.name.clone(), t.clone())));
        Ok(out)
    }

    /// `Mcp-Param-*` headers for a call, from the cached `tools/list`.
    fn param_headers(&self, tool: &str, arguments: &Value) -> Vec<(String, String)> {
        let cache = self.tools.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .get(tool)
            .and_then(|t| param_headers::annotations(&t.input_schema).ok())
            .map(|a| param_headers::headers(&a, arguments))
            .unwrap_or_default()
    }

    async fn legacy_task_support(&self, tool: &str) -> Option<String> {
        let cached = self
            .tools
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(tool)
            .cloned();
        let tool_info = match cached {
            Some(t) => Some(t),
            None => self
                .list_tools()
                .await
                .ok()?
                .into_iter()
                .find(|t| t.name == tool),
        };
        tool_info.and_then(|t| t.task_support)
    }

    /// `tools/call`. Modern: the tasks extension is declared, the server decides. Legacy:
    /// task augmentation is requested when the tool allows it. `retry` carries MRTR
    /// `inputResponses` and the echoed `requestState`; `tag` comes back on foreground
    /// input requests the call's reply stream carries ([`ServerPush::Foreground`]).
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Value,
        retry: Option<(Value, Option<Value>)>,
        tag: Option<u64>,
    ) -> Result<CallOutcome, McpError> {
        let mut params = json!({ "name": tool, "arguments": arguments });
        let era = self.era();
        let mut token = None;
        if era == Era::Legacy {
            let info = self.info();
            let server_allows = info
                .capabilities
                .pointer("/tasks/requests/tools/call")
                .is_some();
            let support = self.legacy_task_support(tool).await;
            if server_allows && matches!(support.as_deref(), Some("optional" | "required")) {
                params["task"] = json!({});
            }
            let t = uuid::Uuid::new_v4().to_string();
            params["_meta"] = json!({ "progressToken": t });
            token = Some(t);
        }
        if let Some((responses, state)) = retry {
            params["inputResponses"] = responses;
            if let Some(state) = state {
                params["requestState"] = state;
            }
        }
        if era == Era::Legacy {
            self.wait_session_stream().await;
        }
        let timeout = Some(self.opts.call_timeout);
        let headers = self.param_headers(tool, &arguments);
        let first = self
            .request_with_headers(
                "tools/call",
                params.clone(),
                Some(tool),
                &headers,
                timeout,
                tag,
            )
            .await;
        let result = match first {
            // Headers from an unknown or stale schema: fetch `tools/list` and try once more.
            Err(McpError::HeaderMismatch { .. }) if era == Era::Modern => {
                self.list_tools().await?;
                let headers = self.param_headers(tool, &arguments);
                self.request_with_headers("tools/call", params, Some(tool), &headers, timeout, tag)
                    .await?
            }
            other => other?,
        };
        let outcome = decode_call_result(&result)?;
        if let (Some(token), CallOutcome::Task(task)) = (token, &outcome) {
            self.progress_tokens
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(token, task.task_id.clone());
        }
        Ok(outcome)
    }

    /// Legacy: the session's GET stream is about to be opened; calls wait for it.
    pub fn expect_session_stream(&self) {
        self.session_stream.send_if_modified(|s| {
            let was = s.is_none();
            if was {
                *s = Some(false);
            }
            was
        });
    }

    /// Legacy servers may send a call's input requests on the session stream, and drop
    /// them when it is not open yet: a call waits (briefly) for a stream being opened.
    async fn wait_session_stream(&self) {
        let mut rx = self.session_stream.subscribe();
        let up = rx.wait_for(|s| *s != Some(false));
        let _ = tokio::time::timeout(Duration::from_secs(5), up).await;
    }

    /// Legacy: the session's GET stream; feed each message to [`McpClient::dispatch`].
    pub async fn open_legacy_stream(&self) -> Result<MessageStream, McpError> {
        match &self.transport {
            Transport::Http(h) if self.era() == Era::Legacy => {
                self.session_stream.send_replace(Some(false));
                h.open_get_stream(self.session_stream.clone()).await
            }
            _ => Err(McpError::Unsupported(
                "no GET stream on this connection".into(),
            )),
        }
    }

    /// End the session (legacy DELETE) or stop the child process.
    pub async fn close(&self) {
        self.transport.close().await;
    }

    /// Let go of the connection but leave a legacy session alive: servers may cancel a
    /// session's unfinished tasks when it ends, and those tasks must keep running. The
    /// requests the server holds for us (`tasks/result`) are cancelled, so the next client
    /// of the session gets the task's messages.
    pub async fn detach(&self) {
        match &self.transport {
            Transport::Stdio(s) => s.shutdown().await,
            Transport::Http(_) => self.cancel_held().await,
        }
    }
}
