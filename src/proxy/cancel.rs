//! Cancel, host side: the host's requests in flight, each with a token its
//! `notifications/cancelled` fires. What serves the request reacts to the token: a forwarded
//! request is abandoned upstream, a task the request waits for gets `tasks/cancel` (see
//! `call.rs` and `follow.rs`; a cancel from the dashboard reaches a waiting host there too).
//!
//! Owns: the in-flight table. Must not send anything itself.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::host::Outbound;
use crate::mcp::jsonrpc::RequestId;

struct Entry {
    id: RequestId,
    token: CancellationToken,
    out: Outbound,
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
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                serial,
                Entry {
                    id: id.clone(),
                    token: token.clone(),
                    out,
                },
            );
        Serving {
            table: self.clone(),
            serial,
            token,
        }
    }

    /// `notifications/cancelled` from the host: fire the token of the request it names.
    pub fn cancel(&self, params: &Value) {
        let Some(id) = params.get("requestId").and_then(RequestId::from_value) else {
            return;
        };
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        for e in entries.values().filter(|e| e.id == id) {
            tracing::debug!(request = %id, "the host cancelled a request");
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

    /// Whether any request is being served.
    pub fn busy(&self) -> bool {
        !self
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
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
        assert!(table.busy());
        drop((a, b));
        assert!(!table.busy());
        assert!(table.newest().is_none());
    }
}
