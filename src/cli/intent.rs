//! `answer` and `cancel`: sent through the engine, the one path every answer and cancel
//! takes — the read-only check, "already finished", a task followed by another process
//! (reached through the ledger's outbox), a legacy task's session — then the outcome is
//! printed as JSON and mapped to an exit code. Before an answer leaves, `answer_check`
//! judges it by the ledger's record (a key not asked, a response that does not fit).
//!
//! Owns: those two commands. Must not talk to servers except through the engine.

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::Duration;

use super::answer_check::{KeyState, key_state, refusal};
use super::answer_shape::normalize_response;
use super::args::exit;
use super::oneshot::record_for_answer;
use super::output::{finish, say};
use super::task_ref::TaskRef;
use super::{CliResult, Context, fail, stop_engine};
use crate::engine::{EngineCommand, EngineEvent, Failure, ServerSpec, spawn_engine};
use crate::mcp::InputKind;
use crate::sanitize::sanitize_line;

/// How an answer or a cancel ended.
enum Outcome {
    Done,
    Failed(Failure),
    /// No connection, or nothing heard in time.
    Unreachable(String),
}

fn failure_exit(f: &Failure) -> u8 {
    match f {
        Failure::Refused(_) => exit::USAGE,
        Failure::Gone(_) => exit::UNKNOWN_TASK,
        Failure::Failed(_) => exit::CONNECTION,
    }
}

/// Run one command on a fresh engine for `spec` and wait for what `judge` makes of the
/// events, at most `wait`.
async fn run_one(
    ctx: &Context,
    spec: ServerSpec,
    cmd: EngineCommand,
    wait: Duration,
    judge: impl Fn(&EngineEvent) -> Option<Outcome>,
) -> CliResult<Outcome> {
    // Refused before the engine starts: nothing reaches a read-only server.
    let what = match cmd {
        EngineCommand::Answer { .. } => "answer",
        _ => "cancel",
    };
    if let Some(refused) = spec.refuse(what) {
        return Ok(Outcome::Failed(refused));
    }
    let ledger = ctx.ledger().await?;
    let (engine, mut events, join) = spawn_engine(vec![spec], Some(ledger), ctx.engine_config());
    engine.send(cmd).await;
    let deadline = tokio::time::Instant::now() + wait;
    let mut connected = false;
    let outcome = loop {
        let ev = match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Some(ev)) => ev,
            Ok(None) => break Outcome::Unreachable("the engine stopped".into()),
            Err(_) => break Outcome::Unreachable("no outcome in time".into()),
        };
        if let Some(o) = judge(&ev) {
            break o;
        }
        match ev {
            EngineEvent::ServerConnected { .. } => connected = true,
            EngineEvent::ServerDegraded { server, reason } if !connected => {
                break Outcome::Unreachable(format!("cannot reach {server}: {reason}"));
            }
            _ => {}
        }
    };
    stop_engine(engine, join).await;
    Ok(outcome)
}

fn wait_for(ctx: &Context) -> Duration {
    // Long enough for the process that follows the task to act on it.
    Duration::from_secs(ctx.global.timeout.unwrap_or(30).max(1)).max(Duration::from_secs(35))
}

/// What `answer` is asked to send.
pub struct AnswerArgs<'a> {
    pub key: &'a str,
    pub response: &'a str,
    /// Send even what the checks refuse (a schema mismatch, a key not asked).
    pub force: bool,
}

pub async fn answer(
    ctx: &Context,
    spec: ServerSpec,
    task: &TaskRef,
    args: AnswerArgs<'_>,
) -> CliResult {
    let AnswerArgs {
        key,
        response,
        force,
    } = args;
    let given: Value = serde_json::from_str(response)
        .map_err(|e| fail(&format!("--json is not valid JSON: {e}"), exit::USAGE))?;
    // What fits no kind of request is refused before anything is asked of the server.
    normalize_response(given.clone(), None)
        .map_err(|e| fail(&format!("--json: {e}"), exit::USAGE))?;
    let task_id = &task.task_id;
    // Judged from the ledger's record of the task before anything is sent (a read-only
    // server refuses every answer anyway: the engine says so): the request's kind gives
    // the response's shape; a refused response is not sent, so the key stays unanswered.
    let record = if spec.read_only {
        None
    } else {
        record_for_answer(ctx, &spec, task, key).await?
    };
    let state = key_state(record.as_ref(), key);
    let kind = match &state {
        KeyState::Pending(request) => Some(InputKind::of(request)),
        _ => None,
    };
    let response = normalize_response(given, kind.as_ref())
        .map_err(|e| fail(&format!("--json: {e}"), exit::USAGE))?;
    let mut ignored = None;
    if !spec.read_only {
        if let Some(why) = refusal(&state, &response, force) {
            let key = sanitize_line(&task_id.mask(key), 80);
            return Err(fail(
                &format!("not sent: task {task_id}, key {key}: {why}"),
                exit::USAGE,
            ));
        }
        ignored = state.ignored_because();
    }
    let mut responses = BTreeMap::new();
    responses.insert(key.to_string(), response);
    let cmd = EngineCommand::Answer {
        server: spec.id.clone(),
        task_id: task_id.clone(),
        responses,
    };
    let id = task_id.clone();
    let judge = move |ev: &EngineEvent| match ev {
        EngineEvent::AnswerSent { task_id, .. } if *task_id == id => Some(Outcome::Done),
        EngineEvent::AnswerFailed { task_id, error, .. } if *task_id == id => {
            Some(Outcome::Failed(error.clone()))
        }
        _ => None,
    };
    match run_one(ctx, spec, cmd, wait_for(ctx), judge).await {
        Err(e) => Err(e),
        Ok(Outcome::Done) => {
            let mut ack = json!({ "ok": true, "taskId": task_id, "key": key });
            if let Some(why) = &ignored {
                say!("the server acknowledged the answer but ignores it: {why}");
                ack["ignored"] = json!(why);
            }
            Ok(finish(
                &(crate::sanitize::json_line(&ack) + "\n"),
                exit::COMPLETED,
            ))
        }
        Ok(Outcome::Failed(f)) => Err(fail(&format!("answer: {f}"), failure_exit(&f))),
        Ok(Outcome::Unreachable(why)) => Err(fail(&format!("answer: {why}"), exit::CONNECTION)),
    }
}

pub async fn cancel(ctx: &Context, spec: ServerSpec, task: &TaskRef) -> CliResult {
    let task_id = &task.task_id;
    let cmd = EngineCommand::Cancel {
        server: spec.id.clone(),
        task_id: task_id.clone(),
        by: crate::engine::CancelBy::cli(),
    };
    let id = task_id.clone();
    let judge = move |ev: &EngineEvent| match ev {
        EngineEvent::CancelSent {
            task_id,
            acked: true,
            ..
        } if *task_id == id => Some(Outcome::Done),
        EngineEvent::CancelFailed { task_id, error, .. } if *task_id == id => {
            Some(Outcome::Failed(error.clone()))
        }
        _ => None,
    };
    match run_one(ctx, spec, cmd, wait_for(ctx), judge).await {
        Err(e) => Err(e),
        Ok(Outcome::Done) => {
            let ack = json!({ "ok": true, "taskId": task_id });
            Ok(finish(
                &(crate::sanitize::json_line(&ack) + "\n"),
                exit::COMPLETED,
            ))
        }
        Ok(Outcome::Failed(f)) => Err(fail(&format!("cancel: {f}"), failure_exit(&f))),
        Ok(Outcome::Unreachable(why)) => Err(fail(&format!("cancel: {why}"), exit::CONNECTION)),
    }
}
