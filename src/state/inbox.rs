//! The input inbox: one queue of every pending input request across all servers and
//! tasks, oldest first (by when the request was first seen). Derived from `State` on
//! demand, so it can never disagree with the rows. Must not render or do I/O.

use super::{Now, State, TaskKey};
use crate::sanitize::sanitize_line;

/// One pending input request.
#[derive(Debug, Clone, PartialEq)]
pub struct InboxEntry {
    pub task: TaskKey,
    pub input_key: String,
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
                task: row.key.clone(),
                input_key: k.clone(),
                tool: row.tool.clone(),
                method: sanitize_line(&req.method, 40),
                message: sanitize_line(req.message().unwrap_or(""), 200),
                since: state
                    .input_since
                    .get(&(row.key.clone(), k.clone()))
                    .copied()
                    .or(row.seen_at),
            })
        })
        .collect();
    out.sort_by(|a, b| {
        // unknown times last; ties by server, task and key for a stable order
        (a.since.is_none(), a.since, &a.task, &a.input_key).cmp(&(
            b.since.is_none(),
            b.since,
            &b.task,
            &b.input_key,
        ))
    });
    out
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
