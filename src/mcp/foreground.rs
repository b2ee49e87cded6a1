//! Foreground input requests of a legacy server: an `elicitation/create` or
//! `sampling/createMessage` that belongs to none of our tasks (asked on a call's reply
//! stream or the session stream, or run as a task hosted here), kept until answered.
//!
//! Owns: the pending table, keyed by keys this client mints. Must not do I/O.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::jsonrpc::RequestId;
use super::types::InputRequest;

/// Where the answer goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplyTo {
    /// A JSON-RPC response to the server's request.
    Rpc(RequestId),
    /// The result of a task hosted on this client (the server fetches it).
    Hosted(String),
}

/// One waiting request.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    pub reply: ReplyTo,
    pub request: InputRequest,
}

#[derive(Default)]
pub struct ForegroundRequests {
    by_key: Mutex<HashMap<String, Waiting>>,
    next: AtomicU64,
}

/// At most this many foreground requests wait at once; more are refused.
pub const MAX_WAITING: usize = 256;

impl ForegroundRequests {
    /// Keep a request; returns its key, or `None` when too many wait already.
    pub fn insert(&self, reply: ReplyTo, request: InputRequest) -> Option<String> {
        let mut map = self.by_key.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= MAX_WAITING {
            return None;
        }
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let key = format!("input-{n}");
        map.insert(key.clone(), Waiting { reply, request });
        Some(key)
    }

    /// Remove a request to answer it.
    pub fn take(&self, key: &str) -> Option<Waiting> {
        self.by_key
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key)
    }

    /// The key of the request behind hosted task `task_id`, removed.
    pub fn take_hosted(&self, task_id: &str) -> Option<String> {
        let mut map = self.by_key.lock().unwrap_or_else(|e| e.into_inner());
        let key = map
            .iter()
            .find(|(_, w)| w.reply == ReplyTo::Hosted(task_id.to_string()))
            .map(|(k, _)| k.clone())?;
        map.remove(&key);
        Some(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_wait_under_fresh_keys_until_taken() {
        let f = ForegroundRequests::default();
        let req = InputRequest {
            method: "elicitation/create".into(),
            params: json!({}),
            reply_to: None,
        };
        let a = f
            .insert(ReplyTo::Rpc(RequestId::Num(1)), req.clone())
            .unwrap();
        let b = f.insert(ReplyTo::Hosted("t1".into()), req.clone()).unwrap();
        assert_ne!(a, b);
        assert_eq!(f.take(&a).unwrap().reply, ReplyTo::Rpc(RequestId::Num(1)));
        assert!(f.take(&a).is_none());
        assert_eq!(f.take_hosted("t1"), Some(b.clone()));
        assert!(f.take(&b).is_none());
        for i in 0..MAX_WAITING {
            assert!(
                f.insert(ReplyTo::Rpc(RequestId::Num(i as i64)), req.clone())
                    .is_some()
            );
        }
        assert!(f.insert(ReplyTo::Rpc(RequestId::Num(-1)), req).is_none());
    }
}
