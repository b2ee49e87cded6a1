//! The one owner of "a JSON-RPC message crossed": every transport (HTTP JSON and SSE
//! replies, listen and session streams, stdio, the proxy's host side) reports each message
//! it sends or receives to its [`WireTap`], which masks task ids (`mask`) and hands the
//! record to the NDJSON file of `--wire` (`file`) and, while the dashboard asks for it, to
//! the dashboard's wire view.
//!
//! Records hold no header at all (authorization, session ids and cookies travel in headers,
//! never in a record). A tap that nobody listens to costs one atomic load per message. Must
//! not block a transport or fail a request.

pub mod file;
pub mod mask;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

use super::jsonrpc::Incoming;
pub use file::FileSink;

/// Which way a message went, seen from this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    Send,
    Recv,
}

/// How a message travelled: to a server (`http` JSON bodies, `sse` event streams, `stdio`)
/// or to a host of the proxy (`host-http`, `host-stdio`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Carrier {
    Http,
    Sse,
    Stdio,
    HostHttp,
    HostStdio,
}

impl Carrier {
    pub fn as_str(self) -> &'static str {
        match self {
            Carrier::Http => "http",
            Carrier::Sse => "sse",
            Carrier::Stdio => "stdio",
            Carrier::HostHttp => "host-http",
            Carrier::HostStdio => "host-stdio",
        }
    }
}

/// One message that crossed, task ids already masked: one line of the `--wire` file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireRecord {
    /// RFC 3339, UTC.
    pub time: chrono::DateTime<chrono::Utc>,
    /// The server's id (its configured name, or its redacted address), made printable.
    pub server: String,
    pub direction: Direction,
    pub transport: Carrier,
    /// The JSON-RPC message (for the dashboard: a string holding its start when it is
    /// longer than [`VIEW_MESSAGE_BYTES`]).
    pub message: Value,
}

/// The largest message handed to the dashboard whole (the file gets every message whole).
pub const VIEW_MESSAGE_BYTES: usize = 16 * 1024;

/// Where this process's records go: the file of `--wire` and the dashboard's feed.
#[derive(Default)]
pub struct WireHub {
    file: Option<FileSink>,
    feed: Mutex<Option<mpsc::Sender<WireRecord>>>,
    /// The dashboard's wire view is open.
    watching: AtomicBool,
    known: Mutex<mask::KnownIds>,
}

impl WireHub {
    pub fn new(file: Option<FileSink>) -> Arc<WireHub> {
        Arc::new(WireHub {
            file,
            ..Default::default()
        })
    }

    /// The tap of one server (or of the hosts of a proxy in front of it).
    pub fn tap(self: &Arc<Self>, server: &str) -> WireTap {
        WireTap {
            hub: self.clone(),
            server: crate::sanitize::sanitize_line(server, 200).into(),
        }
    }

    /// The dashboard's feed: records go there while [`WireHub::set_watching`] is on or the
    /// file is written.
    pub fn set_feed(&self, tx: Option<mpsc::Sender<WireRecord>>) {
        *self.feed.lock().unwrap_or_else(|e| e.into_inner()) = tx;
    }

    pub fn set_watching(&self, on: bool) {
        self.watching.store(on, Ordering::Relaxed);
    }

    /// Whether `--wire` is writing.
    pub fn file_live(&self) -> bool {
        self.file.as_ref().is_some_and(FileSink::live)
    }

    fn feeding(&self) -> bool {
        self.watching.load(Ordering::Relaxed) || self.file_live()
    }

    /// Whether a message is wanted by anyone (the cheap check before any work).
    pub fn active(&self) -> bool {
        self.feeding()
    }

    /// Write what is queued for the file and stop its writer (at the end of the process).
    pub fn close(&self, wait: std::time::Duration) {
        if let Some(f) = &self.file {
            f.close(wait);
        }
    }

    fn record(&self, server: &str, direction: Direction, transport: Carrier, mut message: Value) {
        mask::mask(
            &mut message,
            &mut self.known.lock().unwrap_or_else(|e| e.into_inner()),
        );
        let rec = WireRecord {
            time: chrono::Utc::now(),
            server: server.to_string(),
            direction,
            transport,
            message,
        };
        let feed = self
            .feed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .filter(|_| self.feeding());
        if let Some(feed) = feed {
            let _ = feed.try_send(for_view(rec.clone()));
        }
        if let Some(file) = &self.file {
            file.push(rec);
        }
    }
}

/// A record fit for the dashboard's memory: a long message is kept as the start of its text.
fn for_view(mut rec: WireRecord) -> WireRecord {
    let text = serde_json::to_string(&rec.message).unwrap_or_default();
    if text.len() > VIEW_MESSAGE_BYTES {
        let mut end = VIEW_MESSAGE_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        rec.message = Value::String(format!("{}… ({} bytes)", &text[..end], text.len()));
    }
    rec
}

/// One server's view of the hub, carried in its connect options.
#[derive(Clone)]
pub struct WireTap {
    hub: Arc<WireHub>,
    server: Arc<str>,
}

impl std::fmt::Debug for WireTap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WireTap")
            .field("server", &self.server)
            .finish()
    }
}

impl WireTap {
    /// Whether anyone wants messages now.
    pub fn active(&self) -> bool {
        self.hub.active()
    }

    /// A message this process sent.
    pub fn sent(&self, transport: Carrier, msg: &Value) {
        if self.active() {
            self.hub
                .record(&self.server, Direction::Send, transport, msg.clone());
        }
    }

    /// A message this process received.
    pub fn received(&self, transport: Carrier, msg: &Value) {
        if self.active() {
            self.hub
                .record(&self.server, Direction::Recv, transport, msg.clone());
        }
    }

    /// A message received and already classified.
    pub fn received_incoming(&self, transport: Carrier, msg: &Incoming) {
        if self.active() {
            self.hub
                .record(&self.server, Direction::Recv, transport, msg.to_value());
        }
    }

    /// A message sent as one serialized line (stdio).
    pub fn sent_text(&self, transport: Carrier, line: &str) {
        if self.active() {
            let msg = serde_json::from_str(line).unwrap_or_else(|_| Value::String(line.into()));
            self.hub
                .record(&self.server, Direction::Send, transport, msg);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn nothing_is_recorded_unless_watched_and_records_are_masked() {
        let hub = WireHub::new(None);
        let (tx, mut rx) = mpsc::channel(8);
        hub.set_feed(Some(tx));
        let tap = hub.tap("demo\u{1b}[31m");
        tap.sent(
            Carrier::Http,
            &json!({"method": "tasks/get", "params": {"taskId": "abcdefgh12345"}}),
        );
        assert!(rx.try_recv().is_err(), "not watching: nothing recorded");
        hub.set_watching(true);
        tap.sent(
            Carrier::Http,
            &json!({"method": "tasks/get", "params": {"taskId": "abcdefgh12345"}}),
        );
        let rec = rx.try_recv().expect("a record");
        assert!(rec.server.starts_with("demo") && !rec.server.contains('\u{1b}'));
        assert_eq!(rec.direction, Direction::Send);
        assert_eq!(rec.message["params"]["taskId"], "abcd…");
        let line = serde_json::to_value(&rec).unwrap();
        assert_eq!(line["transport"], "http");
        assert_eq!(line["direction"], "send");
        assert!(chrono::DateTime::parse_from_rfc3339(line["time"].as_str().unwrap()).is_ok());
    }

    #[test]
    fn a_long_message_reaches_the_view_cut() {
        let rec = WireRecord {
            time: chrono::Utc::now(),
            server: "s".into(),
            direction: Direction::Recv,
            transport: Carrier::Sse,
            message: json!({ "text": "x".repeat(VIEW_MESSAGE_BYTES * 2) }),
        };
        let cut = for_view(rec);
        let Value::String(s) = cut.message else {
            panic!("cut to text")
        };
        assert!(s.len() < VIEW_MESSAGE_BYTES + 64);
        assert!(s.ends_with("bytes)"));
    }
}
