//! A PostgreSQL ledger that goes away mid-run: the call keeps following its task, its
//! writes are kept in the local spool (not in the database), a `kill -9` during the outage
//! loses none of them, and the next command, once the database is back, replays them in
//! order. The outage is a cut TCP relay in front of the test server (the server itself
//! stays up for the other tests).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::time::{Duration, Instant};

use crate::support;
use support::postgres::{psql_rows, relay, stored_status, team_database, user_behind};
use support::taskrail::{DemoProcess, Taskrail, task_id};

const LIMIT: Duration = Duration::from_secs(60);

/// Rows waiting in a user's spool file.
fn spooled(tr: &Taskrail) -> i64 {
    let path = tr.dir().join(".local/share/taskrail/pg-spool.db");
    let conn = rusqlite::Connection::open(&path)
        .unwrap_or_else(|e| panic!("the spool {}: {e}", path.display()));
    conn.query_row("SELECT count(*) FROM spool", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_watch_outlives_a_database_outage_and_a_kill_9_and_the_next_command_replays_its_writes() {
    let db = team_database("outage");
    let (relay, port) = relay();
    let tr = user_behind(port, &db);
    let demo = DemoProcess::start(&["--poll-interval", "200"]);

    let id = task_id(&tr.run(
        &[
            "call",
            "-s",
            &demo.url,
            "render_report",
            "--detach",
            "--args",
            r#"{"pages":12}"#,
        ],
        LIMIT,
    ));
    let mut call = tr.spawn(&["watch", "-s", &demo.url, &id, "--json"]);
    call.wait_stdout("\"working\"", LIMIT);
    assert_eq!(stored_status(&db, &id), "working");

    relay.cut();
    call.wait_stderr("cannot be reached", LIMIT);
    // Still followed: the end of the task is seen (the demo server is not behind the relay).
    call.wait_stdout("\"completed\"", LIMIT);
    // The database did not hear of it; the spool holds it.
    assert_eq!(
        stored_status(&db, &id),
        "working",
        "nothing reached the database"
    );
    assert!(spooled(&tr) > 0, "the writes wait in the spool");
    call.kill9();

    relay.mend();
    let ls = tr.run(&["ls", "--all", "--json"], LIMIT);
    assert_eq!(ls.code, Some(0), "{ls:#?}");
    let row = ls
        .json_lines()
        .into_iter()
        .find(|r| r["task_id"] == id.as_str() || r["taskId"] == id.as_str())
        .unwrap_or_else(|| panic!("the task is listed: {ls:#?}"));
    assert!(row.to_string().contains("completed"), "{row}");
    assert_eq!(
        stored_status(&db, &id),
        "completed",
        "replayed into the database"
    );
    assert_eq!(spooled(&tr), 0, "the spool is empty once replayed");
    // The replayed timeline keeps the order the writes were made in.
    let kinds = psql_rows(
        &format!(
            "SELECT e.kind FROM taskrail.events e JOIN taskrail.tasks t ON t.id = e.task
              WHERE t.task_id = '{id}' ORDER BY e.id"
        ),
        &db,
    );
    let kinds: Vec<&str> = kinds.lines().collect();
    assert_eq!(kinds.first(), Some(&"created"), "{kinds:?}");
    assert!(kinds.contains(&"status"), "{kinds:?}");
}

#[test]
fn a_process_that_keeps_running_replays_its_writes_itself_once_the_database_is_back() {
    let db = team_database("outage_live");
    let (relay, port) = relay();
    let tr = user_behind(port, &db);
    let demo = DemoProcess::start(&["--poll-interval", "200"]);
    let start = |pages: u32| {
        task_id(&tr.run(
            &[
                "call",
                "-s",
                &demo.url,
                "render_report",
                "--detach",
                "--args",
                &format!(r#"{{"pages":{pages}}}"#),
            ],
            LIMIT,
        ))
    };
    // One task ends during the outage; the other keeps the watch running past it.
    let (short, long) = (start(15), start(60));
    let mut watch = tr.spawn(&["watch", "-s", &demo.url, &short, &long, "--json"]);
    watch.wait_stdout("\"working\"", LIMIT);

    relay.cut();
    watch.wait_stderr("cannot be reached", LIMIT);
    let done = watch.wait_stdout("\"completed\"", LIMIT);
    if !done.contains(&short) {
        let rest = watch.finish(LIMIT);
        panic!("the short task ends first: {done}\n{rest:#?}");
    }
    assert_eq!(
        stored_status(&db, &short),
        "working",
        "nothing reached the database"
    );
    relay.mend();
    watch.wait_stderr("is back", LIMIT);
    // The end seen during the outage reached the database without a restart.
    let deadline = Instant::now() + LIMIT;
    while stored_status(&db, &short) != "completed" && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(stored_status(&db, &short), "completed");
    assert_eq!(spooled(&tr), 0, "the spool is empty once replayed");
    drop(watch);
}
