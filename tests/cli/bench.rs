//! `taskrail bench` never uses the caller's ledger: with `TASKRAIL_DB` pointing at another
//! file, `bench startup` fills and reads its own temporary ledger, finishes, and leaves that
//! file as it was; given a filled ledger, it resumes as many tasks as that ledger holds; and
//! its reports into a closed pipe end quietly. `bench http-floor`
//! measures requests to a server in another process, and says so when there is none.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;
use support::taskrail::{DemoProcess, Taskrail};

#[test]
fn bench_startup_ignores_the_callers_ledger() {
    // The caller's ledger (TASKRAIL_DB of every command this user runs) exists and holds
    // no tasks: a bench reading it would wait for tasks that never come.
    let tr = Taskrail::new();
    let ls = tr.run(&["ls", "--all", "--json"], Duration::from_secs(30));
    assert_eq!(ls.code, Some(0), "{ls:#?}");
    let before = std::fs::read(tr.db()).unwrap();
    let modified = std::fs::metadata(tr.db()).unwrap().modified().unwrap();
    assert!(!before.is_empty(), "the caller's ledger was created");

    let run = tr.run(
        &["bench", "startup", "--tasks", "25"],
        Duration::from_secs(120),
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        run.stdout.contains("first frame showing all 25 tasks"),
        "{run:#?}"
    );
    assert_eq!(
        std::fs::read(tr.db()).unwrap(),
        before,
        "the caller's ledger changed"
    );
    assert_eq!(
        std::fs::metadata(tr.db()).unwrap().modified().unwrap(),
        modified
    );
    let after = tr.run(&["ls", "--all", "--json"], Duration::from_secs(30));
    assert_eq!(after.stdout, ls.stdout, "the caller's ledger gained tasks");
}

#[test]
fn bench_startup_on_a_filled_ledger_counts_what_it_holds() {
    let tr = Taskrail::new();
    let filled = tr.dir().join("filled.db");
    let filled = filled.to_str().unwrap();
    let fill = tr.run(
        &["bench", "populate", "--tasks", "30", "--ledger", filled],
        Duration::from_secs(60),
    );
    assert_eq!(fill.code, Some(0), "{fill:#?}");

    let run = tr.run(
        &["bench", "startup", "--ledger", filled],
        Duration::from_secs(120),
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        run.stdout.contains("first frame showing all 30 tasks"),
        "{run:#?}"
    );

    // A count the ledger does not hold would wait for rows that never come, or report a
    // figure for the wrong size: refused in words.
    let wrong = tr.run(
        &["bench", "startup", "--tasks", "100", "--ledger", filled],
        Duration::from_secs(60),
    );
    assert_eq!(wrong.code, Some(1), "{wrong:#?}");
    assert!(wrong.stderr.contains("holds 30 tasks"), "{wrong:#?}");
    let missing = tr.dir().join("missing.db");
    let run = tr.run(
        &["bench", "startup", "--ledger", missing.to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(run.stderr.contains("no ledger at"), "{run:#?}");
    assert!(!missing.exists(), "a missing ledger was created");
    // The caller's own ledger holds no bench tasks.
    let ls = tr.run(&["ls", "--all"], Duration::from_secs(30));
    assert_eq!(ls.code, Some(0), "{ls:#?}");
    let run = tr.run(
        &["bench", "startup", "--ledger", tr.db().to_str().unwrap()],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, Some(1), "{run:#?}");
    assert!(run.stderr.contains("holds no task"), "{run:#?}");
}

#[test]
fn bench_output_into_a_closed_pipe_ends_quietly() {
    use std::process::{Command, Stdio};
    // `taskrail bench startup | head -0`: the reader is gone before the first line.
    let mut child = Command::new(env!("CARGO_BIN_EXE_taskrail"))
        .args(["bench", "startup", "--tasks", "25"])
        .env_remove("TASKRAIL_DB")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

#[test]
fn bench_http_floor_measures_requests_to_a_server_in_another_process() {
    let demo = DemoProcess::start(&["--listen", "127.0.0.1:0"]);
    let tr = Taskrail::new();
    let run = tr.run(
        &[
            "bench",
            "http-floor",
            "--url",
            &demo.url,
            "--requests",
            "20",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(run.stdout.contains("20 server/discover POSTs"), "{run:#?}");
    assert!(run.stdout.contains("us per request"), "{run:#?}");
    assert_eq!(
        demo.stats()["methods"]["server/discover"],
        21,
        "one to open the connection, then the 20 measured"
    );
    let dead = tr.run(
        &["bench", "http-floor", "--url", "http://127.0.0.1:9/mcp"],
        Duration::from_secs(60),
    );
    assert_eq!(dead.code, Some(1), "{dead:#?}");
    assert!(dead.stderr.contains("bench failed"), "{dead:#?}");
}
