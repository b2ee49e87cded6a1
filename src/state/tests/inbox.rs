//! Reducer tests for the input inbox.

use chrono::TimeDelta;

use super::{asks, code, key, known, run, srv, t0, task, updated};
use crate::engine::{EngineEvent, ServerId, TaskId, UpdateSource};
use crate::mcp::TaskStatus;
use crate::state::views::inbox;
use crate::state::*;

#[test]
fn inbox_lists_every_request_oldest_first_and_answers_in_place() {
    let beta = ServerId::named("beta");
    let mut s = State::new(vec![srv(), beta.clone()], false, Keymap::default_keymap());
    let waiting = task("b1", TaskStatus::InputRequired);
    // beta's request is seen first, alpha's later
    update(&mut s, known(&beta, "b1", "deploy"), t0());
    update(
        &mut s,
        Msg::Engine(EngineEvent::snapshot(
            beta.clone(),
            waiting,
            UpdateSource::Poll,
            None,
        )),
        t0(),
    );
    update(&mut s, asks(&beta, "b1", "k"), t0());
    let later = t0() + TimeDelta::seconds(30);
    update(&mut s, known(&srv(), "a1", "render"), later);
    update(
        &mut s,
        updated(task("a1", TaskStatus::InputRequired)),
        later,
    );
    update(&mut s, asks(&srv(), "a1", "k1"), later);
    update(&mut s, asks(&srv(), "a1", "k2"), later);
    let list = inbox::entries(&s);
    let order: Vec<(String, &str)> = list
        .iter()
        .map(|e| (e.short_id(), e.input_key.as_str()))
        .collect();
    assert_eq!(
        order,
        vec![("b1".into(), "k"), ("a1".into(), "k1"), ("a1".into(), "k2")]
    );

    run(&mut s, vec![key('i')]);
    assert!(matches!(s.modals.last(), Some(Modal::Inbox(_))));
    assert_eq!(s.context(), Context::Picker);
    run(&mut s, vec![key('j'), code(KeyCode::Enter)]);
    match s.modals.last() {
        Some(Modal::Input(f)) => assert_eq!(
            f.target,
            InputTarget::Task(TaskKey::new(&srv(), &TaskId::new("a1")))
        ),
        other => panic!("expected the input form of a1, got {other:?}"),
    }
    // the form answers over the inbox; closing it returns to the inbox
    run(&mut s, vec![code(KeyCode::Esc)]);
    assert!(matches!(s.modals.last(), Some(Modal::Inbox(_))));
    // a request that stops being pending leaves the inbox (and its first-seen time)
    run(
        &mut s,
        vec![updated(task("a1", TaskStatus::Completed)), Msg::Tick],
    );
    assert_eq!(inbox::entries(&s).len(), 1);
    assert_eq!(s.input_since.len(), 1);
}
