//! Reducer tests for the `:` command line.

use super::{code, key, known, run, srv, typed};
use crate::engine::{ServerId, TaskId};
use crate::state::command::{self, Command};
use crate::state::*;

#[test]
fn command_line_narrows_by_server_sorts_filters_and_exports() {
    let beta = ServerId::named("beta");
    let mut s = State::new(vec![srv(), beta.clone()], false, Keymap::default_keymap());
    run(
        &mut s,
        vec![known(&srv(), "a1", "render"), known(&beta, "b1", "deploy")],
    );
    assert_eq!(s.board.view_len(), 2);
    typed(&mut s, "server be");
    assert_eq!(s.board.server, Some(beta.clone()));
    assert_eq!(
        s.board.view_keys(&s.tasks),
        vec![TaskKey::new(&beta, &TaskId::new("b1"))]
    );
    assert!(s.command.is_none());
    typed(&mut s, "server all");
    assert_eq!(s.board.view_len(), 2);
    typed(&mut s, "sort tool asc");
    assert_eq!(
        (s.board.sort, s.board.descending),
        (SortColumn::Tool, false)
    );
    assert_eq!(s.board.view_keys(&s.tasks)[0].task_id, "b1");
    typed(&mut s, "filter rend");
    assert_eq!(
        s.board.view_keys(&s.tasks),
        vec![TaskKey::new(&srv(), &TaskId::new("a1"))]
    );
    let fx = typed(&mut s, "export /tmp/x.jsonl");
    assert_eq!(
        fx,
        vec![Effect::Export {
            key: TaskKey::new(&srv(), &TaskId::new("a1")),
            path: "/tmp/x.jsonl".into()
        }]
    );
    // without a file: a name from the id, plain and different for ids sharing a prefix
    let fx = typed(&mut s, "export");
    let [Effect::Export { path, .. }] = fx.as_slice() else {
        panic!("{fx:?}")
    };
    assert_eq!(
        path,
        &format!("taskrail-{}.jsonl", TaskId::new("a1").file_stem())
    );
    // an error keeps the line open with the message
    typed(&mut s, "server nowhere");
    let line = s.command.as_ref().expect("still open");
    assert!(line.error.as_deref().unwrap().contains("no server"));
    run(&mut s, vec![code(KeyCode::Esc)]);
    assert!(s.command.is_none());
}

#[test]
fn command_completion_names_then_arguments() {
    let mut s = State::new(
        vec![srv(), ServerId::named("beta")],
        false,
        Keymap::default_keymap(),
    );
    s.themes = vec!["dark".into(), "light".into(), "mono".into()];
    run(&mut s, vec![key(':'), key('s')]);
    run(&mut s, vec![code(KeyCode::Tab)]);
    let line = s.command.as_ref().unwrap();
    assert_eq!(
        line.input.value(),
        "s",
        "ambiguous: server, servers, sort, stats"
    );
    assert_eq!(
        line.candidates,
        vec![
            "server".to_string(),
            "servers".to_string(),
            "sort".to_string(),
            "stats".to_string()
        ]
    );
    run(&mut s, vec![key('e'), code(KeyCode::Tab)]);
    assert_eq!(s.command.as_ref().unwrap().input.value(), "server");
    run(&mut s, vec![key(' '), key('b'), code(KeyCode::Tab)]);
    assert_eq!(s.command.as_ref().unwrap().input.value(), "server beta");
    assert_eq!(
        command::complete("theme l", &s),
        vec!["theme light".to_string()]
    );
    assert_eq!(command::complete("sort tool ", &s).len(), 2);
    assert_eq!(
        command::parse("th mono", &s),
        Ok(Command::Theme("mono".into()))
    );
    assert!(command::parse("theme neon", &s).is_err());
    let fx = typed(&mut State { command: None, ..s }, "theme mono");
    assert_eq!(fx, vec![Effect::SetTheme("mono".into())]);
}
