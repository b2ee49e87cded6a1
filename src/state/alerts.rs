//! Bell and desktop alerts: a task that starts waiting for input or reaches a terminal
//! state calls the user to the terminal. The reducer only asks (`Effect::Alert`); the
//! loop decides from the config how to ring. History from the ledger never rings.

use super::{Effect, State, TaskKey};
use crate::engine::EngineEvent;
use crate::mcp::TaskStatus;
use crate::sanitize::sanitize_line;
use crate::state::widths;

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

/// The status a task had before a snapshot event, to compare with after it.
pub(super) struct Watch {
    key: TaskKey,
    before: Option<TaskStatus>,
}

/// Watch the task of a live snapshot (`TaskUpdated`); nothing else can ring.
pub(super) fn watch(state: &State, event: &EngineEvent) -> Option<Watch> {
    let EngineEvent::TaskUpdated { server, task, .. } = event else {
        return None;
    };
    let key = TaskKey::new(server, &task.task_id);
    let before = state.tasks.get(&key).and_then(|r| r.status().cloned());
    Some(Watch { key, before })
}

/// Alert when the watched task started waiting for input or finished.
pub(super) fn ring(state: &State, watch: Option<Watch>, fx: &mut Vec<Effect>) {
    let Some(Watch { key, before }) = watch else {
        return;
    };
    let Some(row) = state.tasks.get(&key) else {
        return;
    };
    let Some(after) = row.status() else {
        return;
    };
    if before.as_ref() == Some(after) {
        return;
    }
    let kind = match after {
        TaskStatus::InputRequired => AlertKind::Input,
        s if s.is_terminal() => AlertKind::Finished,
        _ => return,
    };
    let tool = sanitize_line(row.tool.as_deref().unwrap_or("task"), widths::TOOL_NAME);
    let text = match kind {
        AlertKind::Input => format!("{tool} {} needs input", row.short_id()),
        AlertKind::Finished => format!("{tool} {} {}", row.short_id(), after.as_str()),
    };
    fx.push(Effect::Alert(Alert { kind, text }));
}
