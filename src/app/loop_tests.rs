//! The dashboard loop on a headless terminal and a paused clock: when frames are drawn
//! relative to the engine's events.

use std::sync::{Arc, Mutex};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::{DashboardContext, Probe, event_loop};
use crate::engine::{EngineEvent, KnownTask, ServerId, TaskId};
use crate::state::State;

/// Every frame: when it was drawn and how many tasks it held.
#[derive(Clone, Default)]
struct Frames(Arc<Mutex<Vec<(Instant, usize)>>>);

impl Probe for Frames {
    fn drawn(&mut self, state: &State) {
        let mut f = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f.push((Instant::now(), state.tasks.len()));
    }
}

impl Frames {
    /// The first frame holding `n` tasks, waited for in bounded steps of the paused clock.
    async fn with(&self, n: usize) -> (Instant, usize) {
        for _ in 0..1000 {
            let found = self
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .copied()
                .find(|(_, k)| *k == n);
            if let Some(f) = found {
                return f;
            }
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        panic!("no frame with {n} tasks");
    }
}

fn chunk(server: &ServerId, ids: &[&str], more: usize) -> EngineEvent {
    EngineEvent::TasksResumed {
        server: server.clone(),
        tasks: ids
            .iter()
            .map(|id| KnownTask::new(TaskId::new(id), chrono::Utc::now()))
            .collect(),
        more,
    }
}

/// Rows of a resume arrive in a burst that is otherwise drawn once it pauses; when the
/// engine says the last rows came (nothing more to read), they are drawn at once.
#[tokio::test(start_paused = true)]
async fn a_resumes_last_rows_are_drawn_without_waiting_for_a_pause() {
    let server = ServerId::named("s");
    let (commands, _keep) = mpsc::channel(16);
    let (events_tx, events) = mpsc::channel(16);
    let (stop, stopped) = oneshot::channel::<()>();
    let frames = Frames::default();
    let mut probe = frames.clone();
    let ctx = DashboardContext::headless(vec![server.clone()], commands, events);
    let run = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(120, 35))?;
        let input = Box::pin(futures::StreamExt::filter_map(
            futures::stream::once(stopped),
            |_| async { None::<std::io::Result<crossterm::event::Event>> },
        ));
        event_loop(&mut terminal, input, ctx, &mut probe).await
    });
    frames.with(0).await;
    // A burst right after a frame: its first rows wait for the burst to end.
    let sent = Instant::now();
    events_tx
        .send(chunk(&server, &["a", "b"], 2))
        .await
        .unwrap();
    events_tx
        .send(chunk(&server, &["c", "d"], 0))
        .await
        .unwrap();
    let (drawn, _) = frames.with(4).await;
    assert_eq!(drawn, sent, "drawn {:?} after the last rows", drawn - sent);
    // Without that word, a burst is drawn once it has paused.
    let sent = Instant::now();
    events_tx.send(chunk(&server, &["e"], 1)).await.unwrap();
    let (drawn, _) = frames.with(5).await;
    assert!(drawn > sent, "a burst that may go on waits for a pause");
    drop(stop);
    run.await.unwrap().unwrap();
}
