//! The demo's out-of-band sign-in pages for URL-mode elicitation: `sign_in` asks the
//! client to open `/sign-in/<token>`; a visit of that page (by the person's browser)
//! completes the sign-in and wakes the waiting tool. Tokens are random and single-use.
//!
//! Owns: the token table and the page text. Must not touch tasks (the tool does).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use tokio::sync::oneshot;

/// At most this many sign-ins wait at once (older ones are dropped).
const MAX_PENDING: usize = 1024;

struct Pending {
    task_id: String,
    visited: Option<oneshot::Sender<()>>,
}

#[derive(Default)]
pub struct SignIns {
    /// `http://127.0.0.1:PORT`, set once the server is bound.
    base: OnceLock<String>,
    pending: Mutex<HashMap<String, Pending>>,
}

impl SignIns {
    pub fn set_base(&self, base: String) {
        let _ = self.base.set(base);
    }

    /// A new sign-in for `task_id`: its token, page URL, and a receiver that fires on
    /// the page's first visit.
    pub fn open(&self, task_id: &str) -> (String, String, oneshot::Receiver<()>) {
        let token = uuid::Uuid::new_v4().simple().to_string();
        let (tx, rx) = oneshot::channel();
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        if pending.len() >= MAX_PENDING
            && let Some(k) = pending.keys().next().cloned()
        {
            pending.remove(&k);
        }
        pending.insert(
            token.clone(),
            Pending {
                task_id: task_id.to_string(),
                visited: Some(tx),
            },
        );
        let base = self
            .base
            .get()
            .map(String::as_str)
            .unwrap_or("http://127.0.0.1");
        let url = format!("{base}/sign-in/{token}");
        (token, url, rx)
    }

    /// The page was visited: complete the sign-in once. Returns the task it belongs to.
    pub fn visit(&self, token: &str) -> Option<String> {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let p = pending.get_mut(token)?;
        let tx = p.visited.take()?;
        let _ = tx.send(());
        Some(p.task_id.clone())
    }

    /// Forget a sign-in (its tool ended).
    pub fn close(&self, token: &str) {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(token);
    }
}

/// The page a browser sees.
pub fn page(done: bool) -> String {
    let body = if done {
        "<h1>Signed in</h1><p>You can close this page and return to taskrail.</p>"
    } else {
        "<h1>Unknown or used sign-in link</h1>"
    };
    format!(
        "<!doctype html><html><head><title>taskrail demo sign-in</title></head><body>{body}</body></html>"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_visit_completes_the_sign_in_once() {
        let s = SignIns::default();
        s.set_base("http://127.0.0.1:9".into());
        let (token, url, rx) = s.open("t1");
        assert_eq!(url, format!("http://127.0.0.1:9/sign-in/{token}"));
        assert_eq!(s.visit(&token), Some("t1".into()));
        assert_eq!(s.visit(&token), None, "single use");
        rx.await.unwrap();
        assert_eq!(s.visit("nope"), None);
        s.close(&token);
        assert_eq!(s.visit(&token), None);
    }
}
