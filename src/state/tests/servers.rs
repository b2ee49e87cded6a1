//! Reducer tests for servers: the reason a server fails, kept while it reconnects and
//! cleared by its first answer; what it can do for push; disabled servers; the servers
//! view; the tool picker on a failing server.

use super::{code, fresh, key, run, srv, task, updated};
use crate::engine::{EngineEvent, ServerId, UpdateSource};
use crate::mcp::{Era, TaskStatus, ToolInfo};
use crate::state::servers::PushMode;
use crate::state::*;

fn ev(e: EngineEvent) -> Msg {
    Msg::Engine(e)
}

fn connected(push: bool) -> Msg {
    ev(EngineEvent::ServerConnected {
        server: srv(),
        era: Era::Modern,
        push,
        server_name: None,
    })
}

fn degraded(reason: &str) -> Msg {
    ev(EngineEvent::ServerDegraded {
        server: srv(),
        reason: reason.into(),
    })
}

fn reconnecting(attempt: u32) -> Msg {
    ev(EngineEvent::Reconnecting {
        server: srv(),
        attempt,
        retry_in: std::time::Duration::from_secs(1),
    })
}

const NOT_MCP: &str = "not an MCP endpoint (HTTP 501): the URL answers HTTP, but not MCP";

#[test]
fn a_failure_is_said_in_words_until_the_server_answers_again() {
    let mut s = fresh();
    run(&mut s, vec![degraded(NOT_MCP), reconnecting(6)]);
    let text = s.servers[0].health_text();
    assert!(text.starts_with("not an MCP endpoint (HTTP 501)"), "{text}");
    assert!(text.ends_with("(retry #6)"), "{text}");
    // recovery: connected, then a failure while polling, then any answer clears it
    run(&mut s, vec![connected(false), degraded("HTTP 503")]);
    assert!(matches!(s.servers[0].health, Health::Degraded { .. }));
    run(&mut s, vec![updated(task("t1", TaskStatus::Working))]);
    assert_eq!(
        s.servers[0].health,
        Health::Connected,
        "a snapshot is an answer"
    );
    // a push stream that comes back clears "reconnecting"
    run(&mut s, vec![reconnecting(1)]);
    assert_eq!(s.servers[0].health, Health::Reconnecting { attempt: 1 });
    run(
        &mut s,
        vec![ev(EngineEvent::PushChanged {
            server: srv(),
            push: true,
        })],
    );
    assert_eq!(s.servers[0].health, Health::Connected);
    // a tool listing is an answer too
    run(&mut s, vec![degraded("HTTP 500")]);
    run(
        &mut s,
        vec![ev(EngineEvent::ToolsListed {
            server: srv(),
            tools: Vec::new(),
        })],
    );
    assert_eq!(s.servers[0].health, Health::Connected);
}

#[test]
fn the_mode_says_what_the_server_can_do_for_push() {
    let mut s = fresh();
    assert_eq!(s.servers[0].push_mode(), PushMode::Unknown);
    run(&mut s, vec![connected(false)]);
    assert_eq!(s.servers[0].push_mode(), PushMode::Polling);
    let push = |on| {
        ev(EngineEvent::PushChanged {
            server: srv(),
            push: on,
        })
    };
    run(&mut s, vec![push(true)]);
    assert_eq!(s.servers[0].push_mode(), PushMode::InUse);
    // the stream drops for a moment: the server still supports push
    run(&mut s, vec![push(false), reconnecting(1)]);
    assert_eq!(s.servers[0].push_mode(), PushMode::Supported);
    assert_eq!(PushMode::Supported.label(), "push supported");
}

#[test]
fn the_tool_picker_on_a_failing_server_says_why_and_can_be_left() {
    let mut s = fresh();
    run(&mut s, vec![degraded(NOT_MCP), reconnecting(2)]);
    run(&mut s, vec![key('n')]);
    match s.modals.last() {
        Some(Modal::ToolPicker(tp)) => {
            let e = tp.error.as_deref().expect("the reason is shown");
            assert!(e.contains("not an MCP endpoint"), "{e}");
        }
        other => panic!("expected the tool picker, got {other:?}"),
    }
    run(&mut s, vec![code(KeyCode::Esc)]);
    assert!(s.modals.is_empty(), "esc leaves it");

    // a picker opened on a healthy server learns of a failure, and of tools/list failing
    let mut s = fresh();
    run(&mut s, vec![connected(false), key('n')]);
    run(&mut s, vec![degraded("connection refused: cannot connect")]);
    let Some(Modal::ToolPicker(tp)) = s.modals.last() else {
        panic!("picker gone");
    };
    assert!(
        tp.error
            .as_deref()
            .unwrap()
            .starts_with("connection refused")
    );
    run(
        &mut s,
        vec![ev(EngineEvent::ToolsListed {
            server: srv(),
            tools: vec![ToolInfo {
                name: "deploy".into(),
                title: None,
                description: None,
                input_schema: serde_json::json!({"type": "object"}),
                task_support: None,
            }],
        })],
    );
    let Some(Modal::ToolPicker(tp)) = s.modals.last() else {
        panic!("picker gone");
    };
    assert!(
        tp.error.is_none() && tp.tools.is_some(),
        "the list came: {tp:?}"
    );
}

#[test]
fn a_disabled_server_is_shown_with_why_and_the_servers_view_lists_everyone() {
    let beta = ServerId::named("beta");
    let mut s = State::new(vec![srv(), beta.clone()], false, Keymap::default_keymap());
    s.disable_server(
        &beta,
        "line 5: header Authorization: environment variable TOKEN is not set",
    );
    assert!(s.servers[1].health_text().starts_with("disabled: line 5"));
    run(
        &mut s,
        vec![
            connected(true),
            ev(EngineEvent::TaskUpdated {
                server: srv(),
                task: task("t1", TaskStatus::Working),
                source: UpdateSource::Push,
                latency_ms: None,
                pending: Vec::new(),
            }),
            key('v'),
        ],
    );
    let Some(Modal::Doc(d)) = s.modals.last() else {
        panic!("expected the servers view, got {:?}", s.modals.last());
    };
    let text: Vec<String> = d
        .lines
        .iter()
        .map(|l| format!("{}: {}", l.label.clone().unwrap_or_default(), l.text))
        .collect();
    let all = text.join("\n");
    assert!(all.contains("updates: push"), "{all}");
    assert!(
        all.contains("environment variable TOKEN is not set"),
        "{all}"
    );
    assert!(all.contains("beta"), "{all}");
}
