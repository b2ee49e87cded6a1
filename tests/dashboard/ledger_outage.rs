//! The dashboard on a PostgreSQL ledger that goes away: the header says "ledger offline —
//! N writes waiting" while the board keeps following its task to the end, and once the
//! database is back the header clears and the end is in the database. The outage is a cut
//! TCP relay in front of the test server.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::time::{Duration, Instant};

use crate::support;
use support::postgres::{relay, stored_status, team_database, user_behind};
use support::taskrail::{DemoProcess, task_id};
use support::tmux::Tmux;

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn the_header_says_the_ledger_is_offline_while_the_board_keeps_following_and_clears_when_it_is_back()
 {
    let db = team_database("board_outage");
    let (relay, port) = relay();
    let tr = user_behind(port, &db);
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
