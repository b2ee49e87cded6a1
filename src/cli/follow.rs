//! Following tasks from the command line (`call` and `watch`) on the engine: prints
//! changes, reports input requests once, takes answers typed on stdin, and maps the end
//! of each task to an exit code. Ctrl-C detaches and says how to resume.
//!
//! Owns: the CLI's view of followed tasks. Must not talk to servers except through the engine.

use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::time::Duration;
use tokio::sync::mpsc;

use super::args::exit;
use super::output::{normalize_response, shell_quote, status_line, task_line};
use crate::engine::{CallResult, EngineCommand, EngineEvent, EngineHandle, ServerId, TaskId};
use crate::mcp::{Task, TaskStatus};
use crate::sanitize::sanitize_line;

/// How to print what we follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `call`: status lines to stderr, the final result to stdout.
    Call { detach: bool },
    /// `watch`: status lines (or JSON lines) to stdout.
    Watch { json: bool },
}

#[derive(Default)]
struct Target {
    last: Option<Task>,
    exit: Option<u8>,
    /// Terminal without its payload yet (legacy `tasks/result` still coming).
    awaiting_payload: Option<tokio::time::Instant>,
    pending_keys: Vec<String>,
}

pub struct Follower {
    engine: EngineHandle,
    mode: Mode,
    targets: HashMap<(ServerId, TaskId), Target>,
    order: Vec<(ServerId, TaskId)>,
    connected: HashSet<ServerId>,
    /// Calls whose outcome we wait for.
    calls: HashSet<(ServerId, u64)>,
    plain_exit: Option<u8>,
    /// A created task could not be stored in the ledger: the command fails at the end.
    unrecorded: bool,
}

fn exit_code(task: &Task) -> u8 {
    match task.status {
        // Legacy servers end a tool error `failed` with the tool result as payload.
        TaskStatus::Completed | TaskStatus::Failed if task.is_tool_error() => exit::TOOL_ERROR,
        TaskStatus::Completed => exit::COMPLETED,
        TaskStatus::Failed => exit::FAILED,
        TaskStatus::Cancelled => exit::CANCELLED,
        _ => exit::COMPLETED,
    }
}

fn print_json(v: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", crate::sanitize::json_line(v));
    let _ = out.flush();
}

impl Follower {
    pub fn new(engine: EngineHandle, mode: Mode) -> Self {
        Self {
            engine,
            mode,
            targets: HashMap::new(),
            order: Vec::new(),
            connected: HashSet::new(),
            calls: HashSet::new(),
            plain_exit: None,
            unrecorded: false,
        }
    }

    pub fn expect_call(&mut self, server: ServerId, call_id: u64) {
        self.calls.insert((server, call_id));
    }

    pub fn add_target(&mut self, server: ServerId, task_id: TaskId) {
        let key = (server, task_id);
        if !self.targets.contains_key(&key) {
            self.order.push(key.clone());
            self.targets.insert(key, Target::default());
        }
    }

    fn status(&self, line: &str) {
        match self.mode {
            Mode::Watch { json: false } => println!("{line}"),
            _ => eprintln!("{line}"),
        }
    }

    fn finished(&self) -> Option<u8> {
        if let Some(code) = self.plain_exit {
            return Some(code);
        }
        if !self.calls.is_empty() || self.targets.is_empty() {
            return None;
        }
        if self.targets.values().any(|t| t.exit.is_none()) {
            return None;
        }
        let code = self
            .order
            .iter()
            .filter_map(|k| self.targets[k].exit)
            .find(|c| *c != 0)
            .unwrap_or(0);
        Some(if code == 0 && self.unrecorded {
            exit::CONNECTION
        } else {
            code
        })
    }

    /// Run until every target ended (or Ctrl-C). Returns the exit code.
    pub async fn run(mut self, mut events: mpsc::Receiver<EngineEvent>) -> u8 {
        let mut answers = stdin_lines();
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        loop {
            if let Some(code) = self.finished() {
                return code;
            }
            tokio::select! {
                ev = events.recv() => match ev {
                    Some(ev) => {
                        if let Some(code) = self.on_event(ev).await {
                            return code;
                        }
                    }
                    None => return exit::CONNECTION,
                },
                line = recv_line(&mut answers) => match line {
                    Some(line) => self.on_answer_line(&line).await,
                    None => answers = None,
                },
                _ = tick.tick() => self.expire_payload_waits(),
                _ = tokio::signal::ctrl_c() => {
                    self.detach_message();
                    return exit::INTERRUPTED;
                }
            }
        }
    }

    fn expire_payload_waits(&mut self) {
        let now = tokio::time::Instant::now();
        let keys: Vec<_> = self
            .targets
            .iter()
            .filter(|(_, t)| t.awaiting_payload.is_some_and(|d| d <= now))
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            if let Some(t) = self.targets.get_mut(&k) {
                t.awaiting_payload = None;
            }
            self.conclude(&k);
        }
    }

    fn detach_message(&self) {
        let open: Vec<_> = self
            .order
            .iter()
            .filter(|k| self.targets[*k].exit.is_none())
            .collect();
        if open.is_empty() {
            eprintln!("interrupted");
            return;
        }
        for (server, id) in open {
            eprintln!("detached: task {id} keeps running on {server}");
            eprintln!(
                "resume with: taskrail watch --server {} {}",
                shell_quote(server.as_str()),
                shell_quote(id.as_str())
            );
        }
    }

    async fn on_event(&mut self, ev: EngineEvent) -> Option<u8> {
        match ev {
            EngineEvent::ServerConnected { server, era, .. } => {
                if self.connected.insert(server.clone()) {
                    eprintln!("connected to {server} ({})", era.as_str());
                }
            }
            EngineEvent::ServerDegraded { server, reason } => {
                let reason = sanitize_line(&reason, 300);
                if !self.connected.contains(&server) && !self.calls.is_empty() {
                    eprintln!("error: cannot reach {server}: {reason}");
                    return Some(exit::CONNECTION);
                }
                eprintln!("{server}: {reason}");
            }
            EngineEvent::SignInRequired { server, reason } => {
                eprintln!(
                    "error: {server}: sign in required: {}",
                    sanitize_line(&reason, 300)
                );
                eprintln!(
                    "sign in with: taskrail auth login {}",
                    shell_quote(server.as_str())
                );
                return Some(exit::SIGN_IN);
            }
            EngineEvent::SignInStarted { .. }
            | EngineEvent::SignInIgnored { .. }
            | EngineEvent::SignedIn { .. }
            | EngineEvent::SignInFailed { .. } => {}
            EngineEvent::Reconnecting {
                server,
                attempt,
                retry_in,
            } => {
                eprintln!(
                    "{server}: retrying in {:.1} s (attempt {attempt})",
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
                if !self.calls.remove(&(server.clone(), call_id)) {
                    return None;
                }
                match result {
                    CallResult::Task { task_id, stored } => {
                        if !stored {
                            eprintln!(
                                "error: task {task_id} was created on {server} but could not be \
                                 stored in the ledger: it will not survive a restart"
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
                            print_json(&handle);
                            return Some(if stored {
                                exit::COMPLETED
                            } else {
                                exit::CONNECTION
                            });
                        }
                        eprintln!("{tool}: task {} created", task_id);
                        self.add_target(server, task_id);
                    }
                    CallResult::Plain { result } => {
                        print_json(&result);
                        let is_error = result
                            .get("isError")
                            .and_then(Value::as_bool)
                            .unwrap_or(false);
                        self.plain_exit = Some(if is_error {
                            exit::TOOL_ERROR
                        } else {
                            exit::COMPLETED
                        });
                    }
                    CallResult::Error { message } => {
                        eprintln!("error: {tool}: {}", sanitize_line(&message, 500));
                        return Some(exit::CONNECTION);
                    }
                    CallResult::Refused { reason } => {
                        eprintln!("error: {}", sanitize_line(&reason, 500));
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
                    if self.calls.iter().any(|(s, _)| *s == server) {
                        // Our call's own task: its CallFinished follows right after.
                        self.add_target(server.clone(), task.task_id.clone());
                    } else {
                        return None;
                    }
                }
                let target = self.targets.get_mut(&key)?;
                let changed = target.last.as_ref().is_none_or(|l| !l.same_state(&task));
                let line_changed = target
                    .last
                    .as_ref()
                    .is_none_or(|l| status_line(l) != status_line(&task));
                target.last = Some(task.clone());
                match self.mode {
                    Mode::Watch { json: true } if changed => {
                        print_json(&task_line(server.as_str(), &task, source))
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
                    eprintln!("task {task_id} on {server}: {}", why.describe());
                }
            }
            EngineEvent::TaskNotFound { server, task_id } => {
                let key = (server.clone(), task_id.clone());
                if let Some(t) = self.targets.get_mut(&key)
                    && t.exit.is_none()
                {
                    t.exit = Some(exit::UNKNOWN_TASK);
                    eprintln!("no task {task_id} on {server} (expired or never existed)");
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
                let message = request
                    .message()
                    .map(|m| sanitize_line(m, 500))
                    .unwrap_or_default();
                eprintln!(
                    "input requested for task {} ({}): {message}",
                    task_id,
                    sanitize_line(&request.method, 60)
                );
                eprintln!("  key: {}", sanitize_line(&key, 200));
                eprintln!("  request: {}", crate::sanitize::json_line(&request));
                eprintln!(
                    "  answer with: taskrail answer --server {} {} {} --json '{{\"action\":\"accept\",\"content\":{{…}}}}'",
                    shell_quote(server.as_str()),
                    shell_quote(task_id.as_str()),
                    shell_quote(&key)
                );
                eprintln!("  or type the response JSON on this program's input");
            }
            EngineEvent::InputKeyReused { task_id, key, .. } => {
                eprintln!(
                    "warning: task {} reused input key {key} for a different request",
                    task_id
                );
            }
            EngineEvent::AnswerSent { task_id, keys, .. } => {
                eprintln!("answer sent for task {}: {}", task_id, keys.join(", "));
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
                eprintln!(
                    "answer failed for task {}: {}",
                    task_id,
                    sanitize_line(error.text(), 300)
                );
            }
            EngineEvent::CancelSent { task_id, acked, .. } => {
                if acked {
                    eprintln!("cancel requested for task {task_id}");
                }
            }
            EngineEvent::CancelFailed { task_id, error, .. } => {
                eprintln!(
                    "cancel failed for task {}: {}",
                    task_id,
                    sanitize_line(error.text(), 300)
                )
            }
            EngineEvent::Notice { text, .. } => eprintln!("{}", sanitize_line(&text, 500)),
            EngineEvent::Progress {
                task_id,
                progress,
                total,
                ..
            } => {
                let total = total.map(|t| format!("/{t}")).unwrap_or_default();
                self.status(&format!("{} progress {progress}{total}", task_id));
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
            EngineEvent::ServerMisbehaved { hint, detail, .. } => eprintln!(
                "server hint: {}: {}",
                hint.title(),
                sanitize_line(&detail, 300)
            ),
            EngineEvent::ToolsListed { .. }
            | EngineEvent::ToolsListFailed { .. }
            | EngineEvent::Stats { .. } => {}
        }
        None
    }

    /// A terminal task (with its payload, or after waiting for it): print and record its code.
    fn conclude(&mut self, key: &(ServerId, TaskId)) {
        let Some(target) = self.targets.get_mut(key) else {
            return;
        };
        if target.exit.is_some() {
            return;
        }
        let Some(task) = target.last.clone() else {
            return;
        };
        target.exit = Some(exit_code(&task));
        if let Mode::Call { .. } = self.mode {
            match (&task.result, &task.error) {
                (Some(r), _) => print_json(r),
                (None, Some(e)) => print_json(&serde_json::to_value(e).unwrap_or(Value::Null)),
                (None, None) => print_json(&task_line(
                    key.0.as_str(),
                    &task,
                    crate::engine::UpdateSource::Poll,
                )),
            }
        }
    }

    /// A line typed on stdin: `JSON` answers the oldest pending request, `KEY JSON` a given one.
    async fn on_answer_line(&mut self, line: &str) {
        let line = line.trim();
        if line.is_empty() {
            return;
        }
        let (key, json) = match serde_json::from_str::<Value>(line) {
            Ok(v) => (None, v),
            Err(_) => match line.split_once(char::is_whitespace) {
                Some((k, rest)) => match serde_json::from_str::<Value>(rest.trim()) {
                    Ok(v) => (Some(k.to_string()), v),
                    Err(e) => {
                        eprintln!("not an answer (expected JSON or `KEY JSON`): {e}");
                        return;
                    }
                },
                None => {
                    eprintln!("not an answer (expected JSON or `KEY JSON`)");
                    return;
                }
            },
        };
        let found = self.targets.iter_mut().find_map(|(tk, t)| {
            let pos = match &key {
                Some(k) => t.pending_keys.iter().position(|p| p == k),
                None => (!t.pending_keys.is_empty()).then_some(0),
            }?;
            Some((tk.clone(), t.pending_keys.remove(pos)))
        });
        let Some(((server, task_id), key)) = found else {
            eprintln!("no pending input request to answer");
            return;
        };
        let mut responses = BTreeMap::new();
        responses.insert(key, normalize_response(json));
        self.engine
            .send(EngineCommand::Answer {
                server,
                task_id,
                responses,
            })
            .await;
    }
}

type Lines = Option<mpsc::Receiver<String>>;

/// Lines typed on stdin, read on a blocking thread (None once stdin is closed).
fn stdin_lines() -> Lines {
    let (tx, rx) = mpsc::channel(16);
    std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            let stdin = std::io::stdin();
            let mut line = String::new();
            loop {
                line.clear();
                match stdin.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx.blocking_send(line.clone()).is_err() {
                            break;
                        }
                    }
                }
            }
        })
        .ok()?;
    Some(rx)
}

async fn recv_line(lines: &mut Lines) -> Option<String> {
    match lines {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
