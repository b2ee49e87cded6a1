//! Reducer tests for bell and desktop alerts.

use super::{fresh, known, run, srv, t0, task, updated};
use crate::engine::{EngineEvent, KnownTask, TaskId};
use crate::mcp::TaskStatus;
use crate::state::*;

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
                lean: false,
            },
        })],
    );
    assert!(fx.is_empty());
}
