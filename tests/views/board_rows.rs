//! Board rows checked as text (no snapshots): the server column names servers as the
//! header does, a completed task's result gives the message column its first line, and rows
//! arriving above a scrolled board are marked.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use ratatui::backend::TestBackend;
use serde_json::json;

use support::screen::{apply, now};
use taskrail::engine::{EngineEvent, ServerId, TaskId, UpdateSource};
use taskrail::mcp::{Task, TaskStatus};
use taskrail::state::{Key, KeyCode, Keymap, Msg, State};

fn task(id: &str, status: TaskStatus, created: &str) -> Task {
    Task {
        task_id: TaskId::new(id),
        status,
        status_message: None,
        created_at: Some(created.to_string()),
        last_updated_at: None,
        ttl_ms: Some(3_600_000),
        poll_interval_ms: Some(2000),
        input_requests: Default::default(),
        result: None,
        error: None,
        more_input_requests: 0,
    }
}

fn upd(server: &ServerId, t: Task) -> Msg {
    Msg::Engine(EngineEvent::snapshot(
        server.clone(),
        t,
        UpdateSource::Poll,
        None,
    ))
}

fn render(state: &State, w: u16, h: u16) -> TestBackend {
    support::screen::render(state, w, h, now())
}

/// The screen's rows as text.
fn lines(backend: &TestBackend) -> Vec<String> {
    let buf = backend.buffer();
    let w = buf.area.width as usize;
    buf.content()
        .chunks(w)
        .map(|row| row.iter().map(|c| c.symbol()).collect())
        .collect()
}

#[test]
fn the_server_column_names_servers_as_the_header_does_and_a_result_gives_the_message() {
    let a = ServerId::ad_hoc("http://127.0.0.1:28765/mcp");
    let b = ServerId::ad_hoc("http://127.0.0.1:23001/mcp");
    let mut s = State::new(vec![a.clone(), b.clone()], false, Keymap::default_keymap());
    let mut done = task("d1", TaskStatus::Completed, "2026-07-28T09:50:00Z");
    done.result = Some(Box::new(
        json!({"content": [{"type": "text", "text": "\n  Hello, Ada!\nsecond line"}]}),
    ));
    let running = task("r1", TaskStatus::Working, "2026-07-28T09:51:00Z");
    apply(&mut s, vec![upd(&a, done), upd(&b, running)]);
    let screen = lines(&render(&s, 140, 20));
    let row = |id: &str| {
        screen
            .iter()
            .find(|l| l.contains(id))
            .unwrap_or_else(|| panic!("no row {id}: {screen:#?}"))
            .clone()
    };
    assert!(row("d1").contains("127.0.0.1:28765/mcp"), "{screen:#?}");
    assert!(row("r1").contains("127.0.0.1:23001/mcp"), "{screen:#?}");
    assert!(!screen.iter().any(|l| l.contains("http://")), "{screen:#?}");
    assert!(row("d1").contains("Hello, Ada!"), "{screen:#?}");
    assert!(!row("d1").contains("second line"), "{screen:#?}");
}

#[test]
fn rows_arriving_above_a_scrolled_board_are_marked() {
    let demo = ServerId::named("demo");
    let mut s = State::new(vec![demo.clone()], false, Keymap::default_keymap());
    apply(
        &mut s,
        vec![Msg::Viewport {
            table_rows: 8,
            page_rows: 8,
        }],
    );
    for i in 0..30 {
        let t = task(
            &format!("t{i:02}"),
            TaskStatus::Working,
            &format!("2026-07-28T09:{i:02}:00Z"),
        );
        apply(&mut s, vec![upd(&demo, t)]);
    }
    let down = Msg::Key(Key::plain(KeyCode::PageDown));
    apply(&mut s, vec![Msg::Key(Key::char('g'))]);
    s.ensure_view();
    apply(&mut s, vec![down.clone(), down]);
    s.ensure_view();
    let before = lines(&render(&s, 100, 16));
    assert!(
        !before.iter().any(|l| l.contains("new above")),
        "{before:#?}"
    );
    for id in ["n1", "n2"] {
        let t = task(id, TaskStatus::Working, "2026-07-28T09:59:00Z");
        apply(&mut s, vec![upd(&demo, t)]);
    }
    s.ensure_view();
    let after = lines(&render(&s, 100, 16));
    assert!(
        after.iter().any(|l| l.contains("↑ 2 new above")),
        "{after:#?}"
    );
}
