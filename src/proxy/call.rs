//! The `tools/call` path: the call goes upstream asking for a task (the only request the
//! proxy changes); a plain result comes back unchanged; a task is recorded in the ledger
//! (tool, arguments, who started it) before the host hears of it, then either handed to a
//! host that drives tasks itself or followed to its end for one that waits.
//!
//! A host that waits is attached to the work an identical earlier call left running
//! (`attach.rs`) before anything is sent, and gives up waiting without stopping the work
//! when its own timeout fires.
//!
//! Owns: the choice between those. Must never send a `tools/call` twice (a dropped legacy
//! session, where the server did not process it, is the one exception), and must let the
//! call and its recording finish even when the host goes away.

use serde_json::{Value, json};

use super::era::{self, HostEra, Outcome};
use super::forward;
use super::host::{Ctx, Reply};
use super::job::{Called, Job};
use super::rpc_error;
use crate::mcp::{CallOutcome, Era, decode_call_result};

/// How the host takes a task.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Wants {
    /// 2025-11-25 `params.task`: a v1 handle.
    V1,
    /// 2026-07-28 with the tasks extension declared: a v2 handle.
    V2,
    /// Neither: one blocking call, answered with the final result.
    Result,
}

fn wants(ctx: &Ctx) -> Wants {
    let v2 = super::meta(&ctx.params)
        .and_then(|m| m.get("io.modelcontextprotocol/clientCapabilities"))
        .and_then(|c| c.pointer("/extensions"))
        .and_then(|e| e.get(crate::mcp::TASKS_EXTENSION))
        .is_some_and(Value::is_object);
    if ctx.era == HostEra::Modern && v2 {
        Wants::V2
    } else if ctx.era.has_v1_tasks() && ctx.params.get("task").is_some_and(Value::is_object) {
        Wants::V1
    } else {
        Wants::Result
    }
}

/// Multi round-trip rounds answered for a 2025-era host before giving up.
const MAX_INPUT_ROUNDS: usize = 8;

pub async fn tools_call(ctx: &Ctx) -> Reply {
    if ctx.era == HostEra::Modern
        && let Some(resumed) = super::input::resume(ctx).await
    {
        return match resumed {
            Ok(task_id) => wait_for(ctx, &task_id, 0.0, None).await,
            Err(e) => Some(Err(e)),
        };
    }
    let Some(tool) = ctx.params.get("name").and_then(Value::as_str) else {
        return Some(Err(rpc_error(-32602, "tools/call needs a tool name")));
    };
    let tool = tool.to_string();
    let arguments = ctx
        .params
        .get("arguments")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let wants = wants(ctx);
    let key = (wants == Wants::Result).then(|| super::attach::call_key(&tool, &arguments));
    if let Some(key) = &key
        && let Some(task_id) = super::attach::find(ctx, key).await
    {
        super::attach::attach(ctx, &task_id).await;
        return wait_for(ctx, &task_id, 0.0, Some(key)).await;
    }
    let client = match ctx.proxy.upstream().await {
        Ok(c) => c,
        Err(e) => return Some(Err(e)),
    };
    let mut params = ctx.params.clone();
    if client.era() == Era::Modern
        && let Some(obj) = params.as_object_mut()
    {
        // A v2 server ignores the v1 task request; the extension asks instead.
        obj.remove("task");
    }
    // Shared with the call's job: its progress keeps feeding the call's row after the host
    // stopped waiting.
    let token = Some(std::sync::Arc::new(forward::call_progress(
        ctx,
        &mut params,
    )));
    forward::envelope(ctx, &client, &mut params);
    let mut params = client.task_call_params(params).await;
    let mut called = Called::Error(rpc_error(-32603, "no call was made"));
    for _ in 0..MAX_INPUT_ROUNDS {
        let job = Job::for_call(
            ctx,
            &client,
            &tool,
            &arguments,
            key.as_deref(),
            token.as_ref(),
        );
        called = job.detached(params.clone()).await;
        let Called::InputFirst(first) = &called else {
            break;
        };
        if ctx.era == HostEra::Modern {
            // A 2026-07-28 host answers multi round-trip input itself.
            break;
        }
        match super::input::ask_first(ctx, first).await {
            Ok(Some(responses)) => {
                params["inputResponses"] = responses;
                match first.get("requestState") {
                    Some(state) => params["requestState"] = state.clone(),
                    None => {
                        if let Some(obj) = params.as_object_mut() {
                            obj.remove("requestState");
                        }
                    }
                }
            }
            Ok(None) => return None,
            Err(e) => return Some(Err(e)),
        }
    }
    match called {
        Called::Plain(v) | Called::InputFirst(v) => {
            if matches!(
                decode_call_result(&v),
                Ok(CallOutcome::InputRequired { .. })
            ) && ctx.era != HostEra::Modern
            {
                return Some(Err(rpc_error(
                    -32603,
                    "the server needs input before the call can start, and this client cannot \
                     be asked for it (it declared no elicitation)",
                )));
            }
            Some(Ok(era::shape_result(v, &ctx.era)))
        }
        Called::Error(e) => Some(Err(e)),
        Called::Cancelled => None,
        Called::Task { task, raw } => {
            ctx.host.created_task(task.task_id.clone());
            let upstream_v1 = client.era() == Era::Legacy;
            match wants {
                Wants::V1 if upstream_v1 => Some(Ok(raw)),
                Wants::V1 => Some(Ok(era::create_task_v1(&task))),
                Wants::V2 if !upstream_v1 => Some(Ok(raw)),
                Wants::V2 => Some(Ok(era::create_task_v2(&task))),
                Wants::Result => {
                    let start = token.as_ref().map_or(0.0, |t| t.last());
                    // From here on the proxy reports the task's progress itself.
                    drop(token);
                    wait_for(ctx, &task.task_id, start, key.as_deref()).await
                }
            }
        }
    }
}

/// Answer a host that waits with the task's final result — or, past `--answer-within`,
/// with one that says the task still runs. `key`: the call the task serves, when a retry
/// may attach to it; a host that stops waiting leaves it to that retry.
pub async fn wait_for(
    ctx: &Ctx,
    task_id: &crate::mcp::TaskId,
    progress_from: f64,
    key: Option<&str>,
) -> Reply {
    use super::follow::Waited;
    let waiting = match key {
        Some(key) => {
            super::attach::serve(ctx, task_id, key).await;
            Some(super::attach::Waiting::new(ctx, task_id, key))
        }
        None => None,
    };
    let answer_by = ctx
        .proxy
        .answer_within(&super::attach::host_name(ctx))
        .filter(|_| waiting.is_some())
        .map(|d| tokio::time::Instant::from_std(ctx.began + d));
    let waited = super::follow::to_end(ctx, task_id, false, progress_from, answer_by).await;
    let outcome = match waited {
        None => {
            // Asked to stop the work (a host that only gave up leaves it running: the
            // guard, dropped, says so).
            if !ctx.why.gave_up()
                && let Some(w) = waiting
            {
                w.settle().await;
            }
            return None;
        }
        Some(Waited::Ended(outcome)) => {
            if let Some(w) = waiting {
                w.settle().await;
            }
            outcome
        }
        Some(Waited::Asked(v)) => {
            // Not an answer to the call: the host comes back with its input.
            if let Some(w) = waiting {
                w.settle().await;
            }
            Outcome::Result(v)
        }
        Some(Waited::Running(view)) => {
            if let Some(w) = waiting {
                w.answered_running().await;
            }
            let tool = ctx
                .params
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("the tool");
            let structured = ctx
                .proxy
                .structured_tools
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(tool);
            let mut result = era::still_running(&view, task_id, &ctx.proxy.server, tool);
            // A host's SDK refuses a tool result without the structured content its schema
            // promises, unless it is marked an error: the text says what it is.
            result["isError"] = Value::Bool(structured);
            Outcome::Result(result)
        }
    };
    Some(match outcome {
        Outcome::Result(v) => Ok(era::shape_result(v, &ctx.era)),
        Outcome::Error(e) => Err(e),
    })
}
