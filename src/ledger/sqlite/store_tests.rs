//! Behaviour tests of the ledger's writes and reads against temporary database files.

use crate::ids::{ServerId, TaskId};
use std::time::Duration;

use chrono::Utc;
use serde_json::{Value, json};

use super::db::Db;
use crate::ledger::EventKind;
use crate::mcp::types::{Era, Task, TaskStatus};

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

fn kinds(ledger: &Db, server: &str, id: &str) -> Vec<EventKind> {
    ledger
        .timeline(&ServerId::named(server), &TaskId::new(id))
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect()
}

#[test]
fn creation_round_trip() {
    let (_dir, ledger) = open();
    let args = json!({ "n": 3, "label": "x" });
    ledger
        .record_created(crate::ledger::NewTask {
            server: &ServerId::named("srv-a"),
            era: Era::Modern,
            tool: "slow_sum",
            arguments: &args,
            task: &working("t-1"),
            parent_task: Some(&TaskId::new("t-0")),
            session: None,
            started_by: None,
        })
        .unwrap();
    let r = ledger
        .get(&ServerId::named("srv-a"), &TaskId::new("t-1"))
        .unwrap()
        .expect("stored");
    assert_eq!(r.server, "srv-a");
    assert_eq!(r.task_id, "t-1");
    assert_eq!(r.era, Some(Era::Modern));
    assert_eq!(r.tool.as_deref(), Some("slow_sum"));
    assert_eq!(r.arguments, Some(args.clone()));
    assert_eq!(r.snapshot, Some(working("t-1")));
    assert_eq!(r.status, "working");
    assert!(!r.terminal && !r.expired);
    assert_eq!(r.server_created_at.as_deref(), Some("2026-07-28T10:00:00Z"));
    assert_eq!((r.poll_interval_ms, r.ttl_ms), (Some(1500), Some(60000)));
    assert_eq!(r.parent_task.as_ref().map(TaskId::as_str), Some("t-0"));
    assert!(r.last_seen.is_some());
    assert!((Utc::now() - r.recorded_at).num_seconds().abs() < 60);
    assert_eq!(kinds(&ledger, "srv-a", "t-1"), [EventKind::Created]);

    // Idempotent: a second call keeps the first creation data and adds no event.
    ledger
        .record_created(crate::ledger::NewTask {
            server: &ServerId::named("srv-a"),
            era: Era::Legacy,
            tool: "other",
            arguments: &json!({}),
            task: &working("t-1"),
            parent_task: None,
            session: None,
            started_by: None,
        })
        .unwrap();
    let again = ledger
        .get(&ServerId::named("srv-a"), &TaskId::new("t-1"))
        .unwrap()
        .unwrap();
    assert_eq!(again.era, Some(Era::Modern));
    assert_eq!(again.tool.as_deref(), Some("slow_sum"));
    assert_eq!(again.arguments, Some(args));
    assert_eq!(again.parent_task.as_ref().map(TaskId::as_str), Some("t-0"));
    assert_eq!(kinds(&ledger, "srv-a", "t-1"), [EventKind::Created]);

    // Same id on another server is a different task.
    assert!(
        ledger
            .get(&ServerId::named("srv-b"), &TaskId::new("t-1"))
            .unwrap()
            .is_none()
    );
}

#[test]
fn tracked_task_is_inserted_once_and_filled_by_creation() {
    let (_dir, ledger) = open();
    ledger
        .record_tracked(&ServerId::named("srv"), None, &TaskId::new("t-9"), None)
        .unwrap();
    ledger
        .record_tracked(
            &ServerId::named("srv"),
            Some(Era::Legacy),
            &TaskId::new("t-9"),
            None,
        )
        .unwrap();
    let r = ledger
        .get(&ServerId::named("srv"), &TaskId::new("t-9"))
        .unwrap()
        .unwrap();
    assert_eq!(r.status, "unknown");
    assert_eq!(r.era, Some(Era::Legacy));
    assert!(r.tool.is_none() && r.snapshot.is_none());
    assert_eq!(kinds(&ledger, "srv", "t-9"), [EventKind::Note]);
    ledger
        .record_created(crate::ledger::NewTask {
            server: &ServerId::named("srv"),
            era: Era::Modern,
            tool: "tool",
            arguments: &json!({}),
            task: &working("t-9"),
            parent_task: None,
            session: None,
            started_by: None,
        })
        .unwrap();
    let r = ledger
        .get(&ServerId::named("srv"), &TaskId::new("t-9"))
        .unwrap()
        .unwrap();
    assert_eq!(r.era, Some(Era::Legacy), "first era kept");
    assert_eq!(r.tool.as_deref(), Some("tool"), "empty columns filled");
}

#[test]
fn snapshot_ordering_and_first_terminal_wins() {
    let (_dir, ledger) = open();
    let id = "t-order";
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
    let t1 = with_status(id, "working", "2026-07-28T10:00:01Z");
    assert!(
        ledger
            .record_snapshot(&ServerId::named("s"), &t1, EventKind::Poll, Some(5))
            .unwrap()
    );
    // Same state, only lastUpdatedAt bumped: not a change.
    let t1b = with_status(id, "working", "2026-07-28T10:00:02Z");
    assert!(
        !ledger
            .record_snapshot(&ServerId::named("s"), &t1b, EventKind::Poll, Some(5))
            .unwrap()
    );
    let t2 = task(json!({ "taskId": id, "status": "input_required",
        "lastUpdatedAt": "2026-07-28T10:00:05Z",
        "inputRequests": { "k1": { "method": "elicitation/create",
                                   "params": { "message": "name?" } } } }));
    assert!(
        ledger
            .record_snapshot(&ServerId::named("s"), &t2, EventKind::Push, None)
            .unwrap()
    );
    // An older snapshot arriving late is stale.
    let late = with_status(id, "working", "2026-07-28T10:00:03Z");
    assert!(
        !ledger
            .record_snapshot(&ServerId::named("s"), &late, EventKind::Poll, Some(9))
            .unwrap()
    );
    assert_eq!(
        ledger
            .get(&ServerId::named("s"), &TaskId::new(id))
            .unwrap()
            .unwrap()
            .status,
        "input_required"
    );
    // Unparseable timestamps fall back to arrival order.
    let odd = with_status(id, "working", "a");
    assert!(
        ledger
            .record_snapshot(&ServerId::named("s"), &odd, EventKind::Poll, None)
            .unwrap()
    );

    let done = with_status(id, "completed", "2026-07-28T10:00:09Z");
    assert!(
        ledger
            .record_snapshot(&ServerId::named("s"), &done, EventKind::Resync, Some(40))
            .unwrap()
    );
    let r = ledger
        .get(&ServerId::named("s"), &TaskId::new(id))
        .unwrap()
        .unwrap();
    assert!(r.terminal && r.terminal_at.is_some());
    // Anything after the first terminal snapshot is ignored, even a newer one.
    for (status, at) in [
        ("working", "2026-07-28T11:00:00Z"),
        ("failed", "2026-07-28T11:00:00Z"),
    ] {
        let later = with_status(id, status, at);
        assert!(
            !ledger
                .record_snapshot(&ServerId::named("s"), &later, EventKind::Poll, None)
                .unwrap()
        );
    }
    let r = ledger
        .get(&ServerId::named("s"), &TaskId::new(id))
        .unwrap()
        .unwrap();
    assert_eq!(r.status, "completed");
    assert_eq!(r.snapshot.unwrap().status, TaskStatus::Completed);
    assert!(ledger.non_terminal().unwrap().is_empty());

    use EventKind::*;
    assert_eq!(
        kinds(&ledger, "s", id),
        [
            Created,
            Poll,
            Status,
            InputRequested,
            Push,
            Status,
            Poll,
            Status,
            Resync
        ]
    );
    let timeline = ledger
        .timeline(&ServerId::named("s"), &TaskId::new(id))
        .unwrap();
    assert_eq!(timeline[1].latency_ms, Some(5));
    assert_eq!(timeline[3].detail["requests"][0]["key"], "k1");
    assert_eq!(
        timeline[7].detail,
        json!({ "from": "working", "to": "completed", "message": null })
    );
    assert_eq!(timeline[8].latency_ms, Some(40));
}

#[test]
fn snapshot_for_unknown_task_is_kept() {
    let (_dir, ledger) = open();
    let t = with_status("stray", "working", "2026-07-28T10:00:00Z");
    assert!(
        ledger
            .record_snapshot(&ServerId::named("s"), &t, EventKind::Push, None)
            .unwrap()
    );
    let r = ledger
        .get(&ServerId::named("s"), &TaskId::new("stray"))
        .unwrap()
        .unwrap();
    assert_eq!((r.status.as_str(), r.era), ("working", None));
    assert_eq!(ledger.non_terminal().unwrap().len(), 1);
}

#[test]
fn batched_snapshots_apply_in_order() {
    let (_dir, ledger) = open();
    for id in ["b-1", "b-2"] {
        ledger
            .record_created(crate::ledger::NewTask {
                server: &ServerId::named("s"),
                era: Era::Legacy,
                tool: "tool",
                arguments: &json!({}),
                task: &working(id),
                parent_task: None,
                session: None,
                started_by: None,
            })
            .unwrap();
    }
    let batch = vec![
        (
            ServerId::named("s"),
            with_status("b-1", "completed", "2026-07-28T10:00:01Z"),
            EventKind::Poll,
            Some(3),
        ),
        (
            ServerId::named("s"),
            with_status("b-1", "working", "2026-07-28T10:00:02Z"),
            EventKind::Poll,
            Some(3),
        ),
        (
            ServerId::named("s"),
            with_status("b-2", "input_required", "2026-07-28T10:00:01Z"),
            EventKind::Push,
            None,
        ),
        (
            ServerId::named("s"),
            with_status("b-2", "input_required", "2026-07-28T10:00:01Z"),
            EventKind::Push,
            None,
        ),
    ];
    assert_eq!(
        ledger.record_snapshots(&batch).unwrap(),
        [true, false, true, false]
    );
    assert_eq!(
        ledger
            .get(&ServerId::named("s"), &TaskId::new("b-1"))
            .unwrap()
            .unwrap()
            .status,
        "completed"
    );
    assert_eq!(
        ledger
            .get(&ServerId::named("s"), &TaskId::new("b-2"))
            .unwrap()
            .unwrap()
            .status,
        "input_required"
    );
}

#[test]
fn answered_keys_first_answer_wins() {
    let (_dir, ledger) = open();
    ledger
        .record_created(crate::ledger::NewTask {
            server: &ServerId::named("s"),
            era: Era::Modern,
            tool: "tool",
            arguments: &json!({}),
            task: &working("t"),
            parent_task: None,
            session: None,
            started_by: None,
        })
        .unwrap();
    assert!(
        ledger
            .answered_keys(&ServerId::named("s"), &TaskId::new("t"))
            .unwrap()
            .is_empty()
    );
    ledger
        .mark_answered(&ServerId::named("s"), &TaskId::new("t"), "k1", "accept")
        .unwrap();
    ledger
        .mark_answered(&ServerId::named("s"), &TaskId::new("t"), "k2", "decline")
        .unwrap();
    ledger
        .mark_answered(&ServerId::named("s"), &TaskId::new("t"), "k1", "cancel")
        .unwrap();
    let keys = ledger
        .answered_keys(&ServerId::named("s"), &TaskId::new("t"))
        .unwrap();
    assert_eq!(keys.len(), 2);
    assert!(keys.contains(&"k1".to_string()) && keys.contains(&"k2".to_string()));
    let answered = ledger
        .answered(&ServerId::named("s"), &TaskId::new("t"))
        .unwrap();
    let k1 = answered.iter().find(|a| a.key == "k1").unwrap();
    assert_eq!(k1.action, "accept");
    let mut record_keys = ledger
        .get(&ServerId::named("s"), &TaskId::new("t"))
        .unwrap()
        .unwrap()
        .answered_keys;
    record_keys.sort();
    assert_eq!(record_keys, ["k1", "k2"]);
    assert!(
        ledger
            .answered_keys(&ServerId::named("other"), &TaskId::new("t"))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn tombstone_is_terminal_and_final() {
    let (_dir, ledger) = open();
    ledger
        .record_created(crate::ledger::NewTask {
            server: &ServerId::named("s"),
            era: Era::Modern,
            tool: "tool",
            arguments: &json!({}),
            task: &working("gone"),
            parent_task: None,
            session: None,
            started_by: None,
        })
        .unwrap();
    ledger
        .mark_expired(&ServerId::named("s"), &TaskId::new("gone"))
        .unwrap();
    ledger
        .mark_expired(&ServerId::named("s"), &TaskId::new("gone"))
        .unwrap();
    let r = ledger
        .get(&ServerId::named("s"), &TaskId::new("gone"))
        .unwrap()
        .unwrap();
    assert!(r.expired && r.terminal && r.terminal_at.is_some());
    assert_eq!(r.status, "working", "last known status kept");
    let late = with_status("gone", "completed", "2026-07-28T12:00:00Z");
    assert!(
        !ledger
            .record_snapshot(&ServerId::named("s"), &late, EventKind::Poll, None)
            .unwrap()
    );
    assert_eq!(
        kinds(&ledger, "s", "gone"),
        [EventKind::Created, EventKind::Expired]
    );
    assert!(ledger.non_terminal().unwrap().is_empty());
    assert_eq!(ledger.list(true).unwrap().len(), 1);
}

#[test]
fn list_non_terminal_and_find() {
    let (dir, ledger) = open();
    let ids = [
        ("s1", "abc123-one"),
        ("s2", "abc123-two"),
        ("s1", "zzz-three"),
        ("s2", "abc"),
    ];
    for (server, id) in ids {
        ledger
            .record_created(crate::ledger::NewTask {
                server: &ServerId::named(server),
                era: Era::Modern,
                tool: "tool",
                arguments: &json!({}),
                task: &working(id),
                parent_task: None,
                session: None,
                started_by: None,
            })
            .unwrap();
        // Distinct creation times so "newest first" is observable.
        std::thread::sleep(Duration::from_millis(3));
    }
    let done = with_status("zzz-three", "failed", "2026-07-28T10:00:00Z");
    ledger
        .record_snapshot(&ServerId::named("s1"), &done, EventKind::Poll, None)
        .unwrap();

    let all: Vec<String> = ledger
        .list(true)
        .unwrap()
        .into_iter()
        .map(|r| r.task_id.as_str().to_string())
        .collect();
    assert_eq!(all, ["abc", "zzz-three", "abc123-two", "abc123-one"]);
    let open_ids: Vec<String> = ledger
        .list(false)
        .unwrap()
        .into_iter()
        .map(|r| r.task_id.as_str().to_string())
        .collect();
    assert_eq!(open_ids, ["abc", "abc123-two", "abc123-one"]);
    let nt: Vec<String> = ledger
        .non_terminal()
        .unwrap()
        .into_iter()
        .map(|r| r.task_id.as_str().to_string())
        .collect();
    assert_eq!(nt, open_ids);

    let found: Vec<(String, String)> = ledger
        .find("abc")
        .unwrap()
        .into_iter()
        .map(|r| {
            (
                r.server.as_str().to_string(),
                r.task_id.as_str().to_string(),
            )
        })
        .collect();
    assert_eq!(found[0], ("s2".into(), "abc".into()), "exact match first");
    assert_eq!(found.len(), 3);
    assert_eq!(ledger.find("abc123-t").unwrap().len(), 1);
    assert!(ledger.find("nope").unwrap().is_empty());
    assert!(ledger.find("%").unwrap().is_empty(), "no LIKE wildcards");
    assert!(ledger.find("").is_err());
    drop(dir);
}

#[test]
fn timeline_keeps_insertion_order() {
    let (_dir, ledger) = open();
    ledger
        .record_created(crate::ledger::NewTask {
            server: &ServerId::named("s"),
            era: Era::Modern,
            tool: "tool",
            arguments: &json!({}),
            task: &working("t"),
            parent_task: None,
            session: None,
            started_by: None,
        })
        .unwrap();
    let steps = [
        (EventKind::CancelRequested, None, json!({ "by": "user" })),
        (EventKind::CancelAcked, Some(31), json!(null)),
        (EventKind::Error, None, json!({ "message": "timeout" })),
        (EventKind::InputSent, Some(7), json!({ "keys": ["k1"] })),
        (EventKind::Note, None, json!("hello")),
    ];
    for (kind, latency, detail) in &steps {
        ledger
            .record_event(
                &ServerId::named("s"),
                &TaskId::new("t"),
                *kind,
                *latency,
                detail,
            )
            .unwrap();
    }
    let timeline = ledger
        .timeline(&ServerId::named("s"), &TaskId::new("t"))
        .unwrap();
    assert_eq!(timeline.len(), steps.len() + 1);
    assert_eq!(timeline[0].kind, EventKind::Created);
    for (event, (kind, latency, detail)) in timeline[1..].iter().zip(&steps) {
        assert_eq!(
            (event.kind, event.latency_ms, &event.detail),
            (*kind, *latency, detail)
        );
    }
    assert!(timeline.windows(2).all(|w| w[0].at <= w[1].at));
    assert!(
        ledger
            .timeline(&ServerId::named("s"), &TaskId::new("unknown"))
            .unwrap()
            .is_empty()
    );
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
