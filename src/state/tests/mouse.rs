//! Reducer tests for mouse input.

use super::{code, fresh, run, task, updated};
use crate::mcp::TaskStatus;
use crate::state::*;

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
    let first = s.board.view_keys(&s.tasks)[0].clone();
    let second = s.board.view_keys(&s.tasks)[1].clone();
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
    assert_eq!(s.board.view_len(), 1);
    // a click past the rows does nothing
    run(&mut s, vec![Msg::Mouse(Mouse::Click(Hit::Row(30)))]);
}
