//! Folding snapshots in: polls, pushes and listen-stream news become task state, ledger
//! records and `EngineEvent`s, under the tracker's invariants.
//!
//! Must not send requests except the one fetch a terminal task's payload needs.

use super::*;

impl ServerActor {
    /// Fold one snapshot into the task, persist it, and report what changed.
    pub(super) async fn apply(
        &mut self,
        task: Task,
        observed: u64,
        source: UpdateSource,
        latency_ms: Option<u64>,
    ) {
        let task_id = task.task_id.clone();
        let Some(tr) = self.tasks.get_mut(&task_id) else {
            return;
        };
        let pushed = tr.pushed;
        let r = tr.ingest(task.clone(), observed);
        if !r.applied {
            return;
        }
        let findings =
            self.conformance
                .snapshot(&task, source, pushed, r.changed, chrono::Utc::now());
        self.hints(findings).await;
        let era = self.client.as_ref().map(|c| c.era());
        if (r.changed || source != UpdateSource::Poll)
            && let Some(ledger) = &self.ledger
        {
            // Queued, not awaited: later ledger calls still see it (the ledger runs jobs
            // in order), and a burst of snapshots shares one transaction.
            let write = (
                self.spec.id.0.clone(),
                task.clone(),
                ledger_kind(source),
                latency_ms,
            );
            if let Err(e) = ledger.queue_snapshot(write) {
                self.notice(NoticeLevel::Error, format!("ledger write failed: {e:#}"))
                    .await;
            }
        }
        self.emit(EngineEvent::TaskUpdated {
            server: self.id(),
            task: task.clone(),
            source,
            latency_ms,
        })
        .await;
        // The ledger records `input_requested` with the snapshot itself.
        for (key, request) in r.new_inputs {
            self.emit(EngineEvent::InputRequested {
                server: self.id(),
                task_id: task_id.clone(),
                key,
                request,
            })
            .await;
        }
        for key in r.reused_keys {
            let finding = self.conformance.key_reused(&task_id, &key);
            self.hints(finding).await;
            self.notice(
                NoticeLevel::Warn,
                format!(
                    "server bug: input key {key:?} of task {} was reused for a different request",
                    short_id(&task_id)
                ),
            )
            .await;
            self.emit(EngineEvent::InputKeyReused {
                server: self.id(),
                task_id: task_id.clone(),
                key,
            })
            .await;
        }
        if r.became_terminal {
            self.schedule.remove(&task_id);
            self.update_listen_ids();
            let needs_payload = matches!(task.status, TaskStatus::Completed | TaskStatus::Failed)
                && task.result.is_none()
                && task.error.is_none();
            if needs_payload {
                match era {
                    Some(Era::Legacy) => self.fetch_result(&task_id),
                    _ => {
                        self.start_get(&task_id, UpdateSource::Resync);
                    }
                }
            }
        } else if era == Some(Era::Legacy) && task.status == TaskStatus::InputRequired {
            // Legacy servers deliver the input request on the stream of a `tasks/result` call.
            self.fetch_result(&task_id);
        }
    }

    /// Attach the payload of a terminal task (legacy `tasks/result`, or the one
    /// `tasks/get` after a terminal `CreateTaskResult`). Before the task is known to be
    /// terminal the payload is kept until the terminal snapshot arrives.
    pub(super) async fn merge_payload(
        &mut self,
        task_id: &str,
        result: Option<Value>,
        error: Option<ErrorObject>,
    ) {
        if result.is_none() && error.is_none() {
            return;
        }
        let Some(tr) = self.tasks.get_mut(task_id) else {
            return;
        };
        let Some(last) = tr.last.as_mut() else { return };
        if !tr.terminal || last.result.is_some() || last.error.is_some() {
            if !tr.terminal {
                last.result = result.or(last.result.take());
                last.error = error.or(last.error.take());
            }
            return;
        }
        last.result = result;
        last.error = error;
        let task = last.clone();
        let server = self.spec.id.0.clone();
        let snap = task.clone();
        self.ledger(move |l| l.record_snapshot(&server, &snap, EventKind::Resync, None))
            .await;
        self.emit(EngineEvent::TaskUpdated {
            server: self.id(),
            task,
            source: UpdateSource::Resync,
            latency_ms: None,
        })
        .await;
    }

    pub(super) async fn on_push(&mut self, push: ServerPush) {
        match push {
            ServerPush::Task(task) => self.pushed(task).await,
            ServerPush::Progress {
                task_id,
                progress,
                total,
                ..
            } => {
                if self.tasks.contains_key(&task_id) {
                    self.emit(EngineEvent::Progress {
                        server: self.id(),
                        task_id,
                        progress,
                        total,
                    })
                    .await;
                }
            }
            ServerPush::InputRequest { task_id, .. } => {
                // Legacy: the request is merged into the task's next snapshot; fetch it now.
                if self.tasks.contains_key(&task_id) {
                    self.start_get(&task_id, UpdateSource::Poll);
                }
            }
            ServerPush::ToolsChanged => {}
        }
    }

    pub(super) async fn pushed(&mut self, task: Task) {
        // Notifications for tasks we do not follow are ignored.
        if !self.tasks.contains_key(&task.task_id) {
            return;
        }
        self.seq += 1;
        let seq = self.seq;
        let id = task.task_id.clone();
        if self.tasks.get(&id).is_some_and(|t| t.terminal) {
            self.check_terminal(&task, UpdateSource::Push).await;
            self.merge_payload(&id, task.result, task.error).await;
            return;
        }
        self.apply(task, seq, UpdateSource::Push, None).await;
        self.reschedule(&id);
    }

    pub(super) async fn on_listen(&mut self, msg: ListenMsg) {
        match msg {
            ListenMsg::Subscribed {
                requested,
                accepted,
                full_resync,
            } => {
                let accepted: BTreeSet<String> = match accepted {
                    Some(a) => a.into_iter().collect(),
                    None => BTreeSet::new(),
                };
                let newly: Vec<String> = if full_resync {
                    requested.iter().cloned().collect()
                } else {
                    requested.difference(&self.subscribed).cloned().collect()
                };
                for (id, t) in self.tasks.iter_mut() {
                    t.pushed = accepted.contains(id);
                }
                self.subscribed = requested;
                if !self.push_on {
                    self.push_on = true;
                    self.emit(EngineEvent::PushChanged {
                        server: self.id(),
                        push: true,
                    })
                    .await;
                }
                // Nothing is replayed: fetch each newly subscribed task once.
                for id in newly {
                    if self
                        .tasks
                        .get(&id)
                        .is_some_and(|t| !t.terminal && !t.expired)
                    {
                        self.start_get(&id, UpdateSource::Resync);
                    }
                }
                let ids: Vec<String> = self.followed_ids().into_iter().collect();
                for id in ids {
                    self.reschedule(&id);
                }
            }
            ListenMsg::Pushed(task) => self.pushed(task).await,
            ListenMsg::Lost {
                error,
                attempt,
                retry_in,
            } => {
                tracing::info!(server = %self.spec.id, "push stream lost: {error}");
                self.subscribed.clear();
                for t in self.tasks.values_mut() {
                    t.pushed = false;
                }
                let now = Instant::now();
                let ids: Vec<String> = self.followed_ids().into_iter().collect();
                for id in ids {
                    let due = now + self.poll_delay(&id);
                    self.schedule.set_if_earlier(&id, due);
                }
                if self.push_on {
                    self.push_on = false;
                    self.emit(EngineEvent::PushChanged {
                        server: self.id(),
                        push: false,
                    })
                    .await;
                }
                self.emit(EngineEvent::Reconnecting {
                    server: self.id(),
                    attempt,
                    retry_in,
                })
                .await;
            }
            ListenMsg::GaveUp(why) => {
                tracing::warn!(server = %self.spec.id, "push off: {why}");
                self.notice(
                    NoticeLevel::Warn,
                    format!("push off: {why}; polling every task instead"),
                )
                .await;
                Box::pin(self.on_listen(ListenMsg::Unavailable(why))).await;
            }
            ListenMsg::Unavailable(why) => {
                tracing::info!(server = %self.spec.id, "no push: {why}");
                for t in self.tasks.values_mut() {
                    t.pushed = false;
                }
                if self.push_on {
                    self.push_on = false;
                }
                self.emit(EngineEvent::PushChanged {
                    server: self.id(),
                    push: false,
                })
                .await;
                let ids: Vec<String> = self.followed_ids().into_iter().collect();
                for id in ids {
                    let due = Instant::now() + self.poll_delay(&id);
                    self.schedule.set_if_earlier(&id, due);
                }
            }
        }
    }

    /// A snapshot of a task already terminal must repeat that terminal state.
    pub(super) async fn check_terminal(&mut self, task: &Task, source: UpdateSource) {
        let first = self
            .tasks
            .get(&task.task_id)
            .and_then(|t| t.last.as_ref())
            .map(|t| t.status.clone());
        if let Some(first) = first {
            let finding = self.conformance.after_terminal(&first, task, source);
            self.hints(finding).await;
        }
    }
}
