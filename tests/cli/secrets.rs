//! Secrets: header tokens (given literally or through `${VAR}`) and credentials in the
//! server URL never reach the ledger or the log, even at debug level; full task ids (bearer
//! secrets) are not logged; the ledger file is 0600; `--read-only` refuses every write.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;
use support::taskrail::{DemoProcess, Taskrail, task_id};
use taskrail::cli::exit;

const LIMIT: Duration = Duration::from_secs(60);
const LITERAL: &str = "lit3ral-t0ken-4f9a2c";
const FROM_ENV: &str = "env-t0ken-8d7e6b";
const PASSWORD: &str = "pa55w0rd-in-url-77";

/// Every byte taskrail left behind: the ledger (with its WAL) and the log.
fn leftovers(tr: &Taskrail) -> String {
    let mut all = String::new();
    for entry in std::fs::read_dir(tr.dir()).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap_or_default();
        all.push_str(&String::from_utf8_lossy(&bytes));
    }
    all
}

#[test]
fn tokens_and_task_ids_stay_out_of_ledger_and_log() {
    let demo = DemoProcess::start(&["--time-scale", "0.05"]);
    let with_password = demo
        .url
        .replacen("http://", &format!("http://user:{PASSWORD}@"), 1);
    let tr = Taskrail::new().with_env("TASKRAIL_TEST_TOKEN", FROM_ENV);
    let auth = format!("Authorization: Bearer {LITERAL}");
    let headers = ["-H", &auth, "-H", "X-Api-Key: ${TASKRAIL_TEST_TOKEN}"];
    let mut args = headers.to_vec();
    args.extend([
        "call",
        "-s",
        &with_password,
        "--detach",
        "lint",
        "--args",
        r#"{"repo":"r"}"#,
    ]);
    let run = tr.run(&args, LIMIT);
    let id = task_id(&run);
    assert!(id.len() > 12, "task id {id:?}");
    let mut args = headers.to_vec();
    args.extend(["watch", "-s", &with_password, &id]);
    let run = tr.run(&args, LIMIT);
    // The demo lint finds problems: a tool error (exit 1) of a completed task.
    assert_eq!(run.code, Some(exit::TOOL_ERROR.into()), "{run:?}");
    assert!(!run.stderr.contains(PASSWORD), "{}", run.stderr);
    let mut args = headers.to_vec();
    args.extend(["get", "-s", &with_password, "no-such-task-0123456789"]);
    tr.run(&args, LIMIT);

    let all = leftovers(&tr);
    assert!(all.contains(&id[..8]), "the ledger should know the task");
    for secret in [LITERAL, FROM_ENV, PASSWORD] {
        assert!(!all.contains(secret), "{secret} was written to disk");
    }
    let log = std::fs::read_to_string(tr.log()).unwrap_or_default();
    assert!(!log.is_empty(), "nothing was logged");
    assert!(!log.contains(&id), "a full task id was logged");
    assert!(
        !log.contains("no-such-task-0123456789"),
        "a full task id was logged"
    );
    let mode = std::fs::metadata(tr.db()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn read_only_refuses_every_write() {
    let demo = DemoProcess::start(&["--time-scale", "0.05"]);
    let tr = Taskrail::new();
    let run = tr.run(
        &[
            "call",
            "-s",
            &demo.url,
            "--detach",
            "lint",
            "--args",
            r#"{"repo":"r"}"#,
        ],
        LIMIT,
    );
    let id = task_id(&run);
    for args in [
        vec![
            "--read-only",
            "call",
            "-s",
            &demo.url,
            "lint",
            "--args",
            r#"{"repo":"r"}"#,
        ],
        vec!["--read-only", "cancel", "-s", &demo.url, &id],
        vec![
            "--read-only",
            "answer",
            "-s",
            &demo.url,
            &id,
            "k",
            "--json",
            "{}",
        ],
    ] {
        let run = tr.run(&args, LIMIT);
        assert_eq!(run.code, Some(exit::USAGE.into()), "{args:?}: {run:?}");
        assert!(run.stderr.contains("read-only"), "{}", run.stderr);
    }
    let stats = demo.stats();
    assert_eq!(
        stats["methods"]["tools/call"], 1,
        "only the first call went out"
    );
    assert!(stats["methods"].get("tasks/cancel").is_none());
    assert!(stats["methods"].get("tasks/update").is_none());
}
