//! Reducer tests for the wire view: opening it, the ring's bound, the filter typed in
//! place, pause and live again, switching servers, a message opened as JSON.

use chrono::TimeDelta;
use serde_json::json;

use super::{code, key, run, srv, t0};
use crate::state::views::wire::{self, Carrier, Direction, RING, WireRecord};
use crate::state::*;

fn rec(server: &str, n: i64, msg: serde_json::Value) -> Msg {
    Msg::Wire(WireRecord {
        time: t0() + TimeDelta::milliseconds(n),
        server: server.to_string(),
        direction: if n % 2 == 0 {
            Direction::Send
        } else {
            Direction::Recv
        },
        transport: Carrier::Http,
        message: msg,
    })
}

fn request(server: &str, n: i64, method: &str) -> Msg {
    rec(
        server,
        n,
        json!({ "jsonrpc": "2.0", "id": n, "method": method, "params": {} }),
    )
}

fn view(s: &State) -> &wire::WireView {
    match s.modals.last() {
        Some(Modal::Wire(v)) => v,
        other => panic!("the wire view is not on top: {other:?}"),
    }
}

fn methods(s: &State) -> Vec<String> {
    wire::shown(&s.wire, view(s))
        .iter()
        .map(|e| e.method.clone())
        .collect()
}

#[test]
fn w_opens_the_view_newest_first_and_the_ring_is_bounded() {
    let mut s = fresh_with_beta();
    run(&mut s, vec![key('w')]);
    assert_eq!(s.context(), Context::Wire);
    assert!(crate::state::wire::is_open(&s));
    for n in 0..(RING as i64 + 20) {
        update(&mut s, request("alpha", n, &format!("m{n}")), t0());
    }
    update(&mut s, request("beta", 9999, "tools/list"), t0());
    let list = methods(&s);
    assert_eq!(
        list.len(),
        RING + 1,
        "alpha's ring keeps {RING}, beta's one"
    );
    assert_eq!(list[0], "tools/list", "newest first");
    assert_eq!(list[1], format!("m{}", RING + 19));
    assert!(!list.contains(&"m19".to_string()), "the oldest went first");
    run(&mut s, vec![key('q')]);
    assert!(!crate::state::wire::is_open(&s));
}

fn fresh_with_beta() -> State {
    State::new(
        vec![srv(), ServerId::named("beta")],
        false,
        Keymap::default_keymap(),
    )
}

#[test]
fn the_filter_is_typed_in_place_and_cleared_with_esc() {
    let mut s = fresh_with_beta();
    run(
        &mut s,
        vec![
            request("alpha", 0, "tools/call"),
            request("alpha", 2, "tasks/get"),
            request("beta", 4, "tasks/get"),
            key('w'),
            key('/'),
        ],
    );
    assert_eq!(s.context(), Context::Filter);
    run(&mut s, "get beta".chars().map(key).collect());
    assert_eq!(methods(&s), vec!["tasks/get"]);
    assert_eq!(view(&s).filter.value(), "get beta");
    // enter keeps the filter; the view's own keys work again
    run(&mut s, vec![code(KeyCode::Enter)]);
    assert_eq!(s.context(), Context::Wire);
    assert_eq!(methods(&s).len(), 1);
    run(&mut s, vec![key('/'), code(KeyCode::Esc)]);
    assert_eq!(methods(&s).len(), 3);
    assert_eq!(s.context(), Context::Wire);
}

#[test]
fn pause_stands_the_list_still_while_messages_keep_coming() {
    let mut s = fresh();
    run(
        &mut s,
        vec![
            key('w'),
            request("alpha", 0, "first"),
            request("alpha", 2, "second"),
        ],
    );
    run(&mut s, vec![key('j')]);
    assert_eq!(view(&s).selected, 1);
    run(&mut s, vec![key('p')]);
    assert!(view(&s).paused_at.is_some());
    run(
        &mut s,
        vec![request("alpha", 4, "third"), request("alpha", 6, "fourth")],
    );
    assert_eq!(
        methods(&s),
        vec!["second", "first"],
        "paused: nothing new shows"
    );
    assert_eq!(wire::arrived_since_pause(&s.wire, view(&s)), 2);
    run(&mut s, vec![code(KeyCode::Char(' '))]);
    assert!(view(&s).paused_at.is_none(), "space goes live again");
    assert_eq!(methods(&s), vec!["fourth", "third", "second", "first"]);
}

#[test]
fn tab_walks_every_server_then_each_and_the_command_names_one() {
    let mut s = fresh_with_beta();
    run(
        &mut s,
        vec![request("alpha", 0, "a"), request("beta", 2, "b"), key(':')],
    );
    run(&mut s, "wire beta".chars().map(key).collect());
    run(&mut s, vec![code(KeyCode::Enter)]);
    assert_eq!(view(&s).server.as_deref(), Some("beta"));
    assert_eq!(methods(&s), vec!["b"]);
    run(&mut s, vec![code(KeyCode::Tab)]);
    assert_eq!(view(&s).server, None, "after the last server: every server");
    run(&mut s, vec![code(KeyCode::Tab)]);
    assert_eq!(view(&s).server.as_deref(), Some("alpha"));
    assert_eq!(methods(&s), vec!["a"]);
}

#[test]
fn enter_opens_the_message_as_pretty_json_and_text_is_made_safe() {
    let mut s = fresh();
    run(
        &mut s,
        vec![
            key('w'),
            rec(
                "alpha",
                1,
                json!({ "jsonrpc": "2.0", "id": 7, "result": { "text": "evil\u{1b}]52;c;AAAA\u{7}" } }),
            ),
        ],
    );
    let e = wire::shown(&s.wire, view(&s))[0].clone();
    assert_eq!(e.method, "result #7");
    assert!(!e.summary.contains('\u{1b}') && !e.summary.contains('\u{7}'));
    run(&mut s, vec![code(KeyCode::Enter)]);
    let Some(Modal::Doc(doc)) = s.modals.last() else {
        panic!("the message opens as a document");
    };
    let text: String = doc.lines.iter().map(|l| l.text.clone()).collect();
    assert!(text.contains("\"id\": 7"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text}");
    run(&mut s, vec![code(KeyCode::Esc)]);
    assert_eq!(s.context(), Context::Wire, "esc goes back to the list");
}

fn fresh() -> State {
    State::new(vec![srv()], false, Keymap::default_keymap())
}
