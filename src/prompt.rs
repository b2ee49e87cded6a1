//! One input request answered on a terminal, for `taskrail call`: the dashboard's own
//! answering views (the form, link consent, sampling) and reducer, drawn full-screen on
//! stderr (stdout keeps the call's result), until the person answers or closes it, or the
//! request goes away (the engine's events about it reach the view; every event read is
//! handed back). Owns the terminal only while it runs and restores it on every exit path.
//!
//! Must not talk to servers: the caller sends the commands.

use std::collections::{HashMap, VecDeque};
use std::io::{IsTerminal, Write};
use std::time::Duration;

use anyhow::Context as _;
use crossterm::event::{Event, EventStream, KeyEventKind};
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::sync::mpsc;

use crate::app::{Load, run_outside, to_key};
use crate::engine::{EngineCommand, EngineEvent, InputOrigin, KnownTask, ServerId, UpdateSource};
use crate::mcp::{InputRequest, Task};
use crate::state::{Effect, InputTarget, Keymap, Msg, ServerInput, State, TaskKey, update};
use crate::ui::{Dashboard, Theme};

/// What to ask.
#[derive(Debug, Clone)]
pub enum Ask {
    /// A request of a task (its last snapshot names the other pending ones).
    Task {
        server: ServerId,
        tool: Option<String>,
        task: Task,
        key: String,
        request: InputRequest,
    },
    /// A request outside any task.
    Foreground {
        server: ServerId,
        key: String,
        origin: InputOrigin,
        request: InputRequest,
        expires_in: Duration,
    },
}

/// How the prompt looks and what the server is offered.
#[derive(Clone)]
pub struct PromptSettings {
    pub keymap: Keymap,
    pub input: HashMap<ServerId, ServerInput>,
}

/// How a prompt ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The person answered: the commands to send.
    Answered(Vec<EngineCommand>),
    /// The person closed it without answering.
    Closed,
    /// The request went away (withdrawn, expired, its task ended, or its time ran out).
    Gone,
}

/// Whether an event concerns the request being asked (and goes into its view).
fn about(ev: &EngineEvent, target: &InputTarget) -> bool {
    match (ev, target) {
        (
            EngineEvent::ForegroundInputClosed { server, key, .. },
            InputTarget::Foreground { server: s, key: k },
        ) => server == s && key == k,
        (EngineEvent::UrlElicitationCompleted { server, .. }, t) => server == t.server(),
        (EngineEvent::TaskUpdated { server, task, .. }, InputTarget::Task(k)) => {
            server == &k.server && task.task_id == k.task_id
        }
        (
            EngineEvent::TaskExpired {
                server, task_id, ..
            },
            InputTarget::Task(k),
        )
        | (
            EngineEvent::InputRequested {
                server, task_id, ..
            },
            InputTarget::Task(k),
        ) => server == &k.server && task_id == &k.task_id,
        _ => false,
    }
}

/// Whether a person can be asked here: stdin and stderr are terminals.
pub fn available() -> bool {
    std::io::stdin().is_terminal() && std::io::stderr().is_terminal()
}

/// The width of the terminal standard output writes to, when it is one.
pub fn stdout_width() -> Option<usize> {
    std::io::stdout()
        .is_terminal()
        .then(|| crossterm::terminal::size().ok())
        .flatten()
        .map(|(w, _)| usize::from(w))
}

/// Restores the terminal when dropped.
struct Restore;

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = crossterm::terminal::disable_raw_mode();
        let _ = crossterm::execute!(
            std::io::stderr(),
            LeaveAlternateScreen,
            crossterm::cursor::Show
        );
    }
}

/// Ask the person. `events` is read meanwhile: what concerns the request reaches its view,
/// and every event read goes to `backlog` for the caller.
pub async fn ask(
    what: Ask,
    settings: &PromptSettings,
    events: &mut mpsc::Receiver<EngineEvent>,
    backlog: &mut VecDeque<EngineEvent>,
) -> anyhow::Result<Outcome> {
    let server = match &what {
        Ask::Task { server, .. } | Ask::Foreground { server, .. } => server.clone(),
    };
    let now = chrono::Utc::now();
    let mut state = State::new(vec![server.clone()], false, settings.keymap.clone());
    state.input = settings.input.clone();
    let (msgs, target, deadline) = match what {
        Ask::Task {
            server,
            tool,
            task,
            key,
            request,
        } => {
            let task_id = task.task_id.clone();
            let known = EngineEvent::TaskKnown {
                server: server.clone(),
                task: KnownTask {
                    tool,
                    ..KnownTask::new(task_id.clone(), now)
                },
            };
            let snapshot = EngineEvent::snapshot(server.clone(), task, UpdateSource::Poll, None);
            let asked = EngineEvent::InputRequested {
                server: server.clone(),
                task_id: task_id.clone(),
                key,
                request,
            };
            let target = InputTarget::Task(TaskKey::new(&server, &task_id));
            (vec![known, snapshot, asked], target, None)
        }
        Ask::Foreground {
            server,
            key,
            origin,
            request,
            expires_in,
        } => {
            let target = InputTarget::Foreground {
                server: server.clone(),
                key: key.clone(),
            };
            let ev = EngineEvent::ForegroundInputRequested {
                server,
                key,
                origin,
                request,
                expires_in,
            };
            (
                vec![ev],
                target,
                Some(tokio::time::Instant::now() + expires_in),
            )
        }
    };
    for ev in msgs {
        update(&mut state, Msg::Engine(ev), now);
    }
    state.notices.clear();
    update(&mut state, Msg::Answer(target.clone()), now);
    if state.modals.is_empty() {
        return Ok(Outcome::Gone);
    }

    crossterm::terminal::enable_raw_mode().context("cannot set up the terminal")?;
    let _restore = Restore;
    crossterm::execute!(std::io::stderr(), EnterAlternateScreen)
        .context("cannot set up the terminal")?;
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stderr()))
        .context("cannot set up the terminal")?;
    let theme = Theme::default();
    let mut input = EventStream::new();
    let mut loads: FuturesUnordered<Load> = FuturesUnordered::new();
    let mut events_open = true;
    let far = tokio::time::Instant::now() + Duration::from_secs(86_400);
    loop {
        state.ensure_view();
        terminal.draw(|f| {
            f.render_widget(
                Dashboard {
                    state: &state,
                    theme: &theme,
                    now: chrono::Utc::now(),
                },
                f.area(),
            )
        })?;
        let msg = tokio::select! {
            ev = input.next() => match ev {
                Some(Ok(Event::Key(k))) if k.kind != KeyEventKind::Release => match to_key(k) {
                    Some(key) => Msg::Key(key),
                    None => continue,
                },
                Some(Ok(Event::Resize(..))) => {
                    terminal.autoresize()?;
                    continue;
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e).context("reading terminal input"),
                None => return Ok(Outcome::Closed),
            },
            ev = events.recv(), if events_open => match ev {
                Some(ev) => {
                    let ours = about(&ev, &target);
                    backlog.push_back(ev.clone());
                    if !ours {
                        continue;
                    }
                    Msg::Engine(ev)
                }
                None => {
                    events_open = false;
                    continue;
                }
            },
            Some(m) = loads.next(), if !loads.is_empty() => m,
            _ = tokio::time::sleep_until(deadline.unwrap_or(far)) => return Ok(Outcome::Gone),
        };
        let by_person = matches!(msg, Msg::Key(_));
        let mut commands = Vec::new();
        for fx in update(&mut state, msg, chrono::Utc::now()) {
            match fx {
                Effect::Engine(cmd) => commands.push(cmd),
                Effect::Quit => return Ok(Outcome::Closed),
                other => {
                    let mut err = std::io::stderr();
                    if let Some(load) = run_outside(other, &mut err) {
                        loads.push(load);
                    }
                    let _ = err.flush();
                }
            }
        }
        // Answered, closed, or gone: the prompt is over.
        if !commands.is_empty() {
            return Ok(Outcome::Answered(commands));
        }
        if state.modals.is_empty() {
            return Ok(if by_person {
                Outcome::Closed
            } else {
                Outcome::Gone
            });
        }
    }
}
