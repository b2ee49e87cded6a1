//! Cancel, host side: the host's requests in flight, each with a token its
//! `notifications/cancelled` fires. What serves the request reacts to the token: a forwarded
//! request is abandoned upstream, a task the request waits for gets `tasks/cancel` (see
//! `call.rs` and `follow.rs`; a cancel from the dashboard reaches a waiting host there too).
//!
//! A cancel says why: a host whose own timeout fired (the SDKs' `-32001 Request timed out`)
//! gave up waiting, which is not a wish to stop the work ([`Why::gave_up`]).
//!
//! Owns: the in-flight table and the reading of a cancel's reason. Must not send anything
//! itself.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::mcp::jsonrpc::RequestId;

/// Messages to the host (JSON-RPC, in order). For stdio every one goes to stdout; over
/// HTTP each request has its own reply stream, and a session its GET stream.
pub type Outbound = mpsc::Sender<Value>;

struct Entry {
    id: RequestId,
    token: CancellationToken,
    out: Outbound,
    why: Why,
}

/// Why the host cancelled a request: its `notifications/cancelled` reason (bounded,
/// sanitized), set once before the token fires.
#[derive(Clone, Default, Debug)]
pub struct Why(Arc<OnceLock<String>>);

/// Longest cancel reason kept.
const MAX_REASON: usize = 300;

impl Why {
    pub fn reason(&self) -> Option<&str> {
        self.0.get().map(String::as_str)
    }

    fn set(&self, reason: &str) {
        let _ = self
            .0
            .set(crate::sanitize::sanitize_line(reason, MAX_REASON));
    }

    #[cfg(test)]
    pub fn set_for_test(&self, reason: &str) {
        self.set(reason);
    }

    /// The host gave up waiting (its timeout fired) rather than asked to stop the work.
    pub fn gave_up(&self) -> bool {
        self.reason().is_some_and(is_timeout)
    }
}

/// Whether a cancel reason says the sender timed out (the SDKs' wordings: `-32001`,
/// "Request timed out", "timeout").
pub fn is_timeout(reason: &str) -> bool {
    let r = reason.to_ascii_lowercase();
    r.contains("-32001") || r.contains("timed out") || r.contains("timeout")
}

/// The host's requests being served, in the order they came.
#[derive(Default)]
pub struct InFlight {
    entries: Mutex<HashMap<u64, Entry>>,
    next: AtomicU64,
}

/// One request in flight; ends when dropped.
pub struct Serving {
    table: Arc<InFlight>,
    serial: u64,
    pub token: CancellationToken,
    pub why: Why,
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.table
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.serial);
    }
}

impl InFlight {
    /// A request starts being served; its replies go to `out`.
    pub fn begin(self: &Arc<Self>, id: &RequestId, out: Outbound) -> Serving {
        let serial = self.next.fetch_add(1, Ordering::Relaxed);
        let token = CancellationToken::new();
        let why = Why::default();
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                serial,
                Entry {
                    id: id.clone(),
                    token: token.clone(),
                    out,
                    why: why.clone(),
                },
            );
        Serving {
            table: self.clone(),
            serial,
            token,
            why,
        }
    }

    /// `notifications/cancelled` from the host: fire the token of the request it names.
    pub fn cancel(&self, params: &Value) {
        let Some(id) = params.get("requestId").and_then(RequestId::from_value) else {
            return;
        };
        let reason = params
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("cancelled by the client");
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        for e in entries.values().filter(|e| e.id == id) {
            tracing::debug!(request = %id, "the host cancelled a request");
            e.why.set(reason);
            e.token.cancel();
        }
    }

    /// The reply stream of the newest request still open.
    pub fn newest(&self) -> Option<Outbound> {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .iter()
            .filter(|(_, e)| !e.out.is_closed())
            .max_by_key(|(serial, _)| **serial)
            .map(|(_, e)| e.out.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_cancel_fires_the_named_request_only() {
        let table = Arc::new(InFlight::default());
        let (tx, _rx) = tokio::sync::mpsc::channel(1);
        let a = table.begin(&RequestId::Num(1), tx.clone());
        let b = table.begin(&RequestId::Str("x".into()), tx);
        table.cancel(&json!({ "requestId": 1, "reason": "stop" }));
        assert!(a.token.is_cancelled());
        assert!(!b.token.is_cancelled());
        assert_eq!(a.why.reason(), Some("stop"));
        drop((a, b));
        assert!(table.newest().is_none());
    }

    #[test]
    fn a_timeout_is_told_from_a_wish_to_stop() {
        for r in [
            "McpError: MCP error -32001: Request timed out",
            "Request 'tools/call' timed out",
            "client TIMEOUT",
        ] {
            assert!(is_timeout(r), "{r}");
        }
        for r in ["user cancelled", "cancelled by the test host", "AbortError"] {
            assert!(!is_timeout(r), "{r}");
        }
        let table = Arc::new(InFlight::default());
        let (tx, _rx) = tokio::sync::mpsc::channel(1);
        let a = table.begin(&RequestId::Num(1), tx);
        assert!(!a.why.gave_up());
        table.cancel(&json!({ "requestId": 1, "reason": "MCP error -32001: Request timed out" }));
        assert!(a.token.is_cancelled() && a.why.gave_up());
    }
}
