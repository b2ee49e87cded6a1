//! Sampling input (`sampling/createMessage`): the view that shows the request — system
//! prompt, conversation, model preferences, token limit — and takes the assistant's reply,
//! typed by the person or produced by the server's configured command after the person
//! approves (its output lands in the reply, to be read before it is sent). Where sampling
//! is not offered the view says so. Must not render, run the command or do I/O.

use serde_json::json;

use super::input_target::InputTarget;
use super::keymap::Action;
use super::keys::Key;
use super::modal::Modal;
use super::offers::SamplingSetup;
use super::text_area::TextArea;
use super::views::sampling::{MAX_REPLY, Phase, SamplingView, clean_output};
use super::{Effect, Now, State, answer};
use crate::engine::NoticeLevel;
use crate::sanitize::sanitize_line;
use crate::state::widths;

fn top(state: &mut State) -> Option<&mut SamplingView> {
    match state.modals.last_mut() {
        Some(Modal::Sampling(v)) => Some(v),
        _ => None,
    }
}

/// A key in the sampling view: bound keys act, the rest edit the reply.
pub(super) fn key(state: &mut State, key: Key, action: Option<Action>) -> Option<Action> {
    if action.is_some() {
        return action;
    }
    let view = top(state)?;
    if view.setup.is_some() && view.phase != Phase::Running && view.reply.edit(key) {
        if view.reply.text().chars().count() > MAX_REPLY {
            view.reply.edit(Key::plain(super::keys::KeyCode::Backspace));
        }
        view.error = None;
    }
    None
}

/// ctrl+s: send the reply.
pub(super) fn submit(state: &mut State, now: Now, fx: &mut Vec<Effect>) {
    if state.refuse_read_only(now) {
        return;
    }
    let Some(view) = top(state) else { return };
    if view.setup.is_none() {
        view.error = Some("sampling is not offered to this server; nothing can be sent".into());
        return;
    }
    if view.phase == Phase::Running {
        view.error = Some("the command is still running".into());
        return;
    }
    if view.reply.text().trim().is_empty() {
        view.error = Some("the reply is empty: type it (or run the command) first".into());
        return;
    }
    let (target, key, result) = (view.target.clone(), view.input_key.clone(), view.result());
    state.drafts.remove(&(target.clone(), key.clone()));
    answer::send(state, target, [(key, result)].into_iter().collect(), fx);
}

/// ctrl+r: the person approves; the configured command gets the request.
pub(super) fn run_command(state: &mut State, now: Now, fx: &mut Vec<Effect>) {
    if state.refuse_read_only(now) {
        return;
    }
    let Some(view) = top(state) else { return };
    let Some(SamplingSetup::Command { command, timeout }) = view.setup.clone() else {
        view.error = Some(match view.setup {
            None => "sampling is not offered to this server".into(),
            Some(_) => "no sampling command is configured for this server: type the reply".into(),
        });
        return;
    };
    if view.phase == Phase::Running {
        return;
    }
    view.phase = Phase::Running;
    view.error = None;
    let input = json!({ "method": view.request.method, "params": view.request.params });
    fx.push(Effect::RunSampling {
        target: view.target.clone(),
        input_key: view.input_key.clone(),
        command,
        timeout,
        input,
    });
}

/// ctrl+d: refuse the request (where the protocol has a refusal).
pub(super) fn refuse(state: &mut State, now: Now, fx: &mut Vec<Effect>) {
    if state.refuse_read_only(now) {
        return;
    }
    let Some(view) = top(state) else { return };
    if !view.can_refuse {
        view.error = Some(
            "a task's sampling request has no refusal on this protocol: close this and cancel the task (c)"
                .into(),
        );
        return;
    }
    let (target, key) = (view.target.clone(), view.input_key.clone());
    state.drafts.remove(&(target.clone(), key.clone()));
    let responses = [(key, json!({ "action": "decline" }))]
        .into_iter()
        .collect();
    answer::send(state, target, responses, fx);
}

/// The view closes without an answer: the typed reply is kept for next time.
pub(super) fn keep_draft(state: &mut State) {
    if let Some(Modal::Sampling(v)) = state.modals.last() {
        let text = v.reply.text();
        let slot = (v.target.clone(), v.input_key.clone());
        if text.is_empty() {
            state.drafts.remove(&slot);
        } else if state.drafts.len() < 256 {
            state.drafts.insert(slot, text);
        }
    }
}

/// The command finished: its (sanitized) output becomes the reply, to be read first.
pub(super) fn command_finished(
    state: &mut State,
    target: InputTarget,
    input_key: String,
    result: Result<String, String>,
    now: Now,
) {
    let open = state.modals.iter_mut().find_map(|m| match m {
        Modal::Sampling(v) if v.target == target && v.input_key == input_key => Some(v),
        _ => None,
    });
    match (open, result) {
        (Some(v), Ok(out)) => {
            v.reply = TextArea::new(&clean_output(&out));
            v.phase = Phase::Review;
        }
        (Some(v), Err(e)) => v.phase = Phase::Failed(sanitize_line(&e, widths::REASON)),
        (None, Ok(out)) => {
            state.drafts.insert((target, input_key), clean_output(&out));
            state.notify(
                NoticeLevel::Info,
                "the sampling command finished; open the request again to read its output",
                now,
            );
        }
        (None, Err(e)) => state.notify(
            NoticeLevel::Error,
            &format!(
                "the sampling command failed: {}",
                sanitize_line(&e, widths::REASON)
            ),
            now,
        ),
    }
}
