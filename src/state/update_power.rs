//! Reducer part for the power features: re-run, the input inbox, the `:` command line,
//! conformance hints, mouse input, bell/desktop alerts and failed tool listings. Pure;
//! effects are returned, never executed.

use tui_input::InputRequest;

use super::command::{self, Command, CommandLine};
use super::hints;
use super::inbox::{self, InboxView};
use super::keymap::Action;
use super::keys::{Key, KeyCode};
use super::modal::{Confirm, ConfirmOp, DocView, Modal};
use super::update::refuse_read_only;
use super::{Alert, AlertKind, Effect, Hit, Mouse, Now, State, TaskKey, update_forms};
use crate::engine::{EngineCommand, EngineEvent, NoticeLevel};
use crate::mcp::TaskStatus;
use crate::sanitize::sanitize_line;

/// The task an action applies to: the open detail view's, else the selected row's.
pub(super) fn focused_key(state: &State) -> Option<TaskKey> {
    match state.modals.last() {
        Some(Modal::Detail(d)) => Some(d.key.clone()),
        _ => state.board.selected.clone(),
    }
}

/// Handle the actions this module owns; false when the caller should.
pub(super) fn on_action(state: &mut State, action: Action, now: Now, fx: &mut Vec<Effect>) -> bool {
    let inbox_open = matches!(state.modals.last(), Some(Modal::Inbox(_)));
    match action {
        Action::Rerun => ask_rerun(state, now),
        Action::Inbox => open_inbox(state),
        Action::Hints => open_hints(state),
        Action::Command => state.command = Some(CommandLine::default()),
        Action::CommandCancel => state.command = None,
        Action::Complete => {
            if let Some(mut line) = state.command.take() {
                line.complete(state);
                state.command = Some(line);
            }
        }
        Action::CommandRun => run_command(state, now, fx),
        Action::Refresh => {
            if let Some(key) = focused_key(state) {
                fx.push(Effect::Engine(EngineCommand::Refresh {
                    server: key.server,
                    task_id: Some(key.task_id),
                }));
            }
        }
        Action::Up
        | Action::Down
        | Action::PageUp
        | Action::PageDown
        | Action::Top
        | Action::Bottom
            if inbox_open =>
        {
            let len = inbox::entries(state).len();
            let page = state.page_rows as isize;
            let delta = match action {
                Action::Up => -1,
                Action::Down => 1,
                Action::PageUp => -page,
                Action::PageDown => page,
                Action::Top => isize::MIN / 2,
                _ => isize::MAX / 2,
            };
            if let Some(Modal::Inbox(v)) = state.modals.last_mut() {
                v.move_by(delta, len);
            }
        }
        Action::Select if inbox_open => answer_from_inbox(state, now),
        _ => return false,
    }
    true
}

fn open_inbox(state: &mut State) {
    if !matches!(state.modals.last(), Some(Modal::Inbox(_))) {
        state.modals.push(Modal::Inbox(InboxView::default()));
    }
}

fn open_hints(state: &mut State) {
    state.modals.push(Modal::Doc(DocView {
        title: "Conformance hints for server authors".to_string(),
        lines: hints::hints_doc(state),
        scroll: 0,
    }));
}

/// Open the input form of the selected inbox entry's task, over the inbox.
fn answer_from_inbox(state: &mut State, now: Now) {
    let entries = inbox::entries(state);
    let Some(Modal::Inbox(v)) = state.modals.last_mut() else {
        return;
    };
    v.clamp(entries.len());
    let Some(entry) = entries.get(v.selected) else {
        return state.notify(NoticeLevel::Info, "nothing waits for input", now);
    };
    if refuse_read_only(state, now) {
        return;
    }
    update_forms::open_input_form_for(state, Some(entry.task.clone()), now);
}

fn ask_rerun(state: &mut State, now: Now) {
    if refuse_read_only(state, now) {
        return;
    }
    let Some(row) = focused_key(state).and_then(|k| state.tasks.get(&k)) else {
        return state.notify(NoticeLevel::Info, "no task selected", now);
    };
    let (Some(tool), Some(arguments)) = (&row.tool, &row.arguments) else {
        return state.notify(
            NoticeLevel::Info,
            "cannot re-run: the ledger has no tool call for this task",
            now,
        );
    };
    let args = sanitize_line(&arguments.to_string(), 60);
    let body = format!(
        "Call {} on {} again with {args}? The new task links to {}.",
        sanitize_line(tool, 40),
        sanitize_line(row.key.server.as_str(), 40),
        row.short_id(),
    );
    let key = row.key.clone();
    state.modals.push(Modal::Confirm(Confirm {
        title: "Re-run task".to_string(),
        body,
        on_confirm: ConfirmOp::Rerun(key),
    }));
}

/// The confirmed re-run: the same `tools/call`, linked to the old task.
pub(super) fn rerun(state: &mut State, key: TaskKey, now: Now, fx: &mut Vec<Effect>) {
    let Some(row) = state.tasks.get(&key) else {
        return;
    };
    let (Some(tool), Some(arguments)) = (row.tool.clone(), row.arguments.clone()) else {
        return;
    };
    let call_id = state.next_call_id;
    state.next_call_id += 1;
    state
        .calls
        .insert(call_id, (key.server.clone(), tool.clone()));
    let text = format!("re-running {tool} ({})…", key.task_id.prefix());
    state.notify(NoticeLevel::Info, &text, now);
    fx.push(Effect::Engine(EngineCommand::CallTool {
        server: key.server,
        call_id,
        tool,
        arguments,
        parent_task: Some(key.task_id),
    }));
}

/// Keys typed into the command line that the keymap does not bind.
pub(super) fn command_key(state: &mut State, key: Key) {
    let Some(line) = state.command.as_mut() else {
        return;
    };
    let req = match key.code {
        _ if key.text_char().is_some() => key.text_char().map(InputRequest::InsertChar),
        KeyCode::Backspace if line.input.value().is_empty() => {
            state.command = None;
            return;
        }
        KeyCode::Backspace => Some(InputRequest::DeletePrevChar),
        KeyCode::Delete => Some(InputRequest::DeleteNextChar),
        KeyCode::Left => Some(InputRequest::GoToPrevChar),
        KeyCode::Right => Some(InputRequest::GoToNextChar),
        KeyCode::Home => Some(InputRequest::GoToStart),
        KeyCode::End => Some(InputRequest::GoToEnd),
        _ => None,
    };
    if let Some(req) = req {
        line.input.handle(req);
        line.error = None;
        line.candidates.clear();
    }
}

fn run_command(state: &mut State, now: Now, fx: &mut Vec<Effect>) {
    let Some(line) = state.command.as_mut() else {
        return;
    };
    let text = line.input.value().to_string();
    let cmd = match command::parse(&text, state) {
        Ok(c) => c,
        Err(e) => {
            if let Some(line) = state.command.as_mut() {
                line.error = Some(e);
            }
            return;
        }
    };
    state.command = None;
    match cmd {
        Command::Server(server) => {
            let text = match &server {
                Some(s) => format!("showing {s} only (:server all for every server)"),
                None => "showing every server".to_string(),
            };
            state.board.server = server;
            state.board.dirty = true;
            state.notify(NoticeLevel::Info, &text, now);
        }
        Command::Filter(regex) => {
            state.board.filter.set(&regex);
            state.board.filter.editing = false;
            state.board.dirty = true;
        }
        Command::Sort(column, order) => {
            state.board.sort = column;
            if let Some(desc) = order {
                state.board.descending = desc;
            }
            state.board.dirty = true;
        }
        Command::Export(path) => match focused_key(state) {
            Some(key) => {
                let path =
                    path.unwrap_or_else(|| format!("taskrail-{}.jsonl", key.task_id.prefix()));
                fx.push(Effect::Export { key, path });
            }
            None => state.notify(NoticeLevel::Info, "no task selected to export", now),
        },
        Command::Theme(name) => {
            state.theme = name.clone();
            fx.push(Effect::SetTheme(name));
        }
        Command::Inbox => open_inbox(state),
        Command::SignIn(server) => super::update_auth::sign_in(state, server, now, fx),
        Command::Redirect(url) => super::update_auth::pasted(state, url, now, fx),
        Command::Hints => open_hints(state),
        Command::Help => state.modals.push(Modal::Help { scroll: 0 }),
        Command::Quit => {
            state.quit = true;
            fx.push(Effect::Quit);
        }
    }
}

/// Mouse: wheel scrolls, a click selects a row or a tab, a click on the selected row (or
/// an inbox entry) opens it.
pub(super) fn on_mouse(state: &mut State, mouse: Mouse) -> Option<Action> {
    match mouse {
        Mouse::ScrollUp => Some(Action::Up),
        Mouse::ScrollDown => Some(Action::Down),
        Mouse::Click(Hit::Tab(tab)) if state.modals.is_empty() => {
            state.board.tab = tab;
            state.board.dirty = true;
            None
        }
        Mouse::Click(Hit::Row(i)) if state.modals.is_empty() => {
            state.ensure_view();
            let key = state.board.view.get(state.board.offset + i).cloned()?;
            if state.board.selected.as_ref() == Some(&key) {
                return Some(Action::OpenDetail);
            }
            state.board.selected = Some(key);
            state.board.clamp_offset();
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

/// Engine events this module owns; false when the caller should handle the event.
pub(super) fn on_engine(state: &mut State, event: &EngineEvent, now: Now) -> bool {
    match event {
        EngineEvent::ServerMisbehaved {
            server,
            hint,
            detail,
        } => {
            let s = state.server_mut(server);
            let first = !s.hints.iter().any(|r| r.hint == *hint);
            hints::record(s, *hint, detail, now);
            if first {
                let text = format!(
                    "{server}: conformance hint: {} (H lists them)",
                    hint.title()
                );
                state.notify(NoticeLevel::Warn, &text, now);
            }
        }
        EngineEvent::ToolsListFailed { server, error } => {
            let before = state.modals.len();
            state.modals.retain(
                |m| !matches!(m, Modal::ToolPicker(tp) if &tp.server == server && tp.tools.is_none()),
            );
            let text = if state.modals.len() != before {
                format!("{server}: cannot list tools: {error}")
            } else {
                format!("{server}: tools/list failed: {error}")
            };
            state.notify(NoticeLevel::Error, &text, now);
        }
        EngineEvent::InputRequested {
            server,
            task_id,
            key,
            ..
        } => {
            state
                .input_since
                .entry((TaskKey::new(server, task_id), key.clone()))
                .or_insert(now);
            return false;
        }
        _ => return false,
    }
    true
}

/// The status a task had before an update, for alerts.
pub(super) fn alert_watch(
    state: &State,
    event: &EngineEvent,
) -> Option<(TaskKey, Option<TaskStatus>)> {
    let EngineEvent::TaskUpdated { server, task, .. } = event else {
        return None;
    };
    let key = TaskKey::new(server, &task.task_id);
    let before = state.tasks.get(&key).and_then(|r| r.status().cloned());
    Some((key, before))
}

/// Alert when a watched task started waiting for input or finished.
pub(super) fn alerts(
    state: &State,
    watch: Option<(TaskKey, Option<TaskStatus>)>,
    fx: &mut Vec<Effect>,
) {
    let Some((key, before)) = watch else {
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
    let tool = sanitize_line(row.tool.as_deref().unwrap_or("task"), 40);
    let text = match kind {
        AlertKind::Input => format!("{tool} {} needs input", row.short_id()),
        AlertKind::Finished => format!("{tool} {} {}", row.short_id(), after.as_str()),
    };
    fx.push(Effect::Alert(Alert { kind, text }));
}

/// Forget first-seen times of requests that are no longer pending.
pub(super) fn tick(state: &mut State) {
    let tasks = &state.tasks;
    state
        .input_since
        .retain(|(task, k), _| tasks.get(task).is_some_and(|r| r.pending.contains_key(k)));
}
