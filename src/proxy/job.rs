//! One upstream `tools/call`, run in a task of its own so that it finishes — and is
//! recorded — even when its host goes away or gives up waiting. A task the server answers
//! with is recorded before the host hears of it; a call the server answers blocking is
//! tracked as a task of the proxy's own once it runs past `--track-after`, asks for input,
//! or its host stops waiting (`tracked.rs`), and a cancel from anyone stops it.
//!
//! Owns: the life of one upstream call. Must never send a `tools/call` twice (a dropped
//! legacy session, where the server did not process it, is the one exception).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::forward::{self, upstream_error};
use super::host::Ctx;
use super::tracked::{Finished, Opening, Slot};
use super::{Proxy, era, rpc_error};
use crate::engine::{CallResult, CancelBy, EngineCommand};
use crate::mcp::jsonrpc::RequestId;
use crate::mcp::{CallOutcome, ErrorObject, McpClient, McpError, Task, decode_call_result};

/// What one upstream `tools/call` came to, for the host.
pub enum Called {
    Plain(Value),
    /// Multi round-trip input before any task exists.
    InputFirst(Value),
    /// A task, recorded (`stored` unless the ledger write failed).
    Task {
        task: Task,
        raw: Value,
    },
    Error(ErrorObject),
    /// The host cancelled the call or stopped waiting: it gets no answer.
    Cancelled,
}

/// How long recording a task may take before the host is answered anyway.
const RECORD_WAIT: Duration = Duration::from_secs(30);

/// How one attempt at the call ended.
enum Attempt {
    Reply(Result<Result<Value, ErrorObject>, McpError>),
    /// Someone asked to stop the tracked call.
    Stopped,
}

pub struct Job {
    /// The call's key, when its host waits for the result (a retry may attach).
    key: Option<String>,
    /// The host's name, for notes and cancels.
    host: String,
    proxy: Arc<Proxy>,
    client: Arc<McpClient>,
    tool: String,
    arguments: Value,
    started_by: Option<String>,
    cancel: CancellationToken,
    why: super::cancel::Why,
    caller: forward::Caller,
    began: std::time::Instant,
    /// Our progress token upstream, whose notifications feed the tracked call (its route
    /// lasts as long as the job).
    token: Option<Arc<forward::Token>>,
}

impl Job {
    pub fn for_call(
        ctx: &Ctx,
        client: &Arc<McpClient>,
        tool: &str,
        arguments: &Value,
        key: Option<&str>,
        token: Option<&Arc<forward::Token>>,
    ) -> Job {
        Job {
            key: key.map(str::to_string),
            host: super::attach::host_name(ctx),
            proxy: ctx.proxy.clone(),
            client: client.clone(),
            tool: tool.to_string(),
            arguments: arguments.clone(),
            started_by: ctx.host.started_by(ctx.client_name.as_deref()),
            cancel: ctx.cancel.clone(),
            why: ctx.why.clone(),
            caller: forward::Caller::of(ctx),
            began: ctx.began,
            token: token.cloned(),
        }
    }

    /// Run the call in a task of its own; what the host gets, once it is decided (the call
    /// may run on after that).
    pub async fn detached(self, params: Value) -> Called {
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(self.run(params, tx));
        rx.await
            .unwrap_or_else(|_| Called::Error(rpc_error(-32603, "the call was interrupted")))
    }

    async fn run(self, params: Value, reply: tokio::sync::oneshot::Sender<Called>) {
        let mut reply = Some(reply);
        let mut cancelled = false;
        let mut ended = None;
        for attempt in 0..2 {
            let id = self.client.request_id();
            let _route = forward::calling(&self.proxy, &id, &self.caller);
            let slot = self.proxy.tracker.open(&self.proxy, self.opening(&id));
            if let Some(t) = &self.token {
                forward::progress_feeds(&self.proxy, &t.upstream, &slot);
            }
            let r = self
                .attempt(&id, &slot, params.clone(), &mut reply, &mut cancelled)
                .await;
            match r {
                Attempt::Reply(Err(McpError::SessionLost))
                    if attempt == 0 && slot.task_id().is_none() =>
                {
                    self.proxy.tracker.close(&slot);
                    if let Err(e) = self.client.reinitialize().await {
                        ended = Some((Attempt::Reply(Err(e)), None));
                        break;
                    }
                }
                other => {
                    ended = Some((other, Some(slot)));
                    break;
                }
            }
        }
        let called = match ended {
            Some((r, slot)) => {
                let called = self.settle(r, slot.as_deref(), cancelled).await;
                if let Some(slot) = slot {
                    self.proxy.tracker.close(&slot);
                }
                called
            }
            None => Called::Error(rpc_error(-32603, "upstream: the session was lost")),
        };
        if let Some(tx) = reply {
            let _ = tx.send(called);
        }
    }

    fn opening(&self, id: &RequestId) -> Opening {
        Opening {
            client: self.client.clone(),
            upstream: id.clone(),
            tool: self.tool.clone(),
            arguments: self.arguments.clone(),
            started_by: self.started_by.clone(),
            key: self.key.clone(),
            host_cancel: self.cancel.clone(),
            host_why: self.why.clone(),
        }
    }

    /// One attempt: the call, tracked once it runs long, until it answers or is stopped.
    async fn attempt(
        &self,
        id: &RequestId,
        slot: &Arc<Slot>,
        params: Value,
        reply: &mut Option<tokio::sync::oneshot::Sender<Called>>,
        cancelled: &mut bool,
    ) -> Attempt {
        let timeout = Some(self.proxy.call_timeout);
        let call = self.client.forward(id, "tools/call", params, timeout);
        tokio::pin!(call);
        let track_at = tokio::time::sleep(self.proxy.track_after);
        tokio::pin!(track_at);
        let mut host_done = false;
        loop {
            tokio::select! {
                r = &mut call => return Attempt::Reply(r),
                _ = &mut track_at, if slot.task_id().is_none() => {
                    slot.track().await;
                }
                _ = slot.stop.cancelled() => {
                    self.client.cancel_request(id, "cancelled from taskrail").await;
                    return Attempt::Stopped;
                }
                _ = self.cancel.cancelled(), if !host_done => {
                    host_done = true;
                    if self.why.gave_up() {
                        self.host_left(slot, reply).await;
                    } else if let Some(task_id) = slot.task_id() {
                        // A tracked call: the host's cancel goes the way every cancel goes
                        // (recorded with who asked, carried out once).
                        let by = CancelBy::host(Some(&self.host), self.why.reason());
                        self.proxy.command(EngineCommand::Cancel {
                            server: self.proxy.server.clone(),
                            task_id,
                            by,
                        }).await;
                    } else {
                        *cancelled = true;
                        self.client.cancel_request(id, "cancelled by the client").await;
                        // A task may still come back: it is recorded, then cancelled.
                        return Attempt::Reply(call.await);
                    }
                }
                _ = self.caller.closed(), if !host_done && !self.cancel.is_cancelled() => {
                    host_done = true;
                    self.host_left(slot, reply).await;
                }
            }
        }
    }

    /// The host stopped waiting (its timeout, or it went away): the call runs on, tracked,
    /// and an identical call attaches to it.
    async fn host_left(
        &self,
        slot: &Arc<Slot>,
        reply: &mut Option<tokio::sync::oneshot::Sender<Called>>,
    ) {
        if let Some(task_id) = slot.track().await
            && let Some(key) = &self.key
        {
            super::attach::left_before_start(
                &self.proxy,
                &task_id,
                key,
                &self.host,
                &self.why,
                self.began,
            )
            .await;
        }
        if let Some(tx) = reply.take() {
            let _ = tx.send(Called::Cancelled);
        }
    }

    /// What the host gets for how the call ended; a tracked call's row gets its end.
    async fn settle(&self, r: Attempt, slot: Option<&Slot>, cancelled: bool) -> Called {
        let finish = |how: Finished| async move {
            if let Some(s) = slot {
                s.finish(how).await;
            }
        };
        let result = match r {
            Attempt::Stopped => {
                finish(Finished::Cancelled).await;
                if self.cancel.is_cancelled() {
                    return Called::Cancelled;
                }
                return Called::Plain(era::unfinished(
                    "The call was cancelled from taskrail (the dashboard or the command line).",
                ));
            }
            Attempt::Reply(Ok(Ok(v))) => v,
            Attempt::Reply(Ok(Err(e))) => {
                finish(Finished::Error(e.clone())).await;
                if cancelled {
                    tracing::debug!("a cancelled call ended with error {}", e.code);
                    return Called::Cancelled;
                }
                return Called::Error(e);
            }
            Attempt::Reply(Err(e)) => {
                let e = upstream_error(&e);
                finish(Finished::Error(e.clone())).await;
                return if cancelled {
                    Called::Cancelled
                } else {
                    Called::Error(e)
                };
            }
        };
        let task = match decode_call_result(&result) {
            Ok(CallOutcome::Task(task)) => task,
            Ok(CallOutcome::InputRequired { .. }) if !cancelled => {
                finish(Finished::Result(result.clone())).await;
                return Called::InputFirst(result);
            }
            _ => {
                finish(Finished::Result(result.clone())).await;
                return if cancelled {
                    Called::Cancelled
                } else {
                    Called::Plain(result)
                };
            }
        };
        finish(Finished::BecameTask(task.task_id.clone())).await;
        self.record(&task).await;
        if cancelled {
            let (server, task_id) = (self.proxy.server.clone(), task.task_id.clone());
            let by = CancelBy::host(Some(&self.host), self.why.reason());
            self.proxy
                .command(EngineCommand::Cancel {
                    server,
                    task_id,
                    by,
                })
                .await;
            return Called::Cancelled;
        }
        if self.cancel.is_cancelled() && self.why.gave_up() {
            if let Some(key) = &self.key {
                super::attach::left_before_start(
                    &self.proxy,
                    &task.task_id,
                    key,
                    &self.host,
                    &self.why,
                    self.began,
                )
                .await;
            }
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
                local: false,
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
