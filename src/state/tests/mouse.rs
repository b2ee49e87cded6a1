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
    let click = |k: &TaskKey| Msg::Mouse(Mouse::Click(Hit::Row(k.clone())));
    run(&mut s, vec![click(&second)]);
    assert_eq!(s.board.selected, Some(second.clone()));
    let fx = run(&mut s, vec![click(&second)]);
    assert_eq!(
        fx,
        vec![Effect::LoadTimeline(second.clone())],
        "a second click opens"
    );
    run(
        &mut s,
        vec![code(KeyCode::Esc), Msg::Mouse(Mouse::ScrollUp)],
    );
    assert_eq!(s.board.selected, Some(first.clone()));
    run(&mut s, vec![Msg::Mouse(Mouse::Click(Hit::Tab(Tab::Done)))]);
    assert_eq!(s.board.tab, Tab::Done);
    assert_eq!(s.board.view_len(), 1);
    // a click on a row drawn before the tab changed, now out of the view, selects nothing
    let working = [first, second.clone()]
        .into_iter()
        .find(|k| k.task_id.as_str() == "t1")
        .unwrap();
    let selected = s.board.selected.clone();
    let fx = run(&mut s, vec![click(&working)]);
    assert!(fx.is_empty(), "{fx:?}");
    assert_eq!(s.board.selected, selected);
    // a click on nothing does nothing
    let fx = run(&mut s, vec![Msg::Mouse(Mouse::Click(Hit::Elsewhere))]);
    assert!(fx.is_empty(), "{fx:?}");
}
