//! The dispatch of every message a host sends: a request is served in its own task by the
//! module that owns its method (calls, tasks, forwarding, or the session methods here), a
//! notification goes where it belongs, an answer to one of our requests to its waiter.
//!
//! Sits on top of the proxy: it may import every handler; no handler imports it.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use super::era::{self, HostEra};
use super::host::{Answer, Ctx, Host, Outbound, Reply};
use super::{Proxy, call, forward, meta, rpc_error, signin, tasks};
use crate::mcp::jsonrpc::{self, Incoming, RequestId};
use crate::mcp::{ErrorObject, MODERN_VERSION};

/// Handle one message from the host; replies go to `out`.
pub fn handle(host: &Arc<Host>, proxy: &Arc<Proxy>, msg: Value, out: Outbound) {
    let raw_id = msg.get("id").cloned();
    match Incoming::classify(msg) {
        Ok(Incoming::Request { id, method, params }) => {
            if method == "initialize" {
                // Before anything else is served: requests that follow it see the session.
                host.declare(&params);
            }
            if method == "logging/setLevel" {
                host.wants_logs.store(true, Ordering::Relaxed);
            }
            let serving = host.inflight.begin(&id, out.clone());
            let (cancel, why) = (serving.token.clone(), serving.why.clone());
            let mut ctx = host.context(proxy.clone(), method, params, out.clone(), cancel);
            ctx.why = why;
            proxy.host_declared(&ctx.caps);
            tokio::spawn(async move {
                // A host that goes away (its reply stream closed) is not served further;
                // what the request started (a task) keeps running.
                let reply = tokio::select! {
                    r = serve(ctx) => r,
                    _ = out.closed() => None,
                };
                drop(serving);
                let msg = match reply {
                    Some(Ok(result)) => jsonrpc::response(&id, result),
                    Some(Err(e)) => error_message(&id, e),
                    None => return,
                };
                let _ = out.send(msg).await;
            });
        }
        Ok(Incoming::Notification { method, params }) => match method.as_str() {
            "notifications/initialized" => {}
            "notifications/cancelled" => host.inflight.cancel(&params),
            _ => {
                let proxy = proxy.clone();
                tokio::spawn(async move {
                    forward::notification(&proxy, &method, params).await;
                });
            }
        },
        Ok(Incoming::Response { id, outcome }) => host.answered(&id, outcome),
        Err(e) => {
            tracing::debug!("a malformed message from the host: {e}");
            if let Some(id) = raw_id.as_ref().and_then(RequestId::from_value) {
                let msg = error_message(&id, rpc_error(-32600, format!("invalid request: {e}")));
                let out = out.clone();
                tokio::spawn(async move {
                    let _ = out.send(msg).await;
                });
            }
        }
    }
}

/// A JSON-RPC error response (with the error's `data` when it has any).
pub fn error_message(id: &RequestId, e: ErrorObject) -> Value {
    let mut msg = jsonrpc::error_response(id, e.code, &e.message);
    if let Some(data) = e.data {
        msg["error"]["data"] = data;
    }
    msg
}

/// Route one host request.
async fn serve(ctx: Ctx) -> Reply {
    if ctx.era == HostEra::Modern && ctx.method != "server/discover" {
        let asked = meta(&ctx.params)
            .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        if asked != MODERN_VERSION {
            let mut e = rpc_error(-32022, "Unsupported protocol version");
            e.data = Some(json!({ "supported": [MODERN_VERSION], "requested": asked }));
            return Some(Err(e));
        }
    }
    if let Some(reply) = signin::while_signed_out(&ctx) {
        return Some(reply);
    }
    match ctx.method.as_str() {
        "initialize" => Some(initialize(&ctx).await),
        "server/discover" => Some(discover(&ctx).await),
        "ping" => ping(&ctx).await,
        // Push subscriptions would need the proxy to hold streams open for the host.
        "subscriptions/listen" => Some(Err(rpc_error(
            -32601,
            "subscriptions/listen is not offered by this proxy: poll tasks/get",
        ))),
        "tools/call" => call::tools_call(&ctx).await,
        "tasks/get" | "tasks/result" | "tasks/cancel" | "tasks/list" | "tasks/update" => {
            tasks::serve(&ctx).await
        }
        _ => forward::request(&ctx).await,
    }
}

async fn initialize(ctx: &Ctx) -> Answer {
    let version = ctx.host.declared().version.unwrap_or_default();
    signin::handshake(ctx, |up| era::initialize_result(up, &version)).await
}

/// `ping` reaches a 2025-era upstream; a 2026-07-28 one has no `ping`, so it is answered here.
async fn ping(ctx: &Ctx) -> Reply {
    let upstream = match ctx.proxy.upstream().await {
        Ok(c) => c,
        Err(e) => return Some(Err(e)),
    };
    if upstream.era() == crate::mcp::Era::Legacy {
        return forward::request(ctx).await;
    }
    Some(Ok(era::shape_result(json!({}), &ctx.era)))
}

async fn discover(ctx: &Ctx) -> Answer {
    signin::handshake(ctx, era::discover_result).await
}
