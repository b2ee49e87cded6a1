//! Snapshots of the wire view: every server's messages newest first, one server's with a
//! filter while paused, and a message opened as pretty JSON; at 100x30 and 80x24. Pinned
//! clock; must not read the real clock.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use ratatui::backend::TestBackend;
use serde_json::{Value, json};

use support::screen::{apply, now};
use taskrail::engine::ServerId;
use taskrail::state::views::wire::{Carrier, Direction, WireRecord};
use taskrail::state::{Key, KeyCode, Keymap, Modal, Msg, State};
use taskrail::ui::Theme;

fn record(ms: i64, server: &str, direction: Direction, transport: Carrier, message: Value) -> Msg {
    Msg::Wire(WireRecord {
        time: now() - chrono::TimeDelta::seconds(5) + chrono::TimeDelta::milliseconds(ms),
        server: server.into(),
        direction,
        transport,
        message,
    })
}

/// A call that becomes a task on `demo` (HTTP, then its SSE reply and a listen stream), and
/// a poll on a stdio server; task ids masked as the hub masks them.
fn exchange() -> State {
    let mut s = State::new(
        vec![ServerId::named("demo"), ServerId::named("fastmcp")],
        false,
        Keymap::default_keymap(),
    );
    let (send, recv) = (Direction::Send, Direction::Recv);
    let msgs = vec![
        record(
            0,
            "demo",
            send,
            Carrier::Http,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "render_report", "arguments": {"pages": 3}}}),
        ),
        record(
            12,
            "demo",
            recv,
            Carrier::Sse,
            json!({"jsonrpc": "2.0", "id": 1, "result": {
            "resultType": "task", "taskId": "ea8d…", "status": "working", "statusMessage": "page 0/3"}}),
        ),
        record(
            15,
            "demo",
            send,
            Carrier::Http,
            json!({"jsonrpc": "2.0", "id": 2, "method": "subscriptions/listen",
            "params": {"notifications": {"taskIds": ["ea8d…"]}}}),
        ),
        record(
            40,
            "fastmcp",
            send,
            Carrier::Stdio,
            json!({"jsonrpc": "2.0", "id": 7, "method": "tasks/get",
            "params": {"taskId": "4f1c…"}}),
        ),
        record(
            55,
            "fastmcp",
            recv,
            Carrier::Stdio,
            json!({"jsonrpc": "2.0", "id": 7, "error": {
            "code": -32602, "message": "Task not found"}}),
        ),
        record(
            900,
            "demo",
            recv,
            Carrier::Sse,
            json!({"jsonrpc": "2.0", "method": "notifications/tasks",
            "params": {"taskId": "ea8d…", "status": "working", "statusMessage": "page 2/3"}}),
        ),
        record(
            1800,
            "demo",
            recv,
            Carrier::Sse,
            json!({"jsonrpc": "2.0", "method": "notifications/tasks",
            "params": {"taskId": "ea8d…", "status": "completed"}}),
        ),
    ];
    apply(&mut s, msgs);
    s
}

fn keys(s: &mut State, text: &str) {
    for c in text.chars() {
        apply(s, vec![Msg::Key(Key::char(c))]);
    }
}

fn press(s: &mut State, code: KeyCode) {
    apply(s, vec![Msg::Key(Key::plain(code))]);
}

fn render(state: &State, w: u16, h: u16) -> TestBackend {
    support::screen::render_themed(state, &Theme::default(), w, h, now())
}

fn snap(name: &str, state: &mut State) {
    for (w, h) in [(100, 30), (80, 24)] {
        let a = taskrail::ui::areas(ratatui::layout::Rect::new(0, 0, w, h), state);
        apply(
            state,
            vec![Msg::Viewport {
                table_rows: taskrail::ui::table_rows(&a),
                page_rows: 10,
            }],
        );
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), render(state, w, h));
    }
}

#[test]
fn wire_view_of_every_server_newest_first() {
    let mut s = exchange();
    keys(&mut s, "w");
    assert!(matches!(s.modals.last(), Some(Modal::Wire(_))));
    keys(&mut s, "j");
    snap("wire_all", &mut s);
}

#[test]
fn wire_view_of_one_server_filtered_and_paused() {
    let mut s = exchange();
    keys(&mut s, ":wire demo");
    press(&mut s, KeyCode::Enter);
    keys(&mut s, "p/tasks");
    // a message after the pause is counted, not shown
    apply(
        &mut s,
        vec![record(
            2500,
            "demo",
            Direction::Send,
            Carrier::Http,
            json!({"jsonrpc": "2.0",
            "method": "notifications/cancelled", "params": {"requestId": 2}}),
        )],
    );
    snap("wire_demo_paused", &mut s);
}

#[test]
fn wire_message_opened_as_pretty_json() {
    let mut s = exchange();
    keys(&mut s, "w");
    keys(&mut s, "G");
    press(&mut s, KeyCode::Enter);
    assert!(matches!(s.modals.last(), Some(Modal::Doc(_))));
    snap("wire_message", &mut s);
}
