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
        let mut r = tr.ingest(task, observed);
        if let Some((first, later)) = r.after_terminal.take() {
            let finding = self.conformance.after_terminal(&first, &later, source);
            self.hints(finding).await;
            return;
        }
        if r.payload {
            return self.payload_added(&task_id).await;
        }
        if !r.applied {
            return;
        }
        // What the tracker kept (a payload that came early is merged in).
        let Some(task) = self
            .tasks
            .get(&task_id)
            .and_then(|t| t.last.as_deref().cloned())
        else {
            return;
        };
        let findings =
            self.conformance
                .snapshot(&task, source, pushed, r.changed, chrono::Utc::now());
        self.hints(findings).await;
        let era = self.client_for(&task_id).map(|c| c.era());
        if !r.changed && source == UpdateSource::Poll {
            // Nothing to write; the count says how often we asked.
            if let Some(t) = self.tasks.get_mut(&task_id) {
                t.quiet_polls = t.quiet_polls.saturating_add(1);
            }
        } else {
            self.flush_quiet_polls(&task_id);
        }
        let write = r.changed || source != UpdateSource::Poll;
        if write && let Some(ledger) = &self.ledger {
            // Queued, not awaited: later ledger calls still see it (the ledger runs jobs
            // in order), and a burst of snapshots shares one transaction.
            let write = (
                self.spec.id.clone(),
                task.clone(),
                ledger_kind(source),
                latency_ms,
            );
            if let Err(e) = ledger.queue_snapshot(write) {
                self.notice(NoticeLevel::Error, format!("ledger write failed: {e:#}"))
                    .await;
            }
        }
        let status = task.status.clone();
        let needs_payload = matches!(status, TaskStatus::Completed | TaskStatus::Failed)
            && task.result.is_none()
            && task.error.is_none();
        let ev = self.updated(task, source, latency_ms);
        self.emit(ev).await;
        // The ledger records `input_requested` with the snapshot itself.
        let new_inputs = self.answer_without_person(&task_id, r.new_inputs).await;
        if write && !new_inputs.is_empty() {
            // A request is shown only once it is on disk: a follower killed right after
            // showing it leaves it to the next one.
            self.ledger(|l| l.flush()).await;
        }
        for (key, request) in new_inputs {
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
                task_id.mask(&format!(
                    "server bug: input key {key:?} of task {task_id} was reused for a different request"
                )),
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
            if needs_payload {
                match era {
                    Some(Era::Legacy) => self.fetch_result(&task_id),
                    _ => {
                        self.start_get(&task_id, UpdateSource::Resync);
                    }
                }
            } else {
                self.release(&task_id);
            }
        } else if era == Some(Era::Legacy) && status == TaskStatus::InputRequired {
            // Legacy servers deliver the input request on the stream of a `tasks/result` call.
            self.fetch_result(&task_id);
        }
    }

    /// Write the count of polls that changed nothing since the last write (one `polls`
    /// event), before whatever is written next.
    pub(super) fn flush_quiet_polls(&mut self, task_id: &TaskId) {
        let Some(t) = self.tasks.get_mut(task_id) else {
            return;
        };
        let count = std::mem::take(&mut t.quiet_polls);
        if count == 0 {
            return;
        }
        let status = t.last.as_ref().map(|l| l.status.as_str().to_string());
        let (server, id) = (self.id(), task_id.clone());
        self.ledger_queue(move |l| {
            let detail = json!({ "unchanged": count, "status": status });
            l.record_event(&server, &id, EventKind::Polls, None, &detail)
        });
    }

    /// The payload of a terminal task (legacy `tasks/result`): merged into the terminal
    /// snapshot now, or kept until that snapshot arrives.
    pub(super) async fn merge_payload(
        &mut self,
        task_id: &TaskId,
        result: Option<Value>,
        error: Option<ErrorObject>,
    ) {
        let Some(tr) = self.tasks.get_mut(task_id) else {
            return;
        };
        if !tr.terminal {
            tr.keep_early_payload(result, error);
            return;
        }
        let Some(mut task) = tr.last.as_deref().cloned() else {
            return;
        };
        task.result = result.map(Box::new);
        task.error = error.map(Box::new);
        self.seq += 1;
        self.apply(task, self.seq, UpdateSource::Resync, None).await;
    }

    /// A terminal task's snapshot gained its result or error: store and report it.
    async fn payload_added(&mut self, task_id: &TaskId) {
        let Some(task) = self
            .tasks
            .get(task_id)
            .and_then(|t| t.last.as_deref().cloned())
        else {
            return;
        };
        if let Some(ledger) = &self.ledger {
            let write = (self.spec.id.clone(), task.clone(), EventKind::Resync, None);
            if let Err(e) = ledger.queue_snapshot(write) {
                self.notice(NoticeLevel::Error, format!("ledger write failed: {e:#}"))
                    .await;
            }
        }
        self.release(task_id);
        let ev = self.updated(task, UpdateSource::Resync, None);
        self.emit(ev).await;
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
            ServerPush::Foreground {
                key,
                request,
                call,
                on_call_stream,
            } => {
                self.foreground_pushed(key, request, call, on_call_stream)
                    .await
            }
            ServerPush::ForegroundGone { key, reason } => self.foreground_gone(key, reason).await,
            ServerPush::ElicitationComplete { elicitation_id } => {
                self.url_completed(elicitation_id).await
            }
            ServerPush::RootsShared { task_id, roots } => {
                self.emit(EngineEvent::RootsShared {
                    server: self.id(),
                    task_id,
                    roots,
                })
                .await
            }
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
                let accepted: BTreeSet<TaskId> = match accepted {
                    Some(a) => a.into_iter().collect(),
                    None => BTreeSet::new(),
                };
                let newly: Vec<TaskId> = if full_resync {
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
                let ids: Vec<TaskId> = self.followed_ids().into_iter().collect();
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
                tracing::info!(server = %self.spec.id, "push stream lost: {}", self.mask_ids(&error));
                self.subscribed.clear();
                for t in self.tasks.values_mut() {
                    t.pushed = false;
                }
                let now = Instant::now();
                let ids: Vec<TaskId> = self.followed_ids().into_iter().collect();
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
                tracing::info!(server = %self.spec.id, "no push: {}", self.mask_ids(&why));
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
                let ids: Vec<TaskId> = self.followed_ids().into_iter().collect();
                for id in ids {
                    let due = Instant::now() + self.poll_delay(&id);
                    self.schedule.set_if_earlier(&id, due);
                }
            }
        }
    }
}
