//! Reducer tests for starting tasks: re-run, failed tool listings and what a call came to.

use serde_json::json;

use super::{code, fresh, key, known, run, srv, task, updated};
use crate::engine::{CallResult, EngineCommand, EngineEvent, ServerId, TaskId};
use crate::mcp::TaskStatus;
use crate::state::*;

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

#[test]
fn new_task_flow_picks_server_and_tool_then_calls() {
    let mut s = State::new(
        vec![srv(), ServerId::named("beta")],
        false,
        Keymap::default_keymap(),
    );
    run(&mut s, vec![key('n')]);
    assert!(matches!(s.modals.last(), Some(Modal::ServerPicker(_))));
    let fx = run(&mut s, vec![code(KeyCode::Down), code(KeyCode::Enter)]);
    let beta = ServerId::named("beta");
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
                task_id: TaskId::new("zz"),
                stored: true,
            },
        })],
    );
    assert_eq!(
        s.tasks[&TaskKey::new(&beta, &TaskId::new("zz"))]
            .tool
            .as_deref(),
        Some("search")
    );
}
