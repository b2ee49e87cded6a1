//! Tests of the SQLite backend's writes and reads that look at its rows (retention by
//! stored time); the behaviour every backend shares is in `ledger::contract::store`.

use crate::ids::{ServerId, TaskId};
use std::time::Duration;

use chrono::Utc;
use serde_json::{Value, json};

use super::db::Db;
use crate::ledger::EventKind;
use crate::mcp::types::{Era, Task};

fn open() -> (tempfile::TempDir, Db) {
    let dir = tempfile::tempdir().unwrap();
    let ledger = Db::open(&dir.path().join("ledger.db")).unwrap();
    (dir, ledger)
}

fn task(wire: Value) -> Task {
    Task::from_wire(&wire).unwrap()
}

fn working(id: &str) -> Task {
    task(
        json!({ "taskId": id, "status": "working", "createdAt": "2026-07-28T10:00:00Z",
                 "ttlMs": 60000, "pollIntervalMs": 1500 }),
    )
}

fn with_status(id: &str, status: &str, updated: &str) -> Task {
    task(json!({ "taskId": id, "status": status, "lastUpdatedAt": updated }))
}

#[test]
fn prune_removes_only_old_terminal_tasks() {
    let (_dir, ledger) = open();
    for id in ["old-done", "new-done", "old-running", "old-expired"] {
        ledger
            .record_created(crate::ledger::NewTask {
                server: &ServerId::named("s"),
                era: Era::Modern,
                tool: "tool",
                arguments: &json!({}),
                task: &working(id),
                parent_task: None,
                session: None,
                started_by: None,
            })
            .unwrap();
    }
    ledger
        .mark_answered(
            &ServerId::named("s"),
            &TaskId::new("old-done"),
            "k",
            "accept",
        )
        .unwrap();
    let done = |id: &str| with_status(id, "completed", "2026-07-28T10:00:00Z");
    ledger
        .record_snapshot(
            &ServerId::named("s"),
            &done("old-done"),
            EventKind::Poll,
            None,
        )
        .unwrap();
    ledger
        .record_snapshot(
            &ServerId::named("s"),
            &done("new-done"),
            EventKind::Poll,
            None,
        )
        .unwrap();
    ledger
        .mark_expired(&ServerId::named("s"), &TaskId::new("old-expired"))
        .unwrap();
    // Age everything by 40 days, then make one terminal task recent again.
    let forty_days = 40 * 86_400_000_i64;
    ledger
        .conn
        .execute(
            "UPDATE tasks SET recorded_at = recorded_at - ?1,
                 terminal_at = terminal_at - ?1, last_seen = last_seen - ?1",
            [forty_days],
        )
        .unwrap();
    ledger
        .conn
        .execute(
            "UPDATE tasks SET terminal_at = ?1 WHERE task_id = 'new-done'",
            [Utc::now().timestamp_millis() - 1_000],
        )
        .unwrap();

    assert_eq!(ledger.prune(Duration::from_secs(30 * 86_400)).unwrap(), 2);
    let left: Vec<String> = ledger
        .list(true)
        .unwrap()
        .into_iter()
        .map(|r| r.task_id.as_str().to_string())
        .collect();
    assert_eq!(left.len(), 2);
    assert!(left.contains(&"new-done".into()) && left.contains(&"old-running".into()));
    let orphans: i64 = ledger
        .conn
        .query_row(
            "SELECT (SELECT count(*) FROM events WHERE task NOT IN (SELECT id FROM tasks))
                  + (SELECT count(*) FROM answered_keys WHERE task NOT IN (SELECT id FROM tasks))",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(orphans, 0, "events and keys go with their task");
    // A running task is never pruned, whatever the age.
    assert_eq!(ledger.prune(Duration::ZERO).unwrap(), 1);
    assert_eq!(ledger.list(true).unwrap()[0].task_id, "old-running");
    assert_eq!(
        ledger
            .prune_before(Utc::now() + chrono::Duration::days(365))
            .unwrap(),
        0
    );
}
