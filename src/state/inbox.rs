//! The input inbox: one queue of every pending input request across all servers, tasks
//! and requests outside any task, oldest first (by when the request was first seen), its
//! popup (open, move, answer the selected entry in place) and the first-seen times it is
//! ordered by.
//! Derived from `State` on demand, so it can never disagree with the rows. Must not
//! render or do I/O.

use super::modal::Modal;
use super::views::inbox::{InboxView, entries};
use super::{Now, State, TaskKey, forms};
use crate::engine::NoticeLevel;

/// `i` / `:inbox`: open the popup (once).
pub(super) fn open(state: &mut State) {
    if !matches!(state.modals.last(), Some(Modal::Inbox(_))) {
        state.modals.push(Modal::Inbox(InboxView::default()));
    }
}

/// Move the selection of the open inbox; false when the inbox is not on top.
pub(super) fn move_by(state: &mut State, delta: isize) -> bool {
    if !matches!(state.modals.last(), Some(Modal::Inbox(_))) {
        return false;
    }
    let len = entries(state).len();
    if let Some(Modal::Inbox(v)) = state.modals.last_mut() {
        v.move_by(delta, len);
    }
    true
}

/// Open the input form of the selected entry's task, over the inbox.
pub(super) fn answer_selected(state: &mut State, now: Now) {
    let entries = entries(state);
    let Some(Modal::Inbox(v)) = state.modals.last_mut() else {
        return;
    };
    v.clamp(entries.len());
    let Some(entry) = entries.get(v.selected) else {
        return state.notify(NoticeLevel::Info, "nothing waits for input", now);
    };
    if state.refuse_read_only(now) {
        return;
    }
    forms::open_target(state, &entry.target, now);
}

/// Remember when a request was first seen (the inbox's order).
pub(super) fn first_seen(state: &mut State, task: &TaskKey, input_key: &str, now: Now) {
    state
        .input_since
        .entry((task.clone(), input_key.to_string()))
        .or_insert(now);
}

/// Forget first-seen times of requests that are no longer pending.
pub(super) fn forget_answered(state: &mut State) {
    let tasks = &state.tasks;
    state
        .input_since
        .retain(|(task, k), _| tasks.get(task).is_some_and(|r| r.pending.contains_key(k)));
}
