//! The dashboard's state and its pure reducer: `update(&mut State, Msg, now) -> Vec<Effect>`.
//! Owns `State`, `Msg`, `Effect`, notices and per-server health. Must not do I/O, read the
//! clock, touch channels or import ratatui/crossterm: effects are data the loop executes.

pub mod board;
pub mod command;
pub mod detail;
pub mod form;
pub mod hints;
pub mod inbox;
pub mod keymap;
pub mod keys;
pub mod modal;
pub mod progress;
pub mod task;
pub mod text_area;
pub mod time;
mod update;
mod update_auth;
mod update_forms;
mod update_power;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_auth;
#[cfg(test)]
mod tests_forms;
#[cfg(test)]
mod tests_power;

use std::collections::HashMap;

use crate::engine::{EngineCommand, EngineEvent, NoticeLevel, ServerId, TaskId};
use crate::mcp::Era;

pub use crate::engine::Tombstone;
pub use board::{Board, SortColumn, Tab};
pub use keymap::{Action, Context, Keymap};
pub use keys::{Key, KeyCode};
pub use modal::Modal;
pub use task::TaskRow;
pub use time::Now;
pub use update::update;
pub use update_auth::sign_in_key;

/// A task's identity: ids are only unique per server.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskKey {
    pub server: ServerId,
    pub task_id: TaskId,
}

impl TaskKey {
    pub fn new(server: &ServerId, task_id: &TaskId) -> TaskKey {
        TaskKey {
            server: server.clone(),
            task_id: task_id.clone(),
        }
    }
}

/// One entry of a task's history, as the ledger tells it.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineEntry {
    pub at: chrono::DateTime<chrono::Utc>,
    pub kind: String,
    pub latency_ms: Option<u64>,
    pub detail: String,
}

/// Something the user should read.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub level: NoticeLevel,
    /// Sanitized text.
    pub text: String,
    pub at: Now,
}

/// A server's connection health.
#[derive(Debug, Clone, PartialEq)]
pub enum Health {
    Connecting,
    Connected,
    Degraded(String),
    Reconnecting { attempt: u32 },
}

/// Where a server's sign-in stands (none: nothing to do).
#[derive(Debug, Clone, PartialEq)]
pub enum SignInState {
    /// The server wants a signed-in user; why (sanitized).
    Required(String),
    /// The browser flow runs.
    Running,
}

/// What the header shows about one server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerState {
    pub id: ServerId,
    pub name: Option<String>,
    pub era: Option<Era>,
    pub push: bool,
    pub health: Health,
    pub requests_per_sec: f64,
    pub requests_total: u64,
    pub errors_total: u64,
    /// Conformance problems the server showed, one record per kind.
    pub hints: Vec<hints::HintRecord>,
    pub sign_in: Option<SignInState>,
}

impl ServerState {
    pub fn new(id: ServerId) -> ServerState {
        ServerState {
            id,
            name: None,
            era: None,
            push: false,
            health: Health::Connecting,
            requests_per_sec: 0.0,
            requests_total: 0,
            errors_total: 0,
            hints: Vec::new(),
            sign_in: None,
        }
    }
}

/// Everything that can change the state. (Messages are moved once, straight into the
/// reducer, so the size of the engine-event variant does not matter.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Msg {
    /// A key press (the reducer interprets it through the keymap and the focused widget).
    Key(Key),
    /// An intent, already resolved.
    Action(Action),
    Engine(EngineEvent),
    /// The result of an `Effect::LoadTimeline`.
    TimelineLoaded {
        key: TaskKey,
        result: Result<Vec<TimelineEntry>, String>,
    },
    /// How many table rows fit on screen (sent by the loop on start and resize).
    Viewport {
        table_rows: usize,
        page_rows: usize,
    },
    /// The 1 Hz tick (relative times move; notices age out).
    Tick,
    /// A mouse action, already hit-tested against the layout by the loop.
    Mouse(Mouse),
    /// The result of an `Effect::Export`: the file written, or why not.
    Exported(Result<String, String>),
}

/// What a mouse did, in terms of the screen's parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mouse {
    ScrollUp,
    ScrollDown,
    Click(Hit),
}

/// What a click landed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    /// The n-th visible row of the task table (0 = first drawn).
    Row(usize),
    Tab(Tab),
    /// The n-th entry of the inbox popup.
    InboxRow(usize),
    Elsewhere,
}

/// Why the user is being called to the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlertKind {
    /// A task started waiting for input.
    Input,
    /// A task reached a terminal state.
    Finished,
}

/// A bell / desktop notification request (the loop decides, from the config, how).
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    pub kind: AlertKind,
    /// Sanitized, one line.
    pub text: String,
}

/// What the reducer asks the loop to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Engine(EngineCommand),
    LoadTimeline(TaskKey),
    /// Ring the bell and/or send a desktop notification.
    Alert(Alert),
    /// Write the task's timeline as JSONL to `path`.
    Export {
        key: TaskKey,
        path: String,
    },
    /// Draw with the named theme from now on.
    SetTheme(String),
    Quit,
}

/// How long a notice stays on screen (seconds).
pub const NOTICE_SECS: i64 = 8;

/// The whole dashboard state.
#[derive(Debug)]
pub struct State {
    pub servers: Vec<ServerState>,
    pub tasks: HashMap<TaskKey, TaskRow>,
    pub board: Board,
    pub modals: Vec<Modal>,
    pub notices: Vec<Notice>,
    pub read_only: bool,
    pub keymap: Keymap,
    pub next_call_id: u64,
    /// Calls in flight: id → (server, tool).
    pub calls: HashMap<u64, (ServerId, String)>,
    /// Lines a page scroll moves in the detail views.
    pub page_rows: usize,
    pub quit: bool,
    /// The `:` command line, while open.
    pub command: Option<command::CommandLine>,
    /// When each pending input request was first seen (orders the inbox).
    pub input_since: HashMap<(TaskKey, String), Now>,
    /// Theme names `:theme` offers, and the one in use.
    pub themes: Vec<String>,
    pub theme: String,
}

impl State {
    pub fn new(servers: Vec<ServerId>, read_only: bool, keymap: Keymap) -> State {
        State {
            servers: servers.into_iter().map(ServerState::new).collect(),
            tasks: HashMap::new(),
            board: Board::default(),
            modals: Vec::new(),
            notices: Vec::new(),
            read_only,
            keymap,
            next_call_id: 1,
            calls: HashMap::new(),
            page_rows: 10,
            quit: false,
            command: None,
            input_since: HashMap::new(),
            themes: vec!["dark".to_string()],
            theme: "dark".to_string(),
        }
    }

    /// Rebuild the table's row list if it is stale. Cheap when nothing changed.
    pub fn ensure_view(&mut self) {
        self.board.ensure_view(&self.tasks);
    }

    pub fn selected_row(&self) -> Option<&TaskRow> {
        self.board.selected.as_ref().and_then(|k| self.tasks.get(k))
    }

    pub fn server_mut(&mut self, id: &ServerId) -> &mut ServerState {
        if let Some(i) = self.servers.iter().position(|s| &s.id == id) {
            return &mut self.servers[i];
        }
        self.servers.push(ServerState::new(id.clone()));
        self.servers.last_mut().expect("just pushed")
    }

    /// Tasks of `server` waiting for the user's input.
    pub fn inbox(&self, server: &ServerId) -> usize {
        self.tasks
            .values()
            .filter(|r| &r.key.server == server && r.needs_input())
            .count()
    }

    /// Notices still fresh at `now`, newest last.
    pub fn live_notices(&self, now: Now) -> impl Iterator<Item = &Notice> {
        self.notices
            .iter()
            .filter(move |n| (now - n.at).num_seconds() < NOTICE_SECS)
    }

    pub fn notify(&mut self, level: NoticeLevel, text: &str, now: Now) {
        self.notices.push(Notice {
            level,
            text: crate::sanitize::sanitize_line(text, 300),
            at: now,
        });
        if self.notices.len() > 50 {
            self.notices.remove(0);
        }
    }

    /// The context keys are read in (top modal first).
    pub fn context(&self) -> Context {
        if self.command.is_some() {
            return Context::Command;
        }
        match self.modals.last() {
            Some(Modal::Confirm(_)) => Context::Confirm,
            Some(Modal::Detail(_) | Modal::Doc(_)) => Context::Detail,
            Some(Modal::Input(_) | Modal::ToolForm(_)) => Context::Form,
            Some(Modal::Help { .. }) => Context::Help,
            Some(Modal::ServerPicker(_) | Modal::ToolPicker(_) | Modal::Inbox(_)) => {
                Context::Picker
            }
            None if self.board.filter.editing => Context::Filter,
            None => Context::Board,
        }
    }
}
