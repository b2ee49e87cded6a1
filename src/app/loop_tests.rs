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

/// Waits (in bounded steps of the paused clock) until `cond` holds.
async fn until(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..2000 {
        if cond() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    panic!("never: {what}");
}

/// The newest wire record the last frame held.
#[derive(Clone, Default)]
struct WireSeen(Arc<Mutex<u64>>);

impl Probe for WireSeen {
    fn drawn(&mut self, state: &State) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = state.wire.last_seq();
    }
}

/// The hub sends records only while the wire view is open: opening it (`w`) turns the
/// feed on, closing it (`q`) off again, and a message then reaches nobody.
#[tokio::test(start_paused = true)]
async fn the_wire_view_is_fed_only_while_it_is_open() {
    use crate::engine::WireHub;
    use crate::state::views::wire::Carrier;
    use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};

    let server = ServerId::named("s");
    let (commands, _keep) = mpsc::channel(16);
    let (_events_tx, events) = mpsc::channel(16);
    let (keys, key_rx) = mpsc::unbounded_channel::<Event>();
    let hub = WireHub::new(None);
    let tap = hub.tap("s");
    let mut ctx = DashboardContext::headless(vec![server], commands, events);
    ctx.wire = Some(hub.clone());
    let seen = WireSeen::default();
    let mut probe = seen.clone();
    let run = tokio::spawn(async move {
        let mut terminal = Terminal::new(TestBackend::new(100, 30))?;
        let input = Box::pin(futures::StreamExt::map(
            tokio_stream_of(key_rx),
            Ok::<Event, std::io::Error>,
        ));
        event_loop(&mut terminal, input, ctx, &mut probe).await
    });
    let key = |c| Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    let msg = serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" });
    tap.sent(Carrier::Http, &msg);
    assert!(!hub.active(), "nobody watches before the view opens");
    keys.send(key('w')).unwrap();
    until("the view opened turns the feed on", || hub.active()).await;
    tap.sent(Carrier::Http, &msg);
    let seen_now = || *seen.0.lock().unwrap_or_else(|e| e.into_inner());
    until("the record is drawn", || seen_now() == 1).await;
    keys.send(key('q')).unwrap();
    until("the view closed turns the feed off", || !hub.active()).await;
    tap.sent(Carrier::Http, &msg);
    keys.send(key('q')).unwrap();
    run.await.unwrap().unwrap();
    assert_eq!(seen_now(), 1, "nothing was kept after the view closed");
}

fn tokio_stream_of<T>(mut rx: mpsc::UnboundedReceiver<T>) -> impl futures::Stream<Item = T> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}
