//! Reducer tests for line editing: the form fields, the `/` filter and the `:` line edit
//! text with the same keys.

use serde_json::json;

use super::{elicit, fresh, key, run, srv, task, updated};
use crate::engine::{EngineEvent, TaskId};
use crate::mcp::TaskStatus;
use crate::state::*;

/// Type `alpha beta`, then ctrl+w, ctrl+a `>`, ctrl+e `!`, reading the line after each
/// step, then ctrl+u.
fn edit_steps(s: &mut State, value: impl Fn(&State) -> String) -> Vec<String> {
    let mut seen = Vec::new();
    run(s, "alpha beta".chars().map(key).collect());
    seen.push(value(s));
    let steps: [Vec<Msg>; 4] = [
        vec![Msg::Key(Key::ctrl('w'))],
        vec![Msg::Key(Key::ctrl('a')), key('>')],
        vec![Msg::Key(Key::ctrl('e')), key('!')],
        vec![Msg::Key(Key::ctrl('u'))],
    ];
    for step in steps {
        run(s, step);
        seen.push(value(s));
    }
    seen
}

fn expected() -> Vec<String> {
    ["alpha beta", "alpha ", ">alpha ", ">alpha !", ""]
        .map(String::from)
        .to_vec()
}

#[test]
fn every_line_editor_takes_the_same_editing_keys() {
    // the `/` filter line
    let mut s = fresh();
    run(&mut s, vec![key('/')]);
    let filter = edit_steps(&mut s, |s| s.board.filter.input.value().to_string());
    assert_eq!(filter, expected());
    assert_eq!(
        s.context(),
        Context::Filter,
        "editing keys do not leave the line"
    );

    // the `:` command line
    let mut s = fresh();
    run(&mut s, vec![key(':')]);
    let command = edit_steps(&mut s, |s| {
        s.command.as_ref().expect("open").input.value().to_string()
    });
    assert_eq!(command, expected());

    // a text field of an input form
    let mut s = fresh();
    let req = elicit(json!({"type": "object", "properties": {"name": {"type": "string"}}}));
    let mut t = task("t1", TaskStatus::InputRequired);
    t.input_requests.insert("k".into(), req.clone());
    run(
        &mut s,
        vec![
            updated(t),
            Msg::Engine(EngineEvent::InputRequested {
                server: srv(),
                task_id: TaskId::new("t1"),
                key: "k".into(),
                request: req,
            }),
            key('a'),
        ],
    );
    let field = edit_steps(&mut s, |s| match s.modals.last() {
        Some(Modal::Input(f)) => f.form.fields[0].input.value().to_string(),
        other => panic!("expected the input form, got {other:?}"),
    });
    assert_eq!(field, expected());
}
