//! Connections: the home connection (with backoff), its push stream, and the legacy
//! sessions of earlier connections rejoined for the tasks that live in them; a session the
//! server dropped turns its tasks into "session lost" tombstones; a server this process
//! cannot reach never connects, and refuses what needs a connection.
//!
//! Must not follow tasks itself: it hands clients to the polling and command code.

use super::*;
use crate::ledger::Tombstone;
use crate::mcp::LegacySession;

impl ServerActor {
    /// A command that needs a connection, on a server this process cannot reach: refused
    /// and reported (true), or false for the rest (answers and cancels go through the
    /// outbox; mirroring needs nothing).
    pub(super) async fn refuse_unreachable(&mut self, cmd: &EngineCommand, why: &str) -> bool {
        let reason = format!(
            "{} cannot be reached from this process: {why}",
            self.spec.id
        );
        match cmd {
            EngineCommand::CallTool { call_id, tool, .. } => {
                let result = CallResult::Refused { reason };
                self.call_done(*call_id, tool.clone(), result).await;
            }
            EngineCommand::ListTools { .. } => {
                self.emit(EngineEvent::ToolsListFailed {
                    server: self.id(),
                    error: reason,
                })
                .await;
            }
            EngineCommand::SignIn { .. }
            | EngineCommand::SignInRedirect { .. }
            | EngineCommand::AnswerForeground { .. }
            | EngineCommand::RecordCreated { .. } => self.notice(NoticeLevel::Warn, reason).await,
            _ => return false,
        }
        true
    }

    /// Connect now unless connected, connecting or unreachable (a lazy actor's first
    /// connection, when it has something to do).
    pub(super) fn ensure_connecting(&mut self) {
        if self.client.is_none() && !self.connecting && self.spec.unreachable.is_none() {
            self.start_connect(Duration::ZERO);
        }
    }

    pub(super) fn start_connect(&mut self, delay: Duration) {
        if self.connecting {
            return;
        }
        self.connecting = true;
        let endpoint = self.spec.endpoint.clone();
        let options = self.spec.options.clone();
        let connector = self.spec.connector.clone();
        let tx = self.internal_tx.clone();
        self.connect_task = Some(tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let result = match connector {
                Some(c) => (c.0)(endpoint, options).await,
                None => McpClient::connect(endpoint, options).await,
            };
            let _ = tx.send(Internal::Connected(result)).await;
        }));
    }

    pub(super) async fn on_connected(&mut self, result: Connected) {
        self.connecting = false;
        match result {
            Ok((client, push_rx)) => {
                let info = client.info();
                self.connect_attempt = 0;
                self.transport_failures = 0;
                self.degraded = false;
                self.sign_in_cured();
                self.client = Some(client.clone());
                self.push_rx = Some(push_rx);
                self.foreground_reconnected().await;
                self.created_in_session = false;
                self.home_session = None;
                if let Some(session) = client.legacy_session() {
                    self.home_session = self.record_session(&session).await;
                }
                self.emit(EngineEvent::ServerConnected {
                    server: self.id(),
                    era: info.era,
                    push: false,
                    server_name: info.name.clone(),
                })
                .await;
                if !info.tasks {
                    self.notice(
                        NoticeLevel::Warn,
                        "the server does not offer tasks; calls will return plain results".into(),
                    )
                    .await;
                }
                self.start_push(client, info.era, info.tasks);
                let now = Instant::now();
                for id in self.owned_ids() {
                    self.schedule.set(&id, now);
                }
                self.listen_ids_now();
                for cmd in std::mem::take(&mut self.queued) {
                    Box::pin(self.on_command(cmd)).await;
                }
            }
            Err(McpError::SignInRequired(reason)) => self.sign_in_required(reason).await,
            Err(e) => {
                self.connect_attempt += 1;
                let retry_in = self.cfg.backoff.jittered(self.connect_attempt);
                let reason = e.to_string();
                tracing::warn!(server = %self.spec.id, "connect failed: {reason}");
                self.degraded = true;
                self.emit(EngineEvent::ServerDegraded {
                    server: self.id(),
                    reason,
                })
                .await;
                self.emit(EngineEvent::Reconnecting {
                    server: self.id(),
                    attempt: self.connect_attempt,
                    retry_in,
                })
                .await;
                self.start_connect(retry_in);
            }
        }
    }

    /// The home connection started a new legacy session (the old one was lost): record
    /// it, and end the old one's tasks.
    pub(super) async fn refresh_home_session(&mut self) {
        let Some(session) = self.client.as_ref().and_then(|c| c.legacy_session()) else {
            return;
        };
        let row = self.record_session(&session).await;
        if row == self.home_session {
            return;
        }
        if let Some(old) = self.home_session {
            let lost: Vec<TaskId> = self
                .tasks
                .iter()
                .filter(|(_, t)| t.live() && t.session == Some(old))
                .map(|(id, _)| id.clone())
                .collect();
            self.home_session = row;
            self.lost_sessions.insert(old);
            self.ledger(move |l| l.session_lost(old)).await;
            for id in lost {
                self.end_task(&id, crate::ledger::Tombstone::SessionLost, false)
                    .await;
            }
        }
        self.home_session = row;
        self.created_in_session = false;
    }

    async fn record_session(&self, session: &LegacySession) -> Option<i64> {
        let (server, s) = (self.id(), session.clone());
        self.ledger(move |l| {
            l.record_session(
                &server,
                &s.session_id,
                &s.protocol_version,
                &s.capabilities,
                s.server_name.as_deref(),
            )
        })
        .await
    }

    pub(super) fn start_push(&mut self, client: Arc<McpClient>, era: Era, tasks: bool) {
        if let Some(t) = self.push_task.take() {
            t.abort();
        }
        self.push_on = false;
        self.subscribed.clear();
        // A legacy session's GET stream also carries the server's own requests (input
        // outside any task), so it is opened even when the server offers no tasks.
        if self.cfg.no_push || (era == Era::Modern && !tasks) {
            return;
        }
        let (tx, mut rx) = mpsc::channel::<ListenMsg>(1024);
        let internal = self.internal_tx.clone();
        tokio::spawn(async move {
            while let Some(m) = rx.recv().await {
                if internal.send(Internal::Listen(m)).await.is_err() {
                    break;
                }
            }
        });
        let backoff = self.cfg.backoff;
        if era == Era::Legacy {
            client.expect_session_stream();
        }
        self.push_task = Some(match era {
            Era::Modern => {
                tokio::spawn(run_listen(client, self.listen_ids.subscribe(), tx, backoff))
            }
            Era::Legacy => tokio::spawn(run_legacy_stream(client, tx)),
        });
    }

    /// The task lives in a legacy session other than the home connection's.
    pub(super) fn foreign_session(&self, t: &TrackedTask) -> bool {
        t.session.is_some() && t.session != self.home_session
    }

    /// The client that can reach a task: its rejoined legacy session, or the home
    /// connection. `None` while disconnected (or the session is lost).
    pub(super) fn client_for(&self, task_id: &TaskId) -> Option<Arc<McpClient>> {
        match self.tasks.get(task_id) {
            Some(t) if self.foreign_session(t) => {
                t.session.and_then(|s| self.sessions.get(&s).cloned())
            }
            _ => self.client.clone(),
        }
    }

    /// Make sure the legacy session of a task is rejoined (once per session). Its pending
    /// input requests, received by the earlier connection, can be answered again.
    pub(super) async fn join_session(&mut self, session: i64) {
        if Some(session) == self.home_session
            || self.sessions.contains_key(&session)
            || self.lost_sessions.contains(&session)
        {
            return;
        }
        let Some(Some(rec)) = self.ledger(move |l| l.session(session)).await else {
            return;
        };
        if rec.lost {
            self.lost_sessions.insert(session);
            return;
        }
        let legacy = LegacySession {
            session_id: rec.session_id,
            protocol_version: rec.protocol_version,
            capabilities: rec.capabilities,
            server_name: rec.server_name,
        };
        match McpClient::rejoin(
            self.spec.endpoint.clone(),
            self.spec.options.clone(),
            &legacy,
        ) {
            Ok((client, mut pushes)) => {
                let internal = self.internal_tx.clone();
                tokio::spawn(async move {
                    while let Some(p) = pushes.recv().await {
                        if internal.send(Internal::SessionPush(p)).await.is_err() {
                            break;
                        }
                    }
                });
                for (id, t) in &self.tasks {
                    if t.session != Some(session) {
                        continue;
                    }
                    for (key, req) in t.last.iter().flat_map(|l| l.input_requests.iter()) {
                        client.expect_answer(id, key, req);
                    }
                }
                self.sessions.insert(session, client);
            }
            Err(e) => tracing::warn!(server = %self.spec.id, "cannot rejoin a session: {e}"),
        }
    }

    /// The server dropped a legacy session: its tasks are gone with it.
    pub(super) async fn session_lost(&mut self, task_id: &TaskId) {
        let session = self.tasks.get(task_id).and_then(|t| t.session);
        let home = session.is_none() || session == self.home_session;
        let ended: Vec<TaskId> = match session {
            Some(s) => {
                self.lost_sessions.insert(s);
                self.sessions.remove(&s);
                self.ledger(move |l| l.session_lost(s))
                    .await
                    .unwrap_or_default()
            }
            None => vec![task_id.clone()],
        };
        let mut ended: BTreeSet<TaskId> = ended.into_iter().collect();
        ended.insert(task_id.clone());
        for id in ended {
            self.end_task(&id, Tombstone::SessionLost, session.is_none())
                .await;
        }
        if home {
            // Later calls need a new session.
            self.client = None;
            self.push_rx = None;
            self.start_connect(Duration::ZERO);
        }
    }
}
