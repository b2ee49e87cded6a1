//! Paced polling: when each task's next `tasks/get` goes out, what a reply or an error
//! does to the schedule, expiry, and legacy `tasks/result`.
//!
//! Must not poll faster than `max(pollIntervalMs, floor)` per task.

use super::requests::{Joined, Polled};
use super::*;

impl ServerActor {
    /// Send one `tasks/get` unless one is already in flight for the task.
    pub(super) fn start_get(&mut self, task_id: &TaskId, source: UpdateSource) -> bool {
        let Some(client) = self.client_for(task_id) else {
            return false;
        };
        let Some(tr) = self.tasks.get_mut(task_id) else {
            return false;
        };
        if tr.poll_in_flight || tr.local {
            // A task of a proxy's own has no server to ask.
            return false;
        }
        tr.poll_in_flight = true;
        tr.last_get = Some(Instant::now());
        self.seq += 1;
        self.stats.request();
        let observed = self.seq;
        let id = task_id.clone();
        self.requests.spawn(task_id.clone(), async move {
            let started = Instant::now();
            let result = client.get_task(&id).await;
            let latency_ms = started.elapsed().as_millis() as u64;
            Polled {
                task_id: id,
                observed,
                result,
                latency_ms,
                source,
            }
        });
        true
    }

    pub(super) async fn poll_due(&mut self) {
        let now = Instant::now();
        if self.backoff_until.is_some_and(|b| b > now) {
            return;
        }
        self.backoff_until = None;
        while self.requests.len() < self.cfg.max_in_flight {
            let Some(id) = self.schedule.pop_due(now) else {
                break;
            };
            let Some(t) = self.tasks.get(&id) else {
                continue;
            };
            if !t.owned || t.local {
                // Mirrored (another process polls it), or a proxy's own (never polled).
                continue;
            }
            let source = if t.last.is_none() {
                UpdateSource::Resync
            } else {
                UpdateSource::Poll
            };
            if self.client_for(&id).is_none() {
                // Reconnecting: try again once connected (on_connected reschedules everything).
                continue;
            }
            self.start_get(&id, source);
        }
        if self.requests.len() >= self.cfg.max_in_flight
            && let Some(due) = self.schedule.next_due()
            && due <= now
        {
            // Saturated: the next completion will call us again.
            self.backoff_until = Some(now + Duration::from_millis(20));
        }
    }

    /// Next poll time for a task after a successful observation.
    pub(super) fn poll_delay(&self, task_id: &TaskId) -> Duration {
        let base = self.poll_interval(task_id);
        if self.tasks.get(task_id).is_some_and(|t| t.pushed) {
            let (soonest, latest) = self.cfg.safety_poll_range(self.subscribed.len());
            return base.max(soonest + (latest - soonest).mul_f64(fastrand::f64()));
        }
        // Jitter only ever adds, so the rate never exceeds one request per interval.
        base + base.mul_f64(fastrand::f64() * 0.1)
    }

    /// `max(pollIntervalMs, floor)`, or the default when the server gives no hint; never
    /// more than the safety-poll period, so an absurd hint (`1e300`) cannot stop polling.
    pub(super) fn poll_interval(&self, task_id: &TaskId) -> Duration {
        let hinted = self
            .tasks
            .get(task_id)
            .and_then(|t| t.last.as_ref())
            .and_then(|t| t.poll_interval_ms)
            .map(Duration::from_millis);
        let floor = self.spec.poll_floor.unwrap_or(self.cfg.poll_floor);
        let cap = self.cfg.safety_poll.max(floor);
        hinted.unwrap_or(self.cfg.default_poll).max(floor).min(cap)
    }

    /// Poll again soon (after an answer or a cancel), but never sooner than one
    /// interval after the previous `tasks/get`.
    pub(super) fn poll_soon(&mut self, task_id: &TaskId) {
        let follow = self
            .tasks
            .get(task_id)
            .is_some_and(|t| !t.pushed && t.live() && t.owned);
        if !follow {
            return;
        }
        let mut due = Instant::now() + Duration::from_millis(300);
        if let Some(last) = self.tasks.get(task_id).and_then(|t| t.last_get) {
            due = due.max(last + self.poll_interval(task_id));
        }
        self.schedule.set_if_earlier(task_id, due);
    }

    /// A `tasks/get` ended: its slot is free; act on the reply, or poll again after a
    /// backoff when the request ended without one.
    pub(super) async fn on_request_joined(&mut self, joined: Joined) {
        let task_id = match &joined {
            Joined::Replied(p) => p.task_id.clone(),
            Joined::Lost { task_id, .. } => task_id.clone(),
        };
        if let Some(t) = self.tasks.get_mut(&task_id) {
            t.poll_in_flight = false;
        }
        match joined {
            Joined::Replied(p) => {
                self.on_polled(p.task_id, p.observed, p.result, p.latency_ms, p.source)
                    .await
            }
            Joined::Lost { task_id, why } => {
                tracing::error!(server = %self.spec.id, task = %task_id, "a tasks/get {why}");
                self.notice(
                    NoticeLevel::Error,
                    format!(
                        "a status request for task {} {why}; it will be asked again",
                        task_id.short()
                    ),
                )
                .await;
                self.stats.error();
                let attempts = self.tasks.get_mut(&task_id).map_or(1, |t| {
                    t.consecutive_errors += 1;
                    t.consecutive_errors
                });
                if self
                    .tasks
                    .get(&task_id)
                    .is_some_and(|t| t.live() && t.owned)
                {
                    let delay = self.cfg.backoff.jittered(attempts);
                    self.schedule.set(&task_id, Instant::now() + delay);
                }
            }
        }
        if self
            .backoff_until
            .is_some_and(|b| b <= Instant::now() + Duration::from_millis(20))
        {
            self.backoff_until = None;
        }
    }

    pub(super) async fn on_polled(
        &mut self,
        task_id: TaskId,
        observed: u64,
        result: Result<Task, McpError>,
        latency_ms: u64,
        source: UpdateSource,
    ) {
        self.stats.latency(latency_ms);
        if !self.tasks.contains_key(&task_id) {
            return;
        }
        match result {
            Ok(task) => {
                self.transport_failures = 0;
                if self.degraded {
                    self.degraded = false;
                    if let Some(c) = &self.client {
                        let info = c.info();
                        self.emit(EngineEvent::ServerConnected {
                            server: self.id(),
                            era: info.era,
                            push: self.push_on,
                            server_name: info.name,
                        })
                        .await;
                    }
                }
                if let Some(t) = self.tasks.get_mut(&task_id) {
                    t.consecutive_errors = 0;
                }
                self.conformance.found(&task_id);
                if self.tasks.get(&task_id).is_some_and(|t| t.provisional) {
                    self.confirm(&task_id).await;
                }
                self.apply(task, observed, source, Some(latency_ms)).await;
                self.reschedule(&task_id);
            }
            Err(McpError::TaskNotFound { message }) => {
                if self.tasks.get(&task_id).is_some_and(|t| t.provisional) {
                    return self.not_found(&task_id, &message).await;
                }
                let finding = self.conformance.not_found(&task_id);
                self.hints(finding).await;
                self.expire(&task_id, &message).await
            }
            Err(McpError::SessionLost) => self.session_lost(&task_id).await,
            Err(e) => self.on_request_error(&task_id, e).await,
        }
    }

    pub(super) fn reschedule(&mut self, task_id: &TaskId) {
        let follow = self.tasks.get(task_id).is_some_and(|t| t.live() && t.owned);
        if follow {
            let due = Instant::now() + self.poll_delay(task_id);
            self.schedule.set(task_id, due);
        } else {
            self.schedule.remove(task_id);
        }
    }

    pub(super) async fn on_request_error(&mut self, task_id: &TaskId, e: McpError) {
        self.stats.error();
        let attempts = match self.tasks.get_mut(task_id) {
            Some(t) => {
                t.consecutive_errors += 1;
                t.consecutive_errors
            }
            None => 1,
        };
        let mut delay = self
            .cfg
            .backoff
            .jittered(attempts)
            .max(self.poll_delay(task_id));
        if let Some(ra) = e.retry_after() {
            delay = delay.max(ra);
            self.backoff_until = Some(Instant::now() + ra);
        }
        if matches!(
            e,
            McpError::Http {
                status: 401 | 403,
                ..
            }
        ) {
            // Credentials will not fix themselves: back off hard, no retry storm.
            delay = delay.max(Duration::from_secs(60));
            self.backoff_until = Some(Instant::now() + Duration::from_secs(60));
        }
        if let McpError::SignInRequired(reason) = &e {
            // The sign-in lapsed while connected: wait for the user, no retry storm.
            delay = delay.max(Duration::from_secs(60));
            self.backoff_until = Some(Instant::now() + Duration::from_secs(60));
            self.sign_in_lapsed(reason.clone()).await;
        }
        if matches!(e, McpError::Transport(_)) {
            self.transport_failures += 1;
        }
        if !self.degraded {
            self.degraded = true;
            self.emit(EngineEvent::ServerDegraded {
                server: self.id(),
                reason: task_id.mask(&e.to_string()),
            })
            .await;
        }
        tracing::debug!(server = %self.spec.id, task = %task_id, "tasks/get failed: {}", task_id.mask(&e.to_string()));
        self.schedule.set(task_id, Instant::now() + delay);
        let stdio = matches!(self.spec.endpoint, crate::mcp::Endpoint::Stdio { .. });
        if stdio && self.transport_failures >= 2 && !self.connecting {
            // The child process died: start it again (tasks are server-durable, connections are not).
            self.client = None;
            self.push_rx = None;
            self.transport_failures = 0;
            self.connect_attempt += 1;
            let retry_in = self.cfg.backoff.jittered(self.connect_attempt);
            self.emit(EngineEvent::Reconnecting {
                server: self.id(),
                attempt: self.connect_attempt,
                retry_in,
            })
            .await;
            self.start_connect(retry_in);
        }
    }

    pub(super) async fn expire(&mut self, task_id: &TaskId, message: &str) {
        tracing::info!(server = %self.spec.id, task = %task_id, "task unknown to the server: {}", task_id.mask(message));
        self.end_task(task_id, crate::ledger::Tombstone::Expired, true)
            .await;
    }

    /// An id given to follow that its server does not know: nothing was recorded, and it
    /// is followed no more.
    async fn not_found(&mut self, task_id: &TaskId, message: &str) {
        tracing::info!(server = %self.spec.id, task = %task_id, "no such task: {}", task_id.mask(message));
        self.tasks.remove(task_id);
        self.schedule.remove(task_id);
        self.emit(EngineEvent::TaskNotFound {
            server: self.id(),
            task_id: task_id.clone(),
        })
        .await;
    }

    /// Legacy: open `tasks/result` (it blocks until the task ends, and carries input requests meanwhile).
    pub(super) fn fetch_result(&mut self, task_id: &TaskId) {
        let Some(client) = self.client_for(task_id) else {
            return;
        };
        let Some(tr) = self.tasks.get_mut(task_id) else {
            return;
        };
        if tr.result_in_flight || tr.local {
            // A task of a proxy's own has no server to ask.
            return;
        }
        tr.result_in_flight = true;
        self.stats.request();
        let tx = self.internal_tx.clone();
        let task_id = task_id.clone();
        tokio::spawn(async move {
            let result = client.task_result(&task_id).await;
            let _ = tx.send(Internal::ResultFetched { task_id, result }).await;
        });
    }

    pub(super) async fn on_result(
        &mut self,
        task_id: TaskId,
        result: Result<Result<Value, ErrorObject>, McpError>,
    ) {
        if let Some(t) = self.tasks.get_mut(&task_id) {
            t.result_in_flight = false;
        }
        match result {
            Ok(Ok(v)) => {
                let terminal = self.tasks.get(&task_id).is_some_and(|t| t.terminal);
                if !terminal {
                    // The call returned: the task has ended; learn its status now.
                    self.start_get(&task_id, UpdateSource::Poll);
                }
                self.merge_payload(&task_id, Some(v), None).await;
            }
            Ok(Err(err)) => {
                if !self.tasks.get(&task_id).is_some_and(|t| t.terminal) {
                    self.start_get(&task_id, UpdateSource::Poll);
                }
                self.merge_payload(&task_id, None, Some(err)).await;
            }
            Err(McpError::TaskNotFound { message }) => self.expire(&task_id, &message).await,
            Err(McpError::SessionLost) => self.session_lost(&task_id).await,
            Err(e) => {
                tracing::debug!(task = %task_id, "tasks/result failed: {}", task_id.mask(&e.to_string()))
            }
        }
    }
}
