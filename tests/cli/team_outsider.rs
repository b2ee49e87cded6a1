//! A role outside the team, on the same PostgreSQL ledger, given the exact server URL and a
//! task's full id (a leaked id, say): its `cancel` ends as for an unknown task (exit 5) with
//! a clear message, and changes nothing — the task keeps working, its follower keeps its
//! lease, no request enters the outbox, and the server is never asked to cancel.
//!
//! The ledger knows the task is there (`task_hidden`, a function that says only yes or no)
//! and refuses before any request is made.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::time::Duration;

use crate::support;
use support::postgres::{psql, psql_rows, user};
use support::taskrail::{DemoProcess, Taskrail};

const LIMIT: Duration = Duration::from_secs(60);

/// The snapshot status `tr` sees for task `id` (`None`: not visible).
fn status(tr: &Taskrail, id: &str) -> Option<String> {
    let ls = tr.run(&["ls", "--all", "--json"], LIMIT);
    assert_eq!(ls.code, Some(0), "{ls:#?}");
    ls.json_lines()
        .into_iter()
        .find(|r| r["taskId"] == id)
        .map(|r| r["snapshot"]["status"].as_str().unwrap_or("?").to_string())
}

#[test]
fn an_outsiders_cancel_with_the_exact_url_and_id_is_an_unknown_task_and_changes_nothing() {
    let n = std::process::id();
    let db = format!("outsider_{n}");
    let (alice, mallory) = (format!("alice_o{n}"), format!("mallory_o{n}"));
    psql(&format!("CREATE DATABASE {db}"));
    for role in [&alice, &mallory] {
        psql(&format!(
            "DO $$ BEGIN
                 IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN
                     CREATE ROLE {role} LOGIN;
                 END IF;
             END $$"
        ));
    }
    let run = user(&db, "postgres").run(&["ledger", "migrate"], LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    // Both may use the ledger; neither is a member of the other.
    psql(&format!("GRANT taskrail_users TO {alice}, {mallory}"));
    let (a, m) = (user(&db, &alice), user(&db, &mallory));

    let demo = DemoProcess::start(&["--time-scale", "2", "--poll-interval", "200"]);
    let url = demo.url.as_str();
    // Alice's call follows its task.
    let mut follower = a.spawn(&[
        "call",
        "-s",
        url,
        "import_rows",
        "--args",
        r#"{"count":100000}"#,
    ]);
    let deadline = std::time::Instant::now() + LIMIT;
    let id = loop {
        let ls = a.run(&["ls", "--json"], LIMIT);
        if let Some(id) = ls
            .json_lines()
            .iter()
            .find_map(|r| r["taskId"].as_str().map(str::to_string))
        {
            break id;
        }
        assert!(
            std::time::Instant::now() < deadline && follower.child.try_wait().unwrap().is_none(),
            "alice's task never reached the ledger"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(status(&a, &id).as_deref(), Some("working"));

    // Mallory has the exact URL and the full id.
    let cancel = m.run(&["cancel", "--server", url, &id], LIMIT);
    assert_eq!(cancel.code, Some(5), "as for an unknown task: {cancel:#?}");
    let said = format!("{}{}", cancel.stdout, cancel.stderr);
    assert!(
        said.contains("unknown task") || said.contains("not in the ledger"),
        "a clear message: {cancel:#?}"
    );
    assert!(
        !cancel.stderr.contains("panicked") && !cancel.stdout.contains("cancelled"),
        "{cancel:#?}"
    );

    // Nothing changed: no request, no cancel at the server, the task working and followed.
    let outbox = psql_rows("SELECT count(*) FROM taskrail.outbox", &db);
    assert_eq!(outbox.trim(), "0", "no outbox request");
    assert_eq!(
        demo.stats()["methods"]["tasks/cancel"],
        serde_json::Value::Null,
        "the server was never asked: {}",
        demo.stats()
    );
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(status(&a, &id).as_deref(), Some("working"), "still working");
    assert_eq!(status(&m, &id), None, "mallory still sees nothing");
    let follows = psql_rows(
        &format!(
            "SELECT count(*) FROM taskrail.follows f JOIN taskrail.tasks t ON t.id = f.task \
             WHERE t.task_id = '{id}' AND f.until >= (extract(epoch from now()) * 1000)::bigint"
        ),
        &db,
    );
    assert_eq!(follows.trim(), "1", "alice's call still holds the lease");
    assert!(
        follower.child.try_wait().unwrap().is_none(),
        "alice's call still follows the task"
    );

    // Alice can still cancel her own task: the task was untouched, not broken.
    let ack = a.run(&["cancel", "--server", url, &id], LIMIT);
    assert_eq!(ack.code, Some(0), "{ack:#?}");
    let done = follower.finish(LIMIT);
    assert_eq!(done.code, Some(4), "cancelled by its owner: {done:#?}");
}
