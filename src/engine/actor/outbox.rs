//! The actor's side of the shared outbox: answers and cancels left for the process that
//! follows a task (and how they ended), and those other processes leave for us.
//!
//! Must not send anything for a task we do not follow (the outbox is for its follower).

use super::*;

/// How long a request left for another process may wait for its outcome.
const OUTBOX_WAIT: Duration = Duration::from_secs(30);

impl ServerActor {
    /// Leave an answer or a cancel for the process that follows the task.
    pub(super) async fn leave_for_follower(
        &mut self,
        task_id: TaskId,
        kind: OutboxKind,
        payload: Value,
        keys: Vec<String>,
    ) {
        let (server, id, requester) = (self.id(), task_id.clone(), self.owner.clone());
        let queued = self
            .ledger(move |l| l.request(&server, &id, kind, &payload, requester.as_str()))
            .await
            .flatten();
        let Some(request) = queued else {
            let error = Failure::Failed(format!("task {task_id} is not in the ledger"));
            return self.outbox_failed(task_id, kind, keys, error).await;
        };
        tracing::debug!(server = %self.spec.id, task = %task_id, "left for the task's follower");
        self.awaited.insert(
            request,
            Awaited {
                task_id,
                kind,
                keys,
                deadline: Instant::now() + OUTBOX_WAIT,
            },
        );
    }

    async fn outbox_failed(
        &self,
        task_id: TaskId,
        kind: OutboxKind,
        keys: Vec<String>,
        error: Failure,
    ) {
        let server = self.id();
        let ev = match kind {
            OutboxKind::Answer => EngineEvent::AnswerFailed {
                server,
                task_id,
                keys,
                error,
            },
            OutboxKind::Cancel => EngineEvent::CancelFailed {
                server,
                task_id,
                error,
            },
        };
        self.emit(ev).await;
    }

    /// Another process asks us to answer or cancel a task we follow.
    pub(super) async fn on_request(&mut self, req: OutboxRequest) {
        if !self.serving.insert(req.id) {
            return;
        }
        let owned = self.tasks.get(&req.task_id).is_some_and(|t| t.owned);
        if !owned {
            // Not ours (any more): leave it for whoever follows the task now.
            self.serving.remove(&req.id);
            return;
        }
        match req.kind {
            OutboxKind::Answer => {
                let responses: BTreeMap<String, Value> =
                    serde_json::from_value(req.payload).unwrap_or_default();
                if responses.is_empty() {
                    let id = req.id;
                    self.ledger_queue(move |l| l.complete_request(id, Some("no answer given")));
                    return;
                }
                self.answer(req.task_id, responses, Some(req.id)).await;
            }
            OutboxKind::Cancel => {
                let by = CancelBy::from_detail(&req.payload).unwrap_or(CancelBy {
                    by: "another taskrail process".into(),
                    reason: None,
                });
                self.cancel(req.task_id, Some(req.id), by).await
            }
        }
    }

    /// A request we left for another process ended.
    pub(super) async fn on_outcome(&mut self, outcome: OutboxOutcome) {
        let Some(a) = self.awaited.remove(&outcome.id) else {
            return;
        };
        match (a.kind, outcome.error) {
            (OutboxKind::Answer, None) => {
                if let Some(t) = self.tasks.get_mut(&a.task_id) {
                    t.answered.extend(a.keys.iter().cloned());
                }
                self.emit(EngineEvent::AnswerSent {
                    server: self.id(),
                    task_id: a.task_id,
                    keys: a.keys,
                })
                .await;
            }
            (OutboxKind::Cancel, None) => {
                if let Some(t) = self.tasks.get_mut(&a.task_id) {
                    t.cancel_requested = true;
                }
                self.emit(EngineEvent::CancelSent {
                    server: self.id(),
                    task_id: a.task_id,
                    acked: true,
                })
                .await;
            }
            (kind, Some(error)) => {
                let error = Failure::Failed(a.task_id.mask(&error));
                self.outbox_failed(a.task_id, kind, a.keys, error).await;
            }
        }
    }

    /// Requests nobody carried out in time: give up on them, and say so.
    pub(super) async fn expire_awaited(&mut self) {
        let now = Instant::now();
        let late: Vec<i64> = self
            .awaited
            .iter()
            .filter(|(_, a)| a.deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in late {
            let Some(a) = self.awaited.remove(&id) else {
                continue;
            };
            let why = "the process following this task did not act on it in time";
            self.ledger_queue(move |l| l.abandon_request(id, why));
            self.outbox_failed(a.task_id, a.kind, a.keys, Failure::Failed(why.into()))
                .await;
        }
    }
}
