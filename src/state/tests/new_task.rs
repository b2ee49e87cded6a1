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
fn failed_tool_listing_shows_in_the_waiting_picker() {
    let mut s = fresh();
    run(&mut s, vec![key('n')]);
    assert!(matches!(s.modals.last(), Some(Modal::ToolPicker(tp)) if tp.tools.is_none()));
    let failed = || {
        Msg::Engine(EngineEvent::ToolsListFailed {
            server: srv(),
            error: "HTTP 500".into(),
        })
    };
    run(&mut s, vec![failed()]);
    match s.modals.last() {
        Some(Modal::ToolPicker(tp)) => {
            assert_eq!(tp.error.as_deref(), Some("cannot list tools: HTTP 500"))
        }
        other => panic!("the picker shows the error: {other:?}"),
    }
    run(&mut s, vec![code(KeyCode::Esc)]);
    assert!(s.modals.is_empty());
    // with no picker waiting, a notice says it
    run(&mut s, vec![failed()]);
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

fn tool(name: &str) -> crate::mcp::ToolInfo {
    crate::mcp::ToolInfo {
        name: name.into(),
        title: None,
        description: Some(format!("the {name} tool")),
        input_schema: json!({"type": "object", "properties": {}}),
        task_support: None,
    }
}

fn picked(s: &State) -> Vec<String> {
    match s.modals.last() {
        Some(Modal::ToolPicker(tp)) => {
            let p = tp.tools.as_ref().expect("listed");
            p.shown.iter().map(|&i| p.items[i].name.clone()).collect()
        }
        other => panic!("expected the tool picker, got {other:?}"),
    }
}

fn current(s: &State) -> String {
    match s.modals.last() {
        Some(Modal::ToolPicker(tp)) => tp.tools.as_ref().unwrap().current().unwrap().name.clone(),
        other => panic!("expected the tool picker, got {other:?}"),
    }
}

#[test]
fn pickers_narrow_as_you_type_and_jump_to_the_ends() {
    let mut s = fresh();
    run(&mut s, vec![key('n')]);
    let names = ["alpha", "beta", "gamma", "deploy", "delete"];
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::ToolsListed {
            server: srv(),
            tools: names.iter().map(|n| tool(n)).collect(),
        })],
    );
    run(&mut s, vec![key('G')]);
    assert_eq!(current(&s), "delete");
    run(&mut s, vec![key('g')]);
    assert_eq!(current(&s), "alpha");
    run(&mut s, vec![key('j'), key('j')]);
    assert_eq!(current(&s), "gamma");

    // `/` and the list narrows with each key; letters bound in the picker are text here
    run(&mut s, vec![key('/'), key('d'), key('e')]);
    assert_eq!(s.context(), Context::Filter);
    assert_eq!(picked(&s), ["deploy", "delete"]);
    assert_eq!(
        current(&s),
        "deploy",
        "the cursor was on an entry now hidden"
    );
    run(&mut s, vec![key('l')]);
    assert_eq!(picked(&s), ["delete"]);
    run(&mut s, vec![key('q'), key('q')]);
    assert!(picked(&s).is_empty(), "q is text while typing");
    run(
        &mut s,
        vec![code(KeyCode::Backspace), code(KeyCode::Backspace)],
    );
    assert_eq!(picked(&s), ["delete"]);
    // enter keeps the query and gives the keys back to the list; enter again picks
    run(&mut s, vec![code(KeyCode::Enter)]);
    assert_eq!(s.context(), Context::Picker);
    assert_eq!(picked(&s), ["delete"]);
    run(&mut s, vec![code(KeyCode::Enter)]);
    assert!(
        matches!(s.modals.last(), Some(Modal::ToolForm(f)) if f.tool.name == "delete"),
        "{:?}",
        s.modals.last()
    );

    // esc on the query line clears it; esc again leaves the picker
    let mut s = fresh();
    run(&mut s, vec![key('n')]);
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::ToolsListed {
            server: srv(),
            tools: names.iter().map(|n| tool(n)).collect(),
        })],
    );
    run(&mut s, vec![key('/'), key('z'), key('z')]);
    assert!(picked(&s).is_empty());
    run(&mut s, vec![code(KeyCode::Esc)]);
    assert_eq!(picked(&s).len(), 5);
    assert_eq!(s.context(), Context::Picker);
    run(&mut s, vec![code(KeyCode::Esc)]);
    assert!(s.modals.is_empty());
}
