//! The actor's commands: track, call (sent from `calls.rs`), answer (cancel is in
//! `cancel.rs`), where each goes, and what an answer's reply changes. An answer or a cancel for a task another live process follows
//! is left for it in the outbox (see `outbox.rs`); otherwise it is sent from here.
//!
//! Must not block on the network: calls run in spawned tasks that report `Internal`s.

use super::*;
use crate::ledger;

/// Where an answer or a cancel goes.
pub(super) enum Route {
    /// Send it ourselves, through this client.
    Send(Arc<McpClient>),
    /// Another live process follows the task: leave it in the outbox.
    Outbox,
    /// Not now; the reason is reported.
    Refuse(Failure),
    /// Not connected yet: keep the command until we are.
    Wait,
}

impl ServerActor {
    pub(super) async fn on_command(&mut self, cmd: EngineCommand) {
        // A read-only server refuses a call before it is connected to.
        if let EngineCommand::CallTool { call_id, tool, .. } = &cmd
            && let Some(f) = self.refuse_read_only("call").await
        {
            let result = CallResult::Refused {
                reason: f.text().to_string(),
            };
            return self.call_done(*call_id, tool.clone(), result).await;
        }
        if let Some(why) = self.spec.unreachable.clone()
            && self.refuse_unreachable(&cmd, &why).await
        {
            return;
        }
        let needs_connection = matches!(
            cmd,
            EngineCommand::CallTool { .. }
                | EngineCommand::ListTools { .. }
                | EngineCommand::RecordCreated { .. }
                | EngineCommand::AnswerForeground { .. }
        );
        if needs_connection && self.client.is_none() {
            if self.queued.len() < 1024 {
                self.queued.push(cmd);
            }
            self.ensure_connecting();
            return;
        }
        match cmd {
            EngineCommand::SignIn { .. } => return self.start_sign_in().await,
            EngineCommand::SignInRedirect { url, .. } => return self.pasted_redirect(url).await,
            EngineCommand::Track { task_id, .. } => self.track(task_id).await,
            EngineCommand::CallTool {
                call_id,
                tool,
                arguments,
                parent_task,
                ..
            } => {
                let Some(client) = self.client.clone() else {
                    let message = "not connected".to_string();
                    return self
                        .call_done(
                            call_id,
                            tool,
                            CallResult::Error {
                                message,
                                code: None,
                            },
                        )
                        .await;
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
            EngineCommand::RecordCreated {
                call_id,
                tool,
                arguments,
                task,
                started_by,
                local,
                ..
            } => {
                let result = if local {
                    self.created_local(task, tool.clone(), arguments, started_by)
                        .await
                } else {
                    self.created(task, tool.clone(), arguments, None, started_by)
                        .await
                };
                self.call_done(call_id, tool, result).await;
            }
            EngineCommand::LocalUpdate { task, .. } => self.local_update(task).await,
            EngineCommand::LocalDone {
                task_id,
                request,
                ask,
                error,
                ..
            } => self.local_done(task_id, request, ask, error).await,
            EngineCommand::Answer {
                task_id, responses, ..
            } => self.answer(task_id, responses, None).await,
            EngineCommand::Cancel { task_id, by, .. } => self.cancel(task_id, None, by).await,
            EngineCommand::Forget { task_id, .. } => {
                self.release(&task_id);
                self.tasks.remove(&task_id);
                self.schedule.remove(&task_id);
                self.update_listen_ids();
            }
            EngineCommand::Refresh { task_id, .. } => {
                let ids: Vec<TaskId> = match task_id {
                    Some(id) => vec![id],
                    None => self.owned_ids(),
                };
                for id in ids {
                    if self.tasks.get(&id).is_some_and(|t| t.owned) {
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

    /// Decide where an answer or a cancel of `task_id` goes. `serving`: we carry out
    /// another process's request (we follow the task).
    pub(super) async fn route(&mut self, task_id: &TaskId, what: &str, serving: bool) -> Route {
        if let Some(f) = self.refuse_read_only(what).await {
            return Route::Refuse(f);
        }
        if !self.tasks.contains_key(task_id) && self.ledger.is_some() {
            let (server, id) = (self.id(), task_id.clone());
            if let Some(rec) = self.ledger(move |l| l.get(&server, &id)).await.flatten() {
                self.adopt(rec, false).await;
            }
        }
        if let Some(t) = self.tasks.get(task_id) {
            if t.terminal || t.expired {
                let status = t
                    .last
                    .as_ref()
                    .map(|l| l.status.as_str().to_string())
                    .unwrap_or_else(|| "expired".into());
                let state = if t.expired { "gone" } else { status.as_str() };
                return Route::Refuse(Failure::Refused(format!(
                    "{what} refused: task {task_id} is already {state}"
                )));
            }
            if !t.owned && !serving && self.ledger.is_some() {
                let (server, id, owner) = (self.id(), task_id.clone(), self.owner.clone());
                let follower = self
                    .ledger(move |l| l.follower(&server, &id, &owner))
                    .await
                    .flatten();
                if follower.is_some() {
                    return Route::Outbox;
                }
            }
            if let Some(why) = &self.spec.unreachable {
                return Route::Refuse(Failure::Failed(format!(
                    "no running process follows task {task_id} now, and this one cannot reach \
                     its server ({why}); run the command that started it again, or give \
                     --server to a process that can reach it"
                )));
            }
            if let Some(s) = t.session {
                self.join_session(s).await;
            }
        }
        match self.client_for(task_id) {
            Some(c) => Route::Send(c),
            None if self
                .tasks
                .get(task_id)
                .is_some_and(|t| self.foreign_session(t)) =>
            {
                Route::Refuse(Failure::Failed(format!(
                    "the session of task {task_id} cannot be reached"
                )))
            }
            None => Route::Wait,
        }
    }

    /// Answer some input requests of a task (`request`: the outbox request it carries out).
    pub(super) async fn answer(
        &mut self,
        task_id: TaskId,
        responses: BTreeMap<String, Value>,
        request: Option<i64>,
    ) {
        let keys: Vec<String> = responses.keys().cloned().collect();
        let already: Vec<String> = self
            .tasks
            .get(&task_id)
            .map(|t| {
                keys.iter()
                    .filter(|k| t.answered.contains(*k))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let route = if already.is_empty() {
            self.route(&task_id, "answer", request.is_some()).await
        } else {
            Route::Refuse(Failure::Refused(format!(
                "already answered: {}",
                task_id.mask(&already.join(", "))
            )))
        };
        let client = match route {
            Route::Send(c) => c,
            Route::Wait => {
                self.ensure_connecting();
                if self.queued.len() < 1024 {
                    self.queued.push(EngineCommand::Answer {
                        server: self.id(),
                        task_id,
                        responses,
                    });
                }
                return;
            }
            Route::Outbox => {
                let payload = serde_json::to_value(&responses).unwrap_or(Value::Null);
                return self
                    .leave_for_follower(task_id, OutboxKind::Answer, payload, keys)
                    .await;
            }
            Route::Refuse(error) => {
                if let Some(id) = request {
                    let why = error.text().to_string();
                    self.ledger_queue(move |l| l.complete_request(id, Some(&why)));
                }
                self.emit(EngineEvent::AnswerFailed {
                    server: self.id(),
                    task_id,
                    keys,
                    error,
                })
                .await;
                return;
            }
        };
        let local = self.tasks.get(&task_id).is_some_and(|t| t.local);
        // The timeline says what was sent before the status change it causes; a task the
        // ledger does not know gets its row only once the server took the answer (a
        // mistyped id leaves nothing behind).
        if self.tasks.contains_key(&task_id) {
            self.record_inputs_sent(&task_id, &responses);
        }
        if local {
            // The proxy that runs the call answers its server's requests.
            return self
                .emit(EngineEvent::LocalAsked {
                    server: self.id(),
                    task_id,
                    request,
                    ask: LocalAsk::Answer(responses),
                })
                .await;
        }
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
                    request,
                    result,
                })
                .await;
        });
    }

    /// A newer snapshot of a task of the proxy's own, from the proxy that runs its call.
    async fn local_update(&mut self, task: Task) {
        if !self
            .tasks
            .get(&task.task_id)
            .is_some_and(|t| t.local && t.owned)
        {
            return;
        }
        self.seq += 1;
        let seq = self.seq;
        self.apply(task, seq, UpdateSource::Push, None).await;
    }

    /// The proxy carried out what was asked of a task of its own.
    async fn local_done(
        &mut self,
        task_id: TaskId,
        request: Option<i64>,
        ask: LocalAsk,
        error: Option<String>,
    ) {
        let failed = |message: String| McpError::Rpc {
            code: -32603,
            message,
            data: None,
        };
        match ask {
            LocalAsk::Answer(responses) => {
                let result = error.map_or(Ok(()), |e| Err(failed(e)));
                self.on_answered(task_id, responses, request, result).await
            }
            LocalAsk::Cancel(_) => {
                let result = error.map_or(Ok(None), |e| Err(failed(e)));
                self.on_cancelled(task_id, request, result).await
            }
        }
    }

    /// The timeline's `input_sent` for each response.
    fn record_inputs_sent(&self, task_id: &TaskId, responses: &BTreeMap<String, Value>) {
        let server = self.id();
        self.ledger_queue(|l| {
            let events = responses.iter().map(|(key, resp)| {
                let action = resp
                    .get("action")
                    .and_then(Value::as_str)
                    .unwrap_or("accept");
                let detail = json!({ "key": key, "action": action });
                l.record_event(&server, task_id, EventKind::InputSent, None, &detail)
            });
            ledger::all(events.collect())
        });
    }

    pub(super) async fn on_answered(
        &mut self,
        task_id: TaskId,
        responses: BTreeMap<String, Value>,
        request: Option<i64>,
        result: Result<(), McpError>,
    ) {
        let keys: Vec<String> = responses.keys().cloned().collect();
        let (server, id) = (self.id(), task_id.clone());
        let known = self.tasks.contains_key(&task_id);
        match result {
            Ok(()) => {
                if let Some(t) = self.tasks.get_mut(&task_id) {
                    t.answered.extend(keys.iter().cloned());
                } else {
                    self.record_inputs_sent(&task_id, &responses);
                }
                self.ledger(|l| {
                    let mut ops: Vec<_> = responses
                        .iter()
                        .map(|(key, resp)| {
                            let action = resp
                                .get("action")
                                .and_then(Value::as_str)
                                .unwrap_or("accept");
                            l.mark_answered(&server, &id, key, action)
                        })
                        .collect();
                    ops.extend(request.map(|req| l.complete_request(req, None)));
                    ledger::all(ops)
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
                let failure = Failure::of(&e, &task_id);
                let why = failure.text().to_string();
                self.ledger_queue(|l| {
                    let detail = json!({ "answer": why });
                    let mut ops = Vec::new();
                    if known {
                        ops.push(l.record_event(&server, &id, EventKind::Error, None, &detail));
                    }
                    ops.extend(request.map(|req| l.complete_request(req, Some(&why))));
                    ledger::all(ops)
                });
                if matches!(e, McpError::SessionLost) {
                    self.session_lost(&task_id).await;
                }
                self.emit(EngineEvent::AnswerFailed {
                    server: self.id(),
                    task_id,
                    keys,
                    error: failure,
                })
                .await;
            }
        }
    }
}

/// `tools/call` (tagged with `call_id`), sent again (at most twice) when the server
/// refuses it with 429 or 503: it was not processed, and `Retry-After` says when to come
/// back. A lost legacy session is replaced once, and the call sent in the new one. `retry`
/// carries the answers of a multi-round-trip round.
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
                // Not processed: come back when the server says, else after 1 s.
                let wait = crate::mcp::backoff::Backoff {
                    base: Duration::from_secs(1),
                    max: Duration::from_secs(30),
                }
                .after(1, retry_after);
                tokio::time::sleep(wait).await;
            }
            Err(McpError::SessionLost) if attempt < 2 => client.reinitialize().await?,
            other => return other,
        }
    }
}
