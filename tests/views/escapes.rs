//! Terminal-escape injection through the dashboard: hostile strings in every place a
//! server's text reaches (tool names and descriptions, status messages, elicitation
//! messages, field titles and enum labels, results, errors, URLs, notices) render inert.
//! Every frame is checked cell by cell and kept as a snapshot.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use ratatui::backend::TestBackend;
use serde_json::json;

use support::screen::{apply, now};
use taskrail::engine::{EngineEvent, KnownTask, NoticeLevel, ServerId, TaskId, UpdateSource};
use taskrail::mcp::{Era, ErrorObject, InputRequest, Task, TaskStatus, ToolInfo};
use taskrail::state::{Key, KeyCode, Keymap, Modal, Msg, State};

fn hostile(tag: &str) -> String {
    format!(
        "{tag}\x1b[31mRED\x1b]0;pwned\x07\x1b]8;;http://evil.test\x1b\\link\u{9b}2J\u{85}\
         \u{202e}exe.txt\u{202c}\u{200b}\u{2066}\u{feff}宽字符😀\r\n\tnext {}",
        "W".repeat(10_000)
    )
}

fn srv() -> ServerId {
    ServerId::named("hostile")
}

fn task(id: &str, status: TaskStatus) -> Task {
    Task {
        task_id: TaskId::new(id),
        status,
        status_message: Some(hostile("status")),
        created_at: Some("2026-07-28T09:58:00Z".into()),
        last_updated_at: None,
        ttl_ms: Some(3_600_000),
        poll_interval_ms: Some(2000),
        input_requests: Default::default(),
        result: None,
        error: None,
        more_input_requests: 0,
    }
}

fn event(e: EngineEvent) -> Msg {
    Msg::Engine(e)
}

fn hostile_board() -> State {
    let mut s = State::new(vec![srv()], false, Keymap::default_keymap());
    let mut input = task(&hostile("id-input"), TaskStatus::InputRequired);
    input.input_requests.insert(
        hostile("key"),
        InputRequest {
            method: "elicitation/create".into(),
            params: json!({
                "mode": "form",
                "message": hostile("message"),
                "requestedSchema": { "type": "object", "properties": {
                    "env": { "type": "string", "title": hostile("title"), "description": hostile("desc"),
                             "oneOf": [{ "const": "a", "title": hostile("label") }] },
                    "pick": { "type": "string", "enum": [hostile("enum")] },
                    "link": { "type": "string", "format": "uri", "default": hostile("https://evil.test/") }
                } }
            }),
            reply_to: None,
        },
    );
    let mut failed = task("f4iled", TaskStatus::Failed);
    failed.error = Some(Box::new(ErrorObject {
        code: -32603,
        message: hostile("error"),
        data: Some(json!({ "trace": hostile("trace") })),
    }));
    let mut done = task("d0ne", TaskStatus::Completed);
    done.result = Some(Box::new(json!({ "content": [
        { "type": "text", "text": hostile("result") },
        { "type": "resource_link", "uri": hostile("https://evil.test/"), "name": hostile("name") }
    ] })));
    apply(
        &mut s,
        vec![
            event(EngineEvent::ServerConnected {
                server: srv(),
                era: Era::Modern,
                push: true,
                server_name: Some(hostile("server")),
            }),
            event(EngineEvent::Notice {
                server: Some(srv()),
                level: NoticeLevel::Warn,
                text: hostile("notice"),
            }),
        ],
    );
    for (t, tool) in [(input, "in"), (failed, "fail"), (done, "done")] {
        apply(
            &mut s,
            vec![
                event(EngineEvent::TaskKnown {
                    server: srv(),
                    task: KnownTask {
                        task_id: t.task_id.clone(),
                        tool: Some(hostile(tool)),
                        arguments: Some(json!({ "q": hostile("arg") })),
                        recorded_at: now() - chrono::TimeDelta::seconds(60),
                        last: None,
                        end: None,
                        parent_task: None,
                        pending: Vec::new(),
                        cancel: None,
                        started_by: None,
                        lean: false,
                    },
                }),
                event(EngineEvent::snapshot(srv(), t, UpdateSource::Push, Some(5))),
            ],
        );
    }
    // the server fails after its tasks were seen (an answer would clear it)
    apply(
        &mut s,
        vec![event(EngineEvent::ServerDegraded {
            server: srv(),
            reason: hostile("degraded"),
        })],
    );
    s
}

fn render(state: &State, w: u16, h: u16) -> TestBackend {
    support::screen::render(state, w, h, now())
}

/// No cell may hold a control, escape, bidi or zero-width character.
fn assert_inert(name: &str, backend: &TestBackend) {
    for cell in backend.buffer().content() {
        for c in cell.symbol().chars() {
            let bad = c.is_control()
                || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
                    | '\u{2066}'..='\u{2069}' | '\u{feff}' | '\u{2028}' | '\u{2029}');
            assert!(!bad, "{name}: raw U+{:04X} in a cell", c as u32);
        }
    }
}

fn snap(name: &str, state: &mut State) {
    for (w, h) in [(100, 30), (60, 16)] {
        let a = taskrail::ui::areas(ratatui::layout::Rect::new(0, 0, w, h), state);
        apply(
            state,
            vec![Msg::Viewport {
                table_rows: taskrail::ui::table_rows(&a),
                page_rows: 10,
            }],
        );
        let backend = render(state, w, h);
        assert_inert(name, &backend);
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), backend);
    }
}

fn select(s: &mut State, prefix: &str) {
    let key = s
        .tasks
        .keys()
        .find(|k| k.task_id.as_str().starts_with(prefix))
        .unwrap()
        .clone();
    s.board.selected = Some(key);
    s.board.clamp_offset(&s.tasks);
}

fn enter(s: &mut State) {
    apply(s, vec![Msg::Key(Key::plain(KeyCode::Enter))]);
}

#[test]
fn hostile_board_renders_inert() {
    let mut s = hostile_board();
    snap("hostile_board", &mut s);
}

#[test]
fn hostile_detail_views_render_inert() {
    for (prefix, name) in [
        ("d0ne", "hostile_detail_result"),
        ("f4iled", "hostile_detail_error"),
    ] {
        let mut s = hostile_board();
        select(&mut s, prefix);
        enter(&mut s);
        assert!(matches!(s.modals.last(), Some(Modal::Detail(_))));
        snap(name, &mut s);
    }
}

#[test]
fn hostile_input_form_renders_inert() {
    let mut s = hostile_board();
    select(&mut s, "id-input");
    enter(&mut s);
    if !matches!(s.modals.last(), Some(Modal::Input(_))) {
        enter(&mut s);
    }
    assert!(matches!(s.modals.last(), Some(Modal::Input(_))));
    snap("hostile_input_form", &mut s);
}

#[test]
fn hostile_tool_picker_renders_inert() {
    let mut s = hostile_board();
    apply(
        &mut s,
        vec![
            Msg::Key(Key::char('n')),
            Msg::Key(Key::plain(KeyCode::Enter)),
            event(EngineEvent::ToolsListed {
                server: srv(),
                tools: vec![ToolInfo {
                    name: hostile("tool"),
                    title: Some(hostile("tool title")),
                    description: Some(hostile("tool description")),
                    input_schema: json!({ "type": "object", "properties": {
                        "x": { "type": "string", "title": hostile("arg title") } } }),
                    task_support: Some("required".into()),
                }],
            }),
        ],
    );
    snap("hostile_tool_picker", &mut s);
    enter(&mut s);
    snap("hostile_tool_args", &mut s);
}

#[test]
fn fifty_thousand_input_requests_are_bounded_on_the_board() {
    let mut requests = serde_json::Map::new();
    for i in 0..50_000 {
        requests.insert(
            format!("k{i:05}"),
            json!({ "method": "elicitation/create", "params": { "message": format!("approve {i}?"),
                "requestedSchema": { "type": "object", "properties": { "ok": { "type": "boolean" } } } } }),
        );
    }
    let wire = json!({ "taskId": "many-inputs", "status": "input_required",
        "pollIntervalMs": 1000, "inputRequests": requests });
    let t = Task::from_wire(&wire).unwrap();
    assert!(
        t.input_requests.len() <= 64,
        "{} kept",
        t.input_requests.len()
    );
    let mut s = State::new(vec![srv()], false, Keymap::default_keymap());
    apply(
        &mut s,
        vec![event(EngineEvent::snapshot(
            srv(),
            t,
            UpdateSource::Poll,
            None,
        ))],
    );
    let entries = taskrail::state::views::inbox::entries(&s);
    assert!(entries.len() <= 64, "{} inbox entries", entries.len());
    apply(&mut s, vec![Msg::Key(Key::char('i'))]);
    let backend = render(&s, 100, 30);
    assert_inert("inbox", &backend);
    let text: String = backend
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect();
    assert!(text.contains("more not shown"), "{text}");
}
