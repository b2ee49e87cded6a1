//! Snapshot tests of every dashboard view and state, rendered with `TestBackend` at 100x30
//! and 60x16 with a pinned clock and the default theme. Must not read the real clock.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use ratatui::backend::TestBackend;
use serde_json::{Value, json};

use support::screen::{apply, now};
use taskrail::engine::{
    CallResult, EngineEvent, KnownTask, NoticeLevel, ServerId, TaskId, UpdateSource,
};
use taskrail::mcp::{Era, ErrorObject, InputRequest, Task, TaskStatus, ToolInfo};
use taskrail::state::modal::TimelineState;
use taskrail::state::{Key, KeyCode, Keymap, Modal, Msg, State, TaskKey, TimelineEntry, update};

fn srv(n: &str) -> ServerId {
    ServerId::named(n)
}

fn task(id: &str, status: TaskStatus, msg: Option<&str>, created: &str) -> Task {
    Task {
        task_id: TaskId::new(id),
        status,
        status_message: msg.map(str::to_string),
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

fn known(server: &str, id: &str, tool: &str) -> Msg {
    Msg::Engine(EngineEvent::TaskKnown {
        server: srv(server),
        task: KnownTask {
            task_id: TaskId::new(id),
            tool: Some(tool.to_string()),
            arguments: Some(json!({"query": "rust tui", "limit": 10})),
            recorded_at: now() - chrono::TimeDelta::seconds(300),
            last: None,
            end: None,
            parent_task: None,
            pending: Vec::new(),
            cancel: None,
            started_by: None,
            lean: false,
        },
    })
}

fn upd(server: &str, t: Task) -> Msg {
    Msg::Engine(EngineEvent::snapshot(
        srv(server),
        t,
        UpdateSource::Push,
        Some(8),
    ))
}

fn keys(codes: &[Key]) -> Vec<Msg> {
    codes.iter().map(|k| Msg::Key(*k)).collect()
}

fn k(c: char) -> Key {
    Key::char(c)
}

fn connected(state: &mut State) {
    apply(
        state,
        vec![
            Msg::Engine(EngineEvent::ServerConnected {
                server: srv("demo"),
                era: Era::Modern,
                push: true,
                server_name: Some("demo".into()),
            }),
            Msg::Engine(EngineEvent::Stats {
                server: srv("demo"),
                requests_total: 420,
                requests_per_sec: 3.4,
                errors_total: 0,
                latencies_ms: vec![],
            }),
            Msg::Engine(EngineEvent::ServerConnected {
                server: srv("legacy-box"),
                era: Era::Legacy,
                push: false,
                server_name: None,
            }),
        ],
    );
}

fn elicitation() -> InputRequest {
    InputRequest {
        method: "elicitation/create".into(),
        params: json!({
            "mode": "form",
            "message": "Confirm the deployment target",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "env": {"type": "string", "title": "Environment", "oneOf": [
                        {"const": "stg", "title": "Staging"}, {"const": "prod", "title": "Production"}]},
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 9, "default": 2},
                    "notify": {"type": "boolean", "default": true},
                    "email": {"type": "string", "format": "email", "description": "Who to tell"},
                    "regions": {"type": "array", "items": {"type": "string", "enum": ["eu", "us", "ap"]}, "maxItems": 2}
                },
                "required": ["env", "email"]
            }
        }),
        reply_to: None,
    }
}

/// A board with tasks in every state.
fn board() -> State {
    let mut s = State::new(
        vec![srv("demo"), srv("legacy-box")],
        false,
        Keymap::default_keymap(),
    );
    connected(&mut s);
    let mut input = task(
        "in9put77aa",
        TaskStatus::InputRequired,
        Some("needs a target"),
        "2026-07-28T09:58:00Z",
    );
    input
        .input_requests
        .insert("deploy-1".into(), elicitation());
    let mut done = task(
        "d0ne00001",
        TaskStatus::Completed,
        Some("done"),
        "2026-07-28T09:40:00Z",
    );
    done.result = Some(Box::new(
        json!({"content": [{"type": "text", "text": "42 results"}]}),
    ));
    apply(
        &mut s,
        vec![
            known("demo", "w0rk1ng001", "crawl"),
            upd(
                "demo",
                task(
                    "w0rk1ng001",
                    TaskStatus::Working,
                    Some("fetching page 3/40"),
                    "2026-07-28T09:55:00Z",
                ),
            ),
            known("demo", "sp1nn3r002", "summarize"),
            upd(
                "demo",
                task(
                    "sp1nn3r002",
                    TaskStatus::Working,
                    Some("thinking\u{1b}[2J hard"),
                    "2026-07-28T09:59:15Z",
                ),
            ),
            known("demo", "in9put77aa", "deploy"),
            upd("demo", input),
            known("legacy-box", "d0ne00001", "search"),
            upd("legacy-box", done),
            known("legacy-box", "fa1led0001", "convert"),
            upd("legacy-box", {
                let mut t = task(
                    "fa1led0001",
                    TaskStatus::Failed,
                    Some("upstream timeout"),
                    "2026-07-28T09:30:00Z",
                );
                t.error = Some(Box::new(ErrorObject {
                    code: -32603,
                    message: "upstream timeout".into(),
                    data: Some(json!({"retryable": true})),
                }));
                t
            }),
            Msg::Engine(EngineEvent::Progress {
                server: srv("demo"),
                task_id: TaskId::new("w0rk1ng001"),
                progress: 3.0,
                total: Some(40.0),
            }),
            // after its tasks were seen: the server fails now
            Msg::Engine(EngineEvent::ServerDegraded {
                server: srv("legacy-box"),
                reason: "HTTP 503 from tasks/get".into(),
            }),
        ],
    );
    s
}

fn render(state: &State, w: u16, h: u16) -> TestBackend {
    support::screen::render(state, w, h, now())
}

fn snap(name: &str, state: &mut State) {
    snap_at(name, state, &[(100, 30), (60, 16)]);
}

fn snap_at(name: &str, state: &mut State, sizes: &[(u16, u16)]) {
    for &(w, h) in sizes {
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

fn select(s: &mut State, id: &str) {
    let key = s.tasks.keys().find(|k| k.task_id == id).unwrap().clone();
    s.board.selected = Some(key);
    s.board.clamp_offset(&s.tasks);
}

#[test]
fn empty_board() {
    let mut s = State::new(vec![srv("demo")], false, Keymap::default_keymap());
    snap("empty_board", &mut s);
}

#[test]
fn running_tasks_with_progress() {
    let mut s = board();
    select(&mut s, "w0rk1ng001");
    snap("running_tasks", &mut s);
}

#[test]
fn input_form_with_validation_error() {
    let mut s = board();
    select(&mut s, "in9put77aa");
    apply(
        &mut s,
        keys(&[Key::plain(KeyCode::Enter), Key::plain(KeyCode::Enter)]),
    );
    assert!(matches!(s.modals.last(), Some(Modal::Input(_))));
    snap("input_form_error", &mut s);
}

#[test]
fn confirm_cancel_and_cancel_requested_and_completed_anyway() {
    let mut s = board();
    select(&mut s, "w0rk1ng001");
    apply(&mut s, keys(&[k('c')]));
    snap("confirm_cancel", &mut s);
    apply(&mut s, keys(&[k('y')]));
    apply(
        &mut s,
        vec![Msg::Engine(EngineEvent::CancelSent {
            server: srv("demo"),
            task_id: TaskId::new("w0rk1ng001"),
            acked: true,
        })],
    );
    snap("cancel_requested", &mut s);
    let mut t = task(
        "w0rk1ng001",
        TaskStatus::Completed,
        Some("finished before the cancel landed"),
        "2026-07-28T09:55:00Z",
    );
    t.result = Some(Box::new(
        json!({"content": [{"type": "text", "text": "ok"}]}),
    ));
    apply(&mut s, vec![upd("demo", t)]);
    snap("completed_anyway", &mut s);
}

fn detail_of(result: Option<Value>, error: Option<ErrorObject>, status: TaskStatus) -> State {
    let mut s = State::new(vec![srv("demo")], false, Keymap::default_keymap());
    let mut t = task(
        "deta1l0000000000secret",
        status,
        Some("all done"),
        "2026-07-28T09:50:00Z",
    );
    t.result = result.map(Box::new);
    t.error = error.map(Box::new);
    apply(
        &mut s,
        vec![
            known("demo", "deta1l0000000000secret", "render"),
            upd("demo", t),
        ],
    );
    apply(&mut s, keys(&[Key::plain(KeyCode::Enter)]));
    let key = TaskKey::new(&srv("demo"), &TaskId::new("deta1l0000000000secret"));
    apply(
        &mut s,
        vec![Msg::TimelineLoaded {
            key,
            result: Ok(vec![
                TimelineEntry {
                    at: now() - chrono::TimeDelta::seconds(600),
                    kind: "create".into(),
                    latency_ms: Some(40),
                    detail: "working".into(),
                },
                TimelineEntry {
                    at: now() - chrono::TimeDelta::seconds(30),
                    kind: "push".into(),
                    latency_ms: None,
                    detail: "completed".into(),
                },
            ]),
        }],
    );
    s
}

#[test]
fn detail_of_each_result_kind() {
    let cases: Vec<(&str, State)> = vec![
        (
            "detail_text",
            detail_of(
                Some(
                    json!({"content": [{"type": "text", "text": "line one\nline two \u{1b}]52;c;AAAA\u{7}safe"}]}),
                ),
                None,
                TaskStatus::Completed,
            ),
        ),
        (
            "detail_structured",
            detail_of(
                Some(
                    json!({"content": [], "structuredContent": {"rows": 3, "names": ["a", "b"], "ok": true}}),
                ),
                None,
                TaskStatus::Completed,
            ),
        ),
        (
            "detail_image",
            detail_of(
                Some(
                    json!({"content": [{"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"}, {"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="}]}),
                ),
                None,
                TaskStatus::Completed,
            ),
        ),
        (
            "detail_resource_link",
            detail_of(
                Some(
                    json!({"content": [{"type": "resource_link", "uri": "file:///reports/q3.pdf", "name": "q3.pdf", "mimeType": "application/pdf"}, {"type": "resource", "resource": {"uri": "mem://notes", "mimeType": "text/plain", "text": "embedded note"}}]}),
                ),
                None,
                TaskStatus::Completed,
            ),
        ),
        (
            "detail_error",
            detail_of(
                None,
                Some(ErrorObject {
                    code: -32603,
                    message: "disk full".into(),
                    data: Some(json!({"free": 0})),
                }),
                TaskStatus::Failed,
            ),
        ),
    ];
    for (name, mut s) in cases {
        insta::assert_snapshot!(format!("{name}_100x30"), render(&s, 100, 30));
        // the narrow screen scrolled to the result
        if let Some(Modal::Detail(d)) = s.modals.last_mut() {
            d.scroll = 6;
        }
        insta::assert_snapshot!(format!("{name}_60x16"), render(&s, 60, 16));
    }
}

#[test]
fn detail_of_a_huge_text_result_is_cut() {
    let big = "0123456789abcdef\n".repeat(600_000);
    let mut s = detail_of(
        Some(json!({"content": [{"type": "text", "text": big}]})),
        None,
        TaskStatus::Completed,
    );
    if let Some(Modal::Detail(d)) = s.modals.last_mut() {
        d.timeline = TimelineState::Loading;
        d.scroll = usize::MAX / 2;
    }
    snap("detail_huge_text_end", &mut s);
}

#[test]
fn an_80x24_terminal_shows_the_board_help_and_a_form_whole() {
    let mut s = board();
    select(&mut s, "w0rk1ng001");
    snap_at("small_board", &mut s, &[(80, 24)]);
    apply(&mut s, keys(&[k('?')]));
    snap_at("small_help", &mut s, &[(80, 24)]);
    apply(&mut s, keys(&[Key::plain(KeyCode::Esc)]));
    select(&mut s, "in9put77aa");
    apply(&mut s, keys(&[Key::plain(KeyCode::Enter)]));
    assert!(matches!(s.modals.last(), Some(Modal::Input(_))));
    // on the multi-select field, the cursor moved to its second option
    let tab = Key::plain(KeyCode::Tab);
    apply(
        &mut s,
        keys(&[tab, tab, tab, tab, Key::plain(KeyCode::Right)]),
    );
    snap_at("small_form", &mut s, &[(80, 24)]);
}

#[test]
fn help() {
    let mut s = State::new(vec![srv("demo")], false, Keymap::default_keymap());
    apply(&mut s, keys(&[k('?')]));
    snap("help", &mut s);
}

#[test]
fn new_task_picker_and_args_form() {
    let mut s = board();
    apply(&mut s, keys(&[k('n'), Key::plain(KeyCode::Enter)]));
    snap("new_task_listing", &mut s);
    let tools = vec![
        ToolInfo {
            name: "crawl".into(),
            title: Some("Crawl a site".into()),
            description: None,
            input_schema: json!({"type": "object", "properties": {"url": {"type": "string", "format": "uri"}, "depth": {"type": "integer", "minimum": 1, "default": 2}, "follow": {"type": "boolean"}}, "required": ["url"]}),
            task_support: Some("required".into()),
        },
        ToolInfo {
            name: "deploy".into(),
            title: None,
            description: Some("Deploy a build".into()),
            input_schema: json!({"type": "object", "properties": {"spec": {"type": "object"}}}),
            task_support: Some("optional".into()),
        },
    ];
    apply(
        &mut s,
        vec![Msg::Engine(EngineEvent::ToolsListed {
            server: srv("demo"),
            tools,
        })],
    );
    snap("new_task_tools", &mut s);
    apply(
        &mut s,
        keys(&[Key::plain(KeyCode::Enter), k('h'), k('t'), k('t'), k('p')]),
    );
    apply(&mut s, keys(&[Key::plain(KeyCode::Enter)]));
    snap("new_task_args_form", &mut s);
    apply(
        &mut s,
        keys(&[Key::plain(KeyCode::Esc), k('n'), Key::plain(KeyCode::Enter)]),
    );
    apply(
        &mut s,
        vec![Msg::Engine(EngineEvent::ToolsListed {
            server: srv("demo"),
            tools: vec![ToolInfo {
                name: "deploy".into(),
                title: None,
                description: Some("Deploy a build".into()),
                input_schema: json!({"type": "object", "properties": {"spec": {"type": "object"}}}),
                task_support: None,
            }],
        })],
    );
    apply(&mut s, keys(&[Key::plain(KeyCode::Enter)]));
    snap("new_task_json_editor", &mut s);
}

#[test]
fn plain_result_popup_and_notices() {
    let mut s = board();
    apply(
        &mut s,
        vec![
            Msg::Engine(EngineEvent::Notice {
                server: Some(srv("demo")),
                level: NoticeLevel::Warn,
                text: "listen stream dropped; polling".into(),
            }),
            Msg::Engine(EngineEvent::CallFinished {
                server: srv("demo"),
                call_id: 1,
                tool: "echo".into(),
                result: CallResult::Plain {
                    result: json!({"content": [{"type": "text", "text": "hello back"}]}),
                },
            }),
        ],
    );
    snap("plain_result", &mut s);
}

#[test]
fn filter_with_invalid_regex_and_url_consent() {
    let mut s = board();
    apply(&mut s, keys(&[k('/'), k('('), k('c')]));
    snap("filter_invalid", &mut s);
    let mut s = State::new(vec![srv("demo")], false, Keymap::default_keymap());
    let mut t = task(
        "ur1mode0001",
        TaskStatus::InputRequired,
        None,
        "2026-07-28T09:59:00Z",
    );
    t.input_requests.insert("key-1".into(), InputRequest { method: "elicitation/create".into(), params: json!({"mode": "url", "url": "https://accounts.example.com@evil.example/login\u{202e}", "message": "Sign in to continue"}), reply_to: None });
    t.input_requests.insert("key-2".into(), InputRequest { method: "sampling/createMessage".into(), params: json!({"messages": [{"role": "user", "content": {"type": "text", "text": "capital of France?"}}], "maxTokens": 100}), reply_to: None });
    apply(
        &mut s,
        vec![
            known("demo", "ur1mode0001", "login"),
            upd("demo", t),
            Msg::Key(Key::char('a')),
        ],
    );
    snap("url_consent", &mut s);
}

#[test]
fn ten_thousand_tasks_render_only_visible_rows() {
    let mut s = State::new(vec![srv("demo")], false, Keymap::default_keymap());
    for i in 0..10_000 {
        update(
            &mut s,
            upd(
                "demo",
                task(
                    &format!("t{i:05}xxxx"),
                    TaskStatus::Working,
                    Some("3/10"),
                    "2026-07-28T09:00:00Z",
                ),
            ),
            now(),
        );
    }
    s.ensure_view();
    apply(&mut s, keys(&[Key::plain(KeyCode::End)]));
    let b = render(&s, 100, 30);
    let text = b.to_string();
    assert!(
        text.contains("t00000xx"),
        "newest-first tie broken by id, last row is t00000"
    );
}

#[test]
fn a_tool_error_is_not_shown_as_success() {
    let mut s = board();
    let mut lint = task(
        "l1nt000001",
        TaskStatus::Completed,
        Some("Completed with a tool error"),
        "2026-07-28T09:59:30Z",
    );
    lint.result = Some(Box::new(json!({
        "content": [{"type": "text", "text": "lint found 3 problems"}],
        "isError": true
    })));
    apply(
        &mut s,
        vec![known("demo", "l1nt000001", "lint"), upd("demo", lint)],
    );
    select(&mut s, "l1nt000001");
    snap("tool_error", &mut s);
}

#[test]
fn tiny_terminal_drops_the_clock_instead_of_gluing_it_on() {
    let mut s = board();
    select(&mut s, "w0rk1ng001");
    for (w, h) in [(30, 6), (12, 3), (1, 1)] {
        let a = taskrail::ui::areas(ratatui::layout::Rect::new(0, 0, w, h), &s);
        apply(
            &mut s,
            vec![Msg::Viewport {
                table_rows: taskrail::ui::table_rows(&a),
                page_rows: 1,
            }],
        );
        let backend = render(&s, w, h);
        if w == 30 {
            insta::assert_snapshot!("tiny_30x6", backend);
        }
    }
}
