//! The client core and the CLI against a real legacy server:
//! @modelcontextprotocol/server-everything 2026.8.31 (2025-11-25, experimental core tasks,
//! input as a server-to-client `elicitation/create` on the `tasks/result` stream).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;
use support::taskrail::Taskrail;

const LIMIT: Duration = Duration::from_secs(90);

#[test]
fn the_research_query_runs_to_completion_with_its_input_request_answered() {
    let peer = support::everything_http();
    let tr = Taskrail::new();
    let args = r#"{"topic":"tide pools","ambiguous":true}"#;
    let mut call = tr.spawn(&[
        "call",
        "-s",
        &peer.url,
        "simulate-research-query",
        "--args",
        args,
    ]);
    call.wait_stderr("(legacy)", LIMIT);
    call.wait_stderr("input requested", LIMIT);
    let key_line = call.wait_stderr("key: ", LIMIT);
    let key = key_line.trim().trim_start_matches("key: ").to_string();
    // Answer on the follower's own input, as a legacy session requires.
    call.write_line(&format!(
        r#"{key} {{"action":"accept","content":{{"interpretation":"historical"}}}}"#
    ));
    let run = call.finish(LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    let text = run.json()["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        text.contains("tide pools") && text.contains("historical"),
        "the answer reached the result: {text}"
    );
    assert_eq!(
        run.stderr.matches("input requested").count(),
        1,
        "prompted once: {}",
        run.stderr
    );

    let ls = tr.run(&["ls", "--all", "--json"], LIMIT);
    let rec: serde_json::Value = serde_json::from_str(ls.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(rec["status"], "completed");
    assert_eq!(rec["answeredKeys"][0], key);
}

#[test]
fn tools_show_the_legacy_task_support_hint() {
    let peer = support::everything_http();
    let tr = Taskrail::new();
    let run = tr.run(&["tools", "-s", &peer.url], LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        run.stdout.contains("simulate-research-query") && run.stdout.contains("[task: required]"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_plain_tool_answers_without_a_task() {
    let peer = support::everything_http();
    let tr = Taskrail::new();
    let run = tr.run(
        &[
            "call",
            "-s",
            &peer.url,
            "get-sum",
            "--args",
            r#"{"a":20,"b":22}"#,
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        run.json()["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("42"),
        "{run:#?}"
    );
}
