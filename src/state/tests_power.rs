//! Reducer tests for re-run, the inbox, the command line, conformance hints, mouse input,
//! alerts and failed tool listings.

use chrono::TimeDelta;
use serde_json::json;

use super::command::{self, Command};
use super::inbox;
use super::tests::{code, elicit, fresh, key, run, srv, t0, task, updated};
use super::*;
use crate::engine::{CallResult, Hint, KnownTask, TaskId, UpdateSource};
use crate::mcp::TaskStatus;

fn known(server: &ServerId, id: &str, tool: &str) -> Msg {
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
        },
    })
}

fn asks(server: &ServerId, id: &str, input_key: &str) -> Msg {
    Msg::Engine(EngineEvent::InputRequested {
        server: server.clone(),
        task_id: TaskId::new(id),
        key: input_key.to_string(),
        request: elicit(json!({"type":"object","properties":{"ok":{"type":"boolean"}}})),
    })
}

fn typed(s: &mut State, text: &str) -> Vec<Effect> {
    let mut fx = run(s, vec![key(':')]);
    for c in text.chars() {
        fx.extend(run(s, vec![key(c)]));
    }
    fx.extend(run(s, vec![code(KeyCode::Enter)]));
    fx
}

#[test]
fn rerun_asks_then_calls_the_same_tool_linked_to_the_old_task() {
    let mut s = fresh();
    run(
        &mut s,
        vec![
            known(&srv(), "t1", "render"),
            updated(task("t1", TaskStatus::Failed)),
        ],
    );
    assert!(run(&mut s, vec![key('r')]).is_empty(), "asks first");
    assert_eq!(s.context(), Context::Confirm);
    let fx = run(&mut s, vec![key('y')]);
    assert_eq!(
        fx,
        vec![Effect::Engine(EngineCommand::CallTool {
            server: srv(),
            call_id: 1,
            tool: "render".into(),
            arguments: json!({"pages": 3}),
            parent_task: Some(TaskId::new("t1")),
        })]
    );
    assert_eq!(s.calls.get(&1), Some(&(srv(), "render".to_string())));
    // deny sends nothing; a task without a recorded call cannot be re-run
    run(&mut s, vec![key('r')]);
    assert!(run(&mut s, vec![key('n')]).is_empty());
    run(&mut s, vec![updated(task("t0", TaskStatus::Working))]);
    s.board.selected = Some(TaskKey::new(&srv(), &TaskId::new("t0")));
    assert!(run(&mut s, vec![key('r')]).is_empty());
    assert!(s.modals.is_empty());
    assert!(s.notices.last().unwrap().text.contains("cannot re-run"));
}

#[test]
fn rerun_is_refused_read_only_and_refresh_moved_to_shift_r() {
    let mut s = State::new(vec![srv()], true, Keymap::default_keymap());
    run(&mut s, vec![known(&srv(), "t1", "render")]);
    assert!(run(&mut s, vec![key('r')]).is_empty());
    assert!(s.modals.is_empty());
    let fx = run(&mut s, vec![key('R')]);
    assert_eq!(
        fx,
        vec![Effect::Engine(EngineCommand::Refresh {
            server: srv(),
            task_id: Some(TaskId::new("t1"))
        })]
    );
}

#[test]
fn inbox_lists_every_request_oldest_first_and_answers_in_place() {
    let beta = ServerId::named("beta");
    let mut s = State::new(vec![srv(), beta.clone()], false, Keymap::default_keymap());
    let waiting = task("b1", TaskStatus::InputRequired);
    // beta's request is seen first, alpha's later
    update(&mut s, known(&beta, "b1", "deploy"), t0());
    update(
        &mut s,
        Msg::Engine(EngineEvent::snapshot(
            beta.clone(),
            waiting,
            UpdateSource::Poll,
            None,
        )),
        t0(),
    );
    update(&mut s, asks(&beta, "b1", "k"), t0());
    let later = t0() + TimeDelta::seconds(30);
    update(&mut s, known(&srv(), "a1", "render"), later);
    update(
        &mut s,
        updated(task("a1", TaskStatus::InputRequired)),
        later,
    );
    update(&mut s, asks(&srv(), "a1", "k1"), later);
    update(&mut s, asks(&srv(), "a1", "k2"), later);
    let list = inbox::entries(&s);
    let order: Vec<(&str, &str)> = list
        .iter()
        .map(|e| (e.task.task_id.as_str(), e.input_key.as_str()))
        .collect();
    assert_eq!(order, vec![("b1", "k"), ("a1", "k1"), ("a1", "k2")]);

    run(&mut s, vec![key('i')]);
    assert!(matches!(s.modals.last(), Some(Modal::Inbox(_))));
    assert_eq!(s.context(), Context::Picker);
    run(&mut s, vec![key('j'), code(KeyCode::Enter)]);
    match s.modals.last() {
        Some(Modal::Input(f)) => assert_eq!(f.key, TaskKey::new(&srv(), &TaskId::new("a1"))),
        other => panic!("expected the input form of a1, got {other:?}"),
    }
    // the form answers over the inbox; closing it returns to the inbox
    run(&mut s, vec![code(KeyCode::Esc)]);
    assert!(matches!(s.modals.last(), Some(Modal::Inbox(_))));
    // a request that stops being pending leaves the inbox (and its first-seen time)
    run(
        &mut s,
        vec![updated(task("a1", TaskStatus::Completed)), Msg::Tick],
    );
    assert_eq!(inbox::entries(&s).len(), 1);
    assert_eq!(s.input_since.len(), 1);
}

#[test]
fn alerts_fire_when_a_task_starts_waiting_or_finishes() {
    let mut s = fresh();
    run(&mut s, vec![known(&srv(), "t1", "render")]);
    let fx = run(&mut s, vec![updated(task("t1", TaskStatus::Working))]);
    assert!(fx.is_empty());
    let fx = run(&mut s, vec![updated(task("t1", TaskStatus::InputRequired))]);
    assert!(
        matches!(&fx[..], [Effect::Alert(Alert { kind: AlertKind::Input, text })] if text.contains("render"))
    );
    // the same state again is not news
    assert!(run(&mut s, vec![updated(task("t1", TaskStatus::InputRequired))]).is_empty());
    let fx = run(&mut s, vec![updated(task("t1", TaskStatus::Completed))]);
    assert!(
        matches!(&fx[..], [Effect::Alert(Alert { kind: AlertKind::Finished, text })] if text.contains("completed"))
    );
    // history from the ledger does not ring
    let mut last = task("t2", TaskStatus::Completed);
    last.status_message = None;
    let fx = run(
        &mut s,
        vec![Msg::Engine(EngineEvent::TaskKnown {
            server: srv(),
            task: KnownTask {
                task_id: TaskId::new("t2"),
                tool: None,
                arguments: None,
                recorded_at: t0(),
                last: Some(last),
                end: None,
                parent_task: None,
                pending: Vec::new(),
                cancel: None,
                started_by: None,
            },
        })],
    );
    assert!(fx.is_empty());
}

#[test]
fn command_line_narrows_by_server_sorts_filters_and_exports() {
    let beta = ServerId::named("beta");
    let mut s = State::new(vec![srv(), beta.clone()], false, Keymap::default_keymap());
    run(
        &mut s,
        vec![known(&srv(), "a1", "render"), known(&beta, "b1", "deploy")],
    );
    assert_eq!(s.board.view.len(), 2);
    typed(&mut s, "server be");
    assert_eq!(s.board.server, Some(beta.clone()));
    assert_eq!(s.board.view, vec![TaskKey::new(&beta, &TaskId::new("b1"))]);
    assert!(s.command.is_none());
    typed(&mut s, "server all");
    assert_eq!(s.board.view.len(), 2);
    typed(&mut s, "sort tool asc");
    assert_eq!(
        (s.board.sort, s.board.descending),
        (SortColumn::Tool, false)
    );
    assert_eq!(s.board.view[0].task_id, "b1");
    typed(&mut s, "filter rend");
    assert_eq!(s.board.view, vec![TaskKey::new(&srv(), &TaskId::new("a1"))]);
    let fx = typed(&mut s, "export /tmp/x.jsonl");
    assert_eq!(
        fx,
        vec![Effect::Export {
            key: TaskKey::new(&srv(), &TaskId::new("a1")),
            path: "/tmp/x.jsonl".into()
        }]
    );
    // an error keeps the line open with the message
    typed(&mut s, "server nowhere");
    let line = s.command.as_ref().expect("still open");
    assert!(line.error.as_deref().unwrap().contains("no server"));
    run(&mut s, vec![code(KeyCode::Esc)]);
    assert!(s.command.is_none());
}

#[test]
fn command_completion_names_then_arguments() {
    let mut s = State::new(
        vec![srv(), ServerId::named("beta")],
        false,
        Keymap::default_keymap(),
    );
    s.themes = vec!["dark".into(), "light".into(), "mono".into()];
    run(&mut s, vec![key(':'), key('s')]);
    run(&mut s, vec![code(KeyCode::Tab)]);
    let line = s.command.as_ref().unwrap();
    assert_eq!(line.input.value(), "s", "ambiguous: server, sort");
    assert_eq!(
        line.candidates,
        vec!["server".to_string(), "sort".to_string()]
    );
    run(&mut s, vec![key('e'), code(KeyCode::Tab)]);
    assert_eq!(s.command.as_ref().unwrap().input.value(), "server ");
    run(&mut s, vec![key('b'), code(KeyCode::Tab)]);
    assert_eq!(s.command.as_ref().unwrap().input.value(), "server beta");
    assert_eq!(
        command::complete("theme l", &s),
        vec!["theme light".to_string()]
    );
    assert_eq!(command::complete("sort tool ", &s).len(), 2);
    assert_eq!(
        command::parse("th mono", &s),
        Ok(Command::Theme("mono".into()))
    );
    assert!(command::parse("theme neon", &s).is_err());
    let fx = typed(&mut State { command: None, ..s }, "theme mono");
    assert_eq!(fx, vec![Effect::SetTheme("mono".into())]);
}

#[test]
fn conformance_hints_are_kept_per_server_with_one_notice_per_kind() {
    let mut s = fresh();
    let hint = |detail: &str| {
        Msg::Engine(EngineEvent::ServerMisbehaved {
            server: srv(),
            hint: Hint::NonDurableCreate,
            detail: detail.into(),
        })
    };
    run(
        &mut s,
        vec![hint("task abc: gone"), hint("task def: gone\x1b[31m")],
    );
    let h = &s.servers[0].hints;
    assert_eq!(h.len(), 1);
    assert_eq!(h[0].count, 2);
    assert!(!h[0].detail.contains('\x1b'), "sanitized");
    assert_eq!(
        s.notices
            .iter()
            .filter(|n| n.text.contains("conformance"))
            .count(),
        1
    );
    run(&mut s, vec![key('H')]);
    match s.modals.last() {
        Some(Modal::Doc(d)) => assert!(
            d.lines
                .iter()
                .any(|l| l.text.contains("strongly consistent"))
        ),
        other => panic!("expected the hints view, got {other:?}"),
    }
}

#[test]
fn failed_tool_listing_closes_the_waiting_picker() {
    let mut s = fresh();
    run(&mut s, vec![key('n')]);
    assert!(matches!(s.modals.last(), Some(Modal::ToolPicker(tp)) if tp.tools.is_none()));
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::ToolsListFailed {
            server: srv(),
            error: "HTTP 500".into(),
        })],
    );
    assert!(s.modals.is_empty());
    assert!(
        s.notices
            .last()
            .unwrap()
            .text
            .contains("cannot list tools: HTTP 500")
    );
}

#[test]
fn mouse_selects_opens_scrolls_and_switches_tabs() {
    let mut s = fresh();
    run(
        &mut s,
        vec![
            updated(task("t1", TaskStatus::Working)),
            updated(task("t2", TaskStatus::Completed)),
        ],
    );
    let first = s.board.view[0].clone();
    let second = s.board.view[1].clone();
    run(&mut s, vec![Msg::Mouse(Mouse::Click(Hit::Row(1)))]);
    assert_eq!(s.board.selected, Some(second.clone()));
    let fx = run(&mut s, vec![Msg::Mouse(Mouse::Click(Hit::Row(1)))]);
    assert_eq!(
        fx,
        vec![Effect::LoadTimeline(second)],
        "a second click opens"
    );
    run(
        &mut s,
        vec![code(KeyCode::Esc), Msg::Mouse(Mouse::ScrollUp)],
    );
    assert_eq!(s.board.selected, Some(first));
    run(&mut s, vec![Msg::Mouse(Mouse::Click(Hit::Tab(Tab::Done)))]);
    assert_eq!(s.board.tab, Tab::Done);
    assert_eq!(s.board.view.len(), 1);
    // a click past the rows does nothing
    run(&mut s, vec![Msg::Mouse(Mouse::Click(Hit::Row(30)))]);
}

#[test]
fn call_finished_for_a_rerun_starts_the_new_row() {
    let mut s = fresh();
    run(
        &mut s,
        vec![known(&srv(), "t1", "render"), key('r'), key('y')],
    );
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::CallFinished {
            server: srv(),
            call_id: 1,
            tool: "render".into(),
            result: CallResult::Task {
                task_id: TaskId::new("t9"),
                stored: true,
            },
        })],
    );
    assert!(s.calls.is_empty());
    assert_eq!(
        s.tasks[&TaskKey::new(&srv(), &TaskId::new("t9"))]
            .tool
            .as_deref(),
        Some("render")
    );
}
