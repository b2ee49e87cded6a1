//! Reducer tests: fixture `State` + `Msg` → asserted state and effects. Here: the shared
//! fixtures and the task rows' invariants (first terminal wins, input-key dedup, progress,
//! expiry, server health, read-only); one child module per concept for the rest.

mod alerts;
mod answer;
mod board;
mod cancel;
mod command_line;
mod detail;
mod engine_facts;
mod forms;
mod hints;
mod inbox;
mod input_kinds;
mod line_edit;
mod mouse;
mod new_task;
mod payload;
mod servers;
mod signin;
mod stats;
mod wire;

use chrono::{TimeZone, Utc};
use serde_json::json;

use super::task::Phase;
use super::*;
use crate::engine::{KnownTask, TaskId, UpdateSource};
use crate::mcp::{InputRequest, Task, TaskStatus};

pub(super) fn t0() -> Now {
    Utc.with_ymd_and_hms(2026, 7, 28, 10, 0, 0).unwrap()
}

pub(super) fn srv() -> ServerId {
    ServerId::named("alpha")
}

pub(super) fn fresh() -> State {
    State::new(vec![srv()], false, Keymap::default_keymap())
}

pub(super) fn task(id: &str, status: TaskStatus) -> Task {
    Task {
        task_id: TaskId::new(id),
        status,
        status_message: None,
        created_at: Some("2026-07-28T09:59:00Z".to_string()),
        last_updated_at: None,
        ttl_ms: Some(600_000),
        poll_interval_ms: Some(1000),
        input_requests: Default::default(),
        result: None,
        error: None,
        more_input_requests: 0,
    }
}

pub(super) fn updated(task: Task) -> Msg {
    Msg::Engine(EngineEvent::snapshot(
        srv(),
        task,
        UpdateSource::Poll,
        Some(12),
    ))
}

pub(super) fn elicit(schema: serde_json::Value) -> InputRequest {
    InputRequest {
        method: "elicitation/create".to_string(),
        params: json!({"mode": "form", "message": "Who are you?", "requestedSchema": schema}),
        reply_to: None,
    }
}

pub(super) fn run(state: &mut State, msgs: Vec<Msg>) -> Vec<Effect> {
    let mut fx = Vec::new();
    for m in msgs {
        fx.extend(update(state, m, t0()));
    }
    state.ensure_view();
    fx
}

pub(super) fn key(c: char) -> Msg {
    Msg::Key(Key::char(c))
}

pub(super) fn code(c: KeyCode) -> Msg {
    Msg::Key(Key::plain(c))
}

pub(super) fn known(server: &ServerId, id: &str, tool: &str) -> Msg {
    Msg::Engine(EngineEvent::TaskKnown {
        server: server.clone(),
        task: KnownTask {
            task_id: TaskId::new(id),
            tool: Some(tool.to_string()),
            arguments: Some(json!({"pages": 3})),
            recorded_at: t0(),
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

pub(super) fn asks(server: &ServerId, id: &str, input_key: &str) -> Msg {
    Msg::Engine(EngineEvent::InputRequested {
        server: server.clone(),
        task_id: TaskId::new(id),
        key: input_key.to_string(),
        request: elicit(json!({"type":"object","properties":{"ok":{"type":"boolean"}}})),
    })
}

pub(super) fn typed(s: &mut State, text: &str) -> Vec<Effect> {
    let mut fx = run(s, vec![key(':')]);
    for c in text.chars() {
        fx.extend(run(s, vec![key(c)]));
    }
    fx.extend(run(s, vec![code(KeyCode::Enter)]));
    fx
}

pub(super) fn tk(id: &str) -> TaskKey {
    TaskKey::new(&srv(), &TaskId::new(id))
}

#[test]
fn first_terminal_wins() {
    let mut s = fresh();
    run(&mut s, vec![updated(task("t1", TaskStatus::Working))]);
    run(&mut s, vec![updated(task("t1", TaskStatus::Completed))]);
    run(
        &mut s,
        vec![
            updated(task("t1", TaskStatus::Working)),
            updated(task("t1", TaskStatus::Failed)),
        ],
    );
    assert_eq!(s.tasks[&tk("t1")].status(), Some(&TaskStatus::Completed));
}

#[test]
fn input_requested_is_deduplicated_by_key() {
    let mut s = fresh();
    let req = elicit(json!({"type": "object", "properties": {"name": {"type": "string"}}}));
    let ev = || {
        Msg::Engine(EngineEvent::InputRequested {
            server: srv(),
            task_id: TaskId::new("t1"),
            key: "k1".into(),
            request: req.clone(),
        })
    };
    let mut t = task("t1", TaskStatus::InputRequired);
    t.input_requests.insert("k1".into(), req.clone());
    run(&mut s, vec![ev(), ev(), updated(t.clone())]);
    assert_eq!(s.tasks[&tk("t1")].pending.len(), 1);
    // answered keys never come back, even if the server still lists them
    s.board.selected = Some(tk("t1"));
    run(
        &mut s,
        vec![key('a'), Msg::Key(Key::char('B')), code(KeyCode::Enter)],
    );
    assert!(s.tasks[&tk("t1")].pending.is_empty());
    run(&mut s, vec![ev(), updated(t)]);
    assert!(s.tasks[&tk("t1")].pending.is_empty());
    assert!(!s.tasks[&tk("t1")].needs_input());
}

#[test]
fn input_key_reused_is_flagged_not_reprompted() {
    let mut s = fresh();
    let a = elicit(json!({"type": "object", "properties": {}}));
    let mut b = a.clone();
    b.params["message"] = json!("something else");
    let offer = |r: InputRequest| {
        Msg::Engine(EngineEvent::InputRequested {
            server: srv(),
            task_id: TaskId::new("t1"),
            key: "k".into(),
            request: r,
        })
    };
    run(&mut s, vec![offer(a.clone()), offer(b)]);
    let row = &s.tasks[&tk("t1")];
    assert!(row.pending.is_empty() && row.reused.contains("k"));
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::InputKeyReused {
            server: srv(),
            task_id: TaskId::new("t1"),
            key: "k".into(),
        })],
    );
    assert!(s.notices.last().unwrap().text.contains("reused input key"));
}

#[test]
fn read_only_refuses_cancel_answer_and_call() {
    let mut s = State::new(vec![srv()], true, Keymap::default_keymap());
    let mut t = task("t1", TaskStatus::InputRequired);
    t.input_requests.insert(
        "k1".into(),
        elicit(json!({"type":"object","properties":{}})),
    );
    run(&mut s, vec![updated(t)]);
    for c in ['c', 'a', 'n'] {
        let before = s.notices.len();
        assert!(run(&mut s, vec![key(c)]).is_empty());
        assert!(s.modals.is_empty(), "{c} opened a modal");
        assert_eq!(s.notices.len(), before + 1);
        assert!(s.notices.last().unwrap().text.starts_with("read-only"));
    }
    // Enter still opens the detail view
    let fx = run(&mut s, vec![code(KeyCode::Enter)]);
    assert_eq!(fx, vec![Effect::LoadTimeline(tk("t1"))]);
}

#[test]
fn progress_from_events_and_messages() {
    let mut s = fresh();
    let mut t = task("t1", TaskStatus::Working);
    t.status_message = Some("page 3/40".into());
    run(&mut s, vec![updated(t)]);
    assert_eq!(s.tasks[&tk("t1")].fraction(), Some(0.075));
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::Progress {
            server: srv(),
            task_id: TaskId::new("t1"),
            progress: 5.0,
            total: Some(10.0),
        })],
    );
    assert_eq!(s.tasks[&tk("t1")].fraction(), Some(0.5));
}

#[test]
fn server_health_and_stats_reach_the_header_state() {
    let mut s = fresh();
    let ev = |e| Msg::Engine(e);
    run(
        &mut s,
        vec![ev(EngineEvent::ServerConnected {
            server: srv(),
            era: crate::mcp::Era::Legacy,
            push: true,
            server_name: Some("demo\u{1b}[2J".into()),
        })],
    );
    assert_eq!(s.servers[0].health, Health::Connected);
    assert_eq!(s.servers[0].name.as_deref(), Some("demo"));
    run(
        &mut s,
        vec![
            ev(EngineEvent::PushChanged {
                server: srv(),
                push: false,
            }),
            ev(EngineEvent::Stats {
                server: srv(),
                requests_total: 10,
                requests_per_sec: 2.5,
                errors_total: 1,
                latencies_ms: vec![],
            }),
            ev(EngineEvent::ServerDegraded {
                server: srv(),
                reason: "503".into(),
            }),
        ],
    );
    assert!(!s.servers[0].push);
    assert_eq!(s.servers[0].requests_per_sec, 2.5);
    assert_eq!(
        s.servers[0].health,
        Health::Degraded {
            reason: "503".into(),
            retry: None
        }
    );
    run(
        &mut s,
        vec![ev(EngineEvent::Reconnecting {
            server: srv(),
            attempt: 3,
            retry_in: std::time::Duration::from_secs(1),
        })],
    );
    assert_eq!(
        s.servers[0].health,
        Health::Degraded {
            reason: "503".into(),
            retry: Some(3)
        },
        "a failing server keeps its reason while it reconnects"
    );
    // The push stream is back: the header no longer says "reconnecting".
    run(
        &mut s,
        vec![ev(EngineEvent::PushChanged {
            server: srv(),
            push: true,
        })],
    );
    assert_eq!(s.servers[0].health, Health::Connected);
}

#[test]
fn task_known_expired_and_notices() {
    let mut s = fresh();
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::TaskKnown {
            server: srv(),
            task: KnownTask {
                task_id: TaskId::new("t1"),
                tool: Some("search".into()),
                arguments: Some(json!({"q": 1})),
                recorded_at: t0(),
                last: Some(task("t1", TaskStatus::Working)),
                end: None,
                parent_task: None,
                pending: Vec::new(),
                cancel: None,
                started_by: None,
                lean: false,
            },
        })],
    );
    let row = &s.tasks[&tk("t1")];
    assert_eq!(row.tool.as_deref(), Some("search"));
    assert!(row.seen_at.is_none());
    run(
        &mut s,
        vec![
            Msg::Engine(EngineEvent::TaskExpired {
                server: srv(),
                task_id: TaskId::new("t1"),
                why: Tombstone::Expired,
            }),
            Msg::Engine(EngineEvent::Notice {
                server: Some(srv()),
                level: NoticeLevel::Warn,
                text: "slow\u{9b}2J".into(),
            }),
        ],
    );
    assert!(s.tasks[&tk("t1")].expired);
    assert_eq!(s.notices.last().unwrap().text, "alpha: slow");
}

#[test]
fn quit_and_help() {
    let mut s = fresh();
    run(&mut s, vec![key('?')]);
    assert!(matches!(s.modals.last(), Some(Modal::Help { .. })));
    run(&mut s, vec![key('?')]);
    assert!(s.modals.is_empty());
    assert_eq!(run(&mut s, vec![key('q')]), vec![Effect::Quit]);
    let mut s = fresh();
    assert_eq!(
        run(&mut s, vec![Msg::Key(Key::ctrl('c'))]),
        vec![Effect::Quit]
    );
}

#[test]
fn a_completed_task_with_is_error_is_a_tool_error() {
    let mut s = fresh();
    let mut bad = task("t1", TaskStatus::Completed);
    bad.result = Some(Box::new(
        json!({"content": [{"type": "text", "text": "3 problems"}], "isError": true}),
    ));
    let mut good = task("t2", TaskStatus::Completed);
    good.result = Some(Box::new(json!({"content": [], "isError": false})));
    run(&mut s, vec![updated(bad), updated(good)]);
    assert_eq!(s.tasks[&tk("t1")].phase(), Phase::ToolError);
    assert_eq!(
        s.tasks[&tk("t2")].phase(),
        Phase::Done(TaskStatus::Completed)
    );
    // counted under Failed, not Done
    let count = |tab: Tab| s.board.tab_counts[Tab::ALL.iter().position(|t| *t == tab).unwrap()];
    assert_eq!((count(Tab::Done), count(Tab::Failed)), (1, 1));
    // a cancel requested before the tool failed does not hide the error
    let mut s = fresh();
    run(&mut s, vec![updated(task("t1", TaskStatus::Working))]);
    s.tasks.get_mut(&tk("t1")).unwrap().cancel = Some(task::CancelMark { acked: true });
    let mut bad = task("t1", TaskStatus::Completed);
    bad.result = Some(Box::new(json!({"content": [], "isError": true})));
    run(&mut s, vec![updated(bad)]);
    assert_eq!(s.tasks[&tk("t1")].phase(), Phase::ToolError);
}

#[test]
fn a_legacy_tool_error_ended_failed_is_a_tool_error_on_the_board_as_in_the_exit_code() {
    // Legacy servers end a tool error `failed` with the tool result as payload; the CLI's
    // exit code said "tool error" while the board said "failed".
    let mut s = fresh();
    let mut bad = task("t1", TaskStatus::Failed);
    bad.result = Some(Box::new(
        json!({"content": [{"type": "text", "text": "no such file"}], "isError": true}),
    ));
    run(&mut s, vec![updated(bad.clone())]);
    let row = &s.tasks[&tk("t1")];
    assert_eq!(row.phase(), Phase::ToolError);
    assert_eq!(row.failure_reason().as_deref(), Some("no such file"));
    assert_eq!(
        crate::mcp::outcome(Some(&bad), false),
        Some(crate::mcp::Outcome::ToolError)
    );
    let count = |tab: Tab| s.board.tab_counts[Tab::ALL.iter().position(|t| *t == tab).unwrap()];
    assert_eq!((count(Tab::Done), count(Tab::Failed)), (0, 1));
}
