//! Reducer part for forms and pickers: opening and answering input forms (accept with
//! content, URL consent, decline, cancel), and the new-task flow (server picker → tool
//! picker → argument form → `CallTool`). Pure; effects are returned, never executed.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::keymap::Action;
use super::keys::{Key, KeyCode};
use super::modal::{InputForm, Modal, Picker, SectionKind, ToolForm, ToolPicker};
use super::task::AnswerMark;
use super::update::refuse_read_only;
use super::{Context, Effect, Now, State};
use crate::engine::{EngineCommand, NoticeLevel, ServerId};
use crate::mcp::ToolInfo;

fn top_form(state: &mut State) -> Option<&mut super::form::Form> {
    match state.modals.last_mut()? {
        Modal::Input(f) => Some(&mut f.form),
        Modal::ToolForm(f) => Some(&mut f.form),
        _ => None,
    }
}

/// Route a key in a form: the focused field gets text first, then the keymap, then the
/// field's own editing keys. Returns the action to run, if any.
pub(super) fn form_key(state: &mut State, key: Key) -> Option<Action> {
    let keymap = state.keymap.clone();
    let action = keymap.action(Context::Form, key);
    let form = top_form(state)?;
    let Some(field) = form.focused() else {
        return action;
    };
    let json = matches!(field.kind, super::form::FieldKind::Json);
    let nav = matches!(key.code, KeyCode::Tab | KeyCode::BackTab | KeyCode::Esc);
    let edited = if json && !nav {
        field.edit(key)
    } else if (field.takes_text() && key.text_char().is_some()) || action.is_none() {
        field.edit(key);
        true
    } else {
        false
    };
    if !edited {
        return action;
    }
    clear_fixed_summary(state);
    None
}

/// Drop the form's "N fields need fixing" line once no field shows an error any more.
fn clear_fixed_summary(state: &mut State) {
    let (form, error) = match state.modals.last_mut() {
        Some(Modal::Input(f)) => (&f.form, &mut f.error),
        Some(Modal::ToolForm(f)) => (&f.form, &mut f.error),
        _ => return,
    };
    if form.fields.iter().all(|f| f.error.is_none()) {
        *error = None;
    }
}

pub(super) fn open_input_form(state: &mut State, now: Now) {
    let key = match state.modals.last() {
        Some(Modal::Detail(d)) => Some(d.key.clone()),
        _ => state.board.selected.clone(),
    };
    open_input_form_for(state, key, now)
}

/// Open the input form of the task `key` (notices when there is nothing to answer).
pub(super) fn open_input_form_for(state: &mut State, key: Option<super::TaskKey>, now: Now) {
    let Some(row) = key.as_ref().and_then(|k| state.tasks.get(k)) else {
        return state.notify(NoticeLevel::Info, "no task selected", now);
    };
    if row.pending.is_empty() {
        let text = if row.answer.is_some() {
            "answer sent; waiting for the server to move on"
        } else {
            "this task is not waiting for input"
        };
        return state.notify(NoticeLevel::Info, text, now);
    }
    let form = InputForm::build(row);
    state.modals.push(Modal::Input(Box::new(form)));
}

pub(super) fn form_action(state: &mut State, action: Action, now: Now, fx: &mut Vec<Effect>) {
    match action {
        Action::NextField | Action::PrevField => {
            if let Some(f) = top_form(state) {
                f.move_focus(action == Action::NextField);
            }
        }
        Action::Toggle => {
            if let Some(field) = top_form(state).and_then(|f| f.focused()) {
                field.toggle();
            }
            clear_fixed_summary(state);
        }
        Action::Submit => match state.modals.last() {
            Some(Modal::Input(_)) => submit_input(state, now, fx),
            Some(Modal::ToolForm(_)) => submit_tool(state, now, fx),
            _ => {}
        },
        Action::Decline | Action::Dismiss => {
            let verdict = if action == Action::Decline {
                "decline"
            } else {
                "cancel"
            };
            if matches!(state.modals.last(), Some(Modal::Input(_))) {
                if refuse_read_only(state, now) {
                    return;
                }
                let Some(Modal::Input(form)) = state.modals.last() else {
                    return;
                };
                let responses = form
                    .sections
                    .iter()
                    .map(|s| (s.input_key.clone(), json!({ "action": verdict })))
                    .collect();
                send_answer(state, responses, fx);
            } else if action == Action::Dismiss {
                state.modals.pop();
            }
        }
        _ => {}
    }
}

fn submit_input(state: &mut State, now: Now, fx: &mut Vec<Effect>) {
    if refuse_read_only(state, now) {
        return;
    }
    let Some(Modal::Input(form)) = state.modals.last_mut() else {
        return;
    };
    let mut responses = BTreeMap::new();
    let mut errors = 0;
    for (group, section) in form.sections.iter().enumerate() {
        match &section.kind {
            SectionKind::Fields => match form.form.collect(group) {
                Ok(content) => {
                    responses.insert(
                        section.input_key.clone(),
                        json!({ "action": "accept", "content": Value::Object(content) }),
                    );
                }
                Err(n) => errors += n,
            },
            SectionKind::Url { .. } => {
                responses.insert(section.input_key.clone(), json!({ "action": "accept" }));
            }
            SectionKind::Unsupported { .. } => {}
        }
    }
    if errors > 0 {
        form.form.focus_first_error();
        form.error = Some(format!(
            "{errors} field{} need{} fixing",
            if errors == 1 { "" } else { "s" },
            if errors == 1 { "s" } else { "" }
        ));
        return;
    }
    if responses.is_empty() {
        form.error = Some("nothing here can be accepted; decline instead".to_string());
        return;
    }
    send_answer(state, responses, fx);
}

/// Send the responses, mark the row "answer sent", close the form.
fn send_answer(state: &mut State, responses: BTreeMap<String, Value>, fx: &mut Vec<Effect>) {
    let Some(Modal::Input(form)) = state.modals.pop() else {
        return;
    };
    if let Some(row) = state.tasks.get_mut(&form.key) {
        let mut requests = BTreeMap::new();
        for k in responses.keys() {
            if let Some(req) = row.pending.remove(k) {
                requests.insert(k.clone(), req);
            }
            row.answered.insert(k.clone());
        }
        let baseline_keys: BTreeSet<String> = row
            .task
            .as_ref()
            .map(|t| t.input_requests.keys().cloned().collect())
            .unwrap_or_default();
        row.answer = Some(AnswerMark {
            requests,
            acked: false,
            baseline_status: row.task.as_ref().map(|t| t.status.clone()),
            baseline_keys,
        });
        state.board.dirty = true;
    }
    fx.push(Effect::Engine(EngineCommand::Answer {
        server: form.key.server.clone(),
        task_id: form.key.task_id.clone(),
        responses,
    }));
}

pub(super) fn start_new_task(state: &mut State, now: Now, fx: &mut Vec<Effect>) {
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

fn open_tool_picker(state: &mut State, server: ServerId, fx: &mut Vec<Effect>) {
    state.modals.push(Modal::ToolPicker(ToolPicker {
        server: server.clone(),
        tools: None,
    }));
    fx.push(Effect::Engine(EngineCommand::ListTools { server }));
}

pub(super) fn picker_move(state: &mut State, delta: isize) -> bool {
    match state.modals.last_mut() {
        Some(Modal::ServerPicker(p)) => p.move_by(delta),
        Some(Modal::ToolPicker(ToolPicker { tools: Some(p), .. })) => p.move_by(delta),
        Some(Modal::ToolPicker(_)) => {}
        _ => return false,
    }
    true
}

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
    if empty {
        state.notify(NoticeLevel::Info, &format!("{server} lists no tools"), now);
    }
}

fn submit_tool(state: &mut State, now: Now, fx: &mut Vec<Effect>) {
    if refuse_read_only(state, now) {
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
    let call_id = state.next_call_id;
    state.next_call_id += 1;
    let (server, tool) = (tf.server.clone(), tf.tool.name.clone());
    state.modals.pop();
    state.calls.insert(call_id, (server.clone(), tool.clone()));
    let text = format!("calling {tool} on {server}…");
    state.notify(NoticeLevel::Info, &text, now);
    fx.push(Effect::Engine(EngineCommand::CallTool {
        server,
        call_id,
        tool,
        arguments,
        parent_task: None,
    }));
}
