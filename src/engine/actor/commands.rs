//! The actor's commands: track, call, answer, cancel, and what their replies change.
//!
//! Must not block on the network: calls run in spawned tasks that report `Internal`s.

use super::foreground::{URL_ELICITATION_REQUIRED, url_requests};
use super::*;
use crate::engine::foreground::{CallSpec, RoundKind};

impl ServerActor {
    async fn call_refused(&self, call_id: u64, tool: String, why: &str) {
        let result = CallResult::Error {
            message: why.into(),
        };
        self.emit(EngineEvent::CallFinished {
            server: self.id(),
            call_id,
            tool,
            result,
        })
        .await;
    }

    pub(super) async fn on_command(&mut self, cmd: EngineCommand) {
        let needs_connection = matches!(
            cmd,
            EngineCommand::CallTool { .. }
                | EngineCommand::Answer { .. }
                | EngineCommand::Cancel { .. }
                | EngineCommand::ListTools { .. }
                | EngineCommand::AnswerForeground { .. }
        );
        if needs_connection && self.client.is_none() {
            if self.queued.len() < 1024 {
                self.queued.push(cmd);
            }
            return;
        }
        match cmd {
            EngineCommand::Track { task_id, .. } => self.track(task_id).await,
            EngineCommand::CallTool {
                call_id,
                tool,
                arguments,
                parent_task,
                ..
            } => {
                if self.refuse_read_only("call").await {
                    return self.call_refused(call_id, tool, "read-only server").await;
                }
                let Some(client) = self.client.clone() else {
                    return self.call_refused(call_id, tool, "not connected").await;
                };
                self.stats.request();
                self.foreground.call_started(call_id, &tool);
                let tx = self.internal_tx.clone();
                tokio::spawn(async move {
                    let result = call_with_retry(&client, &tool, &arguments, None, call_id).await;
                    let _ = tx
                        .send(Internal::Called {
                            call_id,
                            tool,
                            arguments,
                            parent: parent_task,
                            result,
                        })
                        .await;
                });
            }
            EngineCommand::Answer {
                task_id, responses, ..
            } => self.answer(task_id, responses).await,
            EngineCommand::Cancel { task_id, .. } => self.cancel(task_id).await,
            EngineCommand::Forget { task_id, .. } => {
                self.tasks.remove(&task_id);
                self.schedule.remove(&task_id);
                self.update_listen_ids();
            }
            EngineCommand::Refresh { task_id, .. } => {
                let ids: Vec<TaskId> = match task_id {
                    Some(id) => vec![id],
                    None => self.followed_ids().into_iter().collect(),
                };
                for id in ids {
                    if self.tasks.contains_key(&id) {
                        self.start_get(&id, UpdateSource::Poll);
                    }
                }
            }
            EngineCommand::ListTools { .. } => {
                let Some(client) = self.client.clone() else {
                    self.emit(EngineEvent::ToolsListFailed {
                        server: self.id(),
                        error: "not connected".into(),
                    })
                    .await;
                    return;
                };
                self.stats.request();
                let tx = self.internal_tx.clone();
                tokio::spawn(async move {
                    let _ = tx.send(Internal::Tools(client.list_tools().await)).await;
                });
            }
            EngineCommand::AnswerForeground { key, response, .. } => {
                self.answer_foreground(key, response).await
            }
            EngineCommand::Shutdown => {}
        }
    }

    pub(super) async fn track(&mut self, task_id: TaskId) {
        if self.tasks.contains_key(&task_id) {
            self.start_get(&task_id, UpdateSource::Resync);
            return;
        }
        let server = self.spec.id.clone();
        let era = self.client.as_ref().map(|c| c.era());
        let id = task_id.clone();
        let rec = self
            .ledger(move |l| {
                l.record_tracked(&server, era, &id)?;
                l.get(&server, &id)
            })
            .await
            .flatten();
        match rec {
            Some(rec) => self.adopt(rec).await,
            None => {
                self.emit(EngineEvent::TaskKnown {
                    server: self.id(),
                    task_id: task_id.clone(),
                    tool: None,
                    arguments: None,
                    recorded_at: chrono::Utc::now(),
                    last: None,
                    expired: false,
                    parent_task: None,
                })
                .await;
                self.tasks.insert(task_id.clone(), TrackedTask::default());
                self.schedule.set(&task_id, Instant::now());
            }
        }
        self.update_listen_ids();
    }

    pub(super) async fn answer(&mut self, task_id: TaskId, responses: BTreeMap<String, Value>) {
        let keys: Vec<String> = responses.keys().cloned().collect();
        if self.refuse_read_only("answer").await {
            self.emit(EngineEvent::AnswerFailed {
                server: self.id(),
                task_id,
                keys,
                error: "read-only server".into(),
            })
            .await;
            return;
        }
        let answered: Vec<String> = self
            .tasks
            .get(&task_id)
            .map(|t| {
                keys.iter()
                    .filter(|k| t.answered.contains(*k))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        if !answered.is_empty() {
            let error = format!("already answered: {}", answered.join(", "));
            self.emit(EngineEvent::AnswerFailed {
                server: self.id(),
                task_id,
                keys,
                error,
            })
            .await;
            return;
        }
        let Some(client) = self.client.clone() else {
            self.emit(EngineEvent::AnswerFailed {
                server: self.id(),
                task_id,
                keys,
                error: "not connected".into(),
            })
            .await;
            return;
        };
        self.stats.request();
        let tx = self.internal_tx.clone();
        tokio::spawn(async move {
            let result =
                crate::engine::retry::retry_transient(|| client.update_task(&task_id, &responses))
                    .await;
            let _ = tx
                .send(Internal::Answered {
                    task_id,
                    responses,
                    result,
                })
                .await;
        });
    }

    pub(super) async fn cancel(&mut self, task_id: TaskId) {
        if self.refuse_read_only("cancel").await {
            self.emit(EngineEvent::CancelFailed {
                server: self.id(),
                task_id,
                error: "read-only server".into(),
            })
            .await;
            return;
        }
        let Some(client) = self.client.clone() else {
            self.emit(EngineEvent::CancelFailed {
                server: self.id(),
                task_id,
                error: "not connected".into(),
            })
            .await;
            return;
        };
        if let Some(t) = self.tasks.get_mut(&task_id) {
            if t.cancel_in_flight {
                return;
            }
            t.cancel_in_flight = true;
        }
        let (server, id) = (self.spec.id.clone(), task_id.clone());
        self.ledger(move |l| {
            l.record_event(&server, &id, EventKind::CancelRequested, None, &json!({}))
        })
        .await;
        self.stats.request();
        let tx = self.internal_tx.clone();
        tokio::spawn(async move {
            let result =
                crate::engine::retry::retry_transient(|| client.cancel_task(&task_id)).await;
            let _ = tx.send(Internal::Cancelled { task_id, result }).await;
        });
    }

    pub(super) async fn on_called(
        &mut self,
        call_id: u64,
        tool: String,
        arguments: Value,
        parent: Option<TaskId>,
        result: Result<CallOutcome, McpError>,
    ) {
        let call = CallSpec {
            call_id,
            tool: tool.clone(),
            arguments: arguments.clone(),
            parent: parent.clone(),
        };
        let result = match result {
            Ok(CallOutcome::Task(task)) => {
                let task_id = task.task_id.clone();
                let era = self.client.as_ref().map(|c| c.era()).unwrap_or(Era::Modern);
                let declared = self.client.as_ref().is_none_or(|c| c.info().tasks);
                let finding = self.conformance.created(&task_id, era, declared);
                self.hints(finding).await;
                let (server, t, a, tl, p) = (
                    self.spec.id.clone(),
                    task.clone(),
                    arguments.clone(),
                    tool.clone(),
                    parent.clone(),
                );
                // The id is committed to the ledger before anything reports it.
                self.ledger(move |l| l.record_created(&server, era, &tl, &a, &t, p.as_ref()))
                    .await;
                self.emit(EngineEvent::TaskKnown {
                    server: self.id(),
                    task_id: task_id.clone(),
                    tool: Some(tool.clone()),
                    arguments: Some(arguments),
                    recorded_at: chrono::Utc::now(),
                    last: None,
                    expired: false,
                    parent_task: parent,
                })
                .await;
                self.tasks.entry(task_id.clone()).or_default();
                self.seq += 1;
                let seq = self.seq;
                self.apply(task, seq, UpdateSource::Create, None).await;
                self.reschedule(&task_id);
                self.update_listen_ids();
                if self.client.as_ref().is_some_and(|c| c.era() == Era::Legacy) {
                    // Legacy input requests and the final payload arrive on `tasks/result`.
                    self.fetch_result(&task_id);
                }
                CallResult::Task { task_id }
            }
            Ok(CallOutcome::Complete(result)) => CallResult::Plain { result },
            Ok(CallOutcome::InputRequired {
                input_requests,
                request_state,
            }) => {
                let kind = RoundKind::Mrtr { request_state };
                match self.input_round(call, kind, input_requests).await {
                    None => return,
                    Some(message) => CallResult::Error { message },
                }
            }
            Err(McpError::Rpc {
                code: URL_ELICITATION_REQUIRED,
                message,
                data,
            }) => match url_requests(data.as_ref()) {
                Some(requests) => {
                    let kind = RoundKind::UrlRequired {
                        error: message.clone(),
                    };
                    match self.input_round(call, kind, requests).await {
                        None => return,
                        Some(why) => CallResult::Error {
                            message: format!("{message} ({why})"),
                        },
                    }
                }
                None => {
                    self.stats.error();
                    CallResult::Error {
                        message: format!("server error {URL_ELICITATION_REQUIRED}: {message}"),
                    }
                }
            },
            Err(e) => {
                self.stats.error();
                CallResult::Error {
                    message: e.to_string(),
                }
            }
        };
        self.call_settled(call_id).await;
        self.emit(EngineEvent::CallFinished {
            server: self.id(),
            call_id,
            tool,
            result,
        })
        .await;
    }

    pub(super) async fn on_answered(
        &mut self,
        task_id: TaskId,
        responses: BTreeMap<String, Value>,
        result: Result<(), McpError>,
    ) {
        let keys: Vec<String> = responses.keys().cloned().collect();
        match result {
            Ok(()) => {
                if let Some(t) = self.tasks.get_mut(&task_id) {
                    t.answered.extend(keys.iter().cloned());
                }
                let server = self.spec.id.clone();
                let id = task_id.clone();
                self.ledger(move |l| {
                    for (key, resp) in &responses {
                        let action = resp
                            .get("action")
                            .and_then(Value::as_str)
                            .unwrap_or("accept");
                        l.mark_answered(&server, &id, key, action)?;
                        l.record_event(
                            &server,
                            &id,
                            EventKind::InputSent,
                            None,
                            &json!({ "key": key, "action": action }),
                        )?;
                    }
                    Ok(())
                })
                .await;
                self.emit(EngineEvent::AnswerSent {
                    server: self.id(),
                    task_id: task_id.clone(),
                    keys,
                })
                .await;
                // Learn soon whether the server moved on (it may lag: eventual consistency).
                self.poll_soon(&task_id);
            }
            Err(e) => {
                self.stats.error();
                self.emit(EngineEvent::AnswerFailed {
                    server: self.id(),
                    task_id,
                    keys,
                    error: e.to_string(),
                })
                .await;
            }
        }
    }

    pub(super) async fn on_cancelled(
        &mut self,
        task_id: TaskId,
        result: Result<Option<Task>, McpError>,
    ) {
        if let Some(t) = self.tasks.get_mut(&task_id) {
            t.cancel_in_flight = false;
        }
        match result {
            Ok(snapshot) => {
                if let Some(t) = self.tasks.get_mut(&task_id) {
                    t.cancel_requested = true;
                }
                let (server, id) = (self.spec.id.clone(), task_id.clone());
                self.ledger(move |l| {
                    l.record_event(&server, &id, EventKind::CancelAcked, None, &json!({}))
                })
                .await;
                self.emit(EngineEvent::CancelSent {
                    server: self.id(),
                    task_id: task_id.clone(),
                })
                .await;
                if let Some(task) = snapshot.filter(|t| t.task_id == task_id) {
                    self.seq += 1;
                    let seq = self.seq;
                    self.apply(task, seq, UpdateSource::Poll, None).await;
                }
                // Keep following until the task is terminal: it may complete anyway.
                self.poll_soon(&task_id);
            }
            Err(e) => {
                self.stats.error();
                let error = match e {
                    McpError::TaskNotFound { .. } => {
                        "nothing to cancel: the task is unknown to the server or already finished"
                            .to_string()
                    }
                    other => other.to_string(),
                };
                self.emit(EngineEvent::CancelFailed {
                    server: self.id(),
                    task_id: task_id.clone(),
                    error,
                })
                .await;
                self.start_get(&task_id, UpdateSource::Poll);
            }
        }
    }
}

/// `tools/call` (tagged with `call_id`), sent again (at most twice) when the server
/// refuses it with 429 or 503: it was not processed, and `Retry-After` says when to come
/// back. `retry` carries the answers of a multi-round-trip round.
pub(super) async fn call_with_retry(
    client: &McpClient,
    tool: &str,
    arguments: &Value,
    retry: Option<(Value, Option<Value>)>,
    call_id: u64,
) -> Result<CallOutcome, McpError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match client
            .call_tool(tool, arguments.clone(), retry.clone(), Some(call_id))
            .await
        {
            Err(McpError::Http {
                status: 429 | 503,
                retry_after,
                ..
            }) if attempt < 3 => {
                let wait = retry_after
                    .unwrap_or(Duration::from_secs(1))
                    .min(Duration::from_secs(30));
                tokio::time::sleep(wait).await;
            }
            other => return other,
        }
    }
}
