//! A team's board on PostgreSQL, two HOMEs: alice's dashboard (in tmux) shows live a task bob starts with `taskrail call` against the demo
//! server over HTTP (bob's `call` follows it), and a cancel given with a keypress on alice's board travels through the outbox to
//! bob's follower, which cancels it on the server: the task ends cancelled for both.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::time::Duration;

use crate::support;
use support::postgres::{psql, psql_rows, user};
use support::taskrail::{DemoProcess, Taskrail};
use support::tmux::Tmux;

const CLI_LIMIT: Duration = Duration::from_secs(90);

/// The board line of task `id`.
fn row<'a>(screen: &'a str, id: &str) -> Option<&'a str> {
    screen.lines().find(|l| l.contains(&id[..8]))
}

/// `tr`'s `ls --all --json` records.
fn records(tr: &Taskrail) -> Vec<serde_json::Value> {
    let ls = tr.run(&["ls", "--all", "--json"], CLI_LIMIT);
    assert_eq!(ls.code, Some(0), "{ls:#?}");
    ls.json_lines()
}

#[test]
fn a_task_started_in_another_home_shows_live_and_a_cancel_from_the_board_reaches_its_follower() {
    let n = std::process::id();
    let db = format!("board_{n}");
    let (alice, bob) = (format!("alice_b{n}"), format!("bob_b{n}"));
    psql(&format!("CREATE DATABASE {db}"));
    for role in [&alice, &bob] {
        psql(&format!(
            "DO $$ BEGIN
                 IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN
                     CREATE ROLE {role} LOGIN;
                 END IF;
             END $$"
        ));
    }
    let run = user(&db, "postgres").run(&["ledger", "migrate"], CLI_LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    // Alice is a member of bob: she sees and acts on his tasks.
    psql(&format!(
        "GRANT taskrail_users TO {alice}, {bob}; GRANT {bob} TO {alice}"
    ));
    let (a, b) = (user(&db, &alice), user(&db, &bob));

    let demo = DemoProcess::start(&["--time-scale", "2", "--poll-interval", "200"]);
    let tmux = Tmux::start("team");
    tmux.resize(160, 30);
    // Alice's dashboard is not configured for the demo server (it meets it in the ledger and
    // mirrors bob's task); bob's `call` holds the task's lease, so her cancel must travel
    // through the outbox.
    let config = a.dir().join("config.toml");
    std::fs::write(
        &config,
        "[[server]]\nname = \"offline\"\nurl = \"http://127.0.0.1:9/mcp\"\n",
    )
    .unwrap();
    tmux.launch_dashboard(&a, &format!("--config {}", config.display()));
    tmux.wait("the dashboard header", |s| s.contains(" taskrail "));

    // Bob's call follows the task it starts, in his HOME, while alice's board watches.
    let follower = b.spawn(&[
        "call",
        "-s",
        &demo.url,
        "import_rows",
        "--args",
        r#"{"count":100000}"#,
    ]);
    let deadline = std::time::Instant::now() + CLI_LIMIT;
    let id = loop {
        if let Some(id) = records(&b)
            .iter()
            .find_map(|r| r["taskId"].as_str().map(str::to_string))
        {
            break id;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "bob's task never reached the ledger"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    tmux.wait("bob's task on alice's board, working", |s| {
        row(s, &id).is_some_and(|l| l.contains("working"))
    });

    // Alice cancels it from her board; bob's follower carries it out.
    tmux.keys(&["/"]);
    tmux.type_text("import_rows");
    tmux.keys(&["Enter"]);
    tmux.wait("only bob's task, selected", |s| {
        s.contains("1 match") && row(s, &id).is_some_and(|l| l.starts_with('›'))
    });
    tmux.keys(&["c"]);
    tmux.wait("the cancel confirmation", |s| s.contains("Cancel task"));
    tmux.keys(&["y"]);
    tmux.wait("the task cancelled on alice's board", |s| {
        row(s, &id).is_some_and(|l| l.contains("cancelled"))
    });

    // Through the outbox: alice's request, carried out by bob's follower.
    let done = psql_rows(
        &format!(
            "SELECT count(*) FROM taskrail.outbox WHERE owner_role = '{alice}' \
             AND kind = 'cancel' AND done_at IS NOT NULL"
        ),
        &db,
    );
    assert_eq!(
        done.trim(),
        "1",
        "one cancel request from alice, carried out"
    );
    let ended = follower.finish(CLI_LIMIT);
    assert_eq!(
        ended.code,
        Some(4),
        "bob's call saw it cancelled: {ended:#?}"
    );
    assert_eq!(
        demo.stats()["methods"]["tasks/cancel"],
        1,
        "the server was asked once: {}",
        demo.stats()
    );

    // Cancelled for both.
    for (who, tr) in [("alice", &a), ("bob", &b)] {
        let rec = records(tr)
            .into_iter()
            .find(|r| r["taskId"] == id.as_str())
            .unwrap_or_else(|| panic!("{who} sees the task"));
        assert_eq!(rec["snapshot"]["status"], "cancelled", "{who}: {rec}");
    }
    tmux.quit();
}
