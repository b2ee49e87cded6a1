//! The forms: keys inside a form (typing into the focused field, focus moves, toggles),
//! and the life of every view answering input — opened on a task waiting for input (or a
//! request outside any task) as the view its requests need (the form, URL consent,
//! sampling, roots), answered (accept with content, decline, cancel) as one `Answer`
//! command (or `AnswerForeground`), marked "answer sent" until the engine reports back,
//! closed when its task ends. The new-task argument form is submitted by `new_task`.
//! Pure; effects are returned, never executed.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::form::{FieldKind, Form};
use super::input_target::InputTarget;
use super::keymap::Action;
use super::keys::{Key, KeyCode};
use super::modal::{InputForm, Modal, SectionKind, task_title};
use super::offers::Answering;
use super::sampling;
use super::views::consent::ConsentView;
use super::views::sampling::SamplingView;
use super::{Effect, Now, State, TaskKey, answer, roots};
use crate::engine::{NoticeLevel, ServerId};
use crate::mcp::InputRequest;

fn top_form(state: &mut State) -> Option<&mut Form> {
    match state.modals.last_mut()? {
        Modal::Input(f) => Some(&mut f.form),
        Modal::ToolForm(f) => Some(&mut f.form),
        _ => None,
    }
}

/// Route a key in a form: the focused field gets text first, then the keymap (`action`),
/// then the field's own editing keys. Returns the action to run, if any.
pub(super) fn key(state: &mut State, key: Key, action: Option<Action>) -> Option<Action> {
    let form = top_form(state)?;
    let Some(field) = form.focused() else {
        return action;
    };
    let json = matches!(field.kind, FieldKind::Json);
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

/// Tab / shift+tab (and up/down) between the fields.
pub(super) fn move_focus(state: &mut State, forward: bool) {
    if let Some(f) = top_form(state) {
        f.move_focus(forward);
    }
}

/// Space on a checkbox, select or multi select.
pub(super) fn toggle(state: &mut State) {
    if let Some(field) = top_form(state).and_then(|f| f.focused()) {
        field.toggle();
    }
    clear_fixed_summary(state);
}

/// Open the input form of the focused task (`a`, or `enter` on a task waiting for input).
pub(super) fn open_focused(state: &mut State, now: Now) {
    let key = state.focused_task();
    open(state, key, now)
}

/// Open the input form of the task `key` (notices when there is nothing to answer).
pub(super) fn open(state: &mut State, key: Option<TaskKey>, now: Now) {
    let Some(row) = key.as_ref().and_then(|k| state.tasks.get(k)) else {
        return state.notify(NoticeLevel::Info, "no task selected", now);
    };
    if row.pending.is_empty() {
        let text = if row.answer.is_some() {
            "answer sent; waiting for the server to move on"
        } else if row.needs_input() {
            "the server has not sent its input request yet; try again in a moment"
        } else {
            "this task is not waiting for input"
        };
        return state.notify(NoticeLevel::Info, text, now);
    }
    let (target, title, requests) = (
        InputTarget::Task(row.key.clone()),
        task_title(row),
        row.pending.clone(),
    );
    open_requests(state, target, title, &requests, now);
}

/// Open the view answering `target`: a task's pending requests, or one request outside
/// any task.
pub(super) fn open_target(state: &mut State, target: &InputTarget, now: Now) {
    match target {
        InputTarget::Task(key) => open(state, Some(key.clone()), now),
        InputTarget::Foreground { server, key } => open_foreground(state, server, key, now),
    }
}

/// Open the view `requests` need: the form for form-mode requests (and unknown kinds,
/// shown as JSON), else the consent view of the first link, else the sampling view, else
/// Open the view answering foreground request `key`.
fn open_foreground(state: &mut State, server: &ServerId, key: &str, now: Now) {
    let Some(entry) = state.foreground_input(server, key).cloned() else {
        return state.notify(
            NoticeLevel::Info,
            "that input request is no longer open",
            now,
        );
    };
    let requests = [(entry.key.clone(), entry.request.clone())]
        .into_iter()
        .collect();
    let title = format!("Input {}", entry.origin_text());
    open_requests(state, entry.target(), title, &requests, now);
}

/// the roots view (roots are only asked here when not offered).
pub(super) fn open_requests(
    state: &mut State,
    target: InputTarget,
    title: String,
    requests: &BTreeMap<String, InputRequest>,
    _now: Now,
) {
    let of = |want: &[Answering]| {
        requests
            .iter()
            .filter(|(_, r)| want.contains(&Answering::of(r)))
            .map(|(k, r)| (k.clone(), r.clone()))
            .collect::<BTreeMap<String, InputRequest>>()
    };
    let forms = of(&[Answering::Form, Answering::Unknown]);
    let modal = if !forms.is_empty() {
        Modal::Input(Box::new(InputForm::build(target, title, &forms)))
    } else if let Some((k, r)) = of(&[Answering::Consent]).into_iter().next() {
        Modal::Consent(Box::new(ConsentView::build(target, title, &k, &r)))
    } else if let Some((k, r)) = of(&[Answering::Sampling]).into_iter().next() {
        Modal::Sampling(Box::new(SamplingView::build(state, target, title, &k, &r)))
    } else {
        return roots::open_for(state, target.server().clone());
    };
    state.modals.push(modal);
}

/// Decline (`Decline`) or dismiss (`Dismiss`, answered `cancel`) the requests of the open
/// view (every section of the form; the link of the consent view; a sampling request is
/// refused); on the argument form, dismiss closes it.
pub(super) fn decline(state: &mut State, action: Action, now: Now, fx: &mut Vec<Effect>) {
    let verdict = if action == Action::Decline {
        "decline"
    } else {
        "cancel"
    };
    let (target, keys): (InputTarget, Vec<String>) = match state.modals.last() {
        Some(Modal::Input(form)) => (
            form.target.clone(),
            form.sections.iter().map(|s| s.input_key.clone()).collect(),
        ),
        Some(Modal::Consent(c)) => (c.target.clone(), vec![c.input_key.clone()]),
        Some(Modal::Sampling(_)) => return sampling::refuse(state, now, fx),
        Some(Modal::ToolForm(_)) if action == Action::Dismiss => {
            state.modals.pop();
            return;
        }
        _ => return,
    };
    if state.refuse_read_only(now) {
        return;
    }
    let link = matches!(state.modals.last(), Some(Modal::Consent(_)));
    let responses = keys
        .into_iter()
        .map(|k| (k, json!({ "action": verdict })))
        .collect();
    let of = match &target {
        InputTarget::Task(key) => format!("task {}", key.task_id.prefix()),
        InputTarget::Foreground { server, .. } => state.server_name(server),
    };
    answer::send(state, target, responses, fx);
    if link {
        // The view closes at once and a link leaves no mark on the row: say what was sent.
        let done = if action == Action::Decline {
            "declined"
        } else {
            "cancelled"
        };
        let text = format!("link request of {of} {done} (answered `{verdict}`)");
        state.notify(NoticeLevel::Info, &text, now);
    }
}

/// Validate the open input form and send what it accepts.
pub(super) fn submit(state: &mut State, now: Now, fx: &mut Vec<Effect>) {
    if state.refuse_read_only(now) {
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
    let target = form.target.clone();
    answer::send(state, target, responses, fx);
}
