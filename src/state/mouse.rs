//! Mouse input in the reducer's terms: what a click or the wheel landed on (recorded by the
//! views while drawing the frame the click fell on) and what it does — the wheel scrolls, a
//! click selects a row, a tab or an inbox entry, a click on the selected one opens it. Must
//! not render.

use super::keymap::Action;
use super::modal::Modal;
use super::{State, Tab, TaskKey};

/// What a mouse did, in terms of the screen's parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mouse {
    ScrollUp,
    ScrollDown,
    Click(Hit),
}

/// What a click landed on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hit {
    /// The task table's row of this task (named by key, so rows that arrive between the
    /// frame and the click do not move it).
    Row(TaskKey),
    Tab(Tab),
    /// The n-th entry of the inbox popup (0 = the oldest request).
    InboxRow(usize),
    Elsewhere,
}

/// Apply the mouse action; returns the action it stands for, if any.
pub(super) fn on_mouse(state: &mut State, mouse: Mouse) -> Option<Action> {
    match mouse {
        Mouse::ScrollUp => Some(Action::Up),
        Mouse::ScrollDown => Some(Action::Down),
        Mouse::Click(Hit::Tab(tab)) if state.modals.is_empty() => {
            state.board.tab = tab;
            state.board.dirty = true;
            None
        }
        Mouse::Click(Hit::Row(key)) if state.modals.is_empty() => {
            state.ensure_view();
            // Gone from the view since the frame (another tab, a filter): nothing to select.
            if !state.board.shows(&state.tasks, &key) {
                return None;
            }
            if state.board.selected.as_ref() == Some(&key) {
                return Some(Action::OpenDetail);
            }
            state.board.selected = Some(key);
            state.board.clamp_offset(&state.tasks);
            None
        }
        Mouse::Click(Hit::InboxRow(i)) => {
            let Some(Modal::Inbox(v)) = state.modals.last_mut() else {
                return None;
            };
            if v.selected == i {
                return Some(Action::Select);
            }
            v.selected = i;
            None
        }
        Mouse::Click(_) => None,
    }
}
