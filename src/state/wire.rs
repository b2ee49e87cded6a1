//! The wire view: the raw JSON-RPC messages exchanged with the servers (and a proxy's
//! hosts), as the wire hub reports them, kept in a bounded ring per server; shown newest
//! first, narrowed by a typed filter, pausable, one message opened as pretty JSON.
//! Records arrive as `Msg::Wire` (the loop feeds them only while the view is open or
//! `--wire` is on); their task ids are already masked. Must not do I/O or render.

use std::collections::{BTreeMap, VecDeque};

use serde_json::Value;
use tui_input::Input;

use super::detail::{DocLine, LineKind, json_lines};
use super::keymap::Action;
use super::keys::Key;
use super::modal::{DocView, Modal};
use super::{State, line_edit};
pub use crate::mcp::wire::{Carrier, Direction, WireRecord};
use crate::sanitize::{json_line, sanitize_line};

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
        let server = sanitize_line(&rec.server, 200);
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
        return sanitize_line(m, 60);
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
        Some(id) => sanitize_line(&format!("{kind} #{id}"), 60),
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

/// Whether the wire view is open anywhere in the stack (the loop feeds it then).
pub fn is_open(state: &State) -> bool {
    state.modals.iter().any(|m| matches!(m, Modal::Wire(_)))
}

/// `w` / `:wire [server]`: open the view on `server` (every server for `None`).
pub(super) fn open(state: &mut State, server: Option<String>) {
    if let Some(Modal::Wire(v)) = state.modals.last_mut() {
        v.server = server;
        v.selected = 0;
        return;
    }
    state.modals.push(Modal::Wire(WireView::for_server(server)));
}

/// `w` wherever it is pressed: the detail view's task's server, the server under the top
/// of the servers view, the selected task's server, else every server.
pub(super) fn open_focused(state: &mut State) {
    let server = match state.modals.last() {
        Some(Modal::Doc(d)) if d.title == super::servers::VIEW_TITLE => {
            let above = d
                .lines
                .iter()
                .take(d.scroll + 1)
                .filter(|l| l.kind == LineKind::Heading)
                .count();
            state
                .servers
                .get(above.saturating_sub(1))
                .map(|s| s.id.as_str().to_string())
        }
        Some(Modal::Doc(_) | Modal::Roots(_)) => None,
        _ => state.focused_task().map(|k| k.server.as_str().to_string()),
    };
    open(state, server.map(|s| sanitize_line(&s, 200)));
}

/// An action while the wire view is on top; false when it is not the view's to take.
pub(super) fn on_action(state: &mut State, action: Action) -> bool {
    let last_seq = state.wire.last_seq();
    let servers: Vec<String> = state
        .wire
        .servers()
        .into_iter()
        .map(str::to_string)
        .collect();
    let len = match state.modals.last() {
        Some(Modal::Wire(v)) => shown(&state.wire, v).len(),
        _ => return false,
    };
    let page = state.page_rows.max(1) as isize;
    let Some(Modal::Wire(v)) = state.modals.last_mut() else {
        return false;
    };
    let step = match action {
        Action::Up => Some(-1),
        Action::Down => Some(1),
        Action::PageUp => Some(-page),
        Action::PageDown => Some(page),
        Action::Top => Some(isize::MIN / 2),
        Action::Bottom => Some(isize::MAX / 2),
        _ => None,
    };
    if let Some(step) = step {
        let last = len.saturating_sub(1) as isize;
        v.selected = (v.selected as isize).saturating_add(step).clamp(0, last) as usize;
        return true;
    }
    match action {
        Action::Pause => {
            v.paused_at = match v.paused_at {
                Some(_) => None,
                None => Some(last_seq),
            };
            v.selected = 0;
        }
        Action::Filter => v.editing = true,
        Action::FilterApply => v.editing = false,
        Action::FilterClear => {
            v.filter = Input::default();
            v.editing = false;
            v.selected = 0;
        }
        Action::NextTab | Action::PrevTab => {
            // every server, then each one in turn
            let mut order: Vec<Option<String>> = vec![None];
            order.extend(servers.into_iter().map(Some));
            let at = order.iter().position(|s| *s == v.server).unwrap_or(0) as isize;
            let delta = if action == Action::NextTab { 1 } else { -1 };
            let next = (at + delta).rem_euclid(order.len() as isize) as usize;
            v.server = order[next].clone();
            v.selected = 0;
        }
        Action::Select => open_selected(state),
        _ => return false,
    }
    true
}

/// A key typed into the filter line; false when the wire view is not editing.
pub(super) fn edit_filter(state: &mut State, key: Key) -> bool {
    let Some(Modal::Wire(v)) = state.modals.last_mut() else {
        return false;
    };
    if !v.editing {
        return false;
    }
    if let Some(req) = line_edit::request(key) {
        v.filter.handle(req);
        v.selected = 0;
    }
    true
}

/// `enter`: the selected message as pretty JSON, over the view.
fn open_selected(state: &mut State) {
    let Some(Modal::Wire(v)) = state.modals.last() else {
        return;
    };
    let list = shown(&state.wire, v);
    let Some(e) = list.get(v.selected.min(list.len().saturating_sub(1))) else {
        return;
    };
    let arrow = match e.direction {
        Direction::Send => "sent to",
        Direction::Recv => "received from",
    };
    let mut lines = vec![
        DocLine::field("message", &e.method),
        DocLine::field(arrow, &e.server),
        DocLine::field("transport", e.transport.as_str()),
        DocLine::field(
            "time",
            e.time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        ),
        DocLine::new(LineKind::Dim, ""),
    ];
    lines.extend(json_lines(&e.message, 2000));
    let title = format!("{} {}", e.method, e.transport.as_str());
    state.modals.push(Modal::Doc(DocView {
        title: sanitize_line(&title, 80),
        lines,
        scroll: 0,
    }));
}
