//! Faithful forwarding, both directions: a host's request goes upstream as the host wrote
//! it (the envelope translated where the eras differ, its progress token mapped to one of
//! ours) and the result or error comes back unchanged; what the upstream sends unasked
//! (progress, list changes, log messages, its own requests for sampling, elicitation or
//! roots) goes to the host it belongs to.
//!
//! Owns: the progress-token and server-request routes. Must not change a result or an
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
use crate::mcp::{Era, ErrorObject, McpClient, McpError};

/// Where upstream messages about a host's requests go back to.
#[derive(Default)]
pub struct Routes {
    next: AtomicU64,
    progress: Mutex<HashMap<String, TokenRoute>>,
    /// Upstream requests handed to a host, by upstream id.
    asks: Mutex<HashMap<String, HandedOver>>,
}

/// An upstream request handed to a host: the host, the stream it went on, the host's id.
type HandedOver = (Weak<Host>, Outbound, RequestId);

struct TokenRoute {
    host_token: Value,
    out: Outbound,
    /// The last progress value the host was sent for this token.
    last: f64,
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
            },
        );
    Some(Token {
        proxy: ctx.proxy.clone(),
        upstream,
    })
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
    client: &McpClient,
    method: &str,
    params: Value,
    timeout: Option<Duration>,
    cancel: &CancellationToken,
) -> Option<Result<Value, ErrorObject>> {
    for attempt in 0..2 {
        let id = client.request_id();
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
    let reply = send(&client, &ctx.method, params, timeout, &ctx.cancel).await?;
    Some(reply.map(|r| era::shape_result(r, &ctx.era)))
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
pub async fn from_upstream(proxy: Weak<Proxy>, mut tap: mpsc::Receiver<Incoming>) {
    while let Some(msg) = tap.recv().await {
        let Some(proxy) = proxy.upgrade() else { break };
        match msg {
            Incoming::Notification { method, params } => {
                upstream_notification(&proxy, &method, params).await
            }
            Incoming::Request { id, method, params } => {
                tokio::spawn(ask_host(proxy, id, method, params));
            }
            Incoming::Response { .. } => {}
        }
    }
}

async fn upstream_notification(proxy: &Proxy, method: &str, mut params: Value) {
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
                    (r.host_token.clone(), r.out.clone())
                })
            };
            if let Some((host_token, out)) = target {
                params["progressToken"] = host_token;
                let _ = out.send(note(method, params)).await;
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
                host.withdraw(&out, &host_id, "cancelled by the server")
                    .await;
            }
        }
        _ => {
            // List changes, resource updates and log messages: every 2025-era session.
            let msg = note(method, params);
            for host in proxy.hosts() {
                if host.declared().version.is_none() {
                    continue;
                }
                if let Some(link) = host.link() {
                    let _ = link.send(msg.clone()).await;
                }
            }
        }
    }
}

fn note(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

/// An upstream request (sampling, elicitation, roots) goes to the host that can take it,
/// preferring one with a request in flight; its answer goes back upstream.
async fn ask_host(proxy: Arc<Proxy>, id: RequestId, method: String, params: Value) {
    let Ok(client) = proxy.upstream().await else {
        return;
    };
    let mut hosts: Vec<Arc<Host>> = proxy
        .hosts()
        .into_iter()
        .filter(|h| takes(&h.declared().capabilities, &method, &params))
        .collect();
    hosts.sort_by_key(|h| !h.inflight.busy());
    let target = hosts.into_iter().find_map(|h| h.link().map(|out| (h, out)));
    let answer = match target {
        None => Err(rpc_error(
            -32601,
            format!("{method} is not supported by the client behind this proxy"),
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
