//! The task methods, in each era's wire form: `tasks/get`, `tasks/update` (answers),
//! `tasks/cancel`, `tasks/result`, `tasks/list` and `subscriptions/listen`, plus the
//! answer to an input request outside any task.
//!
//! Must not keep task state: the engine owns it.

use super::*;

impl McpClient {
    /// `tasks/get`. Legacy: pending `elicitation/create` requests for the task are merged
    /// into `inputRequests` so both eras look alike.
    pub async fn get_task(&self, task_id: &TaskId) -> Result<Task, McpError> {
        let result = self
            .request(
                "tasks/get",
                json!({ "taskId": task_id }),
                Some(task_id.as_str()),
                Some(self.opts.request_timeout),
            )
            .await?;
        let mut task = Task::from_wire(&result)?;
        if task.task_id != *task_id {
            return Err(McpError::decode(format!(
                "tasks/get answered for another task id ({})",
                task.task_id
            )));
        }
        if self.era() == Era::Legacy {
            self.pending_inputs.merge_into(&mut task);
        }
        Ok(task)
    }

    /// `tasks/update` with `inputResponses` (modern), or the answers to the pending
    /// server requests (legacy).
    pub async fn update_task(
        &self,
        task_id: &TaskId,
        responses: &BTreeMap<String, Value>,
    ) -> Result<(), McpError> {
        match self.era() {
            Era::Modern => {
                let params = json!({ "taskId": task_id, "inputResponses": responses });
                self.request(
                    "tasks/update",
                    params,
                    Some(task_id.as_str()),
                    Some(self.opts.request_timeout),
                )
                .await
                .map(|_| ())
            }
            Era::Legacy => {
                for (key, response) in responses {
                    let (id, request) = self.pending_inputs.take(task_id, key).ok_or_else(|| {
                        McpError::Unsupported(format!(
                            "no pending input request {key:?} for this task here: a legacy server sends input requests to the session that follows the task, so answer it there"
                        ))
                    })?;
                    let reply = input::legacy_reply(&id, &request, response);
                    self.transport.send_message(&reply, None).await?;
                }
                Ok(())
            }
        }
    }

    /// Answer the foreground request `key` ([`ServerPush::Foreground`]): a response to
    /// the server's request, or the outcome of the task it hosts here.
    pub async fn answer_foreground(&self, key: &str, response: &Value) -> Result<(), McpError> {
        let waiting = self.foreground.take(key).ok_or_else(|| {
            McpError::Unsupported(format!(
                "no input request {key:?} waits here (answered already, or the connection was renewed)"
            ))
        })?;
        match waiting.reply {
            ReplyTo::Rpc(id) => {
                let reply = input::legacy_reply(&id, &waiting.request, response);
                self.transport.send_message(&reply, None).await
            }
            ReplyTo::Hosted(task_id) => {
                let outcome = input::outcome(&waiting.request, response);
                self.hosted.finish(&task_id, outcome, chrono::Utc::now());
                Ok(())
            }
        }
    }

    /// `tasks/cancel`. Legacy servers answer with the task; modern ones with an empty ack.
    pub async fn cancel_task(&self, task_id: &TaskId) -> Result<Option<Task>, McpError> {
        if !self.info().can_cancel() {
            return Err(McpError::Unsupported(
                "this server does not offer tasks/cancel".into(),
            ));
        }
        let result = self
            .request(
                "tasks/cancel",
                json!({ "taskId": task_id }),
                Some(task_id.as_str()),
                Some(self.opts.request_timeout),
            )
            .await?;
        Ok(Task::from_wire(&result).ok())
    }

    /// Legacy `tasks/result`: blocks until the task is terminal, then returns the tool
    /// result or the JSON-RPC error it ended with.
    pub async fn task_result(
        &self,
        task_id: &TaskId,
    ) -> Result<Result<Value, ErrorObject>, McpError> {
        match self
            .request(
                "tasks/result",
                json!({ "taskId": task_id }),
                Some(task_id.as_str()),
                None,
            )
            .await
        {
            Ok(v) => Ok(Ok(v)),
            Err(McpError::Rpc {
                code,
                message,
                data,
            }) => Ok(Err(ErrorObject {
                code,
                message,
                data,
            })),
            Err(e) => Err(e),
        }
    }

    /// Legacy `tasks/list`, all pages.
    pub async fn list_tasks(&self) -> Result<Vec<Task>, McpError> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..1000 {
            let params = cursor
                .as_ref()
                .map(|c| json!({ "cursor": c }))
                .unwrap_or_else(|| json!({}));
            let result = self
                .request("tasks/list", params, None, Some(self.opts.request_timeout))
                .await?;
            for t in result
                .get("tasks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                out.push(Task::from_wire(t)?);
            }
            cursor = result
                .get("nextCursor")
                .and_then(Value::as_str)
                .map(str::to_string);
            if cursor.is_none() {
                break;
            }
        }
        Ok(out)
    }

    /// Modern `subscriptions/listen` for `task_ids`; returns once acknowledged.
    pub async fn listen(&self, task_ids: &[TaskId]) -> Result<Subscription, McpError> {
        let id = self.id();
        let params = self.with_meta(
            json!({ "notifications": { "taskIds": task_ids } }),
            Era::Modern,
        );
        let msg = jsonrpc::request(&id, "subscriptions/listen", params);
        let stream = tokio::time::timeout(
            self.opts.request_timeout,
            self.transport
                .open_stream(&id, &msg, "subscriptions/listen"),
        )
        .await
        .map_err(|_| McpError::transport("subscriptions/listen timed out"))??;
        Subscription::acknowledge(id, stream, self.opts.request_timeout).await
    }
}
