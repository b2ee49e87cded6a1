//! Starting tasks: the new-task flow (server picker → tool picker, filled by `tools/list`,
//! or saying why not → argument form → `CallTool`; both pickers narrow as a `/` query is
//! typed), re-running a task's recorded call, and what a call came to (a task, a plain
//! result, an error). Pure; effects are
//! returned, never executed.

use serde_json::{Value, json};

use super::doc::result_lines;
use super::keymap::Action;
use super::keys::Key;
use super::modal::{Confirm, ConfirmOp, DocView, Modal, Picker, ToolForm, ToolPicker};
use super::payload::{self, AfterPayload};
use super::rows::row_mut;
use super::{Effect, Now, State, TaskKey, line_edit, servers};
use crate::engine::{CallResult, EngineCommand, NoticeLevel, ServerId};
use crate::mcp::ToolInfo;
use crate::sanitize::sanitize_line;
use crate::state::widths;

/// `n`: pick a server (when there are several), then a tool.
pub(super) fn start(state: &mut State, now: Now, fx: &mut Vec<Effect>) {
    if state.refuse_read_only(now) {
        return;
    }
    match state.servers.len() {
        0 => state.notify(NoticeLevel::Warn, "no servers configured", now),
        1 => {
            let server = state.servers[0].id.clone();
            open_tool_picker(state, server, fx);
        }
        _ => {
            let ids = state.servers.iter().map(|s| s.id.clone()).collect();
            state.modals.push(Modal::ServerPicker(Picker::new(ids)));
        }
    }
}

/// The tool picker waits for `tools/list`; on a failing server it says why at once (the
/// list still comes if the server recovers).
fn open_tool_picker(state: &mut State, server: ServerId, fx: &mut Vec<Effect>) {
    let error = servers::failure(state, &server);
    state.modals.push(Modal::ToolPicker(ToolPicker {
        server: server.clone(),
        tools: None,
        error,
    }));
    fx.push(Effect::Engine(EngineCommand::ListTools { server }));
}

/// The server went wrong: a tool picker waiting for it says why.
pub(super) fn server_failing(state: &mut State, server: &ServerId) {
    let Some(error) = servers::failure(state, server) else {
        return;
    };
    for m in &mut state.modals {
        if let Modal::ToolPicker(tp) = m
            && &tp.server == server
            && tp.tools.is_none()
        {
            tp.error = Some(error.clone());
        }
    }
}

/// Move in the picker on top; false when no picker is on top.
pub(super) fn picker_move(state: &mut State, delta: isize) -> bool {
    match state.modals.last_mut() {
        Some(Modal::ToolPicker(ToolPicker { tools: None, .. })) => true,
        Some(m) => match m.picker_mut() {
            Some(p) => {
                p.move_by(delta);
                true
            }
            None => false,
        },
        None => false,
    }
}

/// `/`, `enter` and `esc` of a picker's query line; false when no picker is on top.
pub(super) fn picker_query(state: &mut State, action: Action) -> bool {
    let Some(p) = state.modals.last_mut().and_then(Modal::picker_mut) else {
        return false;
    };
    match action {
        Action::Filter => p.set_editing(true),
        Action::FilterApply => p.set_editing(false),
        Action::FilterClear => {
            p.clear_query();
            p.set_editing(false);
        }
        _ => return false,
    }
    true
}

/// A key the keymap does not bind, typed into the picker's query line.
pub(super) fn edit_picker_query(state: &mut State, key: Key) -> bool {
    let Some(p) = state.modals.last_mut().and_then(Modal::picker_mut) else {
        return false;
    };
    if let Some(req) = line_edit::request(key) {
        p.edit_query(req);
    }
    true
}

/// `enter` in a picker: a server opens its tool picker, a tool its argument form.
pub(super) fn picker_select(state: &mut State, now: Now, fx: &mut Vec<Effect>) {
    match state.modals.last() {
        Some(Modal::ServerPicker(p)) => {
            if let Some(server) = p.current().cloned() {
                state.modals.pop();
                open_tool_picker(state, server, fx);
            }
        }
        Some(Modal::ToolPicker(tp)) => {
            let Some(tool) = tp.tools.as_ref().and_then(|p| p.current()).cloned() else {
                return;
            };
            let server = tp.server.clone();
            if tool.task_support.as_deref() == Some("forbidden") {
                state.notify(
                    NoticeLevel::Info,
                    "this tool does not run as a task; its result will show in a popup",
                    now,
                );
            }
            state.modals.pop();
            state
                .modals
                .push(Modal::ToolForm(Box::new(ToolForm::build(server, tool))));
        }
        _ => {}
    }
}

pub(super) fn tools_listed(state: &mut State, server: ServerId, tools: Vec<ToolInfo>, now: Now) {
    let waiting = state.modals.iter_mut().find_map(|m| match m {
        Modal::ToolPicker(tp) if tp.server == server && tp.tools.is_none() => Some(tp),
        _ => None,
    });
    let Some(tp) = waiting else {
        return;
    };
    let empty = tools.is_empty();
    tp.tools = Some(Picker::new(tools));
    tp.error = None;
    if empty {
        state.notify(NoticeLevel::Info, &format!("{server} lists no tools"), now);
    }
}

/// `tools/list` failed: the picker waiting for it says why (and can be left as ever).
pub(super) fn tools_list_failed(state: &mut State, server: &ServerId, error: &str, now: Now) {
    let text = format!(
        "cannot list tools: {}",
        sanitize_line(error, widths::REASON)
    );
    let mut shown = false;
    for m in &mut state.modals {
        if let Modal::ToolPicker(tp) = m
            && &tp.server == server
            && tp.tools.is_none()
        {
            tp.error = Some(text.clone());
            shown = true;
        }
    }
    if !shown {
        state.notify(NoticeLevel::Error, &format!("{server}: {text}"), now);
    }
}

/// Validate the argument form and call the tool.
pub(super) fn submit(state: &mut State, now: Now, fx: &mut Vec<Effect>) {
    if state.refuse_read_only(now) {
        return;
    }
    let Some(Modal::ToolForm(tf)) = state.modals.last_mut() else {
        return;
    };
    let arguments = if tf.json_fallback {
        match tf.form.collect(0) {
            Ok(mut m) => m.remove("arguments").unwrap_or(json!({})),
            Err(_) => {
                tf.error = Some("the arguments are not valid JSON".to_string());
                return;
            }
        }
    } else {
        match tf.form.collect(0) {
            Ok(m) => Value::Object(m),
            Err(n) => {
                tf.form.focus_first_error();
                tf.error = Some(format!("{n} field(s) need fixing"));
                return;
            }
        }
    };
    if tf.json_fallback && !arguments.is_object() {
        tf.error = Some("the arguments must be a JSON object".to_string());
        return;
    }
    let (server, tool) = (tf.server.clone(), tf.tool.name.clone());
    state.modals.pop();
    let text = format!("calling {tool} on {server}…");
    state.notify(NoticeLevel::Info, &text, now);
    call(state, server, tool, arguments, None, fx);
}

/// Issue a `CallTool`, remembered until its `CallFinished`.
fn call(
    state: &mut State,
    server: ServerId,
    tool: String,
    arguments: Value,
    parent_task: Option<crate::engine::TaskId>,
    fx: &mut Vec<Effect>,
) {
    let call_id = state.next_call_id;
    state.next_call_id += 1;
    state.calls.insert(call_id, (server.clone(), tool.clone()));
    fx.push(Effect::Engine(EngineCommand::CallTool {
        server,
        call_id,
        tool,
        arguments,
        parent_task,
    }));
}

/// `r`: ask before calling the focused task's tool again with the same arguments (read
/// from the ledger first when only it holds them).
pub(super) fn ask_rerun(state: &mut State, now: Now, fx: &mut Vec<Effect>) {
    if state.refuse_read_only(now) {
        return;
    }
    let Some(row) = state.focused_task().and_then(|k| state.tasks.get(&k)) else {
        return state.notify(NoticeLevel::Info, "no task selected", now);
    };
    if payload::load(state, &row.key, AfterPayload::AskRerun, fx) {
        return;
    }
    let (Some(tool), Some(arguments)) = (&row.tool, &row.arguments) else {
        return state.notify(
            NoticeLevel::Info,
            "cannot re-run: the ledger has no tool call for this task",
            now,
        );
    };
    let args = sanitize_line(&arguments.to_string(), widths::ARGUMENTS);
    let body = format!(
        "Call {} on {} again with {args}? The new task links to {}.",
        sanitize_line(tool, widths::TOOL_NAME),
        sanitize_line(row.key.server.as_str(), widths::SERVER_NAME),
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
    let (Some(tool), Some(arguments)) = (row.tool.clone(), row.arguments.as_deref().cloned())
    else {
        return;
    };
    let text = format!("re-running {tool} ({})…", key.task_id.prefix());
    state.notify(NoticeLevel::Info, &text, now);
    call(state, key.server, tool, arguments, Some(key.task_id), fx);
}

/// What a call came to: a new row, a result popup, or an error notice.
pub(super) fn call_finished(
    state: &mut State,
    server: ServerId,
    call_id: u64,
    tool: String,
    result: CallResult,
    now: Now,
) {
    state.calls.remove(&call_id);
    match result {
        CallResult::Task { task_id, stored } => {
            if !stored {
                let text = format!(
                    "{tool}: task {} runs on {server} but could not be stored in the ledger",
                    task_id.prefix()
                );
                state.notify(NoticeLevel::Error, &text, now);
            }
            let tk = TaskKey::new(&server, &task_id);
            let row = row_mut(state, &tk);
            row.tool = row.tool.take().or(Some(tool.clone()));
            row.refresh_text();
            let text = format!("{tool}: task {} started", task_id.prefix());
            state.notify(NoticeLevel::Info, &text, now);
        }
        CallResult::Plain { result } => {
            let title = format!(
                "{} on {}: result",
                sanitize_line(&tool, widths::TOOL_NAME),
                sanitize_line(server.as_str(), widths::SERVER_NAME)
            );
            state.modals.push(Modal::Doc(DocView {
                title,
                lines: result_lines(&result),
                scroll: 0,
            }));
        }
        CallResult::Error { message, .. } => {
            let text = format!("{tool} failed: {message}");
            state.notify(NoticeLevel::Error, &text, now);
        }
        CallResult::Refused { reason } => state.notify(NoticeLevel::Warn, &reason, now),
    }
}
