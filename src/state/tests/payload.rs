//! Reducer tests for finished tasks resumed without their payload: the board still says
//! what it needs (status, a tool error's text), and the detail view and a re-run read the
//! rest from the ledger first.

use serde_json::json;

use super::{code, fresh, key, run, srv, t0, task, tk};
use crate::engine::{EngineCommand, EngineEvent, KnownTask, TaskId};
use crate::mcp::TaskStatus;
use crate::state::payload::{AfterPayload, Payload};
use crate::state::*;

fn resumed(ids: &[&str], more: usize) -> Msg {
    Msg::Engine(EngineEvent::TasksResumed {
        server: srv(),
        tasks: ids
            .iter()
            .map(|id| KnownTask {
                tool: Some("render".into()),
                last: Some(task(id, TaskStatus::Completed)),
                lean: true,
                ..KnownTask::new(TaskId::new(id), t0())
            })
            .collect(),
        more,
    })
}

fn payload() -> Payload {
    Payload {
        arguments: Some(json!({"pages": 3})),
        result: Some(Box::new(
            json!({"content": [{"type": "text", "text": "the report"}]}),
        )),
        error: None,
    }
}

#[test]
fn a_chunk_of_resumed_tasks_fills_the_board_at_once() {
    let mut s = fresh();
    run(&mut s, vec![resumed(&["t1", "t2"], 3), resumed(&["t3"], 0)]);
    assert_eq!(s.tasks.len(), 3);
    assert_eq!(s.board.view_len(), 3);
    let row = &s.tasks[&tk("t2")];
    assert!(row.payload_in_ledger && row.arguments.is_none());
    assert_eq!(row.phase(), task::Phase::Done(TaskStatus::Completed));
}

#[test]
fn opening_a_resumed_task_reads_its_payload_from_the_ledger() {
    let mut s = fresh();
    run(&mut s, vec![resumed(&["t1"], 0)]);
    let fx = run(&mut s, vec![code(KeyCode::Enter)]);
    assert_eq!(
        fx,
        vec![
            Effect::LoadPayload {
                key: tk("t1"),
                then: AfterPayload::Show
            },
            Effect::LoadTimeline(tk("t1")),
        ]
    );
    let doc = |s: &State| {
        detail::task_doc(&s.tasks[&tk("t1")], &modal::TimelineState::Loading, t0())
            .iter()
            .map(|l| l.text.clone())
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(doc(&s).contains("loading from the ledger"));
    let loaded = Msg::PayloadLoaded {
        key: tk("t1"),
        result: Ok(payload()),
        then: AfterPayload::Show,
    };
    assert!(run(&mut s, vec![loaded]).is_empty());
    let row = &s.tasks[&tk("t1")];
    assert!(!row.payload_in_ledger);
    assert!(doc(&s).contains("the report"), "{}", doc(&s));
    // Loaded once: opening it again reads only the timeline.
    run(&mut s, vec![code(KeyCode::Esc)]);
    let fx = run(&mut s, vec![code(KeyCode::Enter)]);
    assert_eq!(fx, vec![Effect::LoadTimeline(tk("t1"))]);
}

#[test]
fn a_rerun_of_a_resumed_task_asks_once_its_arguments_are_read() {
    let mut s = fresh();
    run(&mut s, vec![resumed(&["t1"], 0)]);
    let fx = run(&mut s, vec![key('r')]);
    assert_eq!(
        fx,
        vec![Effect::LoadPayload {
            key: tk("t1"),
            then: AfterPayload::AskRerun
        }]
    );
    assert!(
        s.modals.is_empty(),
        "nothing to confirm before the arguments"
    );
    let loaded = Msg::PayloadLoaded {
        key: tk("t1"),
        result: Ok(payload()),
        then: AfterPayload::AskRerun,
    };
    run(&mut s, vec![loaded]);
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
}

#[test]
fn a_ledger_that_cannot_be_read_says_so_and_keeps_the_row() {
    let mut s = fresh();
    run(&mut s, vec![resumed(&["t1"], 0)]);
    let failed = Msg::PayloadLoaded {
        key: tk("t1"),
        result: Err("disk I/O error".into()),
        then: AfterPayload::AskRerun,
    };
    run(&mut s, vec![failed]);
    assert!(s.modals.is_empty());
    assert!(s.notices.last().unwrap().text.contains("disk I/O error"));
    assert!(
        s.tasks[&tk("t1")].payload_in_ledger,
        "asked again next time"
    );
}
