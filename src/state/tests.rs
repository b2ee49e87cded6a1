//! Reducer tests: fixture `State` + `Msg` → asserted state and effects, for every action
//! and engine event, including the protocol invariants.

use chrono::{TimeZone, Utc};
use serde_json::json;

use super::modal::TimelineState;
use super::task::Phase;
use super::*;
use crate::engine::{CallResult, UpdateSource};
use crate::mcp::{InputRequest, Task, TaskStatus};

pub(super) fn t0() -> Now {
    Utc.with_ymd_and_hms(2026, 7, 28, 10, 0, 0).unwrap()
}

pub(super) fn srv() -> ServerId {
    ServerId("alpha".to_string())
}

pub(super) fn fresh() -> State {
    State::new(vec![srv()], false, Keymap::default_keymap())
}

pub(super) fn task(id: &str, status: TaskStatus) -> Task {
    Task {
        task_id: id.to_string(),
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
    Msg::Engine(EngineEvent::TaskUpdated {
        server: srv(),
        task,
        source: UpdateSource::Poll,
        latency_ms: Some(12),
    })
}

pub(super) fn elicit(schema: serde_json::Value) -> InputRequest {
    InputRequest {
        method: "elicitation/create".to_string(),
        params: json!({"mode": "form", "message": "Who are you?", "requestedSchema": schema}),
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

fn tk(id: &str) -> TaskKey {
    TaskKey::new(&srv(), id)
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
            task_id: "t1".into(),
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
            task_id: "t1".into(),
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
            task_id: "t1".into(),
            key: "k".into(),
        })],
    );
    assert!(s.notices.last().unwrap().text.contains("reused input key"));
}

#[test]
fn cancel_asks_then_sends_and_shows_completed_anyway() {
    let mut s = fresh();
    run(&mut s, vec![updated(task("t1", TaskStatus::Working))]);
    assert!(run(&mut s, vec![key('c')]).is_empty());
    assert!(matches!(s.modals.last(), Some(Modal::Confirm(_))));
    let fx = run(&mut s, vec![key('y')]);
    assert_eq!(
        fx,
        vec![Effect::Engine(EngineCommand::Cancel {
            server: srv(),
            task_id: "t1".into()
        })]
    );
    assert!(s.modals.is_empty());
    let row = |s: &State| s.tasks[&tk("t1")].phase();
    assert_eq!(row(&s), Phase::CancelRequested { acked: false });
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::CancelSent {
            server: srv(),
            task_id: "t1".into(),
        })],
    );
    assert_eq!(row(&s), Phase::CancelRequested { acked: true });
    // still working after the ack: eventual consistency, keep saying "cancel requested"
    run(&mut s, vec![updated(task("t1", TaskStatus::Working))]);
    assert_eq!(row(&s), Phase::CancelRequested { acked: true });
    run(&mut s, vec![updated(task("t1", TaskStatus::Completed))]);
    assert_eq!(row(&s), Phase::EndedAnyway(TaskStatus::Completed));
}

#[test]
fn cancel_then_cancelled_is_plain_cancelled_and_deny_sends_nothing() {
    let mut s = fresh();
    run(&mut s, vec![updated(task("t1", TaskStatus::Working))]);
    assert!(run(&mut s, vec![key('c'), key('n')]).is_empty());
    assert!(s.modals.is_empty() && s.tasks[&tk("t1")].cancel.is_none());
    run(&mut s, vec![key('c'), key('y')]);
    run(&mut s, vec![updated(task("t1", TaskStatus::Cancelled))]);
    assert_eq!(
        s.tasks[&tk("t1")].phase(),
        Phase::Done(TaskStatus::Cancelled)
    );
    // a terminal task is not cancelled again
    assert!(run(&mut s, vec![key('c')]).is_empty());
    assert!(s.modals.is_empty());
}

#[test]
fn cancel_failure_clears_the_mark_with_a_notice() {
    let mut s = fresh();
    run(
        &mut s,
        vec![updated(task("t1", TaskStatus::Working)), key('c'), key('y')],
    );
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::CancelFailed {
            server: srv(),
            task_id: "t1".into(),
            error: "boom".into(),
        })],
    );
    assert!(s.tasks[&tk("t1")].cancel.is_none());
    assert_eq!(s.notices.last().unwrap().level, NoticeLevel::Error);
}

#[test]
fn answer_sent_until_the_server_moves_on() {
    let mut s = fresh();
    let req =
        elicit(json!({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}));
    let mut t = task("t1", TaskStatus::InputRequired);
    t.input_requests.insert("k1".into(), req);
    run(&mut s, vec![updated(t.clone()), code(KeyCode::Enter)]);
    assert!(matches!(s.modals.last(), Some(Modal::Input(_))));
    let fx = run(&mut s, vec![key('4'), key('2'), code(KeyCode::Enter)]);
    let Effect::Engine(EngineCommand::Answer { responses, .. }) = &fx[0] else {
        panic!("{fx:?}")
    };
    assert_eq!(
        responses["k1"],
        json!({"action":"accept","content":{"n":42}})
    );
    assert!(s.tasks[&tk("t1")].answer.is_some());
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::AnswerSent {
            server: srv(),
            task_id: "t1".into(),
            keys: vec!["k1".into()],
        })],
    );
    assert!(s.tasks[&tk("t1")].answer.as_ref().unwrap().acked);
    // same snapshot again: not moved on yet
    run(&mut s, vec![updated(t)]);
    assert!(s.tasks[&tk("t1")].answer.is_some());
    run(&mut s, vec![updated(task("t1", TaskStatus::Working))]);
    assert!(s.tasks[&tk("t1")].answer.is_none());
}

#[test]
fn answer_failure_restores_the_request() {
    let mut s = fresh();
    let mut t = task("t1", TaskStatus::InputRequired);
    t.input_requests.insert(
        "k1".into(),
        elicit(json!({"type":"object","properties":{}})),
    );
    run(&mut s, vec![updated(t), key('a'), code(KeyCode::Enter)]);
    assert!(s.tasks[&tk("t1")].pending.is_empty());
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::AnswerFailed {
            server: srv(),
            task_id: "t1".into(),
            keys: vec!["k1".into()],
            error: "nope".into(),
        })],
    );
    let row = &s.tasks[&tk("t1")];
    assert!(row.pending.contains_key("k1") && row.answer.is_none());
}

#[test]
fn terminal_snapshot_closes_the_open_form_without_sending() {
    let mut s = fresh();
    let mut t = task("t1", TaskStatus::InputRequired);
    t.input_requests.insert(
        "k1".into(),
        elicit(json!({"type":"object","properties":{}})),
    );
    run(&mut s, vec![updated(t), key('a')]);
    assert!(matches!(s.modals.last(), Some(Modal::Input(_))));
    let fx = run(&mut s, vec![updated(task("t1", TaskStatus::Failed))]);
    // nothing is sent (the only effect is the "finished" alert)
    assert!(!fx.iter().any(|e| matches!(e, Effect::Engine(_))) && s.modals.is_empty());
    assert!(s.notices.last().unwrap().text.contains("nothing was sent"));
}

#[test]
fn selection_is_kept_by_identity_through_inserts_sorts_and_filters() {
    let mut s = fresh();
    for i in 0..5 {
        let mut t = task(&format!("t{i}"), TaskStatus::Working);
        t.created_at = Some(format!("2026-07-28T09:5{i}:00Z"));
        run(&mut s, vec![updated(t)]);
    }
    // newest first: t4 t3 t2 t1 t0; the first row seen (t0) stayed selected
    assert_eq!(s.board.selected, Some(tk("t0")));
    run(
        &mut s,
        vec![key('g'), code(KeyCode::Down), code(KeyCode::Down)],
    );
    assert_eq!(s.board.selected, Some(tk("t2")));
    let mut newer = task("t9", TaskStatus::Working);
    newer.created_at = Some("2026-07-28T09:59:30Z".into());
    run(&mut s, vec![updated(newer)]);
    assert_eq!(s.board.selected, Some(tk("t2")));
    assert_eq!(s.board.selected_index(), Some(3));
    run(&mut s, vec![key('S')]);
    assert_eq!(s.board.selected, Some(tk("t2")));
    assert_eq!(s.board.view[0], tk("t0"));
    run(&mut s, vec![key('s'), key('s')]);
    assert_eq!(s.board.selected, Some(tk("t2")));
    // a filter that keeps it keeps it; one that hides it moves to a neighbour
    run(&mut s, vec![key('/'), key('t'), key('2')]);
    assert_eq!(s.board.view, vec![tk("t2")]);
    assert_eq!(s.board.selected, Some(tk("t2")));
    run(&mut s, vec![code(KeyCode::Backspace), key('1')]);
    assert_eq!(s.board.selected, Some(tk("t1")));
}

#[test]
fn scroll_position_survives_live_inserts() {
    let mut s = fresh();
    run(
        &mut s,
        vec![Msg::Viewport {
            table_rows: 5,
            page_rows: 5,
        }],
    );
    for i in 0..30 {
        let mut t = task(&format!("t{i:02}"), TaskStatus::Working);
        t.created_at = Some(format!("2026-07-28T09:{i:02}:00Z"));
        run(&mut s, vec![updated(t)]);
    }
    run(
        &mut s,
        vec![code(KeyCode::PageDown), code(KeyCode::PageDown)],
    );
    let sel = s.board.selected.clone();
    let screen_row = s.board.selected_index().unwrap() - s.board.offset;
    let mut t = task("new", TaskStatus::Working);
    t.created_at = Some("2026-07-28T09:59:59Z".into());
    run(&mut s, vec![updated(t)]);
    assert_eq!(s.board.selected, sel);
    assert_eq!(
        s.board.selected_index().unwrap() - s.board.offset,
        screen_row
    );
}

#[test]
fn invalid_regex_shows_an_inline_error_and_keeps_the_rows() {
    let mut s = fresh();
    run(&mut s, vec![updated(task("t1", TaskStatus::Working))]);
    run(&mut s, vec![key('/'), key('(')]);
    assert!(s.board.filter.error.is_some());
    assert_eq!(s.board.view.len(), 1);
    run(&mut s, vec![key('x'), key(')')]);
    assert!(s.board.filter.error.is_none());
    assert!(s.board.view.is_empty());
    run(&mut s, vec![code(KeyCode::Esc)]);
    assert_eq!(s.board.view.len(), 1);
    assert!(!s.board.filter.editing);
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
fn detail_loads_its_timeline_through_an_effect() {
    let mut s = fresh();
    run(&mut s, vec![updated(task("t1", TaskStatus::Working))]);
    let fx = run(&mut s, vec![code(KeyCode::Enter)]);
    assert_eq!(fx, vec![Effect::LoadTimeline(tk("t1"))]);
    let entry = TimelineEntry {
        at: t0(),
        kind: "poll".into(),
        latency_ms: Some(3),
        detail: "working".into(),
    };
    run(
        &mut s,
        vec![Msg::TimelineLoaded {
            key: tk("t1"),
            result: Ok(vec![entry.clone()]),
        }],
    );
    let Some(Modal::Detail(d)) = s.modals.last() else {
        panic!()
    };
    assert_eq!(d.timeline, TimelineState::Loaded(vec![entry]));
    run(
        &mut s,
        vec![code(KeyCode::Down), code(KeyCode::Down), key('k')],
    );
    let Some(Modal::Detail(d)) = s.modals.last() else {
        panic!()
    };
    assert_eq!(d.scroll, 1);
    run(&mut s, vec![code(KeyCode::Esc)]);
    assert!(s.modals.is_empty());
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
            task_id: "t1".into(),
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
            }),
            ev(EngineEvent::ServerDegraded {
                server: srv(),
                reason: "503".into(),
            }),
        ],
    );
    assert!(!s.servers[0].push);
    assert_eq!(s.servers[0].requests_per_sec, 2.5);
    assert_eq!(s.servers[0].health, Health::Degraded("503".into()));
    run(
        &mut s,
        vec![ev(EngineEvent::Reconnecting {
            server: srv(),
            attempt: 3,
            retry_in: std::time::Duration::from_secs(1),
        })],
    );
    assert_eq!(s.servers[0].health, Health::Reconnecting { attempt: 3 });
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
            task_id: "t1".into(),
            tool: Some("search".into()),
            arguments: Some(json!({"q": 1})),
            recorded_at: t0(),
            last: Some(task("t1", TaskStatus::Working)),
            expired: false,
            parent_task: None,
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
                task_id: "t1".into(),
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
fn tabs_narrow_the_rows() {
    let mut s = fresh();
    run(
        &mut s,
        vec![
            updated(task("a", TaskStatus::Working)),
            updated(task("b", TaskStatus::Completed)),
            updated(task("c", TaskStatus::Failed)),
        ],
    );
    assert_eq!(s.board.view.len(), 3);
    run(&mut s, vec![code(KeyCode::Tab)]);
    assert_eq!(s.board.view, vec![tk("a")]);
    run(&mut s, vec![code(KeyCode::Tab), code(KeyCode::Tab)]);
    assert_eq!(s.board.view, vec![tk("b")]);
    run(
        &mut s,
        vec![
            code(KeyCode::BackTab),
            code(KeyCode::BackTab),
            code(KeyCode::BackTab),
        ],
    );
    assert_eq!(s.board.tab, Tab::All);
    assert_eq!(s.board.tab_counts, [3, 1, 0, 1, 1, 0]);
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
fn new_task_flow_picks_server_and_tool_then_calls() {
    let mut s = State::new(
        vec![srv(), ServerId("beta".into())],
        false,
        Keymap::default_keymap(),
    );
    run(&mut s, vec![key('n')]);
    assert!(matches!(s.modals.last(), Some(Modal::ServerPicker(_))));
    let fx = run(&mut s, vec![code(KeyCode::Down), code(KeyCode::Enter)]);
    let beta = ServerId("beta".into());
    assert_eq!(
        fx,
        vec![Effect::Engine(EngineCommand::ListTools {
            server: beta.clone()
        })]
    );
    let tool = crate::mcp::ToolInfo {
        name: "search".into(),
        title: None,
        description: Some("Search things".into()),
        input_schema: json!({"type":"object","properties":{"q":{"type":"string"},"n":{"type":"number"}},"required":["q"]}),
        task_support: Some("optional".into()),
    };
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::ToolsListed {
            server: beta.clone(),
            tools: vec![tool],
        })],
    );
    run(&mut s, vec![code(KeyCode::Enter)]);
    assert!(matches!(s.modals.last(), Some(Modal::ToolForm(_))));
    // submitting empty: q is required
    assert!(run(&mut s, vec![code(KeyCode::Enter)]).is_empty());
    let fx = run(
        &mut s,
        vec![
            key('r'),
            key('u'),
            code(KeyCode::Tab),
            key('2'),
            key('.'),
            key('5'),
            code(KeyCode::Enter),
        ],
    );
    assert_eq!(
        fx,
        vec![Effect::Engine(EngineCommand::CallTool {
            server: beta.clone(),
            call_id: 1,
            tool: "search".into(),
            arguments: json!({"q":"ru","n":2.5}),
            parent_task: None,
        })]
    );
    assert_eq!(s.next_call_id, 2);
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::CallFinished {
            server: beta.clone(),
            call_id: 1,
            tool: "search".into(),
            result: CallResult::Plain {
                result: json!({"content":[{"type":"text","text":"hi"}]}),
            },
        })],
    );
    assert!(matches!(s.modals.last(), Some(Modal::Doc(_))));
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::CallFinished {
            server: beta.clone(),
            call_id: 2,
            tool: "search".into(),
            result: CallResult::Task {
                task_id: "zz".into(),
            },
        })],
    );
    assert_eq!(
        s.tasks[&TaskKey::new(&beta, "zz")].tool.as_deref(),
        Some("search")
    );
}

#[test]
fn ten_thousand_tasks_build_a_view() {
    let mut s = fresh();
    for i in 0..10_000 {
        update(
            &mut s,
            updated(task(&format!("t{i:05}"), TaskStatus::Working)),
            t0(),
        );
    }
    s.ensure_view();
    assert_eq!(s.board.view.len(), 10_000);
    run(&mut s, vec![code(KeyCode::End)]);
    assert_eq!(s.board.selected_index(), Some(9_999));
}

#[test]
fn a_completed_task_with_is_error_is_a_tool_error() {
    let mut s = fresh();
    let mut bad = task("t1", TaskStatus::Completed);
    bad.result =
        Some(json!({"content": [{"type": "text", "text": "3 problems"}], "isError": true}));
    let mut good = task("t2", TaskStatus::Completed);
    good.result = Some(json!({"content": [], "isError": false}));
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
    bad.result = Some(json!({"content": [], "isError": true}));
    run(&mut s, vec![updated(bad)]);
    assert_eq!(s.tasks[&tk("t1")].phase(), Phase::ToolError);
}
