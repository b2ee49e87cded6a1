//! Honest rows: the ledger records only what is true. A mistyped id given to `get` or
//! `watch` leaves no row; `call --detach` on a stdio server (whose tasks die with the command)
//! is refused; a read-only server refuses `call`, `answer` and `cancel` before anything is
//! sent to it; a task the ledger could not store is printed and reported with exit code 6.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;

use support::taskrail::{DemoProcess, Taskrail, task_id};

const LIMIT: Duration = Duration::from_secs(90);

#[test]
fn a_mistyped_id_leaves_no_row() {
    let demo = DemoProcess::start(&[]);
    let tr = Taskrail::new();
    let get = tr.run(&["get", "--server", &demo.url, "0123456789abcdef"], LIMIT);
    assert_eq!(get.code, Some(5), "{get:#?}");
    let watch = tr.run(&["watch", "--server", &demo.url, "fedcba9876543210"], LIMIT);
    assert_eq!(watch.code, Some(5), "{watch:#?}");
    assert!(watch.stderr.contains("never existed"), "{watch:#?}");
    assert_eq!(tr.records(), Vec::<serde_json::Value>::new());
    // The server really was asked.
    assert!(demo.stats()["methods"]["tasks/get"].as_u64() >= Some(2));
}

#[test]
fn call_detach_on_a_stdio_server_is_refused() {
    let tr = Taskrail::new();
    let server = format!("stdio:{}", support::fastmcp_stdio_command().join(" "));
    let run = tr.run(
        &["call", "--server", &server, "slow_count", "--detach"],
        LIMIT,
    );
    assert_eq!(run.code, Some(2), "{run:#?}");
    assert!(
        run.stderr.contains("--detach refused") && run.stderr.contains("stdio"),
        "{run:#?}"
    );
    assert_eq!(run.stdout, "", "no handle for a task that would die");
    assert_eq!(tr.records(), Vec::<serde_json::Value>::new());
}

#[test]
fn a_read_only_server_refuses_before_sending_anything() {
    let demo = DemoProcess::start(&[]);
    let tr = Taskrail::new();
    // A task started where the server is not read-only…
    let id = task_id(&tr.run(
        &[
            "call",
            "--server",
            &demo.url,
            "wait_for_input",
            "--args",
            r#"{"prompt":"Name it"}"#,
            "--detach",
        ],
        LIMIT,
    ));
    let config = tr.dir().join("ro.toml");
    std::fs::write(
        &config,
        format!(
            "[[server]]\nname = \"ro\"\nurl = \"{}\"\nread_only = true\n",
            demo.url
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let before = demo.stats();
    let refused = [
        vec![
            "call",
            "--server",
            "ro",
            "lint",
            "--args",
            r#"{"repo":"x"}"#,
        ],
        vec![
            "answer",
            "--server",
            "ro",
            &id,
            "value-1",
            "--json",
            r#"{"value":"x"}"#,
        ],
        vec!["cancel", "--server", "ro", &id],
        // The URL is the configured, read-only server too.
        vec!["cancel", "--server", &demo.url, &id],
    ];
    for args in refused {
        let mut all = vec!["--config", config];
        all.extend(args.iter().copied());
        let run = tr.run(&all, LIMIT);
        assert_eq!(run.code, Some(2), "{args:?}: {run:#?}");
        assert!(run.stderr.contains("read-only"), "{args:?}: {run:#?}");
    }
    assert_eq!(
        demo.stats()["methods"],
        before["methods"],
        "nothing reached the server"
    );
    let rec = tr.record(&id).unwrap();
    assert_eq!(rec["answeredKeys"], serde_json::json!([]), "{rec}");
    assert_eq!(rec["cancel"], serde_json::Value::Null, "{rec}");
}

#[test]
fn a_task_the_ledger_cannot_store_is_printed_and_exits_6() {
    let demo = DemoProcess::start(&[]);
    let tr = Taskrail::new();
    // A ledger whose tasks table was renamed behind taskrail's back.
    assert_eq!(tr.run(&["ls"], LIMIT).code, Some(0));
    let conn = rusqlite::Connection::open(tr.db()).unwrap();
    conn.execute_batch("ALTER TABLE tasks RENAME TO tasks_elsewhere")
        .unwrap();
    drop(conn);
    let run = tr.run(
        &[
            "call",
            "--server",
            &demo.url,
            "lint",
            "--args",
            r#"{"repo":"x"}"#,
            "--detach",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(6), "{run:#?}");
    let handle = run.json();
    assert!(
        handle["taskId"].as_str().is_some_and(|t| !t.is_empty()),
        "{run:#?}"
    );
    assert!(
        run.stderr.contains("could not be stored in the ledger"),
        "{run:#?}"
    );
    assert_eq!(
        demo.stats()["tasksCreated"],
        1,
        "the task exists on the server"
    );
}
