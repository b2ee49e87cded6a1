//! Cancelling a task: the `y`/`n` confirmation, the "cancel requested" mark and the
//! engine's acknowledgement or failure. Whether the task then ends cancelled or otherwise
//! is the row's business (`task::Phase`). Pure; effects are returned, never executed.

use super::modal::{Confirm, ConfirmOp, Modal};
use super::task::CancelMark;
use super::{Effect, Now, State, TaskKey};
use crate::engine::{EngineCommand, NoticeLevel};
use crate::state::widths;

/// `c`: ask before cancelling the focused task.
pub(super) fn ask(state: &mut State, now: Now) {
    if state.refuse_read_only(now) {
        return;
    }
    let key = state.focused_task();
    let Some(row) = key.as_ref().and_then(|k| state.tasks.get(k)) else {
        return state.notify(NoticeLevel::Info, "no task selected", now);
    };
    if row.is_terminal() {
        let status = row
            .status()
            .map(|s| s.as_str().to_string())
            .unwrap_or_default();
        return state.notify(NoticeLevel::Info, &format!("task already {status}"), now);
    }
    if row.cancel.is_some() {
        return state.notify(NoticeLevel::Info, "cancel already requested", now);
    }
    let tool = row.tool.clone().unwrap_or_else(|| "task".to_string());
    let body = format!(
        "Cancel {} {} on {}? The server may still finish it.",
        crate::sanitize::sanitize_line(&tool, widths::TOOL_NAME),
        row.short_id(),
        crate::sanitize::sanitize_line(&state.server_name(&row.key.server), widths::SERVER_NAME),
    );
    let key = row.key.clone();
    state.modals.push(Modal::Confirm(Confirm {
        title: "Cancel task".to_string(),
        body,
        on_confirm: ConfirmOp::CancelTask(key),
    }));
}

/// The confirmed cancel (a task that ended meanwhile is left alone).
pub(super) fn send(state: &mut State, key: TaskKey, fx: &mut Vec<Effect>) {
    if let Some(row) = state.tasks.get_mut(&key)
        && !row.is_over()
    {
        row.cancel = Some(CancelMark { acked: false });
        state.touch_row(&key);
        fx.push(Effect::Engine(EngineCommand::Cancel {
            server: key.server,
            task_id: key.task_id,
            by: crate::engine::CancelBy::dashboard(),
        }));
    }
}

/// A cancel was requested (`acked`: the server acknowledged it), here or by another
/// process sharing the ledger.
pub(super) fn sent(state: &mut State, key: &TaskKey, acked: bool) {
    if let Some(row) = state.tasks.get_mut(key)
        && !row.is_over()
    {
        let c = row.cancel.get_or_insert(CancelMark { acked });
        c.acked |= acked;
        state.touch_row(key);
    }
}

pub(super) fn failed(state: &mut State, key: &TaskKey, error: &str, now: Now) {
    if let Some(row) = state.tasks.get_mut(key) {
        row.cancel = None;
        state.touch_row(key);
    }
    let text = format!("cancel of {} failed: {error}", key.task_id.prefix());
    state.notify(NoticeLevel::Error, &text, now);
}
