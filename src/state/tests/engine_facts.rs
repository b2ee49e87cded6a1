//! Reducer tests for facts the engine owns and the board mirrors: pending input keys
//! (answered ones, before a restart or in another process, never shown again), tombstones,
//! cancels seen in the shared ledger, and a terminal snapshot gaining its payload.

use serde_json::json;

use super::{elicit, fresh, run, srv, t0, task, tk, updated};
use crate::engine::{EngineEvent, KnownTask, TaskId, Tombstone, UpdateSource};
use crate::mcp::TaskStatus;
use crate::state::*;

fn waiting(id: &str) -> crate::mcp::Task {
    let mut t = task(id, TaskStatus::InputRequired);
    t.input_requests
        .insert("k1".into(), elicit(json!({"type": "object"})));
    t
}

fn resumed(id: &str, last: crate::mcp::Task, pending: &[&str]) -> Msg {
    Msg::Engine(EngineEvent::TaskKnown {
        server: srv(),
        task: KnownTask {
            tool: Some("deploy".into()),
            last: Some(last),
            pending: pending.iter().map(|k| k.to_string()).collect(),
            ..KnownTask::new(TaskId::new(id), t0())
        },
    })
}

#[test]
fn a_prompt_answered_before_a_restart_is_not_shown_after_it() {
    let mut s = fresh();
    // The ledger says k1 was answered: the engine reports no pending key.
    run(&mut s, vec![resumed("t1", waiting("t1"), &[])]);
    let row = &s.tasks[&tk("t1")];
    assert!(row.pending.is_empty());
    assert!(!row.needs_input(), "no prompt for an answered key");
    assert!(views::inbox::entries(&s).is_empty());
    // The server still reports the key (eventual consistency): still no prompt.
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::TaskUpdated {
            server: srv(),
            task: waiting("t1"),
            source: UpdateSource::Poll,
            latency_ms: None,
            pending: Vec::new(),
        })],
    );
    assert!(s.tasks[&tk("t1")].pending.is_empty());
    assert!(views::inbox::entries(&s).is_empty());
}

#[test]
fn a_prompt_still_pending_after_a_restart_is_shown_once() {
    let mut s = fresh();
    run(&mut s, vec![resumed("t1", waiting("t1"), &["k1"])]);
    assert_eq!(views::inbox::entries(&s).len(), 1);
    // Answered in another process: the engine stops listing the key.
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::TaskUpdated {
            server: srv(),
            task: waiting("t1"),
            source: UpdateSource::Ledger,
            latency_ms: None,
            pending: Vec::new(),
        })],
    );
    assert!(views::inbox::entries(&s).is_empty());
    assert!(!s.tasks[&tk("t1")].needs_input());
}

#[test]
fn a_tombstone_is_not_active_and_not_working() {
    let mut s = fresh();
    let mut known = KnownTask::new(TaskId::new("gone"), t0());
    known.last = Some(task("gone", TaskStatus::Working));
    known.end = Some(Tombstone::Expired);
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::TaskKnown {
            server: srv(),
            task: known,
        })],
    );
    let row = &s.tasks[&tk("gone")];
    assert!(row.is_over());
    assert!(!Tab::Active.matches(row));
    assert!(Tab::All.matches(row));
    assert_eq!(row.phase(), task::Phase::Gone(Tombstone::Expired));
    let doc = detail::task_doc(row, &modal::TimelineState::Loading, t0());
    let state_line = doc
        .iter()
        .find(|l| l.label.as_deref() == Some("state"))
        .map(|l| l.text.clone())
        .unwrap_or_default();
    assert!(!state_line.contains("working"), "{state_line}");
    assert!(state_line.contains("expired"), "{state_line}");
    // A session lost says so.
    run(
        &mut s,
        vec![
            updated(task("t2", TaskStatus::Working)),
            Msg::Engine(EngineEvent::TaskExpired {
                server: srv(),
                task_id: TaskId::new("t2"),
                why: Tombstone::SessionLost,
            }),
        ],
    );
    let row = &s.tasks[&tk("t2")];
    assert_eq!(row.phase(), task::Phase::Gone(Tombstone::SessionLost));
    assert!(!Tab::Active.matches(row));
}

#[test]
fn a_cancel_requested_in_another_process_shows() {
    let mut s = fresh();
    run(
        &mut s,
        vec![
            updated(task("t1", TaskStatus::Working)),
            Msg::Engine(EngineEvent::CancelSent {
                server: srv(),
                task_id: TaskId::new("t1"),
                acked: false,
            }),
        ],
    );
    assert_eq!(
        s.tasks[&tk("t1")].phase(),
        task::Phase::CancelRequested { acked: false }
    );
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::CancelSent {
            server: srv(),
            task_id: TaskId::new("t1"),
            acked: true,
        })],
    );
    assert_eq!(
        s.tasks[&tk("t1")].phase(),
        task::Phase::CancelRequested { acked: true }
    );
}

#[test]
fn a_terminal_task_gains_its_payload_but_never_another_state() {
    let mut s = fresh();
    run(&mut s, vec![updated(task("t1", TaskStatus::Completed))]);
    let mut with_result = task("t1", TaskStatus::Completed);
    with_result.result = Some(Box::new(
        json!({"content": [{"type": "text", "text": "report"}]}),
    ));
    run(&mut s, vec![updated(with_result)]);
    assert!(s.tasks[&tk("t1")].task.as_ref().unwrap().result.is_some());
    run(&mut s, vec![updated(task("t1", TaskStatus::Working))]);
    assert_eq!(s.tasks[&tk("t1")].status(), Some(&TaskStatus::Completed));
}

#[test]
fn a_rows_text_is_made_display_safe_when_its_facts_arrive() {
    let mut s = fresh();
    let mut t = task("t1", TaskStatus::Working);
    t.status_message = Some("step \u{1b}[31mone\u{202e}\nrest".into());
    run(&mut s, vec![updated(t)]);
    let row = &s.tasks[&tk("t1")];
    assert_eq!(row.text.tool, "?");
    let message = row.text.message.clone().unwrap();
    assert!(message.starts_with("step "), "{message:?}");
    assert!(
        message.chars().all(crate::sanitize::is_printable),
        "{message:?}"
    );
    assert_eq!(row.text.reason, None);
    // A terminal snapshot that failed brings its reason, made safe once.
    let mut failed = task("t1", TaskStatus::Failed);
    failed.status_message = Some(format!("boom\u{7}{}", "x".repeat(5000)));
    run(&mut s, vec![updated(failed)]);
    let reason = s.tasks[&tk("t1")].text.reason.clone().unwrap();
    assert!(reason.starts_with("boom"), "{reason:?}");
    assert!(
        reason.chars().count() <= crate::state::widths::REASON,
        "{}",
        reason.len()
    );
    assert!(
        reason.chars().all(crate::sanitize::is_printable),
        "{reason:?}"
    );
}
