//! Host-side tasks: a host that drives its tasks itself (v1 `tasks/get|result|cancel|list`,
//! v2 `tasks/get|update|cancel`) is served from the engine's view of each task that passed
//! through the proxy, in the host's generation; answers and cancels go through the engine,
//! so the ledger stays current and the dashboard sees them. A task belongs to the host that
//! created it (or was attached to it): any other host is answered as for an unknown task,
//! and nothing goes upstream. Only the stdio host (the one host of its pipe) has a task the
//! proxy never saw sent upstream unchanged.
//!
//! Must not poll the upstream itself: the engine follows every task.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::board::TaskView;
use super::era::{self, HostEra, Outcome};
use super::host::{Ctx, Reply};
use super::rpc_error;
use crate::engine::Failure;
use crate::mcp::{ErrorObject, TaskId, TaskStatus};

pub async fn serve(ctx: &Ctx) -> Reply {
    if ctx.method == "tasks/list" {
        return Some(Ok(list(ctx)));
    }
    let Some(task_id) = ctx.params.get("taskId").and_then(Value::as_str) else {
        return Some(Err(rpc_error(-32602, "taskId is required")));
    };
    let task_id = TaskId::new(task_id);
    let listener_host = ctx.host.principal.token.is_some();
    let view = ctx.proxy.board.view(&task_id);
    let view = match view {
        Some(v) if ctx.host.owns(&task_id) => v,
        None if !listener_host => return super::forward::request(ctx).await,
        // Another host's task, or one this proxy never saw: unknown to this host.
        _ => return Some(Err(gone())),
    };
    match ctx.method.as_str() {
        "tasks/get" => Some(render(ctx, &view)),
        "tasks/result" => result(ctx, &task_id).await,
        "tasks/cancel" => Some(cancel(ctx, &task_id, &view).await),
        "tasks/update" => Some(update(ctx, &task_id).await),
        _ => Some(Err(rpc_error(-32601, "method not found"))),
    }
}

fn gone() -> ErrorObject {
    rpc_error(-32602, "Failed to retrieve task: Task not found or expired")
}

/// The task as the host's generation writes it.
fn render(ctx: &Ctx, view: &TaskView) -> Result<Value, ErrorObject> {
    let task = view.task.as_ref().ok_or_else(gone)?;
    if view.end.is_some() {
        return Err(gone());
    }
    Ok(match ctx.era {
        HostEra::Legacy(_) => era::task_v1(task),
        HostEra::Modern => era::task_v2(task, &view.pending),
    })
}

/// v1 `tasks/list`: the tasks this session started.
fn list(ctx: &Ctx) -> Value {
    let tasks: Vec<Value> = ctx
        .host
        .created()
        .iter()
        .filter_map(|id| ctx.proxy.board.view(id))
        .filter(|v| v.end.is_none())
        .filter_map(|v| v.task.as_ref().map(era::task_v1))
        .collect();
    json!({ "tasks": tasks })
}

/// v1 `tasks/result`: wait for the end (input requests go to the host meanwhile); a
/// cancel of this request abandons the wait only.
async fn result(ctx: &Ctx, task_id: &TaskId) -> Reply {
    let outcome = match super::follow::to_end(ctx, task_id, true, 0.0, None).await? {
        super::follow::Waited::Ended(o) => o,
        super::follow::Waited::Asked(v) => Outcome::Result(v),
        super::follow::Waited::Running(_) => return None,
    };
    Some(match outcome {
        Outcome::Result(v) => Ok(era::shape_result(v, &ctx.era)),
        Outcome::Error(e) => Err(e),
    })
}

fn ack(ctx: &Ctx) -> Value {
    era::shape_result(json!({}), &ctx.era)
}

/// The error a host sees for a failed answer or cancel.
fn failure(f: &Failure) -> ErrorObject {
    match f {
        Failure::Gone(t) | Failure::Refused(t) => rpc_error(-32602, t.clone()),
        Failure::Failed(t) => rpc_error(-32603, t.clone()),
    }
}

async fn cancel(ctx: &Ctx, task_id: &TaskId, view: &TaskView) -> Result<Value, ErrorObject> {
    if view.finished() {
        return match ctx.era {
            // v1: cancelling a terminal task is an error.
            HostEra::Legacy(_) => Err(rpc_error(
                -32602,
                "Cannot cancel a task that has already finished",
            )),
            HostEra::Modern => Ok(ack(ctx)),
        };
    }
    let by = crate::engine::CancelBy::host(Some(&super::attach::host_name(ctx)), None);
    ctx.proxy
        .cancel(task_id, by)
        .await
        .map_err(|f| failure(&f))?;
    match ctx.era {
        HostEra::Modern => Ok(ack(ctx)),
        HostEra::Legacy(_) => {
            // v1: the reply is the task, cancelled.
            let mut task = ctx
                .proxy
                .board
                .view(task_id)
                .and_then(|v| v.task)
                .ok_or_else(gone)?;
            if !task.status.is_terminal() {
                task.status = TaskStatus::Cancelled;
            }
            Ok(era::task_v1(&task))
        }
    }
}

/// v2 `tasks/update`: the host's answers, sent by the engine (once per key).
async fn update(ctx: &Ctx, task_id: &TaskId) -> Result<Value, ErrorObject> {
    let responses: BTreeMap<String, Value> = ctx
        .params
        .get("inputResponses")
        .and_then(|r| serde_json::from_value(r.clone()).ok())
        .unwrap_or_default();
    if responses.is_empty() {
        return Ok(ack(ctx));
    }
    match ctx.proxy.answer(task_id, responses).await {
        Ok(()) => Ok(ack(ctx)),
        // Keys answered already (here or in the dashboard) are ignored, as a server would.
        Err(Failure::Refused(_)) => Ok(ack(ctx)),
        Err(f) => Err(failure(&f)),
    }
}
