//! Runs the real dashboard loop headless: `app::event_loop` on a `TestBackend` terminal,
//! fed by a real engine, with a probe that timestamps what the loop receives and draws.
//! The loop ends when the caller fires the stop signal (its input stream then ends).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::{mpsc, oneshot};

use crate::app::{DashboardContext, Probe, event_loop};
use crate::engine::{EngineCommand, EngineEvent, ServerId, UpdateSource};
use crate::state::{Msg, State};

/// Screen size of every headless run.
pub const WIDTH: u16 = 200;
pub const HEIGHT: u16 = 50;

/// A task update the loop received: when it arrived, was applied and first drawn.
#[derive(Debug, Clone)]
pub struct Seen {
    pub task_id: crate::ids::TaskId,
    pub status: String,
    pub status_message: Option<String>,
    pub source: UpdateSource,
    pub received: Instant,
    pub applied: Option<Instant>,
    pub drawn: Option<Instant>,
}

/// What the probe collected (shared with the scenario while the loop runs).
#[derive(Debug, Default)]
pub struct Record {
    pub updates: Vec<Seen>,
    /// Index of the first update not drawn yet.
    undrawn: usize,
    pub messages: u64,
    pub frames: u64,
    pub first_frame: Option<Instant>,
    /// Tasks on the board and how many are terminal, at the last frame.
    pub board_tasks: usize,
    pub board_terminal: usize,
    pub board_input: usize,
    /// First frame whose board held at least `want_tasks` tasks.
    pub want_tasks: usize,
    pub full_frame: Option<Instant>,
    /// When the last chunk of resumed tasks had been folded in.
    pub resumed: Option<Instant>,
    /// Frames drawn before `full_frame`.
    pub frames_to_full: u64,
}

/// Shared handle on a probe's record.
pub type Shared = Arc<Mutex<Record>>;

pub struct BenchProbe {
    pub record: Shared,
    /// Fired once a frame shows `want_tasks` tasks (start-up bench).
    pub on_full: Option<oneshot::Sender<()>>,
}

impl BenchProbe {
    pub fn new(want_tasks: usize) -> (BenchProbe, Shared) {
        let record = Arc::new(Mutex::new(Record {
            want_tasks,
            ..Default::default()
        }));
        (
            BenchProbe {
                record: record.clone(),
                on_full: None,
            },
            record,
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Record> {
        self.record.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Probe for BenchProbe {
    fn received(&mut self, msg: &Msg) {
        let now = Instant::now();
        let mut r = self.lock();
        r.messages += 1;
        if let Msg::Engine(EngineEvent::TasksResumed { .. }) = msg {
            r.resumed = Some(now);
        }
        if let Msg::Engine(EngineEvent::TaskUpdated { task, source, .. }) = msg {
            r.updates.push(Seen {
                task_id: task.task_id.clone(),
                status: task.status.as_str().to_string(),
                status_message: task.status_message.clone(),
                source: *source,
                received: now,
                applied: None,
                drawn: None,
            });
        }
    }

    fn applied(&mut self) {
        let now = Instant::now();
        let mut r = self.lock();
        if let Some(last) = r.updates.last_mut()
            && last.applied.is_none()
        {
            last.applied = Some(now);
        }
    }

    fn drawn(&mut self, state: &State) {
        let now = Instant::now();
        let full = {
            let mut r = self.lock();
            r.frames += 1;
            r.first_frame.get_or_insert(now);
            let from = r.undrawn;
            for u in &mut r.updates[from..] {
                u.drawn = Some(now);
            }
            r.undrawn = r.updates.len();
            r.board_tasks = state.tasks.len();
            // From the board's counters: walking every row per frame would slow the
            // very loop this measures.
            r.board_terminal = state.board.over_total();
            r.board_input = state.board.waiting_total();
            if r.full_frame.is_none() && r.board_tasks >= r.want_tasks && r.want_tasks > 0 {
                r.full_frame = Some(now);
                r.frames_to_full = r.frames;
                true
            } else {
                false
            }
        };
        if full && let Some(tx) = self.on_full.take() {
            let _ = tx.send(());
        }
    }
}

/// A running headless dashboard.
pub struct Running {
    stop: oneshot::Sender<()>,
    join: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Running {
    /// End the loop and wait for it.
    pub async fn stop(self) -> anyhow::Result<()> {
        let _ = self.stop.send(());
        self.join.await?
    }
}

/// Start `event_loop` on a 200x50 `TestBackend` with the engine's channels.
pub fn start(
    servers: Vec<ServerId>,
    commands: mpsc::Sender<EngineCommand>,
    events: mpsc::Receiver<EngineEvent>,
    mut probe: BenchProbe,
) -> Running {
    let (stop, stopped) = oneshot::channel::<()>();
    let ctx = DashboardContext::headless(servers, commands, events);
    let join = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(WIDTH, HEIGHT))?;
        let input = Box::pin(
            futures::stream::once(stopped)
                .filter_map(|_| async { None::<std::io::Result<crossterm::event::Event>> }),
        );
        event_loop(&mut terminal, input, ctx, &mut probe).await
    });
    Running { stop, join }
}
