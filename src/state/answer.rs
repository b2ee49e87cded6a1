//! Sending an answer, whatever view took it: the answering view closes, a task's row is
//! marked "answer sent" until the engine reports back (or its requests are pending again if
//! it failed), a request outside any task leaves the list; and a task that ends closes its
//! answering views. Below every kind of answering view (form, URL consent, sampling), which
//! all send through here. Pure; effects are returned, never executed.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::input_target::InputTarget;
use super::modal::Modal;
use super::task::AnswerMark;
use super::{Effect, Now, State, TaskKey};
use crate::engine::{EngineCommand, NoticeLevel};

/// Send the responses to `target` and close the view answering it: a task's row is
/// marked "answer sent" (one `Answer`); a request outside any task leaves the list (one
/// `AnswerForeground` per request).
pub(super) fn send(
    state: &mut State,
    target: InputTarget,
    responses: BTreeMap<String, Value>,
    fx: &mut Vec<Effect>,
) {
    if state.modals.last().and_then(Modal::target) == Some(&target) {
        state.modals.pop();
    }
    let key = match target {
        InputTarget::Task(key) => key,
        InputTarget::Foreground { server, .. } => {
            for (key, response) in responses {
                // The entry leaves (the engine reports a failure as `Closed`).
                state
                    .foreground
                    .retain(|f| !(f.server == server && f.key == key));
                fx.push(Effect::Engine(EngineCommand::AnswerForeground {
                    server: server.clone(),
                    key,
                    response,
                }));
            }
            return;
        }
    };
    if let Some(row) = state.tasks.get_mut(&key) {
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
        row.answer = Some(Box::new(AnswerMark {
            requests,
            acked: false,
            baseline_status: row.task.as_ref().map(|t| t.status.clone()),
            baseline_keys,
        }));
        state.touch_row(&key);
    }
    fx.push(Effect::Engine(EngineCommand::Answer {
        server: key.server.clone(),
        task_id: key.task_id.clone(),
        responses,
    }));
}

/// The server acknowledged the answer.
pub(super) fn answer_sent(state: &mut State, key: &TaskKey) {
    if let Some(mark) = state.tasks.get_mut(key).and_then(|r| r.answer.as_mut()) {
        mark.acked = true;
        state.touch_row(key);
    }
}

/// The answer did not go through: the requests are pending again.
pub(super) fn answer_failed(
    state: &mut State,
    key: &TaskKey,
    keys: &[String],
    error: &str,
    now: Now,
) {
    if let Some(row) = state.tasks.get_mut(key) {
        if let Some(mark) = row.answer.take() {
            for (k, req) in mark.requests {
                row.answered.remove(&k);
                if keys.contains(&k) || keys.is_empty() {
                    row.offer_input(&k, req);
                }
            }
        }
        state.touch_row(key);
    }
    let text = format!("answer to {} failed: {error}", key.task_id.prefix());
    state.notify(NoticeLevel::Error, &text, now);
}

/// A terminal or expired task closes its open answering views without sending anything.
pub(super) fn close_for_ended_task(state: &mut State, key: &TaskKey, now: Now) {
    let before = state.modals.len();
    let target = InputTarget::Task(key.clone());
    state.modals.retain(|m| m.target() != Some(&target));
    if state.modals.len() != before {
        let text = format!(
            "task {} ended while its form was open; nothing was sent",
            key.task_id.prefix()
        );
        state.notify(NoticeLevel::Info, &text, now);
    }
}
