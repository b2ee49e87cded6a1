//! Following tasks from the command line (`call` and `watch`) on the engine: prints
//! changes, reports input requests once (or asks on a terminal), takes answers typed on
//! stdin, and maps the end of each task to an exit code. Ctrl-C detaches and says how to
//! resume.
//!
//! Owns: the CLI's view of followed tasks. Must not talk to servers except through the engine.

use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;
use tokio::sync::mpsc;

mod asking;
mod events;

use super::args::exit;
use super::output::{
    Closed, UNQUOTABLE, answer_command, command_line, out, request_preview, say, shown,
    shown_short, status_line, task_line, write_out,
};
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
    /// "task created" was said (before its first status line).
    announced: bool,
}

pub struct Follower {
    engine: EngineHandle,
    mode: Mode,
    targets: HashMap<(ServerId, TaskId), Target>,
    order: Vec<(ServerId, TaskId)>,
    connected: HashSet<ServerId>,
    /// Calls whose outcome we wait for, with their tool.
    calls: HashMap<(ServerId, u64), String>,
    plain_exit: Option<u8>,
    /// A created task could not be stored in the ledger: the command fails at the end.
    unrecorded: bool,
    /// The ledger's database could not be reached when last heard of.
    ledger_offline: bool,
    /// On a terminal (`call` only): input requests are asked in a prompt.
    prompt: Option<crate::prompt::PromptSettings>,
    /// The tool of our call (for the prompt's title).
    tool: Option<String>,
    /// The engine's events, while `run` runs (a prompt reads them too).
    events: Option<mpsc::Receiver<EngineEvent>>,
    /// Events a prompt read, to handle once it closes.
    backlog: std::collections::VecDeque<EngineEvent>,
    /// Standard output was closed (`| head`): stop quietly.
    stdout_closed: bool,
}

fn exit_code(task: &Task) -> u8 {
    exit::of(crate::mcp::outcome(Some(task), false))
}

fn print_json(v: &Value) -> Result<(), Closed> {
    write_out(&(crate::sanitize::json_line(v) + "\n"))
}

impl Follower {
    pub fn new(engine: EngineHandle, mode: Mode) -> Self {
        Self {
            engine,
            mode,
            targets: HashMap::new(),
            order: Vec::new(),
            connected: HashSet::new(),
            calls: HashMap::new(),
            plain_exit: None,
            unrecorded: false,
            ledger_offline: false,
            prompt: None,
            tool: None,
            events: None,
            backlog: Default::default(),
            stdout_closed: false,
        }
    }

    /// Events read before the follower ran, handled first.
    pub fn with_backlog(mut self, events: std::collections::VecDeque<EngineEvent>) -> Self {
        self.backlog = events;
        self
    }

    /// Ask input requests in a prompt (a terminal is there) for the call of `tool`.
    pub fn with_prompt(mut self, settings: crate::prompt::PromptSettings, tool: &str) -> Self {
        self.prompt = Some(settings);
        self.tool = Some(tool.to_string());
        self
    }

    pub fn expect_call(&mut self, server: ServerId, call_id: u64, tool: &str) {
        self.calls.insert((server, call_id), tool.to_string());
    }

    pub fn add_target(&mut self, server: ServerId, task_id: TaskId) {
        let key = (server, task_id);
        if !self.targets.contains_key(&key) {
            self.order.push(key.clone());
            self.targets.insert(key, Target::default());
        }
    }

    fn status(&mut self, line: &str) {
        match self.mode {
            Mode::Watch { json: false } => {
                let written = out!("{line}");
                self.note_written(written);
            }
            _ => say!("{line}"),
        }
    }

    /// Print a JSON value on stdout (remembering a closed stdout).
    fn emit(&mut self, v: &Value) {
        let written = print_json(v);
        self.note_written(written);
    }

    fn note_written(&mut self, written: Result<(), Closed>) {
        self.stdout_closed |= written.is_err();
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
    pub async fn run(mut self, events: mpsc::Receiver<EngineEvent>) -> u8 {
        // On a terminal the prompt reads the keys; typed JSON lines are for pipes.
        let mut answers = if self.prompt.is_some() {
            None
        } else {
            stdin_lines()
        };
        self.events = Some(events);
        let mut tick = tokio::time::interval(Duration::from_millis(500));
        // One listener for the whole run: a Ctrl-C that lands while an event is being
        // handled is still seen (a listener made per turn of the loop would miss it).
        let mut interrupted = std::pin::pin!(tokio::signal::ctrl_c());
        // `watch` writes its lines to stdout: a reader gone (`| head -1`) ends it at once,
        // not at the next change.
        let mut reader_gone = match self.mode {
            Mode::Watch { .. } => Some(super::output::stdout_gone()),
            Mode::Call { .. } => None,
        };
        loop {
            if let Some(code) = self.finished() {
                return code;
            }
            if self.stdout_closed {
                // Nobody reads any more: end quietly; the tasks keep running.
                return exit::COMPLETED;
            }
            if let Some(ev) = self.backlog.pop_front() {
                if let Some(code) = self.on_event(ev).await {
                    return code;
                }
                continue;
            }
            let Some(mut events) = self.events.take() else {
                return exit::CONNECTION;
            };
            let next = tokio::select! {
                ev = events.recv() => Some(ev),
                line = recv_line(&mut answers) => {
                    match line {
                        Some(line) => self.on_answer_line(&line).await,
                        None => answers = None,
                    }
                    None
                }
                _ = tick.tick() => {
                    self.expire_payload_waits();
                    None
                }
                _ = &mut interrupted => {
                    self.detach_message();
                    return exit::INTERRUPTED;
                }
                gone = recv_gone(&mut reader_gone) => {
                    match gone {
                        // Nobody reads any more: end quietly; the tasks keep running.
                        Ok(()) => return exit::COMPLETED,
                        Err(_) => reader_gone = None,
                    }
                    None
                }
            };
            self.events = Some(events);
            match next {
                None => {}
                Some(ev) => match ev {
                    Some(ev) => {
                        if let Some(code) = self.on_event(ev).await {
                            return code;
                        }
                    }
                    None => return exit::CONNECTION,
                },
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
            say!("interrupted");
            return;
        }
        for (server, id) in open {
            say!(
                "detached: task {} keeps running on {}",
                shown_short(id.as_str()),
                shown(server.as_str())
            );
            let id = id.as_str();
            let dashes = if id.starts_with('-') { "--" } else { "" };
            let words = ["taskrail", "watch", "--server", server.as_str(), dashes, id];
            let words: Vec<&str> = words.into_iter().filter(|w| !w.is_empty()).collect();
            match command_line(&words) {
                Some(cmd) => say!("resume with: {cmd}"),
                None => say!(
                    "the task id {UNQUOTABLE}; resume with `taskrail watch` (it follows every unfinished task in the ledger)"
                ),
            }
        }
    }

    /// Say "task created" once, before the task's first status line.
    fn announce(&mut self, key: &(ServerId, TaskId), tool: &str) {
        if let Some(t) = self.targets.get_mut(key)
            && !t.announced
        {
            t.announced = true;
            say!(
                "{}: task {} created",
                sanitize_line(tool, 60),
                shown_short(key.1.as_str())
            );
        }
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
            let v = match (&task.result, &task.error) {
                (Some(r), _) => (**r).clone(),
                (None, Some(e)) => serde_json::to_value(e).unwrap_or(Value::Null),
                (None, None) => task_line(key.0.as_str(), &task, crate::engine::UpdateSource::Poll),
            };
            self.emit(&v);
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
                        say!("not an answer (expected JSON or `KEY JSON`): {e}");
                        return;
                    }
                },
                None => {
                    say!("not an answer (expected JSON or `KEY JSON`)");
                    return;
                }
            },
        };
        let found = self.targets.iter_mut().find_map(|(tk, t)| {
            let pos = match &key {
                Some(k) => t.pending_keys.iter().position(|p| p == k),
                None => (!t.pending_keys.is_empty()).then_some(0),
            }?;
            let kind = t
                .last
                .as_ref()
                .and_then(|l| l.input_requests.get(&t.pending_keys[pos]))
                .map(crate::mcp::InputKind::of);
            Some((tk.clone(), pos, kind))
        });
        let Some(((server, task_id), pos, kind)) = found else {
            say!("no pending input request to answer");
            return;
        };
        // Checked in the request's own shape; a refused line leaves the key pending.
        let json = match super::answer_shape::normalize_response(json, kind.as_ref()) {
            Ok(v) => v,
            Err(e) => {
                say!("not an answer: {e}");
                return;
            }
        };
        let Some(key) = self
            .targets
            .get_mut(&(server.clone(), task_id.clone()))
            .map(|t| t.pending_keys.remove(pos))
        else {
            return;
        };
        let mut responses = BTreeMap::new();
        responses.insert(key, json);
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

async fn recv_gone(
    gone: &mut Option<tokio::sync::oneshot::Receiver<()>>,
) -> Result<(), tokio::sync::oneshot::error::RecvError> {
    match gone {
        Some(rx) => rx.await,
        None => std::future::pending().await,
    }
}

async fn recv_line(lines: &mut Lines) -> Option<String> {
    match lines {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}
