//! Faithful forwarding, both directions: a host's request goes upstream as the host wrote
//! it (the envelope translated where the eras differ, its progress token mapped to one of
//! ours) and the result or error comes back unchanged; what the upstream sends unasked
//! (progress, list changes, log messages, its own requests for sampling, elicitation or
//! roots) goes to the host it belongs to.
//!
//! Everything reaches only the host it belongs to: a server request or a log message goes
//! to the host whose call's reply stream carried it, progress to the host of the token, and
//! nothing here waits for a host to read (a host that does not read loses its own messages,
//! see [`Host::notify`]).
//!
//! Owns: the progress-token, call and server-request routes. Must not change a result or an
//! error, and must never send a request upstream twice (a dropped legacy session, where the
//! server did not process it, is the one exception).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::era::{self, HostEra};
use super::host::{Ctx, Host, Outbound, Reply, takes};
use super::{Proxy, rpc_error};
use crate::mcp::jsonrpc::{Incoming, RequestId};
use crate::mcp::{Era, ErrorObject, McpClient, McpError, Tapped};

/// Where upstream messages about a host's requests go back to.
#[derive(Default)]
pub struct Routes {
    next: AtomicU64,
    progress: Mutex<HashMap<String, TokenRoute>>,
    /// Upstream requests handed to a host, by upstream id.
    asks: Mutex<HashMap<String, HandedOver>>,
    /// Host requests forwarded upstream and not answered yet, by upstream id.
    calls: Mutex<HashMap<String, Caller>>,
}

/// The host a forwarded request came from: where a server request or a notification that
/// arrives on that request's reply stream goes.
#[derive(Clone)]
pub struct Caller {
    host: Weak<Host>,
    out: Outbound,
    /// What the host can answer (none for a 2026-07-28 host: that era has no server
    /// requests).
    caps: Value,
}

impl Caller {
    /// Resolves when the host's reply stream for the call is gone (the host went away).
    pub async fn closed(&self) {
        self.out.closed().await
    }

    pub fn of(ctx: &Ctx) -> Caller {
        Caller {
            host: Arc::downgrade(&ctx.host),
            out: ctx.out.clone(),
            caps: if ctx.era == HostEra::Modern {
                json!({})
            } else {
                ctx.caps.clone()
            },
        }
    }
}

/// A forwarded request's route; removed when dropped.
pub struct Calling {
    proxy: Arc<Proxy>,
    key: String,
}

impl Drop for Calling {
    fn drop(&mut self) {
        self.proxy
            .routes
            .calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.key);
    }
}

/// Remember that upstream request `id` is `caller`'s, while the returned guard lives.
pub fn calling(proxy: &Arc<Proxy>, id: &RequestId, caller: &Caller) -> Calling {
    let key = id.to_string();
    proxy
        .routes
        .calls
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key.clone(), caller.clone());
    Calling {
        proxy: proxy.clone(),
        key,
    }
}

/// The caller a message carried on `via`'s reply stream belongs to; without `via` (a
/// transport that cannot tell), the one caller there is, if only one.
fn caller_of(proxy: &Proxy, via: Option<&RequestId>) -> Option<Caller> {
    let calls = proxy.routes.calls.lock().unwrap_or_else(|e| e.into_inner());
    match via {
        Some(id) => calls.get(&id.to_string()).cloned(),
        None if calls.len() == 1 => calls.values().next().cloned(),
        None => None,
    }
}

/// An upstream request handed to a host: the host, the stream it went on, the host's id.
type HandedOver = (Weak<Host>, Outbound, RequestId);

struct TokenRoute {
    /// The host's own token (`None`: it gave none, and hears no progress).
    host_token: Option<Value>,
    out: Outbound,
    /// The last progress value the host was sent for this token.
    last: f64,
    /// The tracked call the progress also feeds.
    slot: Option<Weak<super::tracked::Slot>>,
}

/// An upstream progress token that maps to a host's; the route goes when this is dropped.
pub struct Token {
    proxy: Arc<Proxy>,
    pub upstream: String,
}

impl Drop for Token {
    fn drop(&mut self) {
        self.proxy
            .routes
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.upstream);
    }
}

impl Token {
    /// The last progress value forwarded for this token (0 before any).
    pub fn last(&self) -> f64 {
        self.proxy
            .routes
            .progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&self.upstream)
            .map_or(0.0, |r| r.last)
    }
}

/// Give the request a progress token of ours in place of the host's (tokens of several
/// hosts may collide upstream); progress for it goes back to `out` under the host's.
pub fn map_progress(ctx: &Ctx, params: &mut Value) -> Option<Token> {
    let host_token = ctx.progress_token()?;
    Some(progress_token(ctx, params, Some(host_token)))
}

/// [`map_progress`] for a `tools/call`: a token of ours goes upstream whether or not the
/// host gave one (the call's progress feeds its row on the board).
pub fn call_progress(ctx: &Ctx, params: &mut Value) -> Token {
    progress_token(ctx, params, ctx.progress_token())
}

/// The progress of the call with our token `token` also feeds `slot`.
pub fn progress_feeds(proxy: &Proxy, token: &str, slot: &Arc<super::tracked::Slot>) {
    let mut routes = proxy
        .routes
        .progress
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(r) = routes.get_mut(token) {
        r.slot = Some(Arc::downgrade(slot));
    }
}

fn progress_token(ctx: &Ctx, params: &mut Value, host_token: Option<Value>) -> Token {
    let n = ctx.proxy.routes.next.fetch_add(1, Ordering::Relaxed);
    let upstream = format!("taskrail-proxy-{n}");
    params["_meta"]["progressToken"] = json!(upstream);
    ctx.proxy
        .routes
        .progress
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(
            upstream.clone(),
            TokenRoute {
                host_token,
                out: ctx.out.clone(),
                last: 0.0,
                slot: None,
            },
        );
    Token {
        proxy: ctx.proxy.clone(),
        upstream,
    }
}

/// A 2025-era host's request to a 2026-07-28 upstream carries the host's client info and
/// capabilities in `_meta`, as its session declared them.
pub fn envelope(ctx: &Ctx, client: &McpClient, params: &mut Value) {
    if client.era() != Era::Modern || ctx.era == HostEra::Modern {
        return;
    }
    let declared = ctx.host.declared();
    if !params.is_object() {
        *params = json!({});
    }
    let meta = &mut params["_meta"];
    if !meta.is_object() {
        *meta = json!({});
    }
    if declared.client_info.is_object() {
        meta["io.modelcontextprotocol/clientInfo"] = declared.client_info;
    }
    meta["io.modelcontextprotocol/clientCapabilities"] = if declared.capabilities.is_object() {
        declared.capabilities
    } else {
        json!({})
    };
}

/// The error a host sees for a failure that is not the server's own answer.
pub fn upstream_error(e: &McpError) -> ErrorObject {
    match e {
        McpError::Rpc {
            code,
            message,
            data,
        } => ErrorObject {
            code: *code,
            message: message.clone(),
            data: data.clone(),
        },
        other => rpc_error(-32603, format!("upstream: {other}")),
    }
}

/// Send one request upstream and wait for its answer. A legacy session the server dropped
/// is replaced, and the request (which it did not process) sent once more. `None`: the
/// host cancelled it (the upstream is told where its transport can be).
pub async fn send(
    ctx: &Ctx,
    client: &McpClient,
    method: &str,
    params: Value,
    timeout: Option<Duration>,
    cancel: &CancellationToken,
) -> Option<Result<Value, ErrorObject>> {
    let caller = Caller::of(ctx);
    for attempt in 0..2 {
        let id = client.request_id();
        let _route = calling(&ctx.proxy, &id, &caller);
        let reply = tokio::select! {
            r = client.forward(&id, method, params.clone(), timeout) => r,
            _ = cancel.cancelled() => {
                client.cancel_request(&id, "cancelled by the host").await;
                return None;
            }
        };
        match reply {
            Ok(r) => return Some(r),
            Err(McpError::SessionLost) if attempt == 0 => {
                if let Err(e) = client.reinitialize().await {
                    return Some(Err(upstream_error(&e)));
                }
            }
            Err(e) => return Some(Err(upstream_error(&e))),
        }
    }
    Some(Err(rpc_error(
        -32603,
        "upstream: the session was lost twice",
    )))
}

/// A host request with no special meaning to the proxy: upstream and back.
pub async fn request(ctx: &Ctx) -> Reply {
    let client = match ctx.proxy.upstream().await {
        Ok(c) => c,
        Err(e) => return Some(Err(e)),
    };
    let mut params = ctx.params.clone();
    let _token = map_progress(ctx, &mut params);
    envelope(ctx, &client, &mut params);
    if ctx.method == "tools/list" {
        // Tools that only run as tasks are callable here: the proxy asks for tasks.
        params = client.tasks_declared(params);
    }
    let timeout = Some(ctx.proxy.request_timeout);
    let reply = send(ctx, &client, &ctx.method, params, timeout, &ctx.cancel).await?;
    if ctx.method == "tools/list"
        && let Ok(listed) = &reply
    {
        remember_structured(&ctx.proxy, listed);
    }
    Some(reply.map(|r| era::cache_hints(&ctx.method, era::shape_result(r, &ctx.era), &ctx.era)))
}

/// Which listed tools declare an output schema (bounded: a host lists a server's tools).
fn remember_structured(proxy: &Proxy, listed: &Value) {
    let tools = listed.get("tools").and_then(Value::as_array);
    let mut kept = proxy
        .structured_tools
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    for t in tools.into_iter().flatten() {
        let Some(name) = t.get("name").and_then(Value::as_str) else {
            continue;
        };
        if t.get("outputSchema").is_some_and(Value::is_object) {
            if kept.len() < 4096 {
                kept.insert(name.to_string());
            }
        } else {
            kept.remove(name);
        }
    }
}

/// A host notification for the upstream (e.g. `notifications/roots/list_changed`).
pub async fn notification(proxy: &Proxy, method: &str, params: Value) {
    let Ok(client) = proxy.upstream().await else {
        return;
    };
    if let Err(e) = client.forward_notification(method, params).await {
        tracing::debug!("could not forward {method}: {e}");
    }
}

/// Route what the upstream sends unasked until the proxy stops.
pub async fn from_upstream(proxy: Weak<Proxy>, mut tap: mpsc::Receiver<Tapped>) {
    while let Some((msg, via)) = tap.recv().await {
        let Some(proxy) = proxy.upgrade() else { break };
        match msg {
            Incoming::Notification { method, params } => {
                upstream_notification(&proxy, &method, params, via.as_ref())
            }
            Incoming::Request { id, method, params } => {
                let caller = caller_of(&proxy, via.as_ref());
                let slot = via
                    .as_ref()
                    .and_then(|v| proxy.tracker.by_upstream(v))
                    .or_else(|| proxy.tracker.only_one());
                tokio::spawn(ask_host(proxy, caller, slot, id, method, params));
            }
            Incoming::Response { .. } => {}
        }
    }
}

/// Never waits: this loop serves every host.
fn upstream_notification(proxy: &Proxy, method: &str, mut params: Value, via: Option<&RequestId>) {
    match method {
        "notifications/progress" => {
            let token = match params.get("progressToken") {
                Some(Value::String(s)) => s.clone(),
                Some(other) => other.to_string(),
                None => return,
            };
            let progress = params.get("progress").and_then(Value::as_f64);
            let target = {
                let mut routes = proxy
                    .routes
                    .progress
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                routes.get_mut(&token).map(|r| {
                    if let Some(p) = progress {
                        r.last = r.last.max(p);
                    }
                    (r.host_token.clone(), r.out.clone(), r.slot.clone())
                })
            };
            let Some((host_token, out, slot)) = target else {
                return;
            };
            if let (Some(slot), Some(p)) = (slot.and_then(|s| s.upgrade()), progress) {
                let message = params
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                let total = params.get("total").and_then(Value::as_f64);
                tokio::spawn(async move { slot.progress(message.as_deref(), p, total).await });
            }
            if let Some(host_token) = host_token {
                params["progressToken"] = host_token;
                // A host that does not read its call's stream loses its progress only.
                let _ = out.try_send(note(method, params));
            }
        }
        "notifications/cancelled" => {
            let Some(id) = params.get("requestId").and_then(RequestId::from_value) else {
                return;
            };
            let route = proxy
                .routes
                .asks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id.to_string());
            if let Some((host, out, host_id)) = route
                && let Some(host) = host.upgrade()
            {
                tokio::spawn(async move {
                    host.withdraw(&out, &host_id, "cancelled by the server")
                        .await;
                });
            }
        }
        _ if via.is_some() => {
            // Sent on a request's reply stream: about that request, for its host only.
            if let Some(caller) = caller_of(proxy, via) {
                let _ = caller.out.try_send(note(method, params));
            }
        }
        "notifications/message" => {
            // The session's log: for the hosts that asked for it.
            let msg = note(method, params);
            for host in proxy.hosts() {
                if host.wants_logs.load(std::sync::atomic::Ordering::Relaxed) {
                    host.notify(msg.clone());
                }
            }
        }
        _ => {
            // List changes and resource updates concern every 2025-era session.
            let msg = note(method, params);
            for host in proxy.hosts() {
                if host.declared().version.is_some() {
                    host.notify(msg.clone());
                }
            }
        }
    }
}

fn note(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

/// An upstream request (sampling, elicitation, roots) goes to the host whose call it came
/// on, on that call's stream, when that host can take it; to nobody else. Its answer goes
/// back upstream.
async fn ask_host(
    proxy: Arc<Proxy>,
    caller: Option<Caller>,
    slot: Option<Arc<super::tracked::Slot>>,
    id: RequestId,
    method: String,
    params: Value,
) {
    let Ok(client) = proxy.upstream().await else {
        return;
    };
    let target = caller
        .filter(|c| takes(&c.caps, &method, &params) && !c.out.is_closed())
        .and_then(|c| c.host.upgrade().map(|h| (h, c.out)));
    let input = matches!(
        method.as_str(),
        "elicitation/create" | "sampling/createMessage"
    );
    if input
        && let Some(slot) = slot
        && slot
            .server_request(id.clone(), method.clone(), params.clone(), target.clone())
            .await
    {
        // On the board and (when it can take it) with the host: the first answer goes
        // upstream, through the engine.
        return;
    }
    let answer = match target {
        None => Err(rpc_error(
            -32601,
            format!(
                "{} is not supported by the client whose call this is",
                crate::sanitize::sanitize_line(&method, 60)
            ),
        )),
        Some((host, out)) => match host.ask(&out, &method, params).await {
            None => Err(rpc_error(-32603, "the client went away")),
            Some((host_id, rx)) => {
                proxy
                    .routes
                    .asks
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(id.to_string(), (Arc::downgrade(&host), out, host_id));
                let answer = rx
                    .await
                    .unwrap_or_else(|_| Err(rpc_error(-32603, "the client went away")));
                proxy
                    .routes
                    .asks
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&id.to_string());
                answer
            }
        },
    };
    if let Err(e) = client.respond(&id, answer).await {
        tracing::debug!("could not answer the server's {method}: {e}");
    }
}
