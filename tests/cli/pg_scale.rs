//! The PostgreSQL ledger's scale benchmarks run end to end on tiny numbers against the test
//! server: `bench populate` and `bench startup` on a `postgres://` ledger resume every task,
//! `bench activity` reads them, and `bench feed-scale` (writer and watcher processes on one
//! ledger) reports no write lost or duplicated by either watcher. Behaviour only: the
//! figures themselves are the benchmark's (`benches/scripts/pg_scale.sh`), never asserted.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::time::Duration;

use crate::support;
use support::postgres::{psql, server};
use support::taskrail::Taskrail;

const LIMIT: Duration = Duration::from_secs(180);

/// A fresh database on the test server, migrated; its URL.
fn ledger(name: &str) -> (Taskrail, String) {
    let db = format!("{name}_{}", std::process::id());
    psql(&format!("CREATE DATABASE {db}"));
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/{db}?sslmode=disable",
        server().port
    );
    let tr = Taskrail::new();
    let run = tr.run(&["--db", &url, "ledger", "migrate"], LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    (tr, url)
}

#[test]
fn startup_and_the_stats_read_work_on_a_postgres_ledger() {
    let (tr, url) = ledger("scale_startup");
    let fill = tr.run(
        &["bench", "populate", "--tasks", "40", "--ledger", &url],
        LIMIT,
    );
    assert_eq!(fill.code, Some(0), "{fill:#?}");
    let run = tr.run(&["bench", "startup", "--ledger", &url], LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        run.stdout
            .contains("start-up: 40 finished tasks in the PostgreSQL ledger"),
        "{run:#?}"
    );
    assert!(
        run.stdout.contains("first frame showing all 40 tasks"),
        "{run:#?}"
    );
    let wrong = tr.run(
        &["bench", "startup", "--ledger", &url, "--tasks", "41"],
        LIMIT,
    );
    assert_ne!(wrong.code, Some(0), "{wrong:#?}");
    assert!(
        !wrong.stderr.contains("postgres://"),
        "no URL shown: {wrong:#?}"
    );

    let stats = tr.run(
        &[
            "bench",
            "activity",
            "--ledger",
            &url,
            "--runs",
            "2",
            "--default-read",
        ],
        LIMIT,
    );
    assert_eq!(stats.code, Some(0), "{stats:#?}");
    assert!(
        stats
            .stdout
            .contains("on the PostgreSQL ledger, last 24 h: 40 tasks"),
        "{stats:#?}"
    );
}

#[test]
fn writers_and_watchers_on_a_postgres_ledger_lose_and_duplicate_nothing() {
    let (tr, url) = ledger("scale_feed");
    let run = tr.run(
        &[
            "bench",
            "feed-scale",
            "--ledger",
            &url,
            "--writers",
            "3",
            "--secs",
            "2",
            "--watchers",
            "2",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    for w in 0..2 {
        assert!(
            run.stdout
                .contains(&format!("watcher {w}: lost 0, duplicated 0;")),
            "{run:#?}"
        );
    }
    // Every writer wrote: 3 writers, 2 s at 10 tasks/s, some tasks each.
    let written = run
        .stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("written: "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0);
    assert!(written >= 3, "{run:#?}");
    // The watchers saw the writes (not merely nothing).
    assert!(!run.stdout.contains("seen 0 of"), "{run:#?}");
}
