//! `taskrail proxy` between real agent hosts and real servers, none written here: the
//! Python SDK client and the TypeScript SDK client play the host (stdio and HTTP, with and
//! without tasks, 2025-11-25 and 2026-07-28); FastMCP (polling), the tower-mcp peer (push)
//! and server-everything (legacy) are the upstream. Every task a call creates must be in
//! the ledger with its tool, arguments and the host's name, and the host must get what it
//! expects: the final result (blocking) or the task handle it drives itself.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;

use serde_json::Value;
use support::hosts::{Host, Sdk, Via, event, ledger_task, listen_as, user_with_server};
use support::shared::{everything, fastmcp, tower};
use support::taskrail::Taskrail;

const LIMIT: Duration = Duration::from_secs(90);

/// The ledger row of the task `tool` created, once its status is `status`.
fn recorded(tr: &Taskrail, tool: &str, status: &str) -> Value {
    ledger_task(tr, &format!("{tool} {status}"), |t| {
        t["tool"] == tool && t["status"] == status
    })
}

fn result(events: &[Value]) -> &Value {
    event(events, "result")
}

#[test]
fn python_stdio_blocking_call_gets_progress_and_the_result() {
    let tr = user_with_server(fastmcp());
    let host = Host::start(
        &tr,
        Sdk::Python,
        Via::Stdio("up"),
        &[
            "--name",
            "claude-code",
            "--list",
            "--call",
            "slow_count",
            "--args",
            r#"{"steps":3,"delay":0.4}"#,
            "--progress",
        ],
    );
    let events = host.finish(LIMIT);
    let tools = event(&events, "tools");
    assert!(
        tools["names"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "ask_name"),
        "tools/list is forwarded: {tools}"
    );
    assert_eq!(event(&events, "connected")["protocolVersion"], "2025-11-25");
    let r = result(&events);
    assert_eq!(r["text"], "counted to 3", "{events:?}");
    assert_eq!(r["isError"], false);
    let messages: Vec<&str> = events
        .iter()
        .filter(|e| e["event"] == "progress")
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert!(
        messages.iter().any(|m| m.starts_with("step ")),
        "the statusMessage reaches the host as progress: {messages:?}"
    );
    let row = recorded(&tr, "slow_count", "completed");
    assert_eq!(row["startedBy"], "claude-code");
    assert_eq!(row["arguments"]["steps"], 3);
    assert_eq!(row["server"], "up");
}

#[test]
fn python_stdio_host_with_elicitation_answers_the_input_itself() {
    let tr = user_with_server(fastmcp());
    let host = Host::start(
        &tr,
        Sdk::Python,
        Via::Stdio("up"),
        &["--call", "ask_name", "--elicit", r#"{"name":"Ada"}"#],
    );
    let events = host.finish(LIMIT);
    assert_eq!(
        event(&events, "elicitation")["message"],
        "What is your name?"
    );
    assert_eq!(result(&events)["text"], "Hello, Ada!");
    let row = recorded(&tr, "ask_name", "completed");
    assert_eq!(row["startedBy"], "python-host");
    let timeline = tr.run(
        &["timeline", row["taskId"].as_str().unwrap(), "--json"],
        LIMIT,
    );
    assert!(
        timeline.stdout.contains("input_sent"),
        "the host's answer is in the timeline: {}",
        timeline.stdout
    );
}

#[test]
fn python_modern_host_without_tasks_answers_multi_round_trip_input() {
    let tr = user_with_server(fastmcp());
    let host = Host::start(
        &tr,
        Sdk::Python,
        Via::Stdio("up"),
        &[
            "--mode",
            "auto",
            "--call",
            "ask_name",
            "--elicit",
            r#"{"name":"Bo"}"#,
        ],
    );
    let events = host.finish(LIMIT);
    assert_eq!(event(&events, "connected")["protocolVersion"], "2026-07-28");
    let asked = events
        .iter()
        .filter(|e| e["event"] == "elicitation")
        .count();
    assert_eq!(asked, 1, "asked once: {events:?}");
    assert_eq!(result(&events)["text"], "Hello, Bo!");
    recorded(&tr, "ask_name", "completed");
}

#[test]
fn python_http_host_with_tasks_drives_the_task_itself() {
    let tr = user_with_server(fastmcp());
    let listener = listen_as(&tr, "up", &["cursor-http"]);
    let host = Host::start(
        &tr,
        Sdk::Python,
        Via::Url(&listener.url),
        &[
            "--header",
            &listener.header(0),
            "--mode",
            "auto",
            "--tasks",
            "--name",
            "cursor",
            "--call",
            "ask_name",
            "--elicit",
            r#"{"name":"Cy"}"#,
        ],
    );
    let events = host.finish(LIMIT);
    assert_eq!(
        events
            .iter()
            .filter(|e| e["event"] == "elicitation")
            .count(),
        1,
        "the input request is asked once: {events:?}"
    );
    assert_eq!(result(&events)["text"], "Hello, Cy!");
    let row = recorded(&tr, "ask_name", "completed");
    assert_eq!(
        row["startedBy"], "cursor-http",
        "a listener host is named by its token, not by its clientInfo: {row}"
    );
}

#[test]
fn python_http_legacy_host_against_a_push_server() {
    let tr = user_with_server(tower());
    let listener = listen_as(&tr, "up", &["py-legacy"]);
    let host = Host::start(
        &tr,
        Sdk::Python,
        Via::Url(&listener.url),
        &[
            "--header",
            &listener.header(0),
            "--list",
            "--call",
            "work",
            "--args",
            r#"{"steps":3,"delay_ms":300}"#,
            "--progress",
        ],
    );
    let events = host.finish(LIMIT);
    let names = event(&events, "tools")["names"].clone();
    assert!(
        names.as_array().unwrap().iter().any(|n| n == "work"),
        "tools that only run as tasks are listed (the proxy asks for tasks): {names}"
    );
    assert_eq!(result(&events)["text"], "worked 3 steps");
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "progress" && e["message"] == "step 1/3"),
        "{events:?}"
    );
    let row = recorded(&tr, "work", "completed");
    assert_eq!(row["startedBy"], "py-legacy", "{row}");
}

#[test]
fn failures_reach_a_blocking_host_as_the_server_said_them() {
    let tr = user_with_server(fastmcp());
    let failed =
        Host::start(&tr, Sdk::Python, Via::Stdio("up"), &["--call", "explode"]).finish(LIMIT);
    let e = event(&failed, "error");
    assert_eq!(e["code"], -32603);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("deliberate protocol failure"),
        "{e}"
    );
    let tool_error =
        Host::start(&tr, Sdk::Python, Via::Stdio("up"), &["--call", "bad_lint"]).finish(LIMIT);
    let r = result(&tool_error);
    assert_eq!(r["isError"], true);
    assert!(r["text"].as_str().unwrap().contains("3 problems"), "{r}");
    recorded(&tr, "explode", "failed");
    recorded(&tr, "bad_lint", "completed");
}

#[test]
fn ts_stdio_plain_call_is_forwarded_unchanged() {
    let tr = user_with_server(fastmcp());
    let events = Host::start(
        &tr,
        Sdk::Ts,
        Via::Stdio("up"),
        &["--call", "quick_add", "--args", r#"{"a":2,"b":3}"#],
    )
    .finish(LIMIT);
    let r = result(&events);
    assert_eq!(r["text"], "5");
    assert_eq!(r["isError"], false);
    assert_eq!(
        event(&events, "connected")["server"],
        "taskrail-fastmcp-peer"
    );
    assert!(
        support::hosts::ledger_tasks(&tr).is_empty(),
        "a plain call leaves no task"
    );
}

#[test]
fn ts_stdio_host_with_v1_tasks_against_a_push_server() {
    let tr = user_with_server(tower());
    let events = Host::start(
        &tr,
        Sdk::Ts,
        Via::Stdio("up"),
        &["--call", "confirm", "--elicit", r#"{"ok":true}"#, "--task"],
    )
    .finish(LIMIT);
    assert!(
        events.iter().any(|e| e["event"] == "task"),
        "the host got a v1 task handle: {events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "status" && e["status"] == "input_required"),
        "{events:?}"
    );
    assert!(
        result(&events)["text"]
            .as_str()
            .unwrap()
            .contains("action=Accept"),
        "{events:?}"
    );
    let row = recorded(&tr, "confirm", "completed");
    assert_eq!(row["startedBy"], "ts-host");
}

#[test]
fn ts_http_host_with_v1_tasks_against_a_polling_server() {
    let tr = user_with_server(fastmcp());
    let listener = listen_as(&tr, "up", &["ts-http"]);
    let events = Host::start(
        &tr,
        Sdk::Ts,
        Via::Url(&listener.url),
        &[
            "--header",
            &listener.header(0),
            "--call",
            "slow_count",
            "--args",
            r#"{"steps":2}"#,
            "--task",
        ],
    )
    .finish(LIMIT);
    assert!(events.iter().any(|e| e["event"] == "task"), "{events:?}");
    assert_eq!(result(&events)["text"], "counted to 2");
    let row = recorded(&tr, "slow_count", "completed");
    assert_eq!(row["startedBy"], "ts-http", "{row}");
}

#[test]
fn ts_http_blocking_call_to_a_legacy_server_with_input() {
    let tr = user_with_server(everything());
    let listener = listen_as(&tr, "up", &["ts-http"]);
    let events = Host::start(
        &tr,
        Sdk::Ts,
        Via::Url(&listener.url),
        &[
            "--header",
            &listener.header(0),
            "--call",
            "simulate-research-query",
            "--args",
            r#"{"topic":"tides","ambiguous":true}"#,
            "--elicit",
            r#"{"interpretation":"technical"}"#,
        ],
    )
    .finish(LIMIT);
    assert!(
        events.iter().any(|e| e["event"] == "elicitation"),
        "{events:?}"
    );
    let text = result(&events)["text"].as_str().unwrap().to_string();
    assert!(
        text.contains("Research Report: tides (technical)"),
        "{text}"
    );
    let row = recorded(&tr, "simulate-research-query", "completed");
    assert_eq!(row["era"], "legacy");
    assert_eq!(row["startedBy"], "ts-http", "{row}");
}

#[test]
fn ts_stdio_host_with_v1_tasks_against_a_legacy_server() {
    let tr = user_with_server(everything());
    let events = Host::start(
        &tr,
        Sdk::Ts,
        Via::Stdio("up"),
        &[
            "--call",
            "simulate-research-query",
            "--args",
            r#"{"topic":"reefs"}"#,
            "--task",
        ],
    )
    .finish(LIMIT);
    assert!(events.iter().any(|e| e["event"] == "task"), "{events:?}");
    assert!(
        result(&events)["text"]
            .as_str()
            .unwrap()
            .contains("Research Report: reefs"),
        "{events:?}"
    );
    recorded(&tr, "simulate-research-query", "completed");
}

/// Resources, prompts, completion, ping and logging go through both ways, and the server's
/// own sampling request reaches the host that declared sampling.
fn the_whole_surface(via: Via<'_>, tr: &Taskrail, header: Option<&str>) {
    let mut args = vec![];
    if let Some(h) = header {
        args.extend(["--header", h]);
    }
    args.extend([
        "--surface",
        "--sample",
        "a haiku about tides",
        "--call",
        "trigger-sampling-request",
        "--args",
        r#"{"prompt":"tides"}"#,
    ]);
    let events = Host::start(tr, Sdk::Ts, via, &args).finish(LIMIT);
    assert!(events.iter().any(|e| e["event"] == "pong"), "{events:?}");
    let res = event(&events, "resource");
    assert!(
        res["count"].as_u64().unwrap() > 0 && res["contents"] == 1,
        "{res}"
    );
    let prompts = event(&events, "prompts");
    assert!(
        prompts["names"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "completable-prompt"),
        "{prompts}"
    );
    assert_eq!(prompts["messages"], 1);
    assert_eq!(event(&events, "completion")["values"][0], "Engineering");
    assert!(
        event(&events, "log")["level"].is_string(),
        "a log message from the server reached the host: {events:?}"
    );
    assert!(
        events.iter().any(|e| e["event"] == "sampling"),
        "{events:?}"
    );
    assert!(
        result(&events)["text"]
            .as_str()
            .unwrap()
            .contains("a haiku about tides"),
        "{events:?}"
    );
}

#[test]
fn ts_stdio_host_reaches_the_whole_surface_of_a_legacy_server() {
    let tr = user_with_server(everything());
    the_whole_surface(Via::Stdio("up"), &tr, None);
}

#[test]
fn ts_http_host_reaches_the_whole_surface_of_a_legacy_server() {
    let tr = user_with_server(everything());
    let listener = listen_as(&tr, "up", &["ts-http"]);
    the_whole_surface(Via::Url(&listener.url), &tr, Some(&listener.header(0)));
}

#[test]
fn a_2025_06_18_host_gets_its_version_and_results_in_its_shape() {
    let tr = user_with_server(fastmcp());
    let mut proxy = tr.spawn(&["proxy", "up"]);
    proxy.write_line(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"old-host","version":"1"}}}"#,
    );
    let init: Value = serde_json::from_str(&proxy.wait_stdout(r#""id":1"#, LIMIT)).unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert!(
        init["result"]["capabilities"].get("tasks").is_none(),
        "no tasks before 2025-11-25: {init}"
    );
    proxy.write_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    proxy.write_line(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"quick_add","arguments":{"a":1,"b":2}}}"#,
    );
    let plain: Value = serde_json::from_str(&proxy.wait_stdout(r#""id":2"#, LIMIT)).unwrap();
    assert_eq!(plain["result"]["content"][0]["text"], "3");
    assert!(
        plain["result"].get("resultType").is_none(),
        "2025-era results carry no resultType: {plain}"
    );
    proxy.write_line(
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow_count","arguments":{"steps":1,"delay":0.1}}}"#,
    );
    let done: Value = serde_json::from_str(&proxy.wait_stdout(r#""id":3"#, LIMIT)).unwrap();
    assert_eq!(
        done["result"]["content"][0]["text"], "counted to 1",
        "{done}"
    );
    proxy.write_line("this is not JSON");
    let parse: Value = serde_json::from_str(&proxy.wait_stdout("-32700", LIMIT)).unwrap();
    assert_eq!(parse["error"]["code"], -32700);
    let run = proxy.finish(LIMIT);
    assert_eq!(
        run.code,
        Some(0),
        "the proxy stops when its input closes: {run:#?}"
    );
    let row = recorded(&tr, "slow_count", "completed");
    assert_eq!(row["startedBy"], "old-host");
}

#[test]
fn help_says_what_the_proxy_does_and_listen_is_loopback_only() {
    let tr = Taskrail::new();
    let help = tr.run(&["proxy", "--help"], LIMIT);
    assert_eq!(help.code, Some(0));
    let about: Vec<&str> = help
        .stdout
        .lines()
        .take_while(|l| !l.starts_with("Usage:"))
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(about.len(), 2, "two lines: {about:?}");
    assert!(about[0].contains("agent host"), "{about:?}");
    let refused = tr.run(
        &["proxy", "http://127.0.0.1:9/mcp", "--listen", "0.0.0.0:0"],
        LIMIT,
    );
    assert_eq!(refused.code, Some(2), "{refused:#?}");
    assert!(refused.stderr.contains("loopback"), "{}", refused.stderr);
}
