//! How a follower reacts to each engine event: connection and sign-in news, the call's
//! outcome, snapshots (status lines, JSON lines, the end of a task), input requests and
//! the answers and cancels sent for them.
//!
//! Must not print except through `cli::output`.

use super::*;

impl Follower {
    pub(super) async fn on_event(&mut self, ev: EngineEvent) -> Option<u8> {
        match ev {
            EngineEvent::ServerConnected { server, era, .. } => {
                if self.connected.insert(server.clone()) {
                    say!("connected to {} ({})", shown(server.as_str()), era.as_str());
                }
            }
            EngineEvent::ServerDegraded { server, reason } => {
                let reason = sanitize_line(&reason, 300);
                let name = shown(server.as_str());
                if !self.connected.contains(&server) && !self.calls.is_empty() {
                    say!("error: cannot reach {name}: {reason}");
                    return Some(exit::CONNECTION);
                }
                say!("{name}: {reason}");
            }
            EngineEvent::SignInRequired { server, reason } => {
                say!(
                    "error: {}: sign in required: {}",
                    shown(server.as_str()),
                    sanitize_line(&reason, 300)
                );
                match command_line(&["taskrail", "auth", "login", server.as_str()]) {
                    Some(cmd) => say!("sign in with: {cmd}"),
                    None => say!("the server name {UNQUOTABLE}"),
                }
                return Some(exit::SIGN_IN);
            }
            EngineEvent::SignInStarted { .. }
            | EngineEvent::TaskNoted { .. }
            | EngineEvent::LocalAsked { .. }
            | EngineEvent::SignInIgnored { .. }
            | EngineEvent::SignedIn { .. }
            | EngineEvent::SignInFailed { .. }
            | EngineEvent::ServerUnreachable { .. }
            | EngineEvent::TaskRemoved { .. }
            | EngineEvent::ServerIdle { .. } => {}
            EngineEvent::LedgerOffline { waiting } => {
                if waiting.is_some() && !self.ledger_offline {
                    say!(
                        "the ledger's database cannot be reached: still following; changes are \
                         kept on this machine until it is back"
                    );
                } else if waiting.is_none() && self.ledger_offline {
                    say!("the ledger's database is back; the changes kept meanwhile are in it");
                }
                self.ledger_offline = waiting.is_some();
            }
            EngineEvent::Reconnecting {
                server,
                attempt,
                retry_in,
            } => {
                say!(
                    "{}: retrying in {:.1} s (attempt {attempt})",
                    shown(server.as_str()),
                    retry_in.as_secs_f64()
                );
            }
            EngineEvent::PushChanged { server, push } => {
                tracing::debug!(%server, push, "push changed");
            }
            EngineEvent::CallFinished {
                server,
                call_id,
                tool,
                result,
            } => {
                self.calls.remove(&(server.clone(), call_id))?;
                match result {
                    CallResult::Task { task_id, stored } => {
                        if !stored {
                            say!(
                                "error: task {} was created on {} but could not be \
                                 stored in the ledger: it will not survive a restart",
                                shown_short(task_id.as_str()),
                                shown(server.as_str())
                            );
                            self.unrecorded = true;
                        }
                        if let Mode::Call { detach: true } = self.mode {
                            let key = (server.clone(), task_id.clone());
                            let handle = self
                                .targets
                                .get(&key)
                                .and_then(|t| t.last.as_ref())
                                .map(|t| task_line(server.as_str(), t, crate::engine::UpdateSource::Create))
                                .unwrap_or_else(|| serde_json::json!({ "server": server.as_str(), "taskId": task_id }));
                            self.emit(&handle);
                            return Some(if stored {
                                exit::COMPLETED
                            } else {
                                exit::CONNECTION
                            });
                        }
                        self.add_target(server.clone(), task_id.clone());
                        self.announce(&(server, task_id), &tool);
                    }
                    CallResult::Plain { result } => {
                        self.emit(&result);
                        self.plain_exit = Some(if crate::mcp::is_error_result(&result) {
                            exit::TOOL_ERROR
                        } else {
                            exit::COMPLETED
                        });
                    }
                    CallResult::Error {
                        message,
                        code: Some(crate::mcp::INVALID_PARAMS),
                    } => {
                        say!(
                            "error: {} refused the call of {} as invalid: {}",
                            shown(server.as_str()),
                            sanitize_line(&tool, 100),
                            sanitize_line(&message, 500)
                        );
                        say!(
                            "check the arguments against the tool's inputSchema (taskrail tools --json)"
                        );
                        return Some(exit::INVALID);
                    }
                    CallResult::Error { message, .. } => {
                        say!(
                            "error: {}: {}",
                            sanitize_line(&tool, 100),
                            sanitize_line(&message, 500)
                        );
                        return Some(exit::CONNECTION);
                    }
                    CallResult::Refused { reason } => {
                        say!("error: {}", sanitize_line(&reason, 500));
                        return Some(exit::USAGE);
                    }
                }
            }
            EngineEvent::TaskUpdated {
                server,
                task,
                source,
                ..
            } => {
                let key = (server.clone(), task.task_id.clone());
                if !self.targets.contains_key(&key) {
                    let (_, tool) = self.calls.iter().find(|((s, _), _)| *s == server)?;
                    // Our call's own task (its CallFinished follows right after): said
                    // to be created before its first status line.
                    let tool = tool.clone();
                    self.add_target(server.clone(), task.task_id.clone());
                    self.announce(&key, &tool);
                }
                let target = self.targets.get_mut(&key)?;
                let changed = target.last.as_ref().is_none_or(|l| !l.same_state(&task));
                let line_changed = target
                    .last
                    .as_ref()
                    .is_none_or(|l| status_line(l) != status_line(&task));
                let more = task.more_input_requests;
                let more_changed = more > 0
                    && target
                        .last
                        .as_ref()
                        .is_none_or(|l| l.more_input_requests != more);
                target.last = Some(task.clone());
                if more_changed && self.mode != (Mode::Watch { json: true }) {
                    say!(
                        "task {}: {more} more input request{} not shown (they come up as these are answered)",
                        shown_short(task.task_id.as_str()),
                        if more == 1 { "" } else { "s" }
                    );
                }
                match self.mode {
                    Mode::Watch { json: true } if changed => {
                        self.emit(&task_line(server.as_str(), &task, source))
                    }
                    Mode::Watch { json: true } => {}
                    _ if line_changed => self.status(&status_line(&task)),
                    _ => {}
                }
                if task.status.is_terminal() && self.targets[&key].exit.is_none() {
                    let needs_payload =
                        matches!(task.status, TaskStatus::Completed | TaskStatus::Failed)
                            && task.result.is_none()
                            && task.error.is_none();
                    let target = self.targets.get_mut(&key)?;
                    if needs_payload && target.awaiting_payload.is_none() {
                        target.awaiting_payload =
                            Some(tokio::time::Instant::now() + Duration::from_secs(10));
                    } else if !needs_payload {
                        target.awaiting_payload = None;
                        self.conclude(&key);
                    }
                }
            }
            EngineEvent::TaskExpired {
                server,
                task_id,
                why,
            } => {
                let key = (server.clone(), task_id.clone());
                if let Some(t) = self.targets.get_mut(&key)
                    && t.exit.is_none()
                {
                    t.exit = Some(exit::UNKNOWN_TASK);
                    say!(
                        "task {} on {}: {}",
                        shown_short(task_id.as_str()),
                        shown(server.as_str()),
                        why.describe()
                    );
                }
            }
            EngineEvent::TaskNotFound { server, task_id } => {
                let key = (server.clone(), task_id.clone());
                if let Some(t) = self.targets.get_mut(&key)
                    && t.exit.is_none()
                {
                    t.exit = Some(exit::UNKNOWN_TASK);
                    say!(
                        "no task {} on {} (expired or never existed)",
                        shown_short(task_id.as_str()),
                        shown(server.as_str())
                    );
                }
            }
            EngineEvent::InputRequested {
                server,
                task_id,
                key,
                request,
            } => {
                let tkey = (server.clone(), task_id.clone());
                let target = self.targets.get_mut(&tkey)?;
                target.pending_keys.push(key.clone());
                if self.ask_task(&server, &task_id, &key, &request).await {
                    return None;
                }
                let message = request
                    .message()
                    .map(|m| sanitize_line(m, 500))
                    .unwrap_or_default();
                say!(
                    "input requested for task {} ({}): {message}",
                    shown_short(task_id.as_str()),
                    sanitize_line(&request.method, 60)
                );
                say!("  key: {}", shown(&key));
                say!("  request: {}", request_preview(&request));
                let kind = crate::mcp::InputKind::of(&request);
                match answer_command(server.as_str(), task_id.as_str(), &key, Some(&kind)) {
                    Some(cmd) => say!("  answer with: {cmd}"),
                    None => say!("  the task id or key {UNQUOTABLE}"),
                }
                say!("  or type the response JSON on this program's input");
            }
            EngineEvent::InputKeyReused { task_id, key, .. } => {
                say!(
                    "warning: task {} reused input key {} for a different request",
                    shown_short(task_id.as_str()),
                    shown(&key)
                );
            }
            EngineEvent::AnswerSent { task_id, keys, .. } => {
                let keys: Vec<String> = keys.iter().map(|k| shown(k)).collect();
                say!(
                    "answer sent for task {}: {}",
                    shown_short(task_id.as_str()),
                    keys.join(", ")
                );
            }
            EngineEvent::AnswerFailed {
                server,
                task_id,
                keys,
                error,
            } => {
                // Released: the keys may be answered again.
                if let Some(t) = self.targets.get_mut(&(server, task_id.clone())) {
                    for k in keys {
                        if !t.pending_keys.contains(&k) {
                            t.pending_keys.push(k);
                        }
                    }
                }
                say!(
                    "answer failed for task {}: {}",
                    shown_short(task_id.as_str()),
                    sanitize_line(error.text(), 300)
                );
            }
            EngineEvent::CancelSent { task_id, acked, .. } => {
                if acked {
                    say!(
                        "cancel requested for task {}",
                        shown_short(task_id.as_str())
                    );
                }
            }
            EngineEvent::CancelFailed { task_id, error, .. } => say!(
                "cancel failed for task {}: {}",
                shown_short(task_id.as_str()),
                sanitize_line(error.text(), 300)
            ),
            EngineEvent::Notice { text, .. } => say!("{}", sanitize_line(&text, 500)),
            EngineEvent::Progress {
                task_id,
                progress,
                total,
                ..
            } => {
                let total = total.map(|t| format!("/{t}")).unwrap_or_default();
                self.status(&format!(
                    "{} progress {progress}{total}",
                    shown_short(task_id.as_str())
                ));
            }
            EngineEvent::TasksResumed { server, tasks, .. } => {
                for task in tasks {
                    let ev = EngineEvent::TaskKnown {
                        server: server.clone(),
                        task,
                    };
                    if let Some(code) = Box::pin(self.on_event(ev)).await {
                        return Some(code);
                    }
                }
            }
            EngineEvent::TaskKnown { server, task } => {
                // What the ledger already knows: a tombstone or a finished task ends here.
                if let Some(why) = task.end {
                    let ev = EngineEvent::TaskExpired {
                        server,
                        task_id: task.task_id,
                        why,
                    };
                    return Box::pin(self.on_event(ev)).await;
                }
                let last = task.last?;
                if last.status.is_terminal() {
                    let ev = EngineEvent::TaskUpdated {
                        server,
                        task: last,
                        source: crate::engine::UpdateSource::Poll,
                        latency_ms: None,
                        pending: Vec::new(),
                    };
                    return Box::pin(self.on_event(ev)).await;
                }
                // The current state first, whoever follows the task (another process may
                // hold its lease: then changes come through the ledger only).
                let key = (server.clone(), task.task_id.clone());
                if self.targets.get(&key).is_some_and(|t| t.last.is_none()) {
                    let ev = EngineEvent::TaskUpdated {
                        server: server.clone(),
                        task: last.clone(),
                        source: crate::engine::UpdateSource::Ledger,
                        latency_ms: None,
                        pending: Vec::new(),
                    };
                    if let Some(code) = Box::pin(self.on_event(ev)).await {
                        return Some(code);
                    }
                }
                // Requests still waiting from before a restart are shown again.
                for key in task.pending {
                    if let Some(request) = last.input_requests.get(&key).cloned() {
                        let ev = EngineEvent::InputRequested {
                            server: server.clone(),
                            task_id: task.task_id.clone(),
                            key,
                            request,
                        };
                        Box::pin(self.on_event(ev)).await;
                    }
                }
            }
            EngineEvent::ServerMisbehaved { hint, detail, .. } => say!(
                "server hint: {}: {}",
                hint.title(),
                sanitize_line(&detail, 300)
            ),
            EngineEvent::ForegroundInputRequested {
                server,
                key,
                origin,
                request,
                expires_in,
            } => {
                self.ask_foreground(server, key, origin, request, expires_in)
                    .await
            }
            EngineEvent::ForegroundInputClosed { server, reason, .. } => {
                say!(
                    "input request of {}: {}",
                    shown(server.as_str()),
                    sanitize_line(&reason, 300)
                )
            }
            EngineEvent::UrlElicitationCompleted { server, .. } => {
                say!(
                    "{} reports the link interaction complete",
                    shown(server.as_str())
                )
            }
            EngineEvent::RootsShared { server, roots, .. } => {
                say!(
                    "roots sent to {}: {} root(s) from the config",
                    shown(server.as_str()),
                    roots.len()
                )
            }
            EngineEvent::ToolsListed { .. }
            | EngineEvent::ToolsListFailed { .. }
            | EngineEvent::Stats { .. } => {}
        }
        None
    }
}
