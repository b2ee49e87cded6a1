//! Two users on one PostgreSQL ledger, end to end: two HOMEs logged in as two roles (carol
//! a member of alice), a task alice started with `call --detach` in carol's `ls`, carol's
//! `cancel` carried to alice's follower through the outbox, and a third role that sees none
//! of it.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::time::Duration;

use crate::support;
use support::postgres::{psql, user};
use support::taskrail::{DemoProcess, task_id};

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn two_homes_share_a_task_and_cancel_it_through_the_follower_and_a_third_role_sees_nothing() {
    let n = std::process::id();
    let db = format!("team_{n}");
    let (alice, carol, mallory) = (
        format!("alice_{n}"),
        format!("carol_{n}"),
        format!("mallory_{n}"),
    );
    psql(&format!("CREATE DATABASE {db}"));
    for role in [&alice, &carol, &mallory] {
        psql(&format!(
            "DO $$ BEGIN
                 IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN
                     CREATE ROLE {role} LOGIN;
                 END IF;
             END $$"
        ));
    }
    let owner = user(&db, "postgres");
    let run = owner.run(&["ledger", "migrate"], LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    psql(&format!(
        "GRANT taskrail_users TO {alice}, {carol}, {mallory}; GRANT {alice} TO {carol}"
    ));
    let (a, c, m) = (user(&db, &alice), user(&db, &carol), user(&db, &mallory));

    let demo = DemoProcess::start(&["--time-scale", "0.05", "--poll-interval", "200"]);
    let url = demo.url.as_str();
    let id = task_id(&a.run(
        &[
            "call",
            "-s",
            url,
            "import_rows",
            "--detach",
            "--args",
            r#"{"count":100000}"#,
        ],
        LIMIT,
    ));

    // Carol sees alice's task; mallory sees nothing.
    let ls = c.run(&["ls", "--json"], LIMIT);
    assert_eq!(ls.code, Some(0), "{ls:#?}");
    assert!(ls.stdout.contains(&id), "carol sees alice's task: {ls:#?}");
    let ls = m.run(&["ls", "--json"], LIMIT);
    assert_eq!(ls.code, Some(0), "{ls:#?}");
    assert!(!ls.stdout.contains(&id), "mallory sees nothing: {ls:#?}");

    // Alice follows the task; carol's cancel reaches it through the outbox.
    let mut watch = a.spawn(&["watch", "-s", url, &id, "--json"]);
    watch.wait_stdout("working", LIMIT);
    let ack = c.run(&["cancel", "-s", url, &id], LIMIT);
    assert_eq!(ack.code, Some(0), "{ack:#?}");
    let done = watch.finish(LIMIT);
    assert_eq!(done.code, Some(4), "cancelled: {done:#?}");

    // The cancel went through the follower: carol's request is in the outbox, done.
    let rows = support::postgres::psql_rows(
        &format!(
            "SELECT count(*) FROM {db_schema}.outbox WHERE owner_role = '{carol}' AND done_at IS NOT NULL",
            db_schema = "taskrail"
        ),
        &db,
    );
    assert_eq!(rows.trim(), "1", "one cancel request, carried out");
    let ls = m.run(&["ls", "--all", "--json"], LIMIT);
    assert!(
        !ls.stdout.contains(&id),
        "mallory still sees nothing: {ls:#?}"
    );
}
