//! Snapshot tests of the views answering input beyond forms — URL consent (with each
//! warning, and a refused link), sampling (typed, a command's output to review, not
//! offered), the roots view, a form asked outside any task, and a failed task's reason —
//! rendered with `TestBackend` at 100x30 and 60x16 with a pinned clock and the default
//! theme, plus cell-style checks for the emphasised host and the warnings.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;

use ratatui::backend::TestBackend;
use serde_json::{Value, json};

use support::screen::{apply, now};
use taskrail::engine::{EngineEvent, InputOrigin, KnownTask, ServerId, TaskId, UpdateSource};
use taskrail::mcp::{ErrorObject, InputRequest, Task, TaskStatus};
use taskrail::state::{
    InputTarget, Key, Keymap, Modal, Msg, SamplingSetup, ServerInput, State, TaskKey,
};
use taskrail::ui::Theme;

fn srv() -> ServerId {
    ServerId::named("demo")
}

fn waiting(id: &str, tool: &str, requests: Vec<(&str, &str, Value)>) -> Vec<Msg> {
    let mut t = Task {
        task_id: TaskId::new(id),
        status: TaskStatus::InputRequired,
        status_message: None,
        created_at: Some("2026-07-28T09:58:00Z".into()),
        last_updated_at: None,
        ttl_ms: Some(3_600_000),
        poll_interval_ms: Some(2000),
        input_requests: Default::default(),
        more_input_requests: 0,
        result: None,
        error: None,
    };
    for (k, method, params) in requests {
        t.input_requests.insert(
            k.into(),
            InputRequest {
                method: method.into(),
                params,
                reply_to: None,
            },
        );
    }
    vec![
        Msg::Engine(EngineEvent::TaskKnown {
            server: srv(),
            task: KnownTask {
                tool: Some(tool.into()),
                ..KnownTask::new(TaskId::new(id), now() - chrono::TimeDelta::seconds(120))
            },
        }),
        Msg::Engine(EngineEvent::snapshot(srv(), t, UpdateSource::Poll, Some(5))),
    ]
}

fn board(input: Option<ServerInput>) -> State {
    let mut s = State::new(vec![srv()], false, Keymap::default_keymap());
    if let Some(i) = input {
        s.input.insert(srv(), i);
    }
    s
}

fn render(state: &State, w: u16, h: u16) -> TestBackend {
    support::screen::render(state, w, h, now())
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
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), render(state, w, h));
    }
}

fn url(link: &str) -> Value {
    json!({"mode": "url", "url": link, "message": "Sign in to the billing portal to continue", "elicitationId": "e-77"})
}

fn select_first(s: &mut State) {
    s.board.selected = s.board.view_key(&s.tasks, 0);
}

/// The first cell (x, y) of the 100x30 screen whose row text contains `needle` at x.
fn find(backend: &TestBackend, needle: &str) -> (u16, u16) {
    let buf = backend.buffer();
    for y in 0..buf.area.height {
        let row: String = (0..buf.area.width)
            .map(|x| buf[(x, y)].symbol().to_string())
            .collect();
        if let Some(byte) = row.find(needle) {
            return (row[..byte].chars().count() as u16, y);
        }
    }
    panic!("{needle:?} not on screen:\n{backend}")
}

#[test]
fn url_consent_with_every_warning() {
    let mut s = board(None);
    apply(
        &mut s,
        waiting(
            "cons0001abcd",
            "sign_in",
            vec![(
                "k",
                "elicitation/create",
                url("http://bank.example@xn--pple-43d.com:8080/login?next=%2Fpay"),
            )],
        ),
    );
    select_first(&mut s);
    apply(
        &mut s,
        vec![Msg::Key(Key::char('a')), Msg::Key(Key::char('o'))],
    );
    snap("consent_warnings", &mut s);
    let theme = Theme::default();
    let backend = render(&s, 100, 30);
    // the real host is emphasised; the warnings are in the warning style
    let (x, y) = find(&backend, "xn--pple-43d.com:8080");
    assert_eq!(backend.buffer()[(x, y)].style().fg, theme.host.fg);
    let (x, y) = find(&backend, "plain http");
    assert_eq!(backend.buffer()[(x, y)].style().fg, theme.warn.fg);
}

#[test]
fn url_consent_of_a_refused_link() {
    let mut s = board(None);
    apply(
        &mut s,
        waiting(
            "cons0002abcd",
            "sign_in",
            vec![("k", "elicitation/create", url("javascript:fetch('//evil')"))],
        ),
    );
    select_first(&mut s);
    apply(&mut s, vec![Msg::Key(Key::char('a'))]);
    snap("consent_refused", &mut s);
}

fn haiku() -> Value {
    json!({
        "systemPrompt": "You are a poet who writes in 5-7-5.",
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "Write a haiku about tide pools."}},
            {"role": "assistant", "content": {"type": "text", "text": "Shall it be gentle or stormy?"}},
            {"role": "user", "content": {"type": "text", "text": "Gentle, please."}}
        ],
        "maxTokens": 50,
        "temperature": 0.7,
        "modelPreferences": {"hints": [{"name": "claude-3-5-haiku"}], "speedPriority": 0.8}
    })
}

#[test]
fn sampling_typed_by_a_person() {
    let mut s = board(Some(ServerInput {
        sampling: Some(SamplingSetup::Person),
        roots: None,
    }));
    apply(
        &mut s,
        waiting(
            "samp0001abcd",
            "write_haiku",
            vec![("s", "sampling/createMessage", haiku())],
        ),
    );
    select_first(&mut s);
    let mut msgs = vec![Msg::Key(Key::char('a'))];
    msgs.extend(
        "Still water holds sky"
            .chars()
            .map(|c| Msg::Key(Key::char(c))),
    );
    apply(&mut s, msgs);
    snap("sampling_typed", &mut s);
}

#[test]
fn sampling_command_output_to_review() {
    let mut s = board(Some(ServerInput {
        sampling: Some(SamplingSetup::Command {
            command: "llm -m gpt-4o-mini".into(),
            timeout: Duration::from_secs(120),
        }),
        roots: None,
    }));
    apply(
        &mut s,
        waiting(
            "samp0002abcd",
            "write_haiku",
            vec![("s", "sampling/createMessage", haiku())],
        ),
    );
    select_first(&mut s);
    apply(
        &mut s,
        vec![Msg::Key(Key::char('a')), Msg::Key(Key::ctrl('r'))],
    );
    let key = s.board.view_key(&s.tasks, 0).unwrap();
    apply(
        &mut s,
        vec![Msg::SamplingFinished {
            target: InputTarget::Task(key),
            input_key: "s".into(),
            result: Ok("Tide pool at dawn\nsmall crabs rehearse their sideways\nthe sea holds its breath\n".into()),
        }],
    );
    snap("sampling_review", &mut s);
}

#[test]
fn sampling_not_offered_and_its_row() {
    let mut s = board(None);
    apply(
        &mut s,
        waiting(
            "samp0003abcd",
            "write_haiku",
            vec![("s", "sampling/createMessage", haiku())],
        ),
    );
    select_first(&mut s);
    snap("sampling_not_offered_row", &mut s);
    apply(&mut s, vec![Msg::Key(Key::char('a'))]);
    snap("sampling_not_offered", &mut s);
}

#[test]
fn roots_view() {
    let mut s = board(Some(ServerInput {
        sampling: None,
        roots: Some(vec![
            "file:///home/me/project".into(),
            "file:///srv/data".into(),
        ]),
    }));
    apply(
        &mut s,
        vec![
            Msg::Engine(EngineEvent::RootsShared {
                server: srv(),
                task_id: Some(TaskId::new("root0001abcd")),
                roots: vec!["file:///home/me/project".into(), "file:///srv/data".into()],
            }),
            Msg::Engine(EngineEvent::RootsShared {
                server: srv(),
                task_id: None,
                roots: vec!["file:///home/me/project".into(), "file:///srv/data".into()],
            }),
            Msg::Key(Key::char('o')),
        ],
    );
    assert!(matches!(s.modals.last(), Some(Modal::Roots(_))));
    snap("roots", &mut s);
    let mut s = board(None);
    apply(
        &mut s,
        waiting(
            "root0002abcd",
            "scan_workspace",
            vec![("r", "roots/list", json!({}))],
        ),
    );
    select_first(&mut s);
    apply(&mut s, vec![Msg::Key(Key::char('a'))]);
    snap("roots_not_offered", &mut s);
}

#[test]
fn a_form_outside_any_task() {
    let mut s = board(None);
    s.calls.insert(3, (srv(), "register_user".into()));
    apply(
        &mut s,
        vec![Msg::Engine(EngineEvent::ForegroundInputRequested {
            server: srv(),
            key: "c1/input-1".into(),
            origin: InputOrigin::Call {
                call_id: 3,
                tool: "register_user".into(),
            },
            request: InputRequest {
                method: "elicitation/create".into(),
                params: json!({"message": "Please provide your registration information:", "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "title": "Username", "minLength": 3},
                        "newsletter": {"type": "boolean", "title": "Newsletter", "default": false}
                    },
                    "required": ["username"]
                }}),
                reply_to: None,
            },
            expires_in: Duration::from_secs(600),
        })],
    );
    snap("foreground_form", &mut s);
}

#[test]
fn a_failed_task_shows_its_reason_in_the_row() {
    let mut s = board(None);
    let mut msgs = waiting("fail0001abcd", "flaky_job", vec![]);
    let Msg::Engine(EngineEvent::TaskUpdated { task, .. }) = &mut msgs[1] else {
        panic!()
    };
    task.status = TaskStatus::Failed;
    task.error = Some(Box::new(ErrorObject {
        code: -32603,
        message: "Upstream service unavailable after 3 attempts".into(),
        data: Some(json!({"service": "billing-api"})),
    }));
    apply(&mut s, msgs);
    let mut msgs = waiting("fail0002abcd", "write_haiku", vec![]);
    let Msg::Engine(EngineEvent::TaskUpdated { task, .. }) = &mut msgs[1] else {
        panic!()
    };
    task.status = TaskStatus::Failed;
    task.result = Some(Box::new(
        json!({"isError": true, "content": [{"type": "text", "text": "Error: MCP error -32601: not supported by this client"}]}),
    ));
    apply(&mut s, msgs);
    snap("failed_reasons", &mut s);
    let key = TaskKey::new(&srv(), &TaskId::new("fail0001abcd"));
    s.board.selected = Some(key);
    apply(
        &mut s,
        vec![Msg::Key(Key::plain(taskrail::state::KeyCode::Enter))],
    );
    snap("failed_detail", &mut s);
}
