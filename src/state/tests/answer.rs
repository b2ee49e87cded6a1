//! Reducer tests for answering input: the "answer sent" mark, failures, forms closed by the task ending.

use serde_json::json;

use super::{code, elicit, fresh, key, run, srv, task, tk, updated};
use crate::engine::{EngineCommand, EngineEvent, Failure, TaskId};
use crate::mcp::TaskStatus;
use crate::state::*;

#[test]
fn answer_sent_until_the_server_moves_on() {
    let mut s = fresh();
    let req =
        elicit(json!({"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}));
    let mut t = task("t1", TaskStatus::InputRequired);
    t.input_requests.insert("k1".into(), req);
    run(&mut s, vec![updated(t.clone()), code(KeyCode::Enter)]);
    assert!(matches!(s.modals.last(), Some(Modal::Input(_))));
    let fx = run(&mut s, vec![key('4'), key('2'), code(KeyCode::Enter)]);
    let Effect::Engine(EngineCommand::Answer { responses, .. }) = &fx[0] else {
        panic!("{fx:?}")
    };
    assert_eq!(
        responses["k1"],
        json!({"action":"accept","content":{"n":42}})
    );
    assert!(s.tasks[&tk("t1")].answer.is_some());
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::AnswerSent {
            server: srv(),
            task_id: TaskId::new("t1"),
            keys: vec!["k1".into()],
        })],
    );
    assert!(s.tasks[&tk("t1")].answer.as_ref().unwrap().acked);
    // same snapshot again: not moved on yet
    run(&mut s, vec![updated(t)]);
    assert!(s.tasks[&tk("t1")].answer.is_some());
    run(&mut s, vec![updated(task("t1", TaskStatus::Working))]);
    assert!(s.tasks[&tk("t1")].answer.is_none());
}

#[test]
fn answer_failure_restores_the_request() {
    let mut s = fresh();
    let mut t = task("t1", TaskStatus::InputRequired);
    t.input_requests.insert(
        "k1".into(),
        elicit(json!({"type":"object","properties":{}})),
    );
    run(&mut s, vec![updated(t), key('a'), code(KeyCode::Enter)]);
    assert!(s.tasks[&tk("t1")].pending.is_empty());
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::AnswerFailed {
            server: srv(),
            task_id: TaskId::new("t1"),
            keys: vec!["k1".into()],
            error: Failure::Failed("nope".into()),
        })],
    );
    let row = &s.tasks[&tk("t1")];
    assert!(row.pending.contains_key("k1") && row.answer.is_none());
}

#[test]
fn terminal_snapshot_closes_the_open_form_without_sending() {
    let mut s = fresh();
    let mut t = task("t1", TaskStatus::InputRequired);
    t.input_requests.insert(
        "k1".into(),
        elicit(json!({"type":"object","properties":{}})),
    );
    run(&mut s, vec![updated(t), key('a')]);
    assert!(matches!(s.modals.last(), Some(Modal::Input(_))));
    let fx = run(&mut s, vec![updated(task("t1", TaskStatus::Failed))]);
    // nothing is sent (the only effect is the "finished" alert)
    assert!(!fx.iter().any(|e| matches!(e, Effect::Engine(_))) && s.modals.is_empty());
    assert!(s.notices.last().unwrap().text.contains("nothing was sent"));
}
