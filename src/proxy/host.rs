//! One host session: what the host declared (version, client info, capabilities), the
//! requests the proxy sends it (input it may answer) and their answers, the host's own
//! requests in flight, and the context each of its requests is served in.
//!
//! Owns: the host side of the JSON-RPC conversation, as data. Must not route a message or
//! talk to the upstream itself (`dispatch.rs` routes; forwarding, calls and tasks serve).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::cancel::InFlight;
use super::era::{self, HostEra};
use super::{Proxy, meta};
use crate::mcp::jsonrpc::{self, RequestId};
use crate::mcp::{ErrorObject, TaskId};

pub use super::cancel::Outbound;

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

/// Who a host is: the pipe's one host (stdio), or the host a listener token names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Principal {
    /// The token's host name; `None` for the stdio host (the pipe is its authentication).
    pub token: Option<String>,
}

/// Messages to a host's session link dropped in a row (the host does not read) before
/// the link is ended.
const MAX_DROPS: u64 = 256;

/// Tasks a host is remembered to own (the oldest are forgotten past this).
const MAX_CREATED: usize = 4096;

/// Longest `clientInfo` name or version kept.
const MAX_INFO: usize = 200;

/// Largest declared capabilities kept as given (larger ones keep their kinds only).
const MAX_CAPS: usize = 16 * 1024;

pub struct Host {
    pub principal: Principal,
    declared: Mutex<Declared>,
    /// Where messages that belong to no request go (stdout; an HTTP session's GET stream).
    link: Mutex<Option<Outbound>>,
    asks: Mutex<HashMap<String, oneshot::Sender<Answer>>>,
    next_ask: AtomicU64,
    pub(super) inflight: Arc<InFlight>,
    created: Mutex<std::collections::VecDeque<TaskId>>,
    /// The host asked for log messages (`logging/setLevel`).
    pub(super) wants_logs: AtomicBool,
    /// Messages dropped in a row because its link was full.
    drops: AtomicU64,
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
    /// Why it did, once it has.
    pub why: super::cancel::Why,
    /// When the request came.
    pub began: std::time::Instant,
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

/// `clientInfo` as kept: name, version and title, each bounded; nothing else.
fn bounded_info(info: Option<&Value>) -> Value {
    let Some(info) = info.and_then(Value::as_object) else {
        return Value::Null;
    };
    let mut out = serde_json::Map::new();
    for key in ["name", "version", "title"] {
        if let Some(v) = info.get(key).and_then(Value::as_str) {
            let kept: String = v.chars().take(MAX_INFO).collect();
            out.insert(key.into(), Value::String(kept));
        }
    }
    Value::Object(out)
}

/// Declared capabilities as kept: as given when small, else only which kinds were declared.
fn bounded_caps(caps: Option<&Value>) -> Value {
    let Some(caps) = caps.and_then(Value::as_object) else {
        return json!({});
    };
    let size = serde_json::to_string(caps).map_or(usize::MAX, |s| s.len());
    if size <= MAX_CAPS {
        return Value::Object(caps.clone());
    }
    let kinds = ["elicitation", "sampling", "roots", "tasks"];
    Value::Object(
        caps.iter()
            .filter(|(k, v)| kinds.contains(&k.as_str()) && v.is_object())
            .map(|(k, _)| (k.clone(), json!({})))
            .collect(),
    )
}

impl Host {
    pub fn new(link: Option<Outbound>, principal: Principal) -> Host {
        Host {
            principal,
            declared: Mutex::new(Declared::default()),
            link: Mutex::new(link),
            asks: Mutex::new(HashMap::new()),
            next_ask: AtomicU64::new(1),
            inflight: Arc::new(InFlight::default()),
            created: Mutex::new(std::collections::VecDeque::new()),
            wants_logs: AtomicBool::new(false),
            drops: AtomicU64::new(0),
        }
    }

    /// Who started a task this host asked for: the token's host name on a listener, else
    /// the name the host gave.
    pub fn started_by(&self, client_name: Option<&str>) -> Option<String> {
        self.principal
            .token
            .clone()
            .or_else(|| client_name.map(str::to_string))
    }

    /// Whether this host may act on `task` (it created it, or was attached to it).
    pub fn owns(&self, task: &TaskId) -> bool {
        self.created
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(task)
    }

    /// Send a message that belongs to no request without waiting: a host whose link is
    /// full loses it, and one that stays full has its link ended.
    pub fn notify(&self, msg: Value) {
        let Some(link) = self.link() else { return };
        match link.try_send(msg) {
            Ok(()) => {
                self.drops.store(0, Ordering::Relaxed);
            }
            Err(mpsc::error::TrySendError::Full(_)) => {
                let n = self.drops.fetch_add(1, Ordering::Relaxed) + 1;
                if n == 1 {
                    tracing::warn!("a client does not read its stream: dropping its notifications");
                }
                if n >= MAX_DROPS {
                    tracing::warn!("a client read nothing of {n} notifications: ending its stream");
                    self.set_link(None);
                }
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }

    pub fn declared(&self) -> Declared {
        self.declared
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// What an `initialize` request declares about the host's session.
    pub(super) fn declare(&self, params: &Value) {
        let requested = params.get("protocolVersion").and_then(Value::as_str);
        let requested = requested.map(|v| &v[..v.len().min(64)]);
        *self.declared.lock().unwrap_or_else(|e| e.into_inner()) = Declared {
            version: Some(era::negotiate(requested)),
            client_info: bounded_info(params.get("clientInfo")),
            client_name: sanitized_name(params.get("clientInfo")),
            capabilities: bounded_caps(params.get("capabilities")),
        };
    }

    /// Use `out` for messages that belong to no request (an HTTP session's GET stream).
    pub fn set_link(&self, out: Option<Outbound>) {
        *self.link.lock().unwrap_or_else(|e| e.into_inner()) = out;
    }

    /// Whether the host holds its session link open (an HTTP session's GET stream).
    pub fn has_open_link(&self) -> bool {
        self.link
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|l| !l.is_closed())
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
            if created.len() >= MAX_CREATED {
                created.pop_front();
            }
            created.push_back(id);
        }
    }

    pub fn created(&self) -> Vec<TaskId> {
        self.created
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect()
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

    pub(super) fn answered(&self, id: &Value, outcome: Answer) {
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

    /// The context one request of this host is served in.
    pub(super) fn context(
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
            why: Default::default(),
            began: std::time::Instant::now(),
            era,
            client_name,
            caps,
        }
    }
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
