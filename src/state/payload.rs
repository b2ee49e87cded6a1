//! A finished task's payload — its arguments, its result (unless a tool error, which the
//! board shows) and its error's data — is not resumed into memory: the ledger keeps it,
//! and it is loaded when the detail view opens or a re-run needs the arguments.

use serde_json::Value;

use super::{Effect, NoticeLevel, State, TaskKey};
use crate::mcp::ErrorObject;

/// What `Effect::LoadPayload` brings back from the ledger.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Payload {
    pub arguments: Option<Value>,
    pub result: Option<Box<Value>>,
    pub error: Option<Box<ErrorObject>>,
}

/// What to do once the payload is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterPayload {
    /// Nothing more (the detail view redraws with it).
    Show,
    /// Ask before re-running the task (the confirmation quotes the arguments).
    AskRerun,
}

/// Ask for `key`'s payload when the ledger still holds it alone; true when asked.
pub(super) fn load(state: &State, key: &TaskKey, then: AfterPayload, fx: &mut Vec<Effect>) -> bool {
    let lean = state.tasks.get(key).is_some_and(|r| r.payload_in_ledger);
    if lean {
        fx.push(Effect::LoadPayload {
            key: key.clone(),
            then,
        });
    }
    lean
}

/// The ledger answered an `Effect::LoadPayload`: the row holds its payload again. Returns
/// what to do next (`None` when the payload could not be read or the row is gone).
pub(super) fn loaded(
    state: &mut State,
    key: &TaskKey,
    result: Result<Payload, String>,
    then: AfterPayload,
    now: super::Now,
) -> Option<AfterPayload> {
    let payload = match result {
        Ok(p) => p,
        Err(e) => {
            let text = format!("cannot read {} from the ledger: {e}", key.task_id.prefix());
            state.notify(NoticeLevel::Error, &text, now);
            return None;
        }
    };
    let row = state.tasks.get_mut(key)?;
    if row.payload_in_ledger {
        row.payload_in_ledger = false;
        row.arguments = payload.arguments.map(Box::new).or(row.arguments.take());
        if let Some(task) = row.task.as_mut() {
            task.result = payload.result.or(task.result.take());
            task.error = payload.error.or(task.error.take());
        }
        row.refresh_text();
    }
    Some(then)
}
