//! The client-core scenarios against the embedded demo server, run as a separate
//! `serve-demo` process, in both protocol eras; and crash recovery: `taskrail watch`
//! killed with SIGKILL, restarted, resuming every task from the ledger.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;
use support::taskrail::{DemoProcess, Taskrail, task_id};

const LIMIT: Duration = Duration::from_secs(60);

fn demo(legacy: bool) -> DemoProcess {
    let mut args = vec!["--time-scale", "0.05", "--poll-interval", "200"];
    if legacy {
        args.push("--legacy");
    }
    DemoProcess::start(&args)
}

/// Every scenario of the client core, against one server.
fn scenarios(legacy: bool) {
    let server = demo(legacy);
    let url = server.url.as_str();
    let tr = Taskrail::new();
    let era = if legacy { "(legacy)" } else { "(modern)" };

    let run = tr.run(
        &[
            "call",
            "-s",
            url,
            "render_report",
            "--args",
            r#"{"pages":4}"#,
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "progress task: {run:#?}");
    assert!(run.stderr.contains(era), "{}", run.stderr);
    assert!(
        run.stderr.contains("page "),
        "progress shown: {}",
        run.stderr
    );
    assert!(
        run.json()["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("4 pages")
    );

    let run = tr.run(&["call", "-s", url, "flaky_job"], LIMIT);
    assert_eq!(run.code, Some(3), "failed: {run:#?}");
    assert!(
        run.json()["code"].is_i64(),
        "the JSON-RPC error is printed: {}",
        run.stdout
    );

    let run = tr.run(
        &["call", "-s", url, "lint", "--args", r#"{"repo":"r"}"#],
        LIMIT,
    );
    assert_eq!(run.code, Some(1), "tool error: {run:#?}");
    assert_eq!(run.json()["isError"], true);

    let run = tr.run(
        &["call", "-s", url, "lookup", "--args", r#"{"key":"region"}"#],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "plain result: {run:#?}");
    assert!(!run.stderr.contains("created"), "no task: {}", run.stderr);

    if !legacy {
        // Legacy tasks belong to the session that created them (as on server-everything):
        // cross-process cancel is a modern scenario; legacy cancel runs in `tests/engine/demo_server.rs`.
        let id = task_id(&tr.run(
            &[
                "call",
                "-s",
                url,
                "import_rows",
                "--detach",
                "--args",
                r#"{"count":100000}"#,
            ],
            LIMIT,
        ));
        let ack = tr.run(&["cancel", "-s", url, &id], LIMIT);
        assert_eq!(ack.code, Some(0), "{ack:#?}");
        let watch = tr.run(&["watch", "-s", url, &id], LIMIT);
        assert_eq!(watch.code, Some(4), "cancelled: {watch:#?}");
    }

    let unknown = tr.run(&["get", "-s", url, "no-such-task"], LIMIT);
    assert_eq!(unknown.code, Some(5), "{unknown:#?}");

    // Input: answered on the follower's input (the only way for a legacy session).
    let mut call = tr.spawn(&[
        "call",
        "-s",
        url,
        "wait_for_input",
        "--args",
        r#"{"prompt":"colour?"}"#,
    ]);
    call.wait_stderr("input requested", LIMIT);
    call.write_line(r#"{"value":"vermilion"}"#);
    let run = call.finish(LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        run.stdout.contains("vermilion"),
        "the answer reached the result: {}",
        run.stdout
    );
    assert_eq!(
        run.stderr.matches("input requested").count(),
        1,
        "{}",
        run.stderr
    );

    if !legacy {
        // Modern: another process answers with `taskrail answer`.
        let id = task_id(&tr.run(
            &[
                "call",
                "-s",
                url,
                "wait_for_input",
                "--detach",
                "--args",
                r#"{"prompt":"size?"}"#,
            ],
            LIMIT,
        ));
        let mut watch = tr.spawn(&["watch", "-s", url, &id, "--json"]);
        let line = watch.wait_stdout("input_required", LIMIT);
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        let key = v["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .next()
            .unwrap()
            .clone();
        let ack = tr.run(
            &[
                "answer",
                "-s",
                url,
                &id,
                &key,
                "--json",
                r#"{"action":"accept","content":{"value":"XL"}}"#,
            ],
            LIMIT,
        );
        assert_eq!(ack.code, Some(0), "{ack:#?}");
        let done = watch.finish(LIMIT);
        assert_eq!(done.code, Some(0), "{done:#?}");
        assert!(done.stdout.contains("XL"), "{}", done.stdout);
    }
}

#[test]
fn client_scenarios_pass_against_the_modern_demo_server() {
    scenarios(false);
}

#[test]
fn client_scenarios_pass_against_the_legacy_demo_server() {
    scenarios(true);
}

#[test]
fn a_killed_watch_resumes_every_task_and_reports_one_that_expired() {
    let long = DemoProcess::start(&["--time-scale", "0.5"]);
    let short = DemoProcess::start(&["--time-scale", "1", "--ttl", "1500"]);
    let tr = Taskrail::new();
    let a = task_id(&tr.run(
        &[
            "call",
            "-s",
            &long.url,
            "render_report",
            "--detach",
            "--args",
            r#"{"pages":6}"#,
        ],
        LIMIT,
    ));
    let b = task_id(&tr.run(
        &[
            "call",
            "-s",
            &long.url,
            "render_report",
            "--detach",
            "--args",
            r#"{"pages":8}"#,
        ],
        LIMIT,
    ));
    let gone = task_id(&tr.run(
        &[
            "call",
            "-s",
            &short.url,
            "import_rows",
            "--detach",
            "--args",
            r#"{"count":100000}"#,
        ],
        LIMIT,
    ));

    let mut first = tr.spawn(&["watch", "--json"]);
    first.wait_stdout(&a, LIMIT);
    first.kill9();
    // Let the short-lived task pass its TTL on its server while nobody watches.
    std::thread::sleep(Duration::from_millis(2000));

    let second = tr.run(&["watch", "--json"], LIMIT);
    assert_eq!(
        second.code,
        Some(5),
        "the expired task decides the exit code: {second:#?}"
    );
    let lines = second.json_lines();
    for id in [&a, &b] {
        let last = lines
            .iter()
            .rev()
            .find(|l| l["taskId"] == **id)
            .unwrap_or_else(|| panic!("{id} resumed: {second:#?}"));
        assert_eq!(last["status"], "completed", "{id}");
    }
    assert!(
        second.stderr.contains("expired or never existed"),
        "the expired task is reported: {}",
        second.stderr
    );
    let ls = tr.run(&["ls", "--all", "--json"], LIMIT);
    let rec = ls
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["taskId"] == gone)
        .unwrap();
    assert_eq!(rec["expired"], true, "a tombstone, not a frozen row: {rec}");
    let pending = tr.run(&["ls", "--json"], LIMIT);
    assert_eq!(pending.stdout.trim(), "", "nothing left to resume");
}

#[test]
fn ctrl_c_while_following_detaches_and_says_how_to_resume() {
    let server = demo(false);
    let tr = Taskrail::new();
    let mut call = tr.spawn(&[
        "call",
        "-s",
        &server.url,
        "import_rows",
        "--args",
        r#"{"count":1000000}"#,
    ]);
    call.wait_stderr("created", LIMIT);
    let pid = call.child.id().to_string();
    let status = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill");
    assert!(status.success());
    let run = call.finish(LIMIT);
    assert_eq!(run.code, Some(130), "{run:#?}");
    assert!(
        run.stderr.contains("keeps running")
            && run.stderr.contains("resume with: taskrail watch --server"),
        "{}",
        run.stderr
    );
    let ls = tr.run(&["ls", "--json"], LIMIT);
    assert!(
        ls.stdout.contains("import_rows"),
        "the task is in the ledger to resume: {}",
        ls.stdout
    );
}
