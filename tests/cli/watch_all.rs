//! `taskrail watch` with no ids: every unfinished task of the ledger, including those of a
//! server this process cannot reach (a stdio server another process runs), answered from
//! the ledger (`"source":"ledger"`) as `watch ID` answers such a task. Against the FastMCP
//! peer on stdio, followed by a foreground `call` in another process.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::taskrail::Taskrail;

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn watch_without_ids_includes_the_tasks_another_process_follows() {
    let tr = Taskrail::new();
    let server = format!("stdio:{}", support::fastmcp_stdio_command().join(" "));
    let caller = tr.spawn(&[
        "call",
        "--server",
        &server,
        "long_sleep",
        "--args",
        r#"{"seconds":60}"#,
    ]);
    let deadline = Instant::now() + LIMIT;
    let id = loop {
        let rows = tr.records();
        if let Some(r) = rows.iter().find(|r| r["tool"] == "long_sleep") {
            break r["taskId"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "no long_sleep task: {rows:#?}");
        std::thread::sleep(Duration::from_millis(200));
    };

    let started = Instant::now();
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c").arg(format!(
        "exec timeout 20 '{}' watch --json | head -1",
        support::taskrail::bin()
    ));
    tr.apply_env(&mut cmd);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("skipping"), "{stderr}");
    let line: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_eq!(line["taskId"], id.as_str(), "{line}");
    assert_eq!(line["status"], "working", "{line}");
    assert_eq!(line["source"], "ledger", "{line}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the current state at once: {:?}",
        started.elapsed()
    );
    caller.kill9();
}
