//! The contract's reads and writes of one task: creation, tracking, snapshot ordering
//! (first terminal state wins), batches, answered keys, tombstones, listings and the
//! timeline.

use chrono::Utc;
use serde_json::{Value, json};

use super::{Open, fresh};
use crate::ids::{ServerId, TaskId};
use crate::ledger::{EventKind, LedgerHandle};
use crate::mcp::types::{Era, Task, TaskStatus};

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

async fn kinds(ledger: &LedgerHandle, server: &str, id: &str) -> Vec<EventKind> {
    ledger
        .timeline(&ServerId::named(server), &TaskId::new(id))
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect()
}

pub async fn creation_round_trip(open: &Open) {
    let (_dir, ledger) = fresh(open);
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
        .await
        .unwrap();
    let r = ledger
        .get(&ServerId::named("srv-a"), &TaskId::new("t-1"))
        .await
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
    assert_eq!(kinds(&ledger, "srv-a", "t-1").await, [EventKind::Created]);

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
        .await
        .unwrap();
    let again = ledger
        .get(&ServerId::named("srv-a"), &TaskId::new("t-1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.era, Some(Era::Modern));
    assert_eq!(again.tool.as_deref(), Some("slow_sum"));
    assert_eq!(again.arguments, Some(args));
    assert_eq!(again.parent_task.as_ref().map(TaskId::as_str), Some("t-0"));
    assert_eq!(kinds(&ledger, "srv-a", "t-1").await, [EventKind::Created]);

    // Same id on another server is a different task.
    assert!(
        ledger
            .get(&ServerId::named("srv-b"), &TaskId::new("t-1"))
            .await
            .unwrap()
            .is_none()
    );
}

pub async fn tracked_task_is_inserted_once_and_filled_by_creation(open: &Open) {
    let (_dir, ledger) = fresh(open);
    ledger
        .record_tracked(&ServerId::named("srv"), None, &TaskId::new("t-9"), None)
        .await
        .unwrap();
    ledger
        .record_tracked(
            &ServerId::named("srv"),
            Some(Era::Legacy),
            &TaskId::new("t-9"),
            None,
        )
        .await
        .unwrap();
    let r = ledger
        .get(&ServerId::named("srv"), &TaskId::new("t-9"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.status, "unknown");
    assert_eq!(r.era, Some(Era::Legacy));
    assert!(r.tool.is_none() && r.snapshot.is_none());
    assert_eq!(kinds(&ledger, "srv", "t-9").await, [EventKind::Note]);
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
        .await
        .unwrap();
    let r = ledger
        .get(&ServerId::named("srv"), &TaskId::new("t-9"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.era, Some(Era::Legacy), "first era kept");
    assert_eq!(r.tool.as_deref(), Some("tool"), "empty columns filled");
}

pub async fn snapshot_ordering_and_first_terminal_wins(open: &Open) {
    let (_dir, ledger) = fresh(open);
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
        .await
        .unwrap();
    let t1 = with_status(id, "working", "2026-07-28T10:00:01Z");
    assert!(
        ledger
            .record_snapshot(&ServerId::named("s"), &t1, EventKind::Poll, Some(5))
            .await
            .unwrap()
    );
    // Same state, only lastUpdatedAt bumped: not a change.
    let t1b = with_status(id, "working", "2026-07-28T10:00:02Z");
    assert!(
        !ledger
            .record_snapshot(&ServerId::named("s"), &t1b, EventKind::Poll, Some(5))
            .await
            .unwrap()
    );
    let t2 = task(json!({ "taskId": id, "status": "input_required",
        "lastUpdatedAt": "2026-07-28T10:00:05Z",
        "inputRequests": { "k1": { "method": "elicitation/create",
                                   "params": { "message": "name?" } } } }));
    assert!(
        ledger
            .record_snapshot(&ServerId::named("s"), &t2, EventKind::Push, None)
            .await
            .unwrap()
    );
    // An older snapshot arriving late is stale.
    let late = with_status(id, "working", "2026-07-28T10:00:03Z");
    assert!(
        !ledger
            .record_snapshot(&ServerId::named("s"), &late, EventKind::Poll, Some(9))
            .await
            .unwrap()
    );
    assert_eq!(
        ledger
            .get(&ServerId::named("s"), &TaskId::new(id))
            .await
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
            .await
            .unwrap()
    );

    let done = with_status(id, "completed", "2026-07-28T10:00:09Z");
    assert!(
        ledger
            .record_snapshot(&ServerId::named("s"), &done, EventKind::Resync, Some(40))
            .await
            .unwrap()
    );
    let r = ledger
        .get(&ServerId::named("s"), &TaskId::new(id))
        .await
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
                .await
                .unwrap()
        );
    }
    let r = ledger
        .get(&ServerId::named("s"), &TaskId::new(id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.status, "completed");
    assert_eq!(r.snapshot.unwrap().status, TaskStatus::Completed);
    assert!(ledger.non_terminal().await.unwrap().is_empty());

    use EventKind::*;
    assert_eq!(
        kinds(&ledger, "s", id).await,
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
        .await
        .unwrap();
    assert_eq!(timeline[1].latency_ms, Some(5));
    assert_eq!(timeline[3].detail["requests"][0]["key"], "k1");
    assert_eq!(
        timeline[7].detail,
        json!({ "from": "working", "to": "completed", "message": null })
    );
    assert_eq!(timeline[8].latency_ms, Some(40));
}

pub async fn snapshot_for_unknown_task_is_kept(open: &Open) {
    let (_dir, ledger) = fresh(open);
    let t = with_status("stray", "working", "2026-07-28T10:00:00Z");
    assert!(
        ledger
            .record_snapshot(&ServerId::named("s"), &t, EventKind::Push, None)
            .await
            .unwrap()
    );
    let r = ledger
        .get(&ServerId::named("s"), &TaskId::new("stray"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((r.status.as_str(), r.era), ("working", None));
    assert_eq!(ledger.non_terminal().await.unwrap().len(), 1);
}

pub async fn batched_snapshots_apply_in_order(open: &Open) {
    let (_dir, ledger) = fresh(open);
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
            .await
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
        ledger.record_snapshots(&batch).await.unwrap(),
        [true, false, true, false]
    );
    assert_eq!(
        ledger
            .get(&ServerId::named("s"), &TaskId::new("b-1"))
            .await
            .unwrap()
            .unwrap()
            .status,
        "completed"
    );
    assert_eq!(
        ledger
            .get(&ServerId::named("s"), &TaskId::new("b-2"))
            .await
            .unwrap()
            .unwrap()
            .status,
        "input_required"
    );
}

pub async fn answered_keys_first_answer_wins(open: &Open) {
    let (_dir, ledger) = fresh(open);
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
        .await
        .unwrap();
    assert!(
        ledger
            .answered_keys(&ServerId::named("s"), &TaskId::new("t"))
            .await
            .unwrap()
            .is_empty()
    );
    ledger
        .mark_answered(&ServerId::named("s"), &TaskId::new("t"), "k1", "accept")
        .await
        .unwrap();
    ledger
        .mark_answered(&ServerId::named("s"), &TaskId::new("t"), "k2", "decline")
        .await
        .unwrap();
    ledger
        .mark_answered(&ServerId::named("s"), &TaskId::new("t"), "k1", "cancel")
        .await
        .unwrap();
    let keys = ledger
        .answered_keys(&ServerId::named("s"), &TaskId::new("t"))
        .await
        .unwrap();
    assert_eq!(keys.len(), 2);
    assert!(keys.contains(&"k1".to_string()) && keys.contains(&"k2".to_string()));
    let answered = ledger
        .answered(&ServerId::named("s"), &TaskId::new("t"))
        .await
        .unwrap();
    let k1 = answered.iter().find(|a| a.key == "k1").unwrap();
    assert_eq!(k1.action, "accept");
    let mut record_keys = ledger
        .get(&ServerId::named("s"), &TaskId::new("t"))
        .await
        .unwrap()
        .unwrap()
        .answered_keys;
    record_keys.sort();
    assert_eq!(record_keys, ["k1", "k2"]);
    assert!(
        ledger
            .answered_keys(&ServerId::named("other"), &TaskId::new("t"))
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn tombstone_is_terminal_and_final(open: &Open) {
    let (_dir, ledger) = fresh(open);
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
        .await
        .unwrap();
    ledger
        .mark_expired(&ServerId::named("s"), &TaskId::new("gone"))
        .await
        .unwrap();
    ledger
        .mark_expired(&ServerId::named("s"), &TaskId::new("gone"))
        .await
        .unwrap();
    let r = ledger
        .get(&ServerId::named("s"), &TaskId::new("gone"))
        .await
        .unwrap()
        .unwrap();
    assert!(r.expired && r.terminal && r.terminal_at.is_some());
    assert_eq!(r.status, "working", "last known status kept");
    let late = with_status("gone", "completed", "2026-07-28T12:00:00Z");
    assert!(
        !ledger
            .record_snapshot(&ServerId::named("s"), &late, EventKind::Poll, None)
            .await
            .unwrap()
    );
    assert_eq!(
        kinds(&ledger, "s", "gone").await,
        [EventKind::Created, EventKind::Expired]
    );
    assert!(ledger.non_terminal().await.unwrap().is_empty());
    assert_eq!(ledger.list(true).await.unwrap().len(), 1);
}

pub async fn list_non_terminal_and_find(open: &Open) {
    let (dir, ledger) = fresh(open);
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
            .await
            .unwrap();
        // Distinct creation times so "newest first" is observable.
        tokio::time::sleep(std::time::Duration::from_millis(3)).await;
    }
    let done = with_status("zzz-three", "failed", "2026-07-28T10:00:00Z");
    ledger
        .record_snapshot(&ServerId::named("s1"), &done, EventKind::Poll, None)
        .await
        .unwrap();

    let all: Vec<String> = ledger
        .list(true)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.task_id.as_str().to_string())
        .collect();
    assert_eq!(all, ["abc", "zzz-three", "abc123-two", "abc123-one"]);
    let open_ids: Vec<String> = ledger
        .list(false)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.task_id.as_str().to_string())
        .collect();
    assert_eq!(open_ids, ["abc", "abc123-two", "abc123-one"]);
    let nt: Vec<String> = ledger
        .non_terminal()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.task_id.as_str().to_string())
        .collect();
    assert_eq!(nt, open_ids);

    let found: Vec<(String, String)> = ledger
        .find("abc")
        .await
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
    assert_eq!(ledger.find("abc123-t").await.unwrap().len(), 1);
    assert!(ledger.find("nope").await.unwrap().is_empty());
    assert!(
        ledger.find("%").await.unwrap().is_empty(),
        "no LIKE wildcards"
    );
    assert!(ledger.find("").await.is_err());
    drop(dir);
}

pub async fn timeline_keeps_insertion_order(open: &Open) {
    let (_dir, ledger) = fresh(open);
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
        .await
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
            .await
            .unwrap();
    }
    let timeline = ledger
        .timeline(&ServerId::named("s"), &TaskId::new("t"))
        .await
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
            .await
            .unwrap()
            .is_empty()
    );
}
