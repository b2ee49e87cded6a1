//! The client core and the CLI against a real third-party server: FastMCP 4.1.4 with
//! fastmcp-tasks (modern protocol, tasks extension, polling only), over HTTP and stdio.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;
use support::taskrail::{Taskrail, task_id};

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn a_task_with_progress_completes() {
    let peer = support::fastmcp_http();
    let tr = Taskrail::new();
    let run = tr.run(
        &[
            "call",
            "-s",
            &peer.url,
            "slow_count",
            "--args",
            r#"{"steps":4,"delay":0.4}"#,
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert_eq!(run.json()["content"][0]["text"], "counted to 4");
    assert!(
        run.stderr.contains("step "),
        "progress status messages are shown: {}",
        run.stderr
    );
}

#[test]
fn input_is_answered_from_another_process_and_the_answer_reaches_the_result() {
    let peer = support::fastmcp_http();
    let tr = Taskrail::new();
    let id = task_id(&tr.run(&["call", "-s", &peer.url, "ask_name", "--detach"], LIMIT));

    // Follow it as JSON lines until it asks for input.
    let mut watch = tr.spawn(&["watch", "-s", &peer.url, &id, "--json"]);
    let line = watch.wait_stdout("input_required", LIMIT);
    let snapshot: serde_json::Value = serde_json::from_str(&line).unwrap();
    let requests = snapshot["inputRequests"]
        .as_object()
        .expect("inputRequests in the JSON line");
    assert_eq!(requests.len(), 1);
    let key = requests.keys().next().unwrap().clone();
    assert!(
        key.starts_with(&format!("{id}:")),
        "FastMCP rewrites keys to <taskId>:<hex>: {key}"
    );

    let ack = tr.run(
        &[
            "answer",
            "-s",
            &peer.url,
            &id,
            &key,
            "--json",
            r#"{"name":"Ada Lovelace"}"#,
        ],
        LIMIT,
    );
    assert_eq!(ack.code, Some(0), "{ack:#?}");
    assert_eq!(ack.json()["ok"], true);

    let done = watch.finish(LIMIT);
    assert_eq!(done.code, Some(0), "{done:#?}");
    let last = done.json_lines().pop().expect("a final line");
    assert_eq!(last["status"], "completed");
    assert_eq!(last["result"]["content"][0]["text"], "Hello, Ada Lovelace!");
    let input_lines = done
        .json_lines()
        .iter()
        .filter(|l| l["status"] == "input_required")
        .count();
    assert_eq!(
        input_lines, 1,
        "one JSON line per observed change, not per poll"
    );
}

#[test]
fn a_protocol_error_ends_failed_with_its_error() {
    let peer = support::fastmcp_http();
    let tr = Taskrail::new();
    let run = tr.run(&["call", "-s", &peer.url, "explode"], LIMIT);
    assert_eq!(run.code, Some(3), "{run:#?}");
    assert_eq!(run.json()["code"], -32603);
}

#[test]
fn a_tool_error_ends_completed_with_is_error() {
    let peer = support::fastmcp_http();
    let tr = Taskrail::new();
    let run = tr.run(&["call", "-s", &peer.url, "bad_lint"], LIMIT);
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert_eq!(run.json()["isError"], true);
}

#[test]
fn cancelling_a_running_task_ends_cancelled() {
    let peer = support::fastmcp_http();
    let tr = Taskrail::new();
    let id = task_id(&tr.run(&["call", "-s", &peer.url, "long_sleep", "--detach"], LIMIT));
    let ack = tr.run(&["cancel", "-s", &peer.url, &id], LIMIT);
    assert_eq!(ack.code, Some(0), "{ack:#?}");
    let watch = tr.run(&["watch", "-s", &peer.url, &id, "--json"], LIMIT);
    assert_eq!(watch.code, Some(4), "{watch:#?}");
    assert_eq!(watch.json_lines().last().unwrap()["status"], "cancelled");
}

#[test]
fn an_unknown_task_id_exits_5() {
    let peer = support::fastmcp_http();
    let tr = Taskrail::new();
    let get = tr.run(&["get", "-s", &peer.url, "no-such-task"], LIMIT);
    assert_eq!(get.code, Some(5), "{get:#?}");
    let watch = tr.run(&["watch", "-s", &peer.url, "no-such-task"], LIMIT);
    assert_eq!(watch.code, Some(5), "{watch:#?}");
    let cancel = tr.run(&["cancel", "-s", &peer.url, "no-such-task"], LIMIT);
    assert_eq!(cancel.code, Some(5), "{cancel:#?}");
    let answer = [
        "answer",
        "-s",
        &peer.url,
        "no-such-task",
        "k",
        "--json",
        "{}",
    ];
    let answer = tr.run(&answer, LIMIT);
    assert_eq!(answer.code, Some(5), "{answer:#?}");
    // A mistyped id leaves nothing behind: no row, no tombstone.
    let ls = tr.run(&["ls", "--all", "--json"], LIMIT);
    assert_eq!(ls.code, Some(0), "{ls:#?}");
    assert!(
        !ls.stdout.contains("no-such-task"),
        "nothing recorded for an id the server does not know: {}",
        ls.stdout
    );
}

#[test]
fn a_call_answered_without_a_task_prints_the_plain_result() {
    let peer = support::fastmcp_http();
    let tr = Taskrail::new();
    let run = tr.run(
        &[
            "call",
            "-s",
            &peer.url,
            "quick_add",
            "--args",
            r#"{"a":2,"b":40}"#,
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert_eq!(run.json()["content"][0]["text"], "42");
    assert!(
        !run.stderr.contains("task "),
        "no task was created: {}",
        run.stderr
    );
}

#[test]
fn tools_are_listed() {
    let peer = support::fastmcp_http();
    let tr = Taskrail::new();
    let run = tr.run(&["tools", "-s", &peer.url, "--json"], LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    let names: Vec<String> = run
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    for expected in [
        "slow_count",
        "ask_name",
        "explode",
        "bad_lint",
        "long_sleep",
        "quick_add",
    ] {
        assert!(
            names.contains(&expected.to_string()),
            "{expected} missing from {names:?}"
        );
    }
}

#[test]
fn a_stdio_server_runs_a_task_to_completion() {
    let argv = support::fastmcp_stdio_command();
    let server = format!(
        "stdio:{}",
        argv.iter()
            .map(|a| shlex::try_quote(a).unwrap().into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let tr = Taskrail::new();
    let run = tr.run(
        &[
            "call",
            "-s",
            &server,
            "slow_count",
            "--args",
            r#"{"steps":2,"delay":0.2}"#,
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert_eq!(run.json()["content"][0]["text"], "counted to 2");
    assert!(
        run.stderr.contains("(modern)"),
        "stdio detected the modern era: {}",
        run.stderr
    );
}

#[test]
fn a_killed_watch_resumes_from_the_ledger_on_polling_only() {
    let peer = support::fastmcp_http();
    let tr = Taskrail::new();
    let a = task_id(&tr.run(
        &[
            "call",
            "-s",
            &peer.url,
            "slow_count",
            "--detach",
            "--args",
            r#"{"steps":8,"delay":0.5}"#,
        ],
        LIMIT,
    ));
    let b = task_id(&tr.run(
        &[
            "call",
            "-s",
            &peer.url,
            "slow_count",
            "--detach",
            "--args",
            r#"{"steps":6,"delay":0.5}"#,
        ],
        LIMIT,
    ));
    let mut first = tr.spawn(&["watch", "--json"]);
    first.wait_stdout("\"working\"", LIMIT);
    first.kill9();
    let second = tr.run(&["watch", "--json"], LIMIT);
    assert_eq!(second.code, Some(0), "{second:#?}");
    let finals: Vec<_> = second
        .json_lines()
        .into_iter()
        .filter(|l| l["status"] == "completed")
        .collect();
    let ids: Vec<&str> = finals
        .iter()
        .map(|l| l["taskId"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&a.as_str()) && ids.contains(&b.as_str()),
        "both resumed to the end: {ids:?}"
    );
    let ls = tr.run(&["ls", "--json"], LIMIT);
    assert_eq!(
        ls.stdout.trim(),
        "",
        "nothing left unfinished in the ledger"
    );
}

/// A stdio server slower to start than the probe waits (a busy machine) answers the probe
/// late and refuses the legacy handshake: the client asks again and speaks modern.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_server_slower_than_the_probe_is_still_modern() {
    let argv = support::fastmcp_stdio_command();
    let options = taskrail::mcp::ConnectOptions {
        // FastMCP cannot start this fast: the first probe always times out
        probe_timeout: Duration::from_millis(1),
        ..Default::default()
    };
    let (client, _) =
        taskrail::mcp::McpClient::connect(taskrail::mcp::Endpoint::Stdio { argv }, options)
            .await
            .expect("connects");
    assert_eq!(client.era(), taskrail::mcp::Era::Modern);
    let tools = client.list_tools().await.expect("tools/list");
    assert!(tools.iter().any(|t| t.name == "slow_count"), "{tools:?}");
    client.close().await;
}
