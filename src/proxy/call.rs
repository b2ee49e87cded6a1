//! The `tools/call` path: the call goes upstream asking for a task (the only request the
//! proxy changes); a plain result comes back unchanged; a task is recorded in the ledger
//! (tool, arguments, who started it) before the host hears of it, then either handed to a
//! host that drives tasks itself or followed to its end for one that waits.
//!
//! Owns: the choice between those. Must never send a `tools/call` twice (a dropped legacy
//! session, where the server did not process it, is the one exception), and must let the
//! call and its recording finish even when the host goes away.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::era::{self, HostEra, Outcome};
use super::forward::{self, upstream_error};
use super::host::{Ctx, Reply};
use super::{Proxy, rpc_error};
use crate::engine::{CallResult, EngineCommand};
use crate::mcp::{CallOutcome, Era, ErrorObject, McpClient, McpError, Task, decode_call_result};

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

/// What one upstream `tools/call` came to.
enum Called {
    Plain(Value),
    /// Multi round-trip input before any task exists.
    InputFirst(Value),
    /// A task, recorded (`stored` unless the ledger write failed).
    Task {
        task: Task,
        raw: Value,
    },
    Error(ErrorObject),
    /// The host cancelled the call (a task it created anyway was cancelled too).
    Cancelled,
}

/// Multi round-trip rounds answered for a 2025-era host before giving up.
const MAX_INPUT_ROUNDS: usize = 8;

/// How long recording a task may take before the host is answered anyway.
const RECORD_WAIT: Duration = Duration::from_secs(30);

pub async fn tools_call(ctx: &Ctx) -> Reply {
    if ctx.era == HostEra::Modern
        && let Some(reply) = super::input::resume(ctx).await
    {
        return reply;
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
    let client = match ctx.proxy.upstream().await {
        Ok(c) => c,
        Err(e) => return Some(Err(e)),
    };
    let wants = wants(ctx);
    let mut params = ctx.params.clone();
    if client.era() == Era::Modern
        && let Some(obj) = params.as_object_mut()
    {
        // A v2 server ignores the v1 task request; the extension asks instead.
        obj.remove("task");
    }
    let token = forward::map_progress(ctx, &mut params);
    forward::envelope(ctx, &client, &mut params);
    let mut params = client.task_call_params(params).await;
    let mut called = Called::Error(rpc_error(-32603, "no call was made"));
    for _ in 0..MAX_INPUT_ROUNDS {
        called = call_detached(ctx, &client, &tool, &arguments, params.clone()).await;
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
                    wait_for(ctx, &task.task_id, start).await
                }
            }
        }
    }
}

/// Answer a host that waits with the task's final result.
pub async fn wait_for(ctx: &Ctx, task_id: &crate::mcp::TaskId, progress_from: f64) -> Reply {
    let outcome = super::follow::to_end(ctx, task_id, false, progress_from).await?;
    Some(match outcome {
        Outcome::Result(v) => Ok(era::shape_result(v, &ctx.era)),
        Outcome::Error(e) => Err(e),
    })
}

/// Run one upstream `tools/call` (and the recording of its task) in a task of its own,
/// which finishes even if the host goes away meanwhile.
async fn call_detached(
    ctx: &Ctx,
    client: &Arc<McpClient>,
    tool: &str,
    arguments: &Value,
    params: Value,
) -> Called {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job = Job {
        proxy: ctx.proxy.clone(),
        client: client.clone(),
        tool: tool.to_string(),
        arguments: arguments.clone(),
        started_by: ctx.client_name.clone(),
        cancel: ctx.cancel.clone(),
    };
    tokio::spawn(async move {
        let _ = tx.send(job.run(params).await);
    });
    rx.await
        .unwrap_or_else(|_| Called::Error(rpc_error(-32603, "the call was interrupted")))
}

struct Job {
    proxy: Arc<Proxy>,
    client: Arc<McpClient>,
    tool: String,
    arguments: Value,
    started_by: Option<String>,
    cancel: CancellationToken,
}

impl Job {
    async fn run(self, params: Value) -> Called {
        let mut cancelled = false;
        let mut reply = None;
        for attempt in 0..2 {
            let id = self.client.request_id();
            let timeout = Some(self.proxy.call_timeout);
            let call = self
                .client
                .forward(&id, "tools/call", params.clone(), timeout);
            tokio::pin!(call);
            let r = tokio::select! {
                r = &mut call => r,
                _ = self.cancel.cancelled(), if !cancelled => {
                    cancelled = true;
                    self.client.cancel_request(&id, "cancelled by the client").await;
                    // A task may still come back: it is recorded, then cancelled.
                    call.await
                }
            };
            match r {
                Err(McpError::SessionLost) if attempt == 0 => {
                    if let Err(e) = self.client.reinitialize().await {
                        return Called::Error(upstream_error(&e));
                    }
                }
                other => {
                    reply = Some(other);
                    break;
                }
            }
        }
        let result = match reply {
            Some(Ok(Ok(v))) => v,
            Some(Ok(Err(e))) if cancelled => {
                tracing::debug!("a cancelled call ended with error {}", e.code);
                return Called::Cancelled;
            }
            Some(Ok(Err(e))) => return Called::Error(e),
            Some(Err(_)) if cancelled => return Called::Cancelled,
            Some(Err(e)) => return Called::Error(upstream_error(&e)),
            None => return Called::Error(rpc_error(-32603, "upstream: the session was lost")),
        };
        let task = match decode_call_result(&result) {
            Ok(CallOutcome::Task(task)) => task,
            Ok(CallOutcome::InputRequired { .. }) if !cancelled => {
                return Called::InputFirst(result);
            }
            _ if cancelled => return Called::Cancelled,
            _ => return Called::Plain(result),
        };
        self.record(&task).await;
        if cancelled {
            let (server, task_id) = (self.proxy.server.clone(), task.task_id.clone());
            self.proxy
                .command(EngineCommand::Cancel { server, task_id })
                .await;
            return Called::Cancelled;
        }
        Called::Task { task, raw: result }
    }

    /// Hand the task to the engine, which commits it to the ledger and follows it; wait
    /// until it is recorded.
    async fn record(&self, task: &Task) {
        let call_id = self.proxy.call_id();
        let done = self.proxy.board.expect_call(call_id);
        self.proxy
            .command(EngineCommand::RecordCreated {
                server: self.proxy.server.clone(),
                call_id,
                tool: self.tool.clone(),
                arguments: self.arguments.clone(),
                task: task.clone(),
                started_by: self.started_by.clone(),
            })
            .await;
        match tokio::time::timeout(RECORD_WAIT, done).await {
            Ok(Ok(CallResult::Task { stored: true, .. })) => {}
            Ok(Ok(other)) => {
                tracing::warn!(task = %task.task_id, "the task could not be recorded: {other:?}")
            }
            _ => {
                self.proxy.board.forget_call(call_id);
                tracing::warn!(task = %task.task_id, "recording the task took too long");
            }
        }
    }
}
