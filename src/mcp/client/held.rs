//! Requests the server holds open until it has an answer (legacy `tasks/result`). A
//! 2025-11-25 server keeps handling such a request after its client went away, and the
//! handler takes the messages queued for the task — an input request meant for the next
//! client of the session is then sent to a closed stream and lost. So a client that lets go
//! of a session cancels the requests it still holds (`notifications/cancelled`), and holds
//! no new ones.
//!
//! Must not log request ids together with task ids.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::json;

use super::McpClient;
use crate::mcp::error::McpError;
use crate::mcp::jsonrpc::{self, RequestId};
use crate::mcp::types::Era;

/// How long one cancellation may take when letting go (the process may be exiting).
const CANCEL_WAIT: Duration = Duration::from_secs(2);

/// The held requests of one client.
#[derive(Default)]
pub(super) struct Held {
    inner: Mutex<HeldInner>,
}

#[derive(Default)]
struct HeldInner {
    ids: HashSet<RequestId>,
    /// The client let go of its session: no request may be held any more.
    released: bool,
}

/// Removes a held request from the registry when it ends (answered, failed or dropped).
pub(super) struct HeldGuard<'a> {
    held: &'a Held,
    id: RequestId,
}

impl Drop for HeldGuard<'_> {
    fn drop(&mut self) {
        self.held.lock().ids.remove(&self.id);
    }
}

impl Held {
    fn lock(&self) -> std::sync::MutexGuard<'_, HeldInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Register request `id` as held until the guard drops; refused once released.
    pub(super) fn hold(&self, id: &RequestId) -> Result<HeldGuard<'_>, McpError> {
        let mut inner = self.lock();
        if inner.released {
            return Err(McpError::Transport(
                "this connection let go of its session".into(),
            ));
        }
        inner.ids.insert(id.clone());
        Ok(HeldGuard {
            held: self,
            id: id.clone(),
        })
    }

    /// Stop holding requests; returns the ones still open.
    fn release(&self) -> Vec<RequestId> {
        let mut inner = self.lock();
        inner.released = true;
        inner.ids.drain().collect()
    }
}

impl McpClient {
    /// Cancel every request this client holds open in a legacy session, and hold no more.
    pub(super) async fn cancel_held(&self) {
        let legacy = self
            .info
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|i| i.era == Era::Legacy);
        let open = self.held.release();
        if !legacy {
            return;
        }
        for id in open {
            let note = jsonrpc::notification(
                "notifications/cancelled",
                json!({ "requestId": id.to_value(), "reason": "the client let go of the session" }),
            );
            let sent = tokio::time::timeout(
                CANCEL_WAIT,
                self.transport
                    .send_message(&note, Some("notifications/cancelled")),
            )
            .await;
            if !matches!(sent, Ok(Ok(()))) {
                tracing::debug!("could not cancel a held request when letting go");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_registry_holds_nothing_more() {
        let held = Held::default();
        let a = RequestId::Num(7);
        let guard = held.hold(&a).unwrap();
        let b = RequestId::Num(8);
        drop(held.hold(&b).unwrap());
        assert_eq!(held.lock().ids.len(), 1, "a finished request is forgotten");
        assert_eq!(held.release(), vec![a]);
        drop(guard);
        assert!(held.hold(&RequestId::Num(9)).is_err());
        assert!(held.lock().ids.is_empty());
    }
}
