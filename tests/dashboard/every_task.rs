//! Every task of the ledger is on the board, whatever started it and whether or not its
//! server is configured: a finished task of an unconfigured URL (the dashboard started
//! with a config file), and a task on a stdio server another process follows — shown as
//! followed elsewhere, and cancelled from the board through the outbox to that process.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;

use support::taskrail::Taskrail;
use support::tmux::Tmux;

const CLI_LIMIT: Duration = Duration::from_secs(90);

/// The board line of task `id`.
fn row<'a>(screen: &'a str, id: &str) -> Option<&'a str> {
    screen.lines().find(|l| l.contains(&id[..8]))
}

/// Outbox requests of `kind` carried out successfully, read from the ledger file.
fn outbox_done(tr: &Taskrail, kind: &str) -> i64 {
    let conn = rusqlite::Connection::open(tr.db()).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn.query_row(
        "SELECT count(*) FROM outbox WHERE kind = ?1 AND done_at IS NOT NULL
            AND json_extract(outcome, '$.ok') = 1",
        [kind],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn tasks_of_unconfigured_and_stdio_servers_are_on_the_board_and_cancelled_through_the_outbox() {
    let peer = support::fastmcp_http();
    let tr = Taskrail::new();
    // A finished task on a URL the config will not name.
    let done = tr.run(
        &[
            "call",
            "--server",
            &peer.url,
            "slow_count",
            "--args",
            r#"{"steps":1,"delay":0.1}"#,
        ],
        CLI_LIMIT,
    );
    assert_eq!(done.code, Some(0), "{done:#?}");
    let finished = tr.records()[0]["taskId"].as_str().unwrap().to_string();

    // The dashboard, with a config naming neither server: the finished task is there.
    let config = tr.dir().join("config.toml");
    std::fs::write(
        &config,
        "[[server]]\nname = \"offline\"\nurl = \"http://127.0.0.1:9/mcp\"\n",
    )
    .unwrap();
    let tmux = Tmux::start("every");
    tmux.resize(160, 30);
    tmux.launch_dashboard(&tr, &format!("--config {}", config.display()));
    tmux.wait("the finished task of the unconfigured URL", |s| {
        row(s, &finished).is_some_and(|l| l.contains("completed"))
    });

    // A task on a stdio server started while the dashboard runs, followed by the `call`
    // that started it (still running).
    let stdio = format!("stdio:{}", support::fastmcp_stdio_command().join(" "));
    let follower = tr.spawn(&[
        "call",
        "--server",
        &stdio,
        "long_sleep",
        "--args",
        r#"{"seconds":300}"#,
    ]);
    tmux.wait("the stdio task on the board, live", |s| {
        s.lines()
            .any(|l| l.contains("long_sleep") && l.contains("working"))
    });
    let sleeping = tr
        .records()
        .into_iter()
        .find(|r| r["tool"] == "long_sleep")
        .and_then(|r| r["taskId"].as_str().map(str::to_string))
        .expect("the stdio task is in the ledger");
    let screen = tmux.wait("both tasks on the board", |s| {
        row(s, &finished).is_some_and(|l| l.contains("completed"))
            && row(s, &sleeping).is_some_and(|l| l.contains("working"))
    });
    assert!(
        screen.contains("fastmcp_peer.py") && screen.contains("followed by other processes"),
        "the stdio server is named, and shown as followed elsewhere:\n{screen}"
    );

    // Cancelled from the board: through the outbox, by the process that follows it.
    tmux.keys(&["/"]);
    tmux.type_text("long_sleep");
    tmux.keys(&["Enter"]);
    tmux.wait("only the long task", |s| {
        row(s, &sleeping).is_some() && row(s, &finished).is_none()
    });
    tmux.wait("the selected task said to be followed elsewhere", |s| {
        s.contains("followed by another process: answers and cancels go to it")
    });
    tmux.keys(&["c"]);
    tmux.wait("the cancel confirmation", |s| s.contains("Cancel task"));
    tmux.keys(&["y"]);
    tmux.wait("the task cancelled on the board", |s| {
        row(s, &sleeping).is_some_and(|l| l.contains("cancelled"))
    });
    assert_eq!(
        outbox_done(&tr, "cancel"),
        1,
        "the cancel went through the outbox"
    );
    let ended = follower.finish(CLI_LIMIT);
    assert_ne!(
        ended.code,
        Some(0),
        "the call that followed it saw it cancelled: {ended:#?}"
    );
    tmux.quit();
}

#[test]
fn a_prune_in_another_shell_takes_the_pruned_rows_off_the_board() {
    let peer = support::fastmcp_http();
    let tr = Taskrail::new();
    let done = tr.run(
        &[
            "call",
            "--server",
            &peer.url,
            "slow_count",
            "--args",
            r#"{"steps":1,"delay":0.1}"#,
        ],
        CLI_LIMIT,
    );
    assert_eq!(done.code, Some(0), "{done:#?}");
    let finished = tr.records()[0]["taskId"].as_str().unwrap().to_string();
    let tmux = Tmux::start("prune");
    tmux.start_dashboard(&tr, &format!("--server {}", peer.url));
    tmux.wait("the finished task", |s| {
        row(s, &finished).is_some_and(|l| l.contains("completed"))
    });
    let running = support::taskrail::task_id(&tr.run(
        &[
            "call",
            "--server",
            &peer.url,
            "long_sleep",
            "--args",
            r#"{"seconds":120}"#,
            "--detach",
        ],
        CLI_LIMIT,
    ));
    tmux.wait("the running task", |s| {
        row(s, &running).is_some_and(|l| l.contains("working"))
    });

    let pruned = tr.run(&["prune", "--older-than", "0s"], CLI_LIMIT);
    assert_eq!(pruned.code, Some(0), "{pruned:#?}");
    assert!(
        pruned.stdout.contains("pruned 1 finished task"),
        "{pruned:#?}"
    );
    let screen = tmux.wait("the pruned row gone, the running one kept", |s| {
        row(s, &finished).is_none() && row(s, &running).is_some()
    });
    assert!(screen.contains("All 1"), "{screen}");
    tmux.quit();
}

/// The ledger's tasks of the demo server.
fn demo_tasks(tr: &Taskrail) -> Vec<serde_json::Value> {
    tr.records()
        .into_iter()
        .filter(|r| r["server"] == "demo")
        .collect()
}

#[test]
fn a_second_shell_reaches_the_demo_dashboards_tasks_and_demo_tasks_do_not_pile_up() {
    let tr = Taskrail::new();
    let tmux = Tmux::start("demo2");
    tmux.resize(160, 30);
    tmux.launch_dashboard(&tr, "demo");
    tmux.wait("the demo's tasks running", |s| {
        s.lines()
            .any(|l| l.contains("import_rows") && l.contains("working"))
            && s.lines().any(|l| l.contains("deploy"))
    });
    let tasks = demo_tasks(&tr);
    assert_eq!(tasks.len(), 4, "{tasks:#?}");
    let id_of = |tool: &str| {
        tasks
            .iter()
            .find(|r| r["tool"] == tool)
            .and_then(|r| r["taskId"].as_str())
            .unwrap()
            .to_string()
    };
    let import = id_of("import_rows");

    // `get` from a second shell: what the dashboard last recorded, said to be from the ledger.
    let got = tr.run(&["get", &import[..8]], CLI_LIMIT);
    assert_eq!(got.code, Some(0), "{got:#?}");
    assert_eq!(got.json()["taskId"], import.as_str(), "{got:#?}");
    assert!(got.stderr.contains("from the ledger"), "{got:#?}");
    let named = tr.run(&["get", "--server", "demo", &import[..8]], CLI_LIMIT);
    assert_eq!(named.code, Some(0), "{named:#?}");

    // `cancel` from a second shell: through the outbox to the dashboard, which follows it.
    let cancelled = tr.run(&["cancel", &import[..8]], CLI_LIMIT);
    assert_eq!(cancelled.code, Some(0), "{cancelled:#?}");
    assert_eq!(
        outbox_done(&tr, "cancel"),
        1,
        "the cancel went through the outbox"
    );
    tmux.wait("the demo task cancelled on the board", |s| {
        row(s, &import).is_some_and(|l| l.contains("cancelled"))
    });
    tmux.quit();

    // A second start replaces the first start's demo tasks rather than adding four more.
    tmux.launch_dashboard(&tr, "demo");
    tmux.wait("the demo's tasks again", |s| {
        s.lines()
            .any(|l| l.contains("import_rows") && l.contains("working"))
    });
    let again = demo_tasks(&tr);
    assert_eq!(again.len(), 4, "{again:#?}");
    assert!(again.iter().all(|r| r["taskId"] != import.as_str()));
    tmux.quit();
}
