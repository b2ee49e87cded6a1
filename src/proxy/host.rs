//! One host session: what the host declared (version, client info, capabilities), the
//! requests the proxy sends it (input it may answer) and their answers, the host's own
//! requests in flight, and the dispatch of every message it sends.
//!
//! Owns: the host side of the JSON-RPC conversation. Must not talk to the upstream itself
//! (forwarding, calls and tasks do, in their modules).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::cancel::InFlight;
use super::era::{self, HostEra};
use super::{Proxy, meta, rpc_error};
use crate::mcp::jsonrpc::{self, Incoming, RequestId};
use crate::mcp::{ErrorObject, MODERN_VERSION, TaskId};

/// Messages to the host (JSON-RPC, in order). For stdio every one goes to stdout; over
/// HTTP each request has its own reply stream, and a session its GET stream.
pub type Outbound = mpsc::Sender<Value>;

/// What the host declared when it opened its 2025-era session.
#[derive(Debug, Clone, Default)]
pub struct Declared {
    pub version: Option<String>,
    /// `clientInfo` as the host sent it.
    pub client_info: Value,
    pub client_name: Option<String>,
    pub capabilities: Value,
}

/// The answer to one request the proxy sent the host.
pub type Answer = Result<Value, ErrorObject>;

pub struct Host {
    declared: Mutex<Declared>,
    /// Where messages that belong to no request go (stdout; an HTTP session's GET stream).
    link: Mutex<Option<Outbound>>,
    asks: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
    next_ask: AtomicU64,
    pub(super) inflight: Arc<InFlight>,
    created: Mutex<Vec<TaskId>>,
}

/// One host request being served.
pub struct Ctx {
    pub proxy: Arc<Proxy>,
    pub host: Arc<Host>,
    pub method: String,
    pub params: Value,
    pub out: Outbound,
    /// Fires when the host cancels the request.
    pub cancel: CancellationToken,
    pub era: HostEra,
    /// Who the host says it is (sanitized), shown as who started its tasks.
    pub client_name: Option<String>,
    /// What the host can answer: its declared (or per-request) client capabilities.
    pub caps: Value,
}

/// `None`: no response (the host cancelled the request).
pub type Reply = Option<Answer>;

impl Ctx {
    /// The progress token the host gave, if any.
    pub fn progress_token(&self) -> Option<Value> {
        meta(&self.params)
            .and_then(|m| m.get("progressToken"))
            .filter(|t| t.is_string() || t.is_number())
            .cloned()
    }

    /// Whether the host can take a server-to-client request for `method`; 2026-07-28
    /// hosts take none (that era has no such requests).
    pub fn can_answer(&self, method: &str, params: &Value) -> bool {
        self.era != HostEra::Modern && takes(&self.caps, method, params)
    }
}

/// Whether client capabilities `caps` take a server request for `method` (`params` of an
/// elicitation say its mode).
pub fn takes(caps: &Value, method: &str, params: &Value) -> bool {
    match method {
        "elicitation/create" => match caps.get("elicitation").filter(|e| e.is_object()) {
            Some(e) => {
                params.get("mode").and_then(Value::as_str) != Some("url") || e.get("url").is_some()
            }
            None => false,
        },
        "sampling/createMessage" => caps.get("sampling").is_some_and(Value::is_object),
        "roots/list" => caps.get("roots").is_some_and(Value::is_object),
        _ => false,
    }
}

fn sanitized_name(info: Option<&Value>) -> Option<String> {
    info.and_then(|i| i.get("name"))
        .and_then(Value::as_str)
        .map(|n| crate::sanitize::sanitize_line(n, 64))
        .filter(|n| !n.is_empty())
}

impl Host {
    pub fn new(link: Option<Outbound>) -> Host {
        Host {
            declared: Mutex::new(Declared::default()),
            link: Mutex::new(link),
            asks: Mutex::new(HashMap::new()),
            next_ask: AtomicU64::new(1),
            inflight: Arc::new(InFlight::default()),
            created: Mutex::new(Vec::new()),
        }
    }

    pub fn declared(&self) -> Declared {
        self.declared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// What an `initialize` request declares about the host's session.
    fn declare(&self, params: &Value) {
        let requested = params.get("protocolVersion").and_then(Value::as_str);
        *self.declared.lock().unwrap_or_else(|e| e.into_inner()) = Declared {
            version: Some(era::negotiate(requested)),
            client_info: params.get("clientInfo").cloned().unwrap_or(Value::Null),
            client_name: sanitized_name(params.get("clientInfo")),
            capabilities: params
                .get("capabilities")
                .cloned()
                .unwrap_or_else(|| json!({})),
        };
    }

    /// Use `out` for messages that belong to no request (an HTTP session's GET stream).
    pub fn set_link(&self, out: Option<Outbound>) {
        *self.link.lock().unwrap_or_else(|e| e.into_inner()) = out;
    }

    /// Where a message that belongs to no request goes: the session link, else the reply
    /// stream of the newest request in flight.
    pub fn link(&self) -> Option<Outbound> {
        let link = self.link.lock().unwrap_or_else(|e| e.into_inner()).clone();
        link.filter(|l| !l.is_closed())
            .or_else(|| self.inflight.newest())
    }

    /// Remember a task this host started (its `tasks/list`).
    pub fn created_task(&self, id: TaskId) {
        let mut created = self.created.lock().unwrap_or_else(|e| e.into_inner());
        if !created.contains(&id) {
            created.push(id);
        }
    }

    pub fn created(&self) -> Vec<TaskId> {
        self.created
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Send the host a request on `out`; its answer comes on the receiver.
    pub async fn ask(
        &self,
        out: &Outbound,
        method: &str,
        params: Value,
    ) -> Option<(RequestId, oneshot::Receiver<Answer>)> {
        let n = self.next_ask.fetch_add(1, Ordering::Relaxed);
        let id = RequestId::Str(format!("taskrail-{n}"));
        let (tx, rx) = oneshot::channel();
        self.asks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_string(), tx);
        if out
            .send(jsonrpc::request(&id, method, params))
            .await
            .is_err()
        {
            self.asks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id.to_string());
            return None;
        }
        Some((id, rx))
    }

    /// Take a request back: the host is told with `notifications/cancelled`.
    pub async fn withdraw(&self, out: &Outbound, id: &RequestId, reason: &str) {
        let was_open = self
            .asks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id.to_string())
            .is_some();
        if was_open {
            let note = jsonrpc::notification(
                "notifications/cancelled",
                json!({ "requestId": id.to_value(), "reason": reason }),
            );
            let _ = out.send(note).await;
        }
    }

    fn answered(&self, id: &Value, outcome: Answer) {
        let key = match RequestId::from_value(id) {
            Some(id) => id.to_string(),
            None => return,
        };
        let waiter = self
            .asks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
        match waiter {
            Some(w) => {
                let _ = w.send(outcome);
            }
            None => tracing::debug!("an answer for no open request of ours"),
        }
    }

    /// Handle one message from the host; replies go to `out`.
    pub fn handle(self: &Arc<Self>, proxy: &Arc<Proxy>, msg: Value, out: Outbound) {
        let raw_id = msg.get("id").cloned();
        match Incoming::classify(msg) {
            Ok(Incoming::Request { id, method, params }) => {
                if method == "initialize" {
                    // Before anything else is served: requests that follow it see the session.
                    self.declare(&params);
                }
                let serving = self.inflight.begin(&id, out.clone());
                let cancel = serving.token.clone();
                let ctx = self.context(proxy.clone(), method, params, out.clone(), cancel);
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
                "notifications/cancelled" => self.inflight.cancel(&params),
                _ => {
                    let proxy = proxy.clone();
                    tokio::spawn(async move {
                        super::forward::notification(&proxy, &method, params).await;
                    });
                }
            },
            Ok(Incoming::Response { id, outcome }) => self.answered(&id, outcome),
            Err(e) => {
                tracing::debug!("a malformed message from the host: {e}");
                if let Some(id) = raw_id.as_ref().and_then(RequestId::from_value) {
                    let msg =
                        error_message(&id, rpc_error(-32600, format!("invalid request: {e}")));
                    let out = out.clone();
                    tokio::spawn(async move {
                        let _ = out.send(msg).await;
                    });
                }
            }
        }
    }

    fn context(
        self: &Arc<Self>,
        proxy: Arc<Proxy>,
        method: String,
        params: Value,
        out: Outbound,
        cancel: CancellationToken,
    ) -> Ctx {
        let declared = self.declared();
        let m = meta(&params);
        let modern = method == "server/discover"
            || m.is_some_and(|m| m.contains_key("io.modelcontextprotocol/protocolVersion"));
        let (era, client_name, caps) = if modern {
            (
                HostEra::Modern,
                sanitized_name(m.and_then(|m| m.get("io.modelcontextprotocol/clientInfo"))),
                m.and_then(|m| m.get("io.modelcontextprotocol/clientCapabilities"))
                    .cloned()
                    .unwrap_or_else(|| json!({})),
            )
        } else {
            (
                HostEra::Legacy(era::negotiate(declared.version.as_deref())),
                declared.client_name.clone(),
                declared.capabilities.clone(),
            )
        };
        Ctx {
            proxy,
            host: self.clone(),
            method,
            params,
            out,
            cancel,
            era,
            client_name,
            caps,
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
    match ctx.method.as_str() {
        "initialize" => Some(initialize(&ctx).await),
        "server/discover" => Some(discover(&ctx).await),
        "ping" => ping(&ctx).await,
        // Push subscriptions would need the proxy to hold streams open for the host.
        "subscriptions/listen" => Some(Err(rpc_error(
            -32601,
            "subscriptions/listen is not offered by this proxy: poll tasks/get",
        ))),
        "tools/call" => super::call::tools_call(&ctx).await,
        "tasks/get" | "tasks/result" | "tasks/cancel" | "tasks/list" | "tasks/update" => {
            super::tasks::serve(&ctx).await
        }
        _ => super::forward::request(&ctx).await,
    }
}

async fn initialize(ctx: &Ctx) -> Answer {
    let up = ctx.proxy.upstream().await?.info();
    let version = ctx.host.declared().version.unwrap_or_default();
    Ok(era::initialize_result(&up, &version))
}

/// `ping` reaches a 2025-era upstream; a 2026-07-28 one has no `ping`, so it is answered here.
async fn ping(ctx: &Ctx) -> Reply {
    let upstream = match ctx.proxy.upstream().await {
        Ok(c) => c,
        Err(e) => return Some(Err(e)),
    };
    if upstream.era() == crate::mcp::Era::Legacy {
        return super::forward::request(ctx).await;
    }
    Some(Ok(era::shape_result(json!({}), &ctx.era)))
}

async fn discover(ctx: &Ctx) -> Answer {
    let up = ctx.proxy.upstream().await?.info();
    Ok(era::discover_result(&up))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_client_takes_a_server_request() {
        let caps = json!({ "elicitation": {}, "sampling": {} });
        assert!(takes(
            &caps,
            "elicitation/create",
            &json!({ "message": "?" })
        ));
        assert!(!takes(
            &caps,
            "elicitation/create",
            &json!({ "mode": "url" })
        ));
        assert!(takes(&caps, "sampling/createMessage", &json!({})));
        assert!(!takes(&caps, "roots/list", &json!({})));
        assert!(!takes(&json!({}), "elicitation/create", &json!({})));
    }
}
