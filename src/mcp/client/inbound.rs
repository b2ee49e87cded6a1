//! What the server sends unasked: task notifications, progress, and legacy server-to-client
//! requests. Input requests tied to a task wait in the task's `inputRequests`; those tied to
//! none (asked during a call or on the session stream, or run as a task hosted here) wait
//! as foreground requests, or go to the tap when one is set (a proxy's host answers them);
//! `roots/list` is answered from the config at once; the hosted tasks' `tasks/*` methods
//! are served here. Notifications that are not task news also go to the tap.
//!
//! Must not block: pushes go to a bounded channel, a `tasks/result` waits in its own task.

use super::*;
use crate::mcp::hosted::HostedError;

/// The JSON-RPC error for a request kind this client does not answer.
const NOT_OFFERED: i64 = -32601;

impl McpClient {
    /// Handle one unsolicited server message from the session stream (or a transport
    /// that cannot tell which request's reply carried it).
    pub async fn dispatch(&self, msg: Incoming) {
        self.dispatch_via(msg, None).await
    }

    /// Handle one unsolicited server message; `via` is the request whose reply stream
    /// carried it.
    pub async fn dispatch_via(&self, msg: Incoming, via: Option<&RequestId>) {
        let push = match msg {
            Incoming::Notification { method, params } => {
                let push = self.notification_push(&method, &params);
                let task_news = matches!(
                    push,
                    Some(ServerPush::Task(_) | ServerPush::Progress { .. })
                );
                if !task_news && let Some(tap) = self.tapped() {
                    let msg = Incoming::Notification { method, params };
                    let _ = tap.send((msg, via.cloned())).await;
                }
                push
            }
            Incoming::Request { id, method, params } => {
                self.server_request(id, method, params, via).await
            }
            Incoming::Response { .. } => None,
        };
        if let Some(p) = push {
            let _ = self.push_tx.send(p).await;
        }
    }

    pub(super) fn notification_push(&self, method: &str, params: &Value) -> Option<ServerPush> {
        match method {
            "notifications/tasks" | "notifications/tasks/status" => match Task::from_wire(params) {
                Ok(mut task) => {
                    if self.era() == Era::Legacy {
                        self.pending_inputs.merge_into(&mut task);
                    }
                    Some(ServerPush::Task(task))
                }
                Err(e) => {
                    tracing::warn!("ignoring a malformed task notification: {e}");
                    None
                }
            },
            "notifications/progress" => {
                let token = params.get("progressToken")?;
                let token = token
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| token.to_string());
                let task_id = self
                    .progress_tokens
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get(&token)
                    .cloned()?;
                Some(ServerPush::Progress {
                    task_id,
                    progress: params.get("progress").and_then(Value::as_f64)?,
                    total: params.get("total").and_then(Value::as_f64),
                    message: params
                        .get("message")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                })
            }
            "notifications/elicitation/complete" => Some(ServerPush::ElicitationComplete {
                elicitation_id: params.get("elicitationId")?.as_str()?.to_string(),
            }),
            "notifications/tools/list_changed" => Some(ServerPush::ToolsChanged),
            _ => None,
        }
    }

    pub(super) async fn server_request(
        &self,
        id: RequestId,
        method: String,
        params: Value,
        via: Option<&RequestId>,
    ) -> Option<ServerPush> {
        let related = params
            .pointer("/_meta/io.modelcontextprotocol~1related-task/taskId")
            .and_then(Value::as_str)
            .map(TaskId::new);
        // A proxy's host answers the roots (unless the config lists them) and whatever this
        // client does not know.
        let for_tap = match method.as_str() {
            "elicitation/create" | "sampling/createMessage" | "ping" => false,
            "tasks/get" | "tasks/result" | "tasks/cancel" | "tasks/list" => false,
            "roots/list" => self.opts.input.roots.is_none(),
            _ => true,
        };
        if for_tap && let Some(tap) = self.tapped() {
            let msg = Incoming::Request { id, method, params };
            let _ = tap.send((msg, via.cloned())).await;
            return None;
        }
        let (reply, push) = match method.as_str() {
            "elicitation/create" | "sampling/createMessage" => {
                return self.input_request(id, method, params, related, via).await;
            }
            "roots/list" => match self.opts.input.roots_result() {
                Some(result) => {
                    let roots = self.opts.input.roots.clone().unwrap_or_default();
                    let push = ServerPush::RootsShared {
                        task_id: related,
                        roots,
                    };
                    (jsonrpc::response(&id, result), Some(push))
                }
                None => (
                    jsonrpc::error_response(
                        &id,
                        NOT_OFFERED,
                        "taskrail does not offer roots to this server (no roots = [...] in its config entry)",
                    ),
                    None,
                ),
            },
            "tasks/get" | "tasks/result" | "tasks/cancel" | "tasks/list" => {
                return self.hosted_request(id, &method, &params).await;
            }
            "ping" => (jsonrpc::response(&id, json!({})), None),
            _ => (
                jsonrpc::error_response(&id, NOT_OFFERED, "not supported by this client"),
                None,
            ),
        };
        // The news goes first: the server may answer what waited on this reply (a tool's
        // result) before a push sent after it would be read.
        if let Some(p) = push {
            let _ = self.push_tx.send(p).await;
        }
        self.reply(&reply).await;
        None
    }

    async fn reply(&self, msg: &Value) {
        if let Err(e) = self.transport.send_message(msg, None).await {
            tracing::warn!("could not answer a server request: {e}");
        }
    }

    /// An elicitation or sampling request: kept for its task, handed to the tap (a proxy's
    /// host), hosted as a task here, kept as a foreground request, or refused when its kind
    /// is not offered.
    async fn input_request(
        &self,
        id: RequestId,
        method: String,
        mut params: Value,
        related: Option<TaskId>,
        via: Option<&RequestId>,
    ) -> Option<ServerPush> {
        let sampling = method == "sampling/createMessage";
        if let Some(task_id) = related {
            // Shown on the task's row even when not offered (the row says so, and the
            // task can be cancelled).
            let key = format!("{}-{id}", if sampling { "sampling" } else { "elicitation" });
            let request = InputRequest {
                method,
                params,
                reply_to: Some(id.to_value()),
            };
            self.pending_inputs
                .insert(&task_id, &key, id, request.clone());
            return Some(ServerPush::InputRequest {
                task_id,
                key,
                request,
            });
        }
        if let Some(tap) = self.tapped() {
            let msg = Incoming::Request { id, method, params };
            let _ = tap.send((msg, via.cloned())).await;
            return None;
        }
        if sampling && !self.opts.input.sampling {
            let msg = jsonrpc::error_response(
                &id,
                NOT_OFFERED,
                "taskrail does not offer sampling to this server (no sampling = … in its config entry)",
            );
            self.reply(&msg).await;
            return None;
        }
        let hosted = params.get("task").filter(|t| t.is_object()).cloned();
        if let Some(obj) = params.as_object_mut() {
            obj.remove("task");
        }
        if hosted.is_none() && !sampling {
            let handler = self
                .untracked_elicitation
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            if let Some(h) = handler {
                let msg = jsonrpc::response(&id, h(&params));
                self.reply(&msg).await;
                return None;
            }
        }
        let request = InputRequest {
            method,
            params,
            reply_to: None,
        };
        let call = self.call_tag(via);
        let reply_to = match hosted {
            Some(task) => {
                let ttl = task.get("ttl").and_then(Value::as_u64);
                match self.hosted.create(ttl, chrono::Utc::now()) {
                    Ok((task_id, created)) => {
                        self.reply(&jsonrpc::response(&id, created)).await;
                        ReplyTo::Hosted(task_id)
                    }
                    Err(_) => {
                        let msg = jsonrpc::error_response(&id, -32603, "too many tasks waiting");
                        self.reply(&msg).await;
                        return None;
                    }
                }
            }
            None => ReplyTo::Rpc(id.clone()),
        };
        match self.foreground.insert(reply_to.clone(), request.clone()) {
            Some(key) => Some(ServerPush::Foreground {
                key,
                request,
                call: call.map(|c| c.0),
                on_call_stream: call.is_some_and(|c| c.1),
            }),
            None => {
                let refusal = input::unanswered();
                match reply_to {
                    ReplyTo::Rpc(id) => {
                        let msg = input::legacy_reply(&id, &request, &refusal);
                        self.reply(&msg).await;
                    }
                    ReplyTo::Hosted(t) => {
                        let outcome = input::outcome(&request, &refusal);
                        self.hosted.finish(&t, outcome, chrono::Utc::now());
                    }
                }
                None
            }
        }
    }

    /// `tasks/*` from the server, about a task hosted here.
    async fn hosted_request(
        &self,
        id: RequestId,
        method: &str,
        params: &Value,
    ) -> Option<ServerPush> {
        let now = chrono::Utc::now();
        let task_id = params.get("taskId").and_then(Value::as_str).unwrap_or("");
        let refused = |e: HostedError| {
            let message = match e {
                HostedError::Terminal => "Cannot cancel task: already in a terminal status",
                _ => "Failed to retrieve task: Task not found",
            };
            jsonrpc::error_response(&id, -32602, message)
        };
        let mut push = None;
        let msg = match method {
            "tasks/get" => match self.hosted.get(task_id, now) {
                Ok(t) => jsonrpc::response(&id, t),
                Err(e) => refused(e),
            },
            "tasks/list" => jsonrpc::response(&id, self.hosted.list(now)),
            "tasks/cancel" => match self.hosted.cancel(task_id, now) {
                Ok(t) => {
                    if let Some(key) = self.foreground.take_hosted(task_id) {
                        push = Some(ServerPush::ForegroundGone {
                            key,
                            reason: "the server cancelled the request".into(),
                        });
                    }
                    jsonrpc::response(&id, t)
                }
                Err(e) => refused(e),
            },
            _ => {
                // `tasks/result` blocks until the task ends: wait in a task of its own.
                let Some(mut rx) = self.hosted.watch(task_id) else {
                    self.reply(&refused(HostedError::NotFound)).await;
                    return None;
                };
                let me = self.me.get().cloned();
                let related =
                    json!({ "io.modelcontextprotocol/related-task": { "taskId": task_id } });
                tokio::spawn(async move {
                    let outcome = loop {
                        if let Some(o) = rx.borrow_and_update().clone() {
                            break o;
                        }
                        if rx.changed().await.is_err() {
                            return;
                        }
                    };
                    let msg = match outcome {
                        Ok(mut result) => {
                            if let Some(obj) = result.as_object_mut() {
                                obj.insert("_meta".into(), related);
                            }
                            jsonrpc::response(&id, result)
                        }
                        Err(e) => jsonrpc::error_response(&id, e.code, &e.message),
                    };
                    if let Some(client) = me.and_then(|w| w.upgrade()) {
                        client.reply(&msg).await;
                    }
                });
                return None;
            }
        };
        self.reply(&msg).await;
        push
    }

    /// Answer `elicitation/create` requests that belong to no task with `handler`
    /// (without one they wait as foreground requests).
    pub fn on_untracked_elicitation(&self, handler: ElicitationHandler) {
        *self
            .untracked_elicitation
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(handler);
    }
}
