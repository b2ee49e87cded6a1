//! The engine's side of input outside tasks, against real peers: a request goes up as an
//! event and the answer comes down as a command; nobody answering within the bound ends it
//! on the person's behalf (`cancel` to a legacy server's request, the call ended for a
//! multi-round-trip round), and a request that comes with a call closes when the call ends.
//! Every wait is bounded.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;

use serde_json::json;
use taskrail::engine::*;
use taskrail::mcp::{ConnectOptions, Endpoint};
use tokio::sync::mpsc;

const LIMIT: Duration = Duration::from_secs(60);

fn engine_for(url: &str, wait: Duration) -> (EngineHandle, mpsc::Receiver<EngineEvent>, ServerId) {
    taskrail::mcp::http::install_crypto_provider();
    let spec = ServerSpec::new(
        Endpoint::Http {
            url: url.to_string(),
        },
        ConnectOptions::default(),
    );
    let id = spec.id.clone();
    let cfg = EngineConfig {
        foreground_wait: wait,
        ..Default::default()
    };
    let (engine, events, _join) = spawn_engine(vec![spec], None, cfg);
    (engine, events, id)
}

async fn call(engine: &EngineHandle, server: &ServerId, tool: &str, arguments: serde_json::Value) {
    engine
        .send(EngineCommand::CallTool {
            server: server.clone(),
            call_id: 1,
            tool: tool.into(),
            arguments,
            parent_task: None,
        })
        .await;
}

/// The next event `pick` accepts (others are skipped), within `LIMIT`.
async fn next<T>(
    events: &mut mpsc::Receiver<EngineEvent>,
    what: &str,
    pick: impl Fn(EngineEvent) -> Option<T>,
) -> T {
    let deadline = tokio::time::Instant::now() + LIMIT;
    loop {
        let ev = tokio::time::timeout_at(deadline, events.recv())
            .await
            .unwrap_or_else(|_| panic!("no {what} within {LIMIT:?}"))
            .unwrap_or_else(|| panic!("the engine stopped before {what}"));
        if let Some(t) = pick(ev) {
            return t;
        }
    }
}

fn text(result: &CallResult) -> String {
    match result {
        CallResult::Plain { result } => result["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        other => format!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_request_nobody_answers_is_cancelled_after_the_bound() {
    let peer = support::everything_http();
    let (engine, mut events, server) = engine_for(&peer.url, Duration::from_secs(2));
    call(&engine, &server, "trigger-elicitation-request", json!({})).await;
    let (key, origin, expires_in) = next(&mut events, "the request", |ev| match ev {
        EngineEvent::ForegroundInputRequested {
            key,
            origin,
            expires_in,
            ..
        } => Some((key, origin, expires_in)),
        _ => None,
    })
    .await;
    assert_eq!(expires_in, Duration::from_secs(2));
    assert!(
        matches!(&origin, InputOrigin::Call { call_id: 1, tool } if tool == "trigger-elicitation-request"),
        "{origin:?}"
    );
    let reason = next(&mut events, "the request to close", |ev| match ev {
        EngineEvent::ForegroundInputClosed { key: k, reason, .. } if k == key => Some(reason),
        _ => None,
    })
    .await;
    assert!(reason.contains("no answer within"), "{reason}");
    let result = next(&mut events, "the call to finish", |ev| match ev {
        EngineEvent::CallFinished { result, .. } => Some(result),
        _ => None,
    })
    .await;
    assert!(
        text(&result).contains("User cancelled the elicitation dialog"),
        "{result:?}"
    );
    // An answer after the bound is refused in words, not sent.
    engine
        .send(EngineCommand::AnswerForeground {
            server: server.clone(),
            key: key.clone(),
            response: json!({"action": "accept", "content": {"name": "late"}}),
        })
        .await;
    let late = next(&mut events, "the late answer's refusal", |ev| match ev {
        EngineEvent::ForegroundInputClosed { key: k, reason, .. } if k == key => Some(reason),
        _ => None,
    })
    .await;
    assert!(late.contains("no longer open"), "{late}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_goes_down_as_a_command_and_reaches_the_server() {
    let peer = support::everything_http();
    let (engine, mut events, server) = engine_for(&peer.url, Duration::from_secs(60));
    call(&engine, &server, "trigger-elicitation-request", json!({})).await;
    let key = next(&mut events, "the request", |ev| match ev {
        EngineEvent::ForegroundInputRequested { key, request, .. } => {
            assert_eq!(request.method, "elicitation/create");
            Some(key)
        }
        _ => None,
    })
    .await;
    engine
        .send(EngineCommand::AnswerForeground {
            server: server.clone(),
            key,
            response: json!({"action": "accept", "content": {"name": "Lin"}}),
        })
        .await;
    let result = next(&mut events, "the call to finish", |ev| match ev {
        EngineEvent::CallFinished { result, .. } => Some(result),
        _ => None,
    })
    .await;
    assert!(text(&result).contains("- Name: Lin"), "{result:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_round_trip_round_nobody_answers_ends_its_call() {
    let peer = support::fastmcp_http();
    let (engine, mut events, server) = engine_for(&peer.url, Duration::from_secs(2));
    call(&engine, &server, "confirm_now", json!({})).await;
    let key = next(&mut events, "the round's request", |ev| match ev {
        EngineEvent::ForegroundInputRequested { key, .. } => Some(key),
        _ => None,
    })
    .await;
    let reason = next(&mut events, "the request to close", |ev| match ev {
        EngineEvent::ForegroundInputClosed { key: k, reason, .. } if k == key => Some(reason),
        _ => None,
    })
    .await;
    assert!(reason.contains("no answer within"), "{reason}");
    let result = next(&mut events, "the call to end", |ev| match ev {
        EngineEvent::CallFinished { result, .. } => Some(result),
        _ => None,
    })
    .await;
    let CallResult::Error { message, .. } = result else {
        panic!("{result:?}");
    };
    assert!(
        message.contains("nobody answered") && message.contains("not sent again"),
        "{message}"
    );
}
