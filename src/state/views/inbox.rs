//! The inbox's data: every pending input request across all servers, tasks and requests
//! outside any task, oldest first, derived from `State` on demand (so it can never disagree
//! with the rows), and the popup's selection. Must not change `State`.

use crate::engine::ServerId;
use crate::sanitize::sanitize_line;
use crate::state::State;
use crate::state::input_target::InputTarget;
use crate::state::time::Now;
use crate::state::widths;

/// One pending input request.
#[derive(Debug, Clone, PartialEq)]
pub struct InboxEntry {
    /// A task's request, or one outside any task.
    pub target: InputTarget,
    pub input_key: String,
    /// The server's name, display-safe.
    pub server: String,
    /// The tool's name, display-safe.
    pub tool: Option<String>,
    /// `elicitation/create`, `sampling/createMessage`, …
    pub method: String,
    /// Sanitized, one line.
    pub message: String,
    pub since: Option<Now>,
}

/// The inbox popup's state: only the selection (entries are derived).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InboxView {
    pub selected: usize,
}

/// Every request waiting for the user, oldest first; read-only servers' tasks included.
pub fn entries(state: &State) -> Vec<InboxEntry> {
    let mut out: Vec<InboxEntry> = state
        .tasks
        .values()
        .filter(|r| !r.is_terminal() && !r.expired)
        .flat_map(|row| {
            row.pending.iter().map(move |(k, req)| InboxEntry {
                target: InputTarget::Task(row.key.clone()),
                input_key: k.clone(),
                server: sanitize_line(row.key.server.as_str(), widths::SERVER_NAME),
                tool: row.tool.as_ref().map(|_| row.text.tool.clone()),
                method: sanitize_line(&req.method, widths::METHOD),
                message: sanitize_line(req.message().unwrap_or(""), widths::INPUT_MESSAGE),
                since: state
                    .input_since
                    .get(&(row.key.clone(), k.clone()))
                    .copied()
                    .or(row.seen_at),
            })
        })
        .collect();
    out.extend(state.foreground.iter().map(|f| InboxEntry {
        target: f.target(),
        input_key: f.key.clone(),
        server: sanitize_line(f.server.as_str(), widths::SERVER_NAME),
        tool: (!f.tool.is_empty()).then(|| f.tool.clone()),
        method: sanitize_line(&f.request.method, widths::METHOD),
        message: sanitize_line(f.request.message().unwrap_or(""), widths::INPUT_MESSAGE),
        since: Some(f.since),
    }));
    let order = |e: &InboxEntry| match &e.target {
        InputTarget::Task(k) => (k.server.clone(), k.task_id.as_str().to_string()),
        InputTarget::Foreground { server, .. } => (server.clone(), String::new()),
    };
    out.sort_by(|a, b| {
        // unknown times last; ties by server, task and key for a stable order
        (a.since.is_none(), a.since, order(a), &a.input_key).cmp(&(
            b.since.is_none(),
            b.since,
            order(b),
            &b.input_key,
        ))
    });
    out
}

impl InboxEntry {
    /// The task's short id, or "—" for a request outside any task.
    pub fn short_id(&self) -> String {
        match &self.target {
            InputTarget::Task(k) => k.task_id.prefix(),
            InputTarget::Foreground { .. } => "—".to_string(),
        }
    }
}

/// Input requests that servers listed beyond what each task keeps (not in [`entries`]).
pub fn more_not_shown(state: &State) -> usize {
    state
        .tasks
        .values()
        .filter(|r| !r.is_terminal() && !r.expired)
        .filter_map(|r| r.task.as_ref())
        .map(|t| t.more_input_requests)
        .sum()
}

impl InboxView {
    /// Keep the selection inside a list of `len` entries.
    pub fn clamp(&mut self, len: usize) {
        self.selected = self.selected.min(len.saturating_sub(1));
    }

    pub fn move_by(&mut self, delta: isize, len: usize) {
        let last = len.saturating_sub(1) as isize;
        self.selected = (self.selected as isize + delta).clamp(0, last.max(0)) as usize;
    }
}

impl State {
    /// Tasks of `server` waiting for the user's input, and its requests outside any task.
    pub fn inbox(&self, server: &ServerId) -> usize {
        self.board.waiting(server)
            + self
                .foreground
                .iter()
                .filter(|f| &f.server == server)
                .count()
    }
}
