//! The dashboard's state and its pure reducer: `update(&mut State, Msg, now) -> Vec<Effect>`.
//! Owns `State`, `Msg` and `Effect`; each concept (board, forms, inbox, command line, …)
//! keeps its part of the reducer in its own file, and `update` is the one dispatch point.
//! Must not do I/O, read the clock, touch channels or import ratatui/crossterm: effects
//! are data the loop executes.
//!
//! Inside, imports go one way (`tests/house` rejects a loop): shared pieces at the bottom
//! (`doc` lines, `input_target`, `time`, …), each view's data in `views/`, the `Modal` stack
//! that holds them, `answer` (sending an answer, whatever view took it), the transitions of
//! each kind of view, `forms` (opening the view a request needs: the dispatch by kind), and
//! `update` on top. A view is three files with one name: `views/NAME.rs` (its data),
//! `NAME.rs` (its transitions) and `ui/NAME.rs` (its drawing), for consent, inbox, roots,
//! sampling, stats and wire.

pub mod alerts;
mod answer;
pub mod board;
mod cancel;
pub mod charts;
pub mod command;
pub mod consent;
pub mod detail;
pub mod doc;
pub mod foreground;
pub mod form;
mod forms;
pub mod hints;
pub mod inbox;
pub mod input_target;
pub mod keymap;
pub mod keys;
pub mod line_edit;
pub mod modal;
pub mod mouse;
mod new_task;
pub mod notices;
pub mod offers;
pub mod payload;
pub mod progress;
pub mod roots;
mod rows;
pub mod sampling;
pub mod servers;
mod signin;
mod stats;
pub mod task;
pub mod text_area;
pub mod time;
mod update;
pub mod views;
pub mod widths;
pub mod wire;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::time::Duration;

use crate::engine::{EngineCommand, EngineEvent, TaskId};

pub use crate::engine::{NoticeLevel, ServerId, Tombstone};
pub use crate::mcp::{TaskStatus, ToolInfo};
pub use alerts::{Alert, AlertKind};
pub use board::{Board, SortColumn, Tab};
pub use input_target::InputTarget;
pub use keymap::{Action, Context, Keymap};
pub use keys::{Key, KeyCode};
pub use modal::Modal;
pub use mouse::{Hit, Mouse};
pub use notices::{NOTICE_SECS, Notice};
pub use offers::{SamplingSetup, ServerInput};
pub use servers::{Health, ServerState};
pub use signin::{SignInState, sign_in_key};
pub use task::TaskRow;
pub use time::Now;
pub use update::update;

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

/// Everything that can change the state. (Messages are moved once, straight into the
/// reducer, so the size of the engine-event variant does not matter.)
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Msg {
    /// A key press (the reducer interprets it through the keymap and the focused widget).
    Key(Key),
    Engine(EngineEvent),
    /// The result of an `Effect::LoadTimeline`.
    TimelineLoaded {
        key: TaskKey,
        result: Result<Vec<TimelineEntry>, String>,
    },
    /// The result of an `Effect::LoadStats`.
    StatsLoaded {
        range: charts::Range,
        result: Result<Box<charts::Summary>, String>,
    },
    /// The result of an `Effect::LoadPayload`.
    PayloadLoaded {
        key: TaskKey,
        result: Result<payload::Payload, String>,
        then: payload::AfterPayload,
    },
    /// How many table rows fit on screen (sent by the loop on start and resize).
    Viewport {
        table_rows: usize,
        page_rows: usize,
    },
    /// The 1 Hz tick (relative times move; notices age out).
    Tick,
    /// A mouse action, already looked up in the clickable regions of the frame drawn.
    Mouse(Mouse),
    /// The result of an `Effect::Export`: the file written, or why not.
    Exported(Result<String, String>),
    /// Open the view answering these requests (a one-request prompt starts with it).
    Answer(InputTarget),
    /// An `Effect::OpenBrowser` could not start the browser.
    BrowserFailed(String),
    /// A JSON-RPC message crossed (for the wire view; task ids already masked).
    Wire(crate::mcp::wire::WireRecord),
    /// An `Effect::RunSampling` ended: the command's stdout, or why it failed.
    SamplingFinished {
        target: InputTarget,
        input_key: String,
        result: Result<String, String>,
    },
}

/// What the reducer asks the loop to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Engine(EngineCommand),
    LoadTimeline(TaskKey),
    /// Read the statistics view's summary of `range` ending now from the ledger (off the
    /// UI task; the answer is `Msg::StatsLoaded`).
    LoadStats {
        range: charts::Range,
    },
    /// Read a finished task's payload from the ledger (see `payload`).
    LoadPayload {
        key: TaskKey,
        then: payload::AfterPayload,
    },
    /// Ring the bell and/or send a desktop notification.
    Alert(Alert),
    /// Write the task's timeline as JSONL to `path`.
    Export {
        key: TaskKey,
        path: String,
    },
    /// Draw with the named theme from now on.
    SetTheme(String),
    /// Open a link (already checked: http or https) in the browser (`$BROWSER`).
    OpenBrowser(String),
    /// Put text on the clipboard (OSC 52).
    Copy(String),
    /// Run a server's sampling command (approved by the person) with `input` as JSON on
    /// its stdin; its stdout comes back as `Msg::SamplingFinished`.
    RunSampling {
        target: InputTarget,
        input_key: String,
        command: String,
        timeout: Duration,
        input: serde_json::Value,
    },
    Quit,
}

/// The hasher of tables keyed by task (see [`crate::ids::IdHasher`]).
pub type KeyHasher = crate::ids::IdHasher;

/// Every task's row. The rows sit side by side in one vector and the hashed index holds
/// only their positions: a hashed table of rows keeps an eighth or more of its slots empty,
/// each a row's size, and scatters the rows over all of them (at 10,000 rows: 16,384 slots
/// of about 500 bytes, all touched; here 10,000 rows and 16,384 positions). Rows are never
/// removed, so no position moves.
pub type Rows = indexmap::IndexMap<TaskKey, TaskRow, KeyHasher>;

/// The whole dashboard state.
#[derive(Debug)]
pub struct State {
    pub servers: Vec<ServerState>,
    /// Every row ever shown (rows are never taken out: their positions name them); those
    /// the ledger no longer has are marked `removed` and counted in `removed_rows`.
    pub tasks: Rows,
    pub removed_rows: usize,
    pub board: Board,
    pub modals: Vec<Modal>,
    pub notices: Vec<Notice>,
    pub read_only: bool,
    /// The ledger's database cannot be reached: `Some(writes kept here, waiting)`.
    pub ledger_offline: Option<usize>,
    pub keymap: Keymap,
    pub next_call_id: u64,
    /// Calls in flight: id → (server, tool).
    pub calls: HashMap<u64, (ServerId, String)>,
    /// Lines a page scroll moves in the detail views.
    pub page_rows: usize,
    /// The `:` command line, while open.
    pub command: Option<command::CommandLine>,
    /// When each pending input request was first seen (orders the inbox).
    pub input_since: HashMap<(TaskKey, String), Now>,
    /// Nothing but ticks since `input_since` was last swept of answered requests (an idle
    /// board does not walk it every second).
    pub input_swept: bool,
    /// Theme names `:theme` offers, and the one in use.
    pub themes: Vec<String>,
    pub theme: String,
    /// Input requests outside any task, oldest first.
    pub foreground: Vec<foreground::ForegroundInput>,
    /// What each server is offered beyond forms and links (sampling, roots).
    pub input: HashMap<ServerId, ServerInput>,
    /// Roots answered from the config, per server.
    pub roots_shared: HashMap<ServerId, Vec<views::roots::RootsShare>>,
    /// Sampling replies typed (or produced) but not sent yet, by request.
    pub drafts: HashMap<(InputTarget, String), String>,
    /// The messages of every server, for the wire view (bounded rings).
    pub wire: views::wire::WireLog,
    /// The range the statistics view showed last (it opens on it again).
    pub stats_range: charts::Range,
}

impl State {
    pub fn new(servers: Vec<ServerId>, read_only: bool, keymap: Keymap) -> State {
        State {
            servers: servers.into_iter().map(ServerState::new).collect(),
            tasks: Rows::default(),
            removed_rows: 0,
            board: Board::default(),
            modals: Vec::new(),
            notices: Vec::new(),
            read_only,
            ledger_offline: None,
            keymap,
            next_call_id: 1,
            calls: HashMap::new(),
            page_rows: 10,
            command: None,
            input_since: HashMap::new(),
            input_swept: true,
            themes: vec!["dark".to_string()],
            theme: "dark".to_string(),
            foreground: Vec::new(),
            input: HashMap::new(),
            roots_shared: HashMap::new(),
            drafts: HashMap::new(),
            wire: views::wire::WireLog::default(),
            stats_range: charts::Range::default(),
        }
    }

    /// Rebuild the table's row list if it is stale. Cheap when nothing changed.
    pub fn ensure_view(&mut self) {
        self.board.ensure_view(&self.tasks);
    }

    /// The row of `key` changed in place: the table re-places it on the next frame.
    pub fn touch_row(&mut self, key: &TaskKey) {
        if let Some(pos) = self.tasks.get_index_of(key) {
            self.board.touch(pos);
        }
    }

    pub fn selected_row(&self) -> Option<&TaskRow> {
        self.board.selected.as_ref().and_then(|k| self.tasks.get(k))
    }

    /// The task an action applies to: the open detail view's, else the selected row's.
    pub fn focused_task(&self) -> Option<TaskKey> {
        match self.modals.last() {
            Some(Modal::Detail(d)) => Some(d.key.clone()),
            _ => self.board.selected.clone(),
        }
    }

    /// Refuse a mutating action in read-only mode (with a notice). True when refused.
    pub fn refuse_read_only(&mut self, now: Now) -> bool {
        if self.read_only {
            self.notify(
                NoticeLevel::Warn,
                "read-only: cancel, answer and new calls are disabled",
                now,
            );
        }
        self.read_only
    }

    /// The context keys are read in (top modal first).
    pub fn context(&self) -> Context {
        if self.command.is_some() {
            return Context::Command;
        }
        match self.modals.last() {
            Some(Modal::Confirm(_)) => Context::Confirm,
            Some(Modal::Detail(_) | Modal::Doc(_) | Modal::Roots(_)) => Context::Detail,
            Some(Modal::Input(_) | Modal::ToolForm(_)) => Context::Form,
            Some(Modal::Consent(_)) => Context::Consent,
            Some(Modal::Sampling(_)) => Context::Sampling,
            Some(Modal::Help { .. }) => Context::Help,
            Some(Modal::Stats(_)) => Context::Stats,
            Some(m) if m.picker().is_some_and(|p| p.editing()) => Context::Filter,
            Some(Modal::Wire(v)) if v.editing => Context::Filter,
            Some(Modal::Wire(_)) => Context::Wire,
            Some(Modal::ServerPicker(_) | Modal::ToolPicker(_) | Modal::Inbox(_)) => {
                Context::Picker
            }
            None if self.board.filter.editing => Context::Filter,
            None => Context::Board,
        }
    }
}
