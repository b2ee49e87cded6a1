//! Reducer tests for starting tasks: re-run, failed tool listings and what a call came to.

use serde_json::json;

use super::{fresh, key, known, run, srv, task, updated};
use crate::engine::{CallResult, EngineCommand, EngineEvent, TaskId};
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
