//! Snapshots of the power features: the inbox, the command line with completions, the
//! server filter, conformance hints (badge and list), the re-run confirmation, and the
//! bundled themes' semantic colours. Pinned clock; must not read the real clock.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use chrono::{DateTime, Utc};
use ratatui::backend::TestBackend;
use ratatui::style::{Color, Modifier};
use serde_json::json;

use support::screen::{apply, now};
use taskrail::engine::{EngineEvent, Hint, KnownTask, ServerId, TaskId, UpdateSource};
use taskrail::mcp::{Era, InputRequest, Task, TaskStatus};
use taskrail::state::{Key, KeyCode, Keymap, Modal, Msg, State, update};

use taskrail::ui::Theme;

fn srv(n: &str) -> ServerId {
    ServerId::named(n)
}

fn task(id: &str, status: TaskStatus, msg: &str) -> Task {
    Task {
        task_id: TaskId::new(id),
        status,
        status_message: Some(msg.to_string()),
        created_at: Some("2026-07-28T09:50:00Z".to_string()),
        last_updated_at: None,
        ttl_ms: Some(3_600_000),
        poll_interval_ms: Some(2000),
        input_requests: Default::default(),
        result: None,
        error: None,
        more_input_requests: 0,
    }
}

fn at(secs_ago: i64) -> DateTime<Utc> {
    now() - chrono::TimeDelta::seconds(secs_ago)
}

fn ask(message: &str) -> InputRequest {
    InputRequest {
        method: "elicitation/create".into(),
        params: json!({"mode": "form", "message": message,
            "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}),
        reply_to: None,
    }
}

/// Two servers, three tasks waiting for input (four requests), one finished.
fn board() -> State {
    let mut s = State::new(
        vec![srv("demo"), srv("fastmcp")],
        false,
        Keymap::default_keymap(),
    );
    s.themes = vec!["dark".into(), "light".into(), "mono".into()];
    let steps: Vec<(i64, Msg)> = vec![
        (
            900,
            Msg::Engine(EngineEvent::ServerConnected {
                server: srv("demo"),
                era: Era::Modern,
                push: true,
                server_name: None,
            }),
        ),
        (
            900,
            Msg::Engine(EngineEvent::ServerConnected {
                server: srv("fastmcp"),
                era: Era::Legacy,
                push: false,
                server_name: None,
            }),
        ),
    ];
    for (ago, m) in steps {
        update(&mut s, m, at(ago));
    }
    let waiting = [
        (
            "demo",
            "dep10y0001",
            "deploy",
            600,
            vec![("k1", "Deploy billing to staging?")],
        ),
        (
            "fastmcp",
            "b00k0002",
            "book_table",
            300,
            vec![("party", "How many guests?")],
        ),
        (
            "demo",
            "imp0rt0003",
            "import_rows",
            60,
            vec![
                ("map", "Map column 'mail' to?"),
                ("dupes", "Skip 12 duplicate rows?"),
            ],
        ),
    ];
    for (server, id, tool, ago, requests) in waiting {
        let mut t = task(id, TaskStatus::InputRequired, "waiting for you");
        for (k, m) in &requests {
            t.input_requests.insert(k.to_string(), ask(m));
        }
        let msgs = vec![
            Msg::Engine(EngineEvent::TaskKnown {
                server: srv(server),
                task: KnownTask {
                    task_id: TaskId::new(id),
                    tool: Some(tool.into()),
                    arguments: Some(json!({"service": "billing"})),
                    recorded_at: at(ago),
                    last: None,
                    end: None,
                    parent_task: None,
                    pending: Vec::new(),
                    cancel: None,
                    started_by: None,
                    lean: false,
                },
            }),
            Msg::Engine(EngineEvent::snapshot(
                srv(server),
                t,
                UpdateSource::Poll,
                Some(9),
            )),
        ];
        for m in msgs {
            update(&mut s, m, at(ago));
        }
        for (k, m) in requests {
            let ev = Msg::Engine(EngineEvent::InputRequested {
                server: srv(server),
                task_id: TaskId::new(id),
                key: k.into(),
                request: ask(m),
            });
            update(&mut s, ev, at(ago));
        }
    }
    update(
        &mut s,
        Msg::Engine(EngineEvent::snapshot(
            srv("fastmcp"),
            task("d0ne0004", TaskStatus::Completed, "done"),
            UpdateSource::Poll,
            Some(9),
        )),
        at(30),
    );
    s.ensure_view();
    s
}

fn render(state: &State, theme: &Theme, w: u16, h: u16) -> TestBackend {
    support::screen::render_themed(state, theme, w, h, now())
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
        insta::assert_snapshot!(
            format!("{name}_{w}x{h}"),
            render(state, &Theme::default(), w, h)
        );
    }
}

fn keys(s: &mut State, text: &str) {
    for c in text.chars() {
        apply(s, vec![Msg::Key(Key::char(c))]);
    }
}

fn press(s: &mut State, code: KeyCode) {
    apply(s, vec![Msg::Key(Key::plain(code))]);
}

#[test]
fn inbox_oldest_first_across_servers() {
    let mut s = board();
    keys(&mut s, "i");
    assert!(matches!(s.modals.last(), Some(Modal::Inbox(_))));
    keys(&mut s, "j");
    snap("inbox", &mut s);
}

#[test]
fn command_line_with_completions_and_errors() {
    let mut s = board();
    keys(&mut s, ":s");
    press(&mut s, KeyCode::Tab);
    snap("command_completions", &mut s);
    keys(&mut s, "erver nope");
    press(&mut s, KeyCode::Enter);
    snap("command_error", &mut s);
}

#[test]
fn server_filter_narrows_the_board() {
    let mut s = board();
    keys(&mut s, ":server fastmcp");
    press(&mut s, KeyCode::Enter);
    assert_eq!(s.board.view_len(), 2);
    snap("server_filter", &mut s);
}

#[test]
fn conformance_badge_and_hints_view() {
    let mut s = board();
    for (hint, detail) in [
        (
            Hint::NonDurableCreate,
            "task dep10y00…: tasks/get right after CreateTaskResult answered \"not found\"",
        ),
        (
            Hint::PollIntervalMissing,
            "task b00k0002… (working) has no pollIntervalMs",
        ),
    ] {
        apply(
            &mut s,
            vec![Msg::Engine(EngineEvent::ServerMisbehaved {
                server: srv("fastmcp"),
                hint,
                detail: detail.into(),
            })],
        );
    }
    snap("hints_badge", &mut s);
    keys(&mut s, "H");
    snap("hints_view", &mut s);
}

#[test]
fn rerun_confirmation() {
    let mut s = board();
    let key = s
        .tasks
        .keys()
        .find(|k| k.task_id == "dep10y0001")
        .unwrap()
        .clone();
    s.board.selected = Some(key);
    keys(&mut s, "r");
    snap("rerun_confirm", &mut s);
}

#[test]
fn bundled_themes_keep_their_semantic_colours() {
    let mut s = board();
    let a = taskrail::ui::areas(ratatui::layout::Rect::new(0, 0, 100, 30), &s);
    apply(
        &mut s,
        vec![Msg::Viewport {
            table_rows: taskrail::ui::table_rows(&a),
            page_rows: 10,
        }],
    );
    // the "✎ n waiting for input" on the title line is drawn in the input style
    let cell_of = |buf: &TestBackend, needle: &str| {
        let b = buf.buffer();
        let row: String = (0..100).map(|x| b[(x, 0)].symbol().to_string()).collect();
        let col = row.find(needle).map(|i| row[..i].chars().count()).unwrap() as u16;
        b[(col, 0)].clone()
    };
    let light = Theme::bundled("light").unwrap();
    let cell = cell_of(&render(&s, &light, 100, 30), "✎");
    assert_eq!(cell.fg, Color::Rgb(0xaf, 0x5f, 0x00));
    let mono = Theme::bundled("mono").unwrap();
    let cell = cell_of(&render(&s, &mono, 100, 30), "✎");
    assert_eq!(cell.fg, Color::Reset, "mono has no colours");
    assert!(cell.modifier.contains(Modifier::UNDERLINED));
}
