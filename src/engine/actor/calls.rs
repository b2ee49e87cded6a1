//! The actor's tool calls: sending `tools/call` (with the input rounds a call may need),
//! and the task it creates — recorded in the ledger before anyone hears of it.
//!
//! Must not block on the network: calls run in spawned tasks that report `Internal`s.

use super::foreground::{URL_ELICITATION_REQUIRED, url_requests};
use super::*;
use crate::engine::foreground::{CallSpec, RoundKind};

impl ServerActor {
    pub(super) async fn call_done(&self, call_id: u64, tool: String, result: CallResult) {
        self.emit(EngineEvent::CallFinished {
            server: self.id(),
            call_id,
            tool,
            result,
        })
        .await;
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
                self.created(task, tool.clone(), arguments, parent, None)
                    .await
            }
            Ok(CallOutcome::Complete(result)) => CallResult::Plain { result },
            Ok(CallOutcome::InputRequired {
                input_requests,
                request_state,
            }) => {
                let kind = RoundKind::Mrtr { request_state };
                match self.input_round(call, kind, input_requests).await {
                    None => return,
                    Some(message) => CallResult::Error {
                        message,
                        code: None,
                    },
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
                            code: None,
                        },
                    }
                }
                None => {
                    self.stats.error();
                    CallResult::Error {
                        message: format!("server error {URL_ELICITATION_REQUIRED}: {message}"),
                        code: Some(URL_ELICITATION_REQUIRED),
                    }
                }
            },
            Err(e) => {
                self.stats.error();
                let code = match &e {
                    McpError::Rpc { code, .. } => Some(*code),
                    _ => None,
                };
                CallResult::Error {
                    message: e.to_string(),
                    code,
                }
            }
        };
        self.call_settled(call_id).await;
        self.call_done(call_id, tool, result).await;
    }

    /// A task of the proxy's own for a call its server answers blocking: recorded with its
    /// origin and its lease in one transaction, reported, never polled.
    pub(super) async fn created_local(
        &mut self,
        task: Task,
        tool: String,
        arguments: Value,
        started_by: Option<String>,
    ) -> CallResult {
        let task_id = task.task_id.clone();
        let (server, t, a, tl, by) = (
            self.id(),
            task.clone(),
            arguments.clone(),
            tool.clone(),
            started_by.clone(),
        );
        let (owner, ttl) = (self.owner.clone(), self.cfg.lease_ttl);
        let stored = self.ledger.is_none()
            || self
                .ledger(move |l| {
                    let new = crate::ledger::NewTask {
                        server: &server,
                        era: Era::Modern,
                        tool: &tl,
                        arguments: &a,
                        task: &t,
                        parent_task: None,
                        session: None,
                        started_by: by.as_deref(),
                    };
                    l.record_proxy_task(new, &owner, ttl)
                })
                .await
                .is_some();
        self.emit(EngineEvent::TaskKnown {
            server: self.id(),
            task: KnownTask {
                started_by,
                tool: Some(tool),
                arguments: Some(arguments),
                ..KnownTask::new(task_id.clone(), chrono::Utc::now())
            },
        })
        .await;
        let tr = self.tasks.entry(task_id.clone()).or_default();
        tr.owned = true;
        tr.local = true;
        self.seq += 1;
        let seq = self.seq;
        self.apply(task, seq, UpdateSource::Create, None).await;
        CallResult::Task { task_id, stored }
    }

    /// A task our call (or a call sent through our connection) created: commit it to the
    /// ledger before anything reports it, report it, take its lease and follow it.
    pub(super) async fn created(
        &mut self,
        task: Task,
        tool: String,
        arguments: Value,
        parent: Option<TaskId>,
        started_by: Option<String>,
    ) -> CallResult {
        let task_id = task.task_id.clone();
        let era = self.client.as_ref().map(|c| c.era()).unwrap_or(Era::Modern);
        let declared = self.client.as_ref().is_none_or(|c| c.info().tasks);
        let finding = self.conformance.created(&task_id, era, declared);
        self.hints(finding).await;
        // A lost session may have been replaced while the call was sent.
        self.refresh_home_session().await;
        let session = self.home_session;
        if session.is_some() {
            self.created_in_session = true;
        }
        let (server, t, a, tl, p, by) = (
            self.id(),
            task.clone(),
            arguments.clone(),
            tool.clone(),
            parent.clone(),
            started_by.clone(),
        );
        // The id is committed to the ledger before anything reports it.
        let stored = self.ledger.is_none()
            || self
                .ledger(move |l| {
                    l.record_created(crate::ledger::NewTask {
                        server: &server,
                        era,
                        tool: &tl,
                        arguments: &a,
                        task: &t,
                        parent_task: p.as_ref(),
                        session,
                        started_by: by.as_deref(),
                    })
                })
                .await
                .is_some();
        if stored {
            self.keep_trace_context(&task_id);
        }
        self.emit(EngineEvent::TaskKnown {
            server: self.id(),
            task: KnownTask {
                task_id: task_id.clone(),
                tool: Some(tool.clone()),
                arguments: Some(arguments),
                recorded_at: chrono::Utc::now(),
                last: None,
                end: None,
                parent_task: parent,
                pending: Vec::new(),
                cancel: None,
                started_by,
                lean: false,
            },
        })
        .await;
        let tr = self.tasks.entry(task_id.clone()).or_default();
        tr.session = session;
        tr.owned = true;
        self.seq += 1;
        let seq = self.seq;
        self.apply(task, seq, UpdateSource::Create, None).await;
        if stored && self.ledger.is_some() {
            let (server, owner, ttl) = (self.id(), self.owner.clone(), self.cfg.lease_ttl);
            let ids = [task_id.clone()];
            self.ledger_queue(|l| {
                let claim = l.claim(&server, &ids, &owner, ttl);
                Box::pin(async move { claim.await.map(drop) })
            });
        }
        self.reschedule(&task_id);
        self.update_listen_ids();
        if era == Era::Legacy {
            // Legacy input requests and the final payload arrive on `tasks/result`.
            self.fetch_result(&task_id);
        }
        CallResult::Task { task_id, stored }
    }
}
