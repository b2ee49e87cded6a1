//! What the server sends unasked: task notifications, progress, and legacy server-to-client
//! requests (elicitations tied to a task are kept until answered; others get a reply, or go
//! to the tap when one is set).
//!
//! Must not block: pushes go to a bounded channel.

use super::*;

impl McpClient {
    /// Handle one unsolicited server message: answer server requests, turn task
    /// notifications, progress and legacy input requests into pushes.
    pub async fn dispatch(&self, msg: Incoming) {
        let push = match msg {
            Incoming::Notification { method, params } => {
                let push = self.notification_push(&method, &params);
                let task_news = matches!(
                    push,
                    Some(ServerPush::Task(_) | ServerPush::Progress { .. })
                );
                if !task_news && let Some(tap) = self.tapped() {
                    let _ = tap.send(Incoming::Notification { method, params }).await;
                }
                push
            }
            Incoming::Request { id, method, params } => {
                self.server_request(id, method, params).await
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
            "notifications/tools/list_changed" => Some(ServerPush::ToolsChanged),
            _ => None,
        }
    }

    pub(super) async fn server_request(
        &self,
        id: RequestId,
        method: String,
        params: Value,
    ) -> Option<ServerPush> {
        let related = params
            .pointer("/_meta/io.modelcontextprotocol~1related-task/taskId")
            .and_then(Value::as_str)
            .map(TaskId::new);
        let reply = match (method.as_str(), related) {
            ("elicitation/create", Some(task_id)) => {
                let key = format!("elicitation-{id}");
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
            ("ping", _) => jsonrpc::response(&id, json!({})),
            (method, _) => {
                let handler = self
                    .untracked_elicitation
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                match (method, handler, self.tapped()) {
                    ("elicitation/create", Some(h), _) => jsonrpc::response(&id, h(&params)),
                    (_, _, Some(tap)) => {
                        let method = method.to_string();
                        let _ = tap.send(Incoming::Request { id, method, params }).await;
                        return None;
                    }
                    ("elicitation/create", None, None) => {
                        jsonrpc::response(&id, json!({ "action": "cancel" }))
                    }
                    _ => jsonrpc::error_response(&id, -32601, "not supported by this client"),
                }
            }
        };
        if let Err(e) = self.transport.send_message(&reply, None).await {
            tracing::warn!("could not answer a server request: {e}");
        }
        None
    }

    /// Answer `elicitation/create` requests that belong to no task with `handler`
    /// (without one they are declined with `cancel`).
    pub fn on_untracked_elicitation(&self, handler: ElicitationHandler) {
        *self
            .untracked_elicitation
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(handler);
    }
}
