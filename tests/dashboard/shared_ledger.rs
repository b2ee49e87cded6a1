//! One ledger, two processes, real peers: a dashboard (in tmux) shows and follows the tasks
//! another process records in its ledger (`taskrail call --detach` from another shell), and
//! answers and cancels given from another shell reach it through the ledger's outbox, so the
//! server sees each of them once. Peers: FastMCP (polling only) and the demo server (push).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::path::Path;
use std::time::Duration;

use support::taskrail::{DemoProcess, Taskrail, task_id};
use support::tmux::Tmux;

const CLI_LIMIT: Duration = Duration::from_secs(90);

/// The board line of task `id`.
fn row<'a>(screen: &'a str, id: &str) -> Option<&'a str> {
    screen.lines().find(|l| l.contains(&id[..8]))
}

fn row_has(screen: &str, id: &str, needle: &str) -> bool {
    row(screen, id).is_some_and(|l| l.contains(needle))
}

fn detach(tr: &Taskrail, url: &str, tool: &str, args: &str) -> String {
    task_id(&tr.run(
        &["call", "--server", url, tool, "--args", args, "--detach"],
        CLI_LIMIT,
    ))
}

/// Outbox requests of `kind` that were carried out successfully, read from the ledger file.
fn outbox_done(db: &Path, kind: &str) -> i64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn.query_row(
        "SELECT count(*) FROM outbox WHERE kind = ?1 AND done_at IS NOT NULL
            AND json_extract(outcome, '$.ok') = 1",
        [kind],
        |r| r.get(0),
    )
    .unwrap()
}

/// The one input key the ledger holds for a task (its last snapshot's `inputRequests`).
fn input_key(tr: &Taskrail, id: &str) -> String {
    let rec = tr.record(id).expect("the task is in the ledger");
    let requests = rec["snapshot"]["inputRequests"]
        .as_object()
        .unwrap_or_else(|| panic!("no input request in the ledger: {rec}"));
    assert_eq!(requests.len(), 1, "{rec}");
    requests.keys().next().unwrap().clone()
}

#[test]
fn tasks_started_answered_and_cancelled_from_other_shells_are_followed_by_the_dashboard() {
    let peer = support::fastmcp_http();
    let tr = Taskrail::new();
    let tmux = Tmux::start("shared");
    tmux.start_dashboard(&tr, &format!("--server {}", peer.url));

    // A task another process starts appears and is followed to its end: the process that
    // started it exited at once, so the dashboard is the one following it.
    let counted = detach(&tr, &peer.url, "slow_count", r#"{"steps":6,"delay":0.5}"#);
    tmux.wait("the row of the task started elsewhere", |s| {
        row(s, &counted).is_some()
    });
    tmux.wait("the task followed to completed", |s| {
        row_has(s, &counted, "completed")
    });

    // Input answered from another shell while the dashboard follows the task.
    let asking = detach(&tr, &peer.url, "ask_name", "{}");
    tmux.wait("the input request on the board", |s| {
        row_has(s, &asking, "input needed")
    });
    let key = input_key(&tr, &asking);
    let ack = tr.run(
        &[
            "answer",
            "--server",
            &peer.url,
            &asking,
            &key,
            "--json",
            r#"{"name":"Ada Lovelace"}"#,
        ],
        CLI_LIMIT,
    );
    assert_eq!(ack.code, Some(0), "{ack:#?}");
    assert_eq!(ack.json()["ok"], true, "{ack:#?}");
    assert_eq!(
        outbox_done(&tr.db(), "answer"),
        1,
        "the answer went through the outbox to the dashboard"
    );
    tmux.wait("the answered task completed", |s| {
        row_has(s, &asking, "completed")
    });
    let rec = tr.record(&asking).unwrap();
    assert_eq!(
        rec["snapshot"]["result"]["content"][0]["text"], "Hello, Ada Lovelace!",
        "{rec}"
    );

    // A cancel from another shell.
    let sleeping = detach(&tr, &peer.url, "long_sleep", r#"{"seconds":120}"#);
    tmux.wait("the long task working", |s| {
        row_has(s, &sleeping, "working")
    });
    let ack = tr.run(&["cancel", "--server", &peer.url, &sleeping], CLI_LIMIT);
    assert_eq!(ack.code, Some(0), "{ack:#?}");
    assert_eq!(
        outbox_done(&tr.db(), "cancel"),
        1,
        "the cancel went through the outbox to the dashboard"
    );
    tmux.wait("the cancelled task", |s| row_has(s, &sleeping, "cancelled"));
    tmux.quit();
}

#[test]
fn an_answer_from_another_shell_reaches_the_server_once() {
    let demo = DemoProcess::start(&[]);
    let tr = Taskrail::new();
    let tmux = Tmux::start("once");
    tmux.start_dashboard(&tr, &format!("--server {}", demo.url));
    let id = detach(&tr, &demo.url, "wait_for_input", r#"{"prompt":"Name it"}"#);
    tmux.wait("the input request on the board", |s| {
        row_has(s, &id, "input needed")
    });
    let key = input_key(&tr, &id);
    assert_eq!(
        demo.stats()["methods"]["tasks/update"],
        serde_json::Value::Null
    );
    let ack = tr.run(
        &[
            "answer",
            "--server",
            &demo.url,
            &id,
            &key,
            "--json",
            r#"{"value":"v1.2"}"#,
        ],
        CLI_LIMIT,
    );
    assert_eq!(ack.code, Some(0), "{ack:#?}");
    tmux.wait("the answered task completed", |s| {
        row_has(s, &id, "completed")
    });
    assert_eq!(outbox_done(&tr.db(), "answer"), 1);
    assert_eq!(
        demo.stats()["methods"]["tasks/update"],
        1,
        "exactly one tasks/update reached the server: {}",
        demo.stats()
    );
    let rec = tr.record(&id).unwrap();
    assert_eq!(rec["answeredKeys"], serde_json::json!([key]), "{rec}");
    tmux.quit();
}
