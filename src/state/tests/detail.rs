//! Reducer tests for the detail view.

use super::{code, fresh, key, run, t0, task, tk, updated};
use crate::mcp::TaskStatus;
use crate::state::modal::TimelineState;
use crate::state::*;

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
