//! The dashboard on a PostgreSQL ledger that goes away: the header says "ledger offline —
//! N writes waiting" while the board keeps following its task to the end, and once the
//! database is back the header clears and the end is in the database. The outage is a cut
//! TCP relay in front of the test server.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::time::{Duration, Instant};

use crate::support;
use support::postgres::{psql, psql_rows, server};
use support::relay::Relay;
use support::taskrail::{DemoProcess, Taskrail, task_id};
use support::tmux::Tmux;

const LIMIT: Duration = Duration::from_secs(60);

fn stored_status(db: &str, id: &str) -> String {
    psql_rows(
        &format!("SELECT status FROM taskrail.tasks WHERE task_id = '{id}'"),
        db,
    )
    .trim()
    .to_string()
}

#[test]
fn the_header_says_the_ledger_is_offline_while_the_board_keeps_following_and_clears_when_it_is_back()
 {
    let db = format!("board_outage_{}", std::process::id());
    psql(&format!("CREATE DATABASE {db}"));
    let direct = format!(
        "postgres://postgres@127.0.0.1:{}/{db}?sslmode=disable",
        server().port
    );
    let migrate = Taskrail::new()
        .with_env("TASKRAIL_DB", direct)
        .run(&["ledger", "migrate"], LIMIT);
    assert_eq!(migrate.code, Some(0), "{migrate:#?}");
    let relay = Relay::start(&format!("http://127.0.0.1:{}/", server().port));
    let port = relay
        .url
        .trim_start_matches("http://127.0.0.1:")
        .trim_end_matches('/')
        .to_string();
    let tr = Taskrail::new();
    let home = tr.dir().display().to_string();
    let tr = tr.with_env("HOME", home).with_env(
        "TASKRAIL_DB",
        format!("postgres://postgres@127.0.0.1:{port}/{db}?sslmode=disable"),
    );
    let demo = DemoProcess::start(&["--poll-interval", "200"]);
    let tmux = Tmux::start("outage");
    tmux.start_dashboard(&tr, &format!("-s {}", demo.url));

    let id = task_id(&tr.run(
        &[
            "call",
            "-s",
            &demo.url,
            "render_report",
            "--detach",
            "--args",
            r#"{"pages":20}"#,
        ],
        LIMIT,
    ));
    let short = &id[..8];
    tmux.wait("the task on the board", |s| {
        s.lines()
            .any(|l| l.contains(short) && l.contains("working"))
    });

    relay.cut();
    tmux.wait("the header saying the ledger is offline", |s| {
        s.lines()
            .next()
            .is_some_and(|l| l.contains("ledger offline"))
    });
    // Still followed: the end shows while the database cannot be reached.
    tmux.wait("the task completed on the board", |s| {
        s.lines()
            .any(|l| l.contains(short) && l.contains("completed"))
    });
    assert_eq!(
        stored_status(&db, &id),
        "working",
        "nothing reached the database"
    );
    let screen = tmux.screen();
    let header = screen.lines().next().unwrap();
    assert!(
        header.contains("writes waiting") || header.contains("write waiting"),
        "{header}"
    );

    relay.mend();
    tmux.wait("the header without the outage", |s| {
        s.lines()
            .next()
            .is_some_and(|l| !l.contains("ledger offline"))
    });
    let deadline = Instant::now() + LIMIT;
    while stored_status(&db, &id) != "completed" && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        stored_status(&db, &id),
        "completed",
        "replayed into the database"
    );
    tmux.quit();
}
