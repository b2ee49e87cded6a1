//! Reducer tests for cancelling a task.

use super::{fresh, key, run, srv, task, tk, updated};
use crate::engine::{EngineCommand, EngineEvent, Failure, TaskId};
use crate::mcp::TaskStatus;
use crate::state::task::Phase;
use crate::state::*;

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
            by: crate::engine::CancelBy::dashboard(),
            server: srv(),
            task_id: TaskId::new("t1")
        })]
    );
    assert!(s.modals.is_empty());
    let row = |s: &State| s.tasks[&tk("t1")].phase();
    assert_eq!(row(&s), Phase::CancelRequested { acked: false });
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::CancelSent {
            server: srv(),
            task_id: TaskId::new("t1"),
            acked: true,
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
            task_id: TaskId::new("t1"),
            error: Failure::Failed("boom".into()),
        })],
    );
    assert!(s.tasks[&tk("t1")].cancel.is_none());
    assert_eq!(s.notices.last().unwrap().level, NoticeLevel::Error);
}
