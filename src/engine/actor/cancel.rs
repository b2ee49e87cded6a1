//! The actor's cancels: a cancel sent from here (or left in the outbox for the task's
//! follower, as `commands.rs` routes it), and what the server's reply changes.
//!
//! Must not block on the network: the request runs in a spawned task that reports an
//! `Internal`.

use super::commands::Route;
use super::*;
use crate::ledger;

impl ServerActor {
    /// Cancel a task (`request`: the outbox request it carries out) for `by`.
    pub(super) async fn cancel(&mut self, task_id: TaskId, request: Option<i64>, by: CancelBy) {
        if self.tasks.get(&task_id).is_some_and(|t| t.cancel_in_flight) {
            return;
        }
        let client = match self.route(&task_id, "cancel", request.is_some()).await {
            Route::Send(c) => c,
            Route::Wait => {
                self.ensure_connecting();
                if self.queued.len() < 1024 {
                    self.queued.push(EngineCommand::Cancel {
                        server: self.id(),
                        task_id,
                        by,
                    });
                }
                return;
            }
            Route::Outbox => {
                return self
                    .leave_for_follower(task_id, OutboxKind::Cancel, by.detail(), Vec::new())
                    .await;
            }
            Route::Refuse(error) => {
                if let Some(id) = request {
                    let why = error.text().to_string();
                    self.ledger_queue(move |l| l.complete_request(id, Some(&why)));
                }
                self.emit(EngineEvent::CancelFailed {
                    server: self.id(),
                    task_id,
                    error,
                })
                .await;
                return;
            }
        };
        if let Some(t) = self.tasks.get_mut(&task_id) {
            t.cancel_in_flight = true;
        }
        // A task the ledger does not know gets its row only once the server acknowledges
        // the cancel: a mistyped id leaves nothing behind.
        if self.tasks.contains_key(&task_id) {
            let (server, id) = (self.id(), task_id.clone());
            let detail = by.detail();
            self.ledger_queue(move |l| {
                l.record_event(&server, &id, EventKind::CancelRequested, None, &detail)
            });
        }
        if self.tasks.get(&task_id).is_some_and(|t| t.local) {
            // The proxy that runs the call stops it.
            drop(client);
            return self
                .emit(EngineEvent::LocalAsked {
                    server: self.id(),
                    task_id,
                    request,
                    ask: LocalAsk::Cancel(by),
                })
                .await;
        }
        self.stats.request();
        let tx = self.internal_tx.clone();
        tokio::spawn(async move {
            let result =
                crate::engine::retry::retry_transient(|| client.cancel_task(&task_id)).await;
            let _ = tx
                .send(Internal::Cancelled {
                    task_id,
                    request,
                    result,
                })
                .await;
        });
    }

    pub(super) async fn on_cancelled(
        &mut self,
        task_id: TaskId,
        request: Option<i64>,
        result: Result<Option<Task>, McpError>,
    ) {
        if let Some(t) = self.tasks.get_mut(&task_id) {
            t.cancel_in_flight = false;
        }
        let (server, id) = (self.id(), task_id.clone());
        match result {
            Ok(snapshot) => {
                if let Some(t) = self.tasks.get_mut(&task_id) {
                    t.cancel_requested = true;
                }
                let unknown = !self.tasks.contains_key(&task_id);
                self.ledger(|l| {
                    let detail = json!({});
                    let mut ops = Vec::new();
                    if unknown {
                        ops.push(l.record_event(
                            &server,
                            &id,
                            EventKind::CancelRequested,
                            None,
                            &detail,
                        ));
                    }
                    ops.push(l.record_event(&server, &id, EventKind::CancelAcked, None, &detail));
                    ops.extend(request.map(|req| l.complete_request(req, None)));
                    ledger::all(ops)
                })
                .await;
                self.emit(EngineEvent::CancelSent {
                    server: self.id(),
                    task_id: task_id.clone(),
                    acked: true,
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
                let error = match &e {
                    McpError::TaskNotFound { .. } => Failure::Gone(
                        "nothing to cancel: the task is unknown to the server or already finished"
                            .to_string(),
                    ),
                    other => Failure::of(other, &task_id),
                };
                if let Some(req) = request {
                    let why = error.text().to_string();
                    self.ledger_queue(move |l| l.complete_request(req, Some(&why)));
                }
                if matches!(e, McpError::SessionLost) {
                    self.session_lost(&task_id).await;
                }
                self.emit(EngineEvent::CancelFailed {
                    server: self.id(),
                    task_id: task_id.clone(),
                    error,
                })
                .await;
                if self.tasks.get(&task_id).is_some_and(|t| t.owned) {
                    self.start_get(&task_id, UpdateSource::Poll);
                }
            }
        }
    }
}
