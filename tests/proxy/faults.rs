//! `taskrail proxy` when things go wrong or another process acts: input answered by another
//! process on the same ledger (through the outbox, for a stdio upstream too) and the first
//! answer winning over the host's, cancels both ways, a host killed mid-call (the task goes
//! on and another process follows it to its end), and the upstream connection dropped
//! mid-call (the host keeps waiting; the tool runs once), an upstream that wants a
//! signed-in user (the host is told at once, on each call, how to sign in). Real hosts (the Python and
//! TypeScript SDK clients) and real servers (FastMCP, tower-mcp, the demo server, the TS SDK's OAuth
//! example).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;

use serde_json::Value;

use support::hosts::{
    Host, Sdk, Via, event, ledger_task, user_with_server, user_with_stdio_server,
};
use support::relay::Relay;
use support::shared::{fastmcp, tower};
use support::taskrail::{DemoProcess, Taskrail};

const LIMIT: Duration = Duration::from_secs(90);

/// The live `tool` task in the ledger, once it waits for input: (id, its input key).
fn waiting_for_input(tr: &Taskrail, tool: &str) -> (String, String) {
    let row = ledger_task(tr, &format!("{tool} waiting for input"), |t| {
        t["tool"] == tool && t["status"] == "input_required"
    });
    let id = row["taskId"].as_str().unwrap().to_string();
    let key = row["snapshot"]["inputRequests"]
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .expect("an input key");
    (id, key)
}

fn task_of(tr: &Taskrail, tool: &str) -> String {
    let row = ledger_task(tr, &format!("{tool} recorded"), |t| t["tool"] == tool);
    row["taskId"].as_str().unwrap().to_string()
}

fn answer(tr: &Taskrail, id: &str, key: &str, name: &str) {
    let run = tr.run(
        &[
            "answer",
            "-s",
            "up",
            id,
            key,
            "--json",
            &format!(r#"{{"name":"{name}"}}"#),
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "answer from another process: {run:#?}");
}

#[test]
fn another_process_answers_input_of_a_stdio_upstream_through_the_outbox() {
    let tr = user_with_stdio_server(&support::fastmcp_stdio_command());
    let host = Host::start(&tr, Sdk::Python, Via::Stdio("up"), &["--call", "ask_name"]);
    let (id, key) = waiting_for_input(&tr, "ask_name");
    // Only the proxy's process can reach this server: the answer goes through the ledger.
    answer(&tr, &id, &key, "Zed");
    let events = host.finish(LIMIT);
    assert_eq!(event(&events, "result")["text"], "Hello, Zed!");
    ledger_task(&tr, "answered and completed", |t| {
        t["taskId"] == id.as_str()
            && t["status"] == "completed"
            && t["answeredKeys"].as_array().is_some_and(|k| !k.is_empty())
    });
}

#[test]
fn the_first_answer_wins_and_the_host_is_told() {
    let tr = user_with_server(fastmcp());
    let host = Host::start(
        &tr,
        Sdk::Python,
        Via::Stdio("up"),
        &[
            "--call",
            "ask_name",
            "--elicit",
            r#"{"name":"Late"}"#,
            "--elicit-delay",
            "20",
        ],
    );
    let (id, key) = waiting_for_input(&tr, "ask_name");
    let mut host = host;
    host.wait("elicitation", LIMIT);
    answer(&tr, &id, &key, "Early");
    let events = host.finish(LIMIT);
    assert_eq!(event(&events, "result")["text"], "Hello, Early!");
    assert!(
        !events.iter().any(|e| e["event"] == "elicitation_answered"),
        "the host's prompt was withdrawn before it answered: {events:?}"
    );
}

#[test]
fn a_cancel_from_another_process_ends_the_hosts_call() {
    let tr = user_with_server(fastmcp());
    let host = Host::start(
        &tr,
        Sdk::Python,
        Via::Stdio("up"),
        &["--call", "long_sleep", "--args", r#"{"seconds":120}"#],
    );
    let id = task_of(&tr, "long_sleep");
    let run = tr.run(&["cancel", "-s", "up", &id], LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    let events = host.finish(LIMIT);
    let r = event(&events, "result");
    assert_eq!(r["isError"], true, "{events:?}");
    assert!(r["text"].as_str().unwrap().contains("cancelled"), "{r}");
    assert_ends_cancelled(&tr, &id);
}

/// The task ends cancelled upstream (followed by another process: the host and its proxy
/// may be gone by now).
fn assert_ends_cancelled(tr: &Taskrail, id: &str) {
    let watch = tr.run(&["watch", "-s", "up", id, "--json"], LIMIT);
    assert_eq!(watch.code, Some(4), "the task ends cancelled: {watch:#?}");
}

#[test]
fn a_host_side_cancel_reaches_a_polling_upstream() {
    let tr = user_with_server(fastmcp());
    let events = Host::start(
        &tr,
        Sdk::Python,
        Via::Stdio("up"),
        &[
            "--call",
            "long_sleep",
            "--args",
            r#"{"seconds":120}"#,
            "--cancel-after",
            "4",
        ],
    )
    .finish(LIMIT);
    assert!(
        events.iter().any(|e| e["event"] == "cancelled"),
        "{events:?}"
    );
    let row = ledger_task(&tr, "cancelled upstream", |t| {
        t["tool"] == "long_sleep" && t["status"] == "cancelled"
    });
    assert_eq!(row["cancel"], true, "the cancel was acknowledged: {row}");
}

#[test]
fn a_host_side_cancel_reaches_a_push_upstream_over_http() {
    let tr = user_with_server(tower());
    let (_proxy, url) = support::hosts::listen(&tr, "up");
    let events = Host::start(
        &tr,
        Sdk::Ts,
        Via::Url(&url),
        &[
            "--call",
            "work",
            "--args",
            r#"{"steps":60,"delay_ms":1000}"#,
            "--cancel-after",
            "4",
        ],
    )
    .finish(LIMIT);
    assert!(
        events.iter().any(|e| e["event"] == "cancelled"),
        "{events:?}"
    );
    ledger_task(&tr, "cancelled upstream", |t| {
        t["tool"] == "work" && t["status"] == "cancelled"
    });
}

#[test]
fn a_killed_host_leaves_its_task_to_another_process() {
    let tr = user_with_server(fastmcp());
    let mut host = Host::start(
        &tr,
        Sdk::Python,
        Via::Stdio("up"),
        &[
            "--call",
            "slow_count",
            "--args",
            r#"{"steps":12,"delay":0.5}"#,
        ],
    );
    let id = task_of(&tr, "slow_count");
    host.kill9();
    // The proxy saw its stdin close and gave the lease up: `watch` follows to the end.
    let watch = tr.run(&["watch", "-s", "up", &id, "--json"], LIMIT);
    assert_eq!(watch.code, Some(0), "{watch:#?}");
    let last = watch.json_lines().pop().unwrap();
    assert_eq!(last["status"], "completed");
    assert_eq!(last["result"]["content"][0]["text"], "counted to 12");
}

#[test]
fn a_killed_host_ends_the_tasks_of_a_stdio_upstream() {
    let tr = user_with_stdio_server(&support::fastmcp_stdio_command());
    let mut host = Host::start(
        &tr,
        Sdk::Python,
        Via::Stdio("up"),
        &["--call", "long_sleep", "--args", r#"{"seconds":120}"#],
    );
    let id = task_of(&tr, "long_sleep");
    host.kill9();
    let row = ledger_task(&tr, "ended with its server process", |t| {
        t["taskId"] == id.as_str() && t["expired"] == true
    });
    assert_eq!(row["end"], "session_lost", "{row}");
}

#[test]
fn an_upstream_drop_mid_call_is_resumed_and_the_tool_runs_once() {
    let demo = DemoProcess::start(&["--listen", "127.0.0.1:0"]);
    let relay = Relay::start(&demo.url);
    let tr = user_with_server(&relay.url);
    let mut host = Host::start(
        &tr,
        Sdk::Ts,
        Via::Stdio("up"),
        &[
            "--call",
            "render_report",
            "--args",
            r#"{"pages":12}"#,
            "--progress",
        ],
    );
    host.wait("progress", LIMIT);
    relay.drop_for(Duration::from_secs(3));
    let events = host.finish(LIMIT);
    let r = event(&events, "result");
    assert_eq!(r["isError"], false, "{events:?}");
    assert!(
        r["text"].as_str().unwrap().contains("12 pages"),
        "{events:?}"
    );
    let stats = demo.stats();
    assert_eq!(
        stats["methods"]["tools/call"], 1,
        "the tool was called once: {stats}"
    );
}

/// A host line that is not UTF-8 gets a parse error and one over the size bound an error
/// for its id at once (the host does not wait for a reply that never comes); the session
/// goes on after both.
#[test]
fn bad_host_lines_get_error_replies_and_the_session_goes_on() {
    let demo = DemoProcess::start(&["--listen", "127.0.0.1:0"]);
    let tr = user_with_server(&demo.url);
    let mut proxy = tr.spawn(&["proxy", "up"]);
    proxy.write_line(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bad-lines","version":"1"}}}"#,
    );
    proxy.wait_stdout(r#""id":1"#, LIMIT);
    proxy.write_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    proxy.write_bytes(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\xff\"}\n");
    let parse: Value = serde_json::from_str(&proxy.wait_stdout("-32700", LIMIT)).unwrap();
    assert_eq!(parse["id"], Value::Null, "{parse}");
    let mut big = br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x","arguments":{"pad":""#.to_vec();
    big.resize(big.len() + 17 * 1024 * 1024, b'a');
    big.extend_from_slice(b"\"}}}\n");
    proxy.write_bytes(&big);
    let over: Value = serde_json::from_str(&proxy.wait_stdout(r#""id":3"#, LIMIT)).unwrap();
    assert_eq!(over["error"]["code"], -32600, "{over}");
    proxy.write_line(r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#);
    let tools: Value = serde_json::from_str(&proxy.wait_stdout(r#""id":4"#, LIMIT)).unwrap();
    assert!(tools["result"]["tools"].is_array(), "{tools}");
    let run = proxy.finish(LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
}

#[test]
fn an_upstream_that_wants_sign_in_tells_the_host_at_once() {
    let peer = support::sdk_oauth_http();
    let tr = user_with_server(&peer.url);
    // A request timeout longer than the test's bound: only the sign-in answer ends the wait.
    let mut proxy = tr.spawn(&["proxy", "up", "--listen", "127.0.0.1:0", "--timeout", "600"]);
    let line = proxy.wait_stderr("serving ", Duration::from_secs(30));
    let url = line.rsplit("serving ").next().unwrap().trim().to_string();
    let header = support::hosts::bearer(&support::hosts::token(&tr, "signin-host"));
    let mut host = Host::start(
        &tr,
        Sdk::Ts,
        Via::Url(&url),
        &["--header", &header, "--call", "echo"],
    );
    // The session starts (the proxy answers the handshake); the call is a tool error.
    host.wait("connected", LIMIT);
    let result = host.wait("result", LIMIT);
    assert_eq!(result["isError"], true, "{result}");
    let message = result["text"].as_str().unwrap_or_default();
    assert!(message.contains("wants a signed-in user"), "{result}");
    assert!(message.contains("taskrail auth login up"), "{result}");
    let events = host.finish(LIMIT);
    assert!(events.iter().all(|e| e["event"] != "error"), "{events:?}");
}
