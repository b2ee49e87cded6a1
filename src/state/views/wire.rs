//! The wire view's data: the raw JSON-RPC messages exchanged with the servers (and a
//! proxy's hosts), as the wire hub reports them, kept in a bounded ring per server, and the
//! view's own state (server, filter, pause, selection) with what it shows. Records arrive
//! as `Msg::Wire` with task ids already masked; their text is made safe here, once. Pure
//! data: imports nothing of its siblings (the view's transitions are `state::wire`'s, its
//! drawing `ui::wire`).

use std::collections::{BTreeMap, VecDeque};

use serde_json::Value;
use tui_input::Input;

pub use crate::mcp::wire::{Carrier, Direction, WireRecord};
use crate::sanitize::{json_line, sanitize_line};
use crate::state::widths;

/// Messages kept per server (the oldest go first).
pub const RING: usize = 500;

/// Servers kept (the records of more are dropped: their names come from this process's
/// own configuration, so this is only a backstop).
pub const MAX_SERVERS: usize = 64;

/// Longest one-line summary kept per message (characters).
const SUMMARY_CHARS: usize = 400;

/// One message, ready to list: its text made safe for the terminal once, on arrival.
#[derive(Debug, Clone, PartialEq)]
pub struct WireEntry {
    /// Arrival order across all servers.
    pub seq: u64,
    pub time: chrono::DateTime<chrono::Utc>,
    pub server: String,
    pub direction: Direction,
    pub transport: Carrier,
    /// The method, or `result #id` / `error #id` for a response (sanitized).
    pub method: String,
    /// The message on one line (sanitized, cut).
    pub summary: String,
    pub message: Value,
}

/// Every server's ring.
#[derive(Debug, Default)]
pub struct WireLog {
    rings: BTreeMap<String, VecDeque<WireEntry>>,
    next_seq: u64,
}

impl WireLog {
    /// Take one record (the server's oldest goes when its ring is full).
    pub fn push(&mut self, rec: WireRecord) {
        let server = sanitize_line(&rec.server, widths::SERVER_REF);
        if !self.rings.contains_key(&server) && self.rings.len() >= MAX_SERVERS {
            return;
        }
        self.next_seq += 1;
        let entry = WireEntry {
            seq: self.next_seq,
            time: rec.time,
            method: method_of(&rec.message),
            summary: sanitize_line(&json_line(body_of(&rec.message)), SUMMARY_CHARS),
            server: server.clone(),
            direction: rec.direction,
            transport: rec.transport,
            message: rec.message,
        };
        let ring = self.rings.entry(server).or_default();
        if ring.len() >= RING {
            ring.pop_front();
        }
        ring.push_back(entry);
    }

    /// The servers with messages, by name.
    pub fn servers(&self) -> Vec<&str> {
        self.rings.keys().map(String::as_str).collect()
    }

    /// The newest message's number (0: none yet).
    pub fn last_seq(&self) -> u64 {
        self.next_seq
    }

    /// `server`'s messages (all servers' for `None`), newest first.
    pub fn newest_first(&self, server: Option<&str>) -> Vec<&WireEntry> {
        let mut out: Vec<&WireEntry> = match server {
            Some(s) => self.rings.get(s).into_iter().flatten().collect(),
            None => self.rings.values().flatten().collect(),
        };
        out.sort_by_key(|e| std::cmp::Reverse(e.seq));
        out
    }
}

/// What a list line shows after the method: the params, result or error (the envelope is
/// in the method column already).
fn body_of(msg: &Value) -> &Value {
    ["params", "result", "error"]
        .iter()
        .find_map(|k| msg.get(*k))
        .unwrap_or(msg)
}

/// `tools/call`, `result #3`, `error #3`.
fn method_of(msg: &Value) -> String {
    if let Some(m) = msg.get("method").and_then(Value::as_str) {
        return sanitize_line(m, widths::METHOD_IN_VIEW);
    }
    let id = msg.get("id").map(|i| match i {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    });
    let kind = if msg.get("error").is_some() {
        "error"
    } else if msg.get("result").is_some() {
        "result"
    } else {
        "message"
    };
    match id {
        Some(id) => sanitize_line(&format!("{kind} #{id}"), widths::METHOD_IN_VIEW),
        None => kind.to_string(),
    }
}

/// The wire view's own state (the messages are in [`State::wire`]).
#[derive(Debug, Clone, Default)]
pub struct WireView {
    /// One server's messages, or every server's (`None`).
    pub server: Option<String>,
    /// Case-insensitive words, each found in the message's method, server or text.
    pub filter: Input,
    /// The filter line has the keys.
    pub editing: bool,
    /// Paused: only messages up to this number are shown (newer ones keep arriving).
    pub paused_at: Option<u64>,
    /// Position in the shown list (0 = newest).
    pub selected: usize,
}

impl WireView {
    pub fn for_server(server: Option<String>) -> WireView {
        WireView {
            server,
            ..Default::default()
        }
    }
}

/// The messages the view shows: its server's, up to the pause, through the filter,
/// newest first.
pub fn shown<'a>(log: &'a WireLog, view: &WireView) -> Vec<&'a WireEntry> {
    let words: Vec<String> = view
        .filter
        .value()
        .split_whitespace()
        .map(str::to_lowercase)
        .collect();
    log.newest_first(view.server.as_deref())
        .into_iter()
        .filter(|e| view.paused_at.is_none_or(|p| e.seq <= p))
        .filter(|e| {
            if words.is_empty() {
                return true;
            }
            let text = format!(
                "{} {} {} {}",
                e.method,
                e.server,
                e.transport.as_str(),
                e.summary
            )
            .to_lowercase();
            words.iter().all(|w| text.contains(w.as_str()))
        })
        .collect()
}

/// Messages that arrived for the view's server since it was paused.
pub fn arrived_since_pause(log: &WireLog, view: &WireView) -> usize {
    let Some(p) = view.paused_at else { return 0 };
    log.newest_first(view.server.as_deref())
        .iter()
        .take_while(|e| e.seq > p)
        .count()
}
