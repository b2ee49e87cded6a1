//! The contract's activity read: which tasks it holds (those alive since the moment),
//! which of their timeline entries, what it says of each, its limits, and that a
//! backend's own read agrees with the one built from `list` and `timeline`.

use std::time::Duration;

use chrono::Utc;
use serde_json::{Value, json};

use super::{Open, fresh};
use crate::ids::{ServerId, TaskId};
use crate::ledger::{ActivityLimits, EventKind, LedgerHandle, activity_from_reads};
use crate::mcp::types::Task;

fn task(id: &str, status: &str, updated: &str) -> Task {
    let wire: Value = json!({ "taskId": id, "status": status, "lastUpdatedAt": updated,
                              "createdAt": "2026-07-28T10:00:00Z" });
    Task::from_wire(&wire).unwrap()
}

async fn snap(l: &LedgerHandle, id: &str, status: &str, n: u32, kind: EventKind, ms: u64) {
    let updated = format!("2026-07-28T10:00:{n:02}Z");
    l.record_snapshot(
        &ServerId::named("s"),
        &task(id, status, &updated),
        kind,
        Some(ms),
    )
    .await
    .unwrap();
}

/// Far enough apart that the ledger's millisecond clock tells the writes apart.
async fn tick() {
    tokio::time::sleep(Duration::from_millis(15)).await;
}

const ROOMY: ActivityLimits = ActivityLimits {
    tasks: 100,
    events: 1000,
};

pub async fn activity_holds_the_tasks_alive_since_and_their_entries(open: &Open) {
    let (_dir, ledger) = fresh(open);
    // Ended before the moment: left out.
    snap(&ledger, "old", "working", 1, EventKind::Poll, 10).await;
    snap(&ledger, "old", "completed", 2, EventKind::Poll, 11).await;
    // Runs across the moment: its status change before it is kept, its poll before it not.
    snap(&ledger, "across", "working", 1, EventKind::Poll, 20).await;
    snap(&ledger, "across", "input_required", 2, EventKind::Poll, 21).await;
    tick().await;
    let since = Utc::now();
    tick().await;
    snap(&ledger, "across", "working", 3, EventKind::Push, 0).await;
    ledger
        .record_event(
            &ServerId::named("s"),
            &TaskId::new("across"),
            EventKind::Polls,
            None,
            &json!({ "unchanged": 7, "status": "working" }),
        )
        .await
        .unwrap();
    tick().await;
    snap(&ledger, "new", "working", 1, EventKind::Poll, 30).await;
    snap(&ledger, "new", "failed", 2, EventKind::Poll, 31).await;
    ledger.flush().await.unwrap();

    let a = ledger.clone().activity(since, ROOMY).await.unwrap();
    assert!(!a.truncated);
    let statuses: Vec<&str> = a.tasks.iter().map(|t| t.status.as_str()).collect();
    assert_eq!(
        statuses,
        ["failed", "working"],
        "newest first; `old` left out"
    );
    assert!(a.tasks[0].ended.is_some() && a.tasks[1].ended.is_none());
    assert!(a.tasks[0].ended >= Some(a.tasks[0].started));
    assert!(a.tasks.iter().all(|t| t.server == ServerId::named("s")));

    let across: Vec<(EventKind, Option<&str>, u64, Option<u64>)> = a
        .events
        .iter()
        .filter(|e| e.task == 1)
        .map(|e| (e.kind, e.status.as_deref(), e.count, e.latency_ms))
        .collect();
    assert_eq!(
        across,
        [
            (EventKind::Status, Some("working"), 1, None),
            (EventKind::Status, Some("input_required"), 1, None),
            (EventKind::Status, Some("working"), 1, None),
            (EventKind::Push, None, 1, Some(0)),
            (EventKind::Polls, None, 7, None),
        ],
        "every status change, and the pushes and polls since the moment"
    );
    let new_polls = a
        .events
        .iter()
        .filter(|e| e.task == 0 && e.kind == EventKind::Poll)
        .map(|e| e.latency_ms)
        .collect::<Vec<_>>();
    assert_eq!(new_polls, [Some(30), Some(31)]);

    let from_reads = activity_from_reads(ledger.clone(), since, ROOMY)
        .await
        .unwrap();
    assert_eq!(
        a, from_reads,
        "the backend's read agrees with list + timeline"
    );
}

pub async fn activity_keeps_to_its_limits(open: &Open) {
    let (_dir, ledger) = fresh(open);
    let since = Utc::now() - chrono::Duration::hours(1);
    for id in ["a", "b", "c"] {
        snap(&ledger, id, "working", 1, EventKind::Poll, 5).await;
        tick().await;
    }
    let one = ActivityLimits {
        tasks: 1,
        events: 1000,
    };
    let a = ledger.clone().activity(since, one).await.unwrap();
    assert!(a.truncated);
    assert_eq!(a.tasks.len(), 1);
    assert_eq!(
        a,
        activity_from_reads(ledger.clone(), since, one)
            .await
            .unwrap()
    );
    let few = ActivityLimits {
        tasks: 10,
        events: 2,
    };
    let a = ledger.clone().activity(since, few).await.unwrap();
    assert!(a.truncated && a.tasks.len() == 3 && a.events.len() == 2);
    assert!(a.events.iter().all(|e| e.task < 3));
    let empty = ledger.clone().activity(Utc::now(), ROOMY).await.unwrap();
    assert_eq!(
        empty.tasks.len(),
        3,
        "running tasks are alive at any moment"
    );
}

pub async fn activity_of_many_tasks_agrees_with_list_and_timeline(open: &Open) {
    let (_dir, ledger) = fresh(open);
    let since = Utc::now() - chrono::Duration::hours(1);
    // More tasks than a backend may look up one by one.
    let n = 2_100;
    let mut batch: Vec<crate::ledger::SnapshotWrite> = Vec::new();
    for i in 0..n {
        let id = format!("t{i:05}");
        let kind = if i % 2 == 0 {
            EventKind::Push
        } else {
            EventKind::Poll
        };
        batch.push((
            ServerId::named("s"),
            task(&id, "working", "2026-07-28T10:00:01Z"),
            kind,
            Some(3),
        ));
        if i % 3 == 0 {
            batch.push((
                ServerId::named("s"),
                task(&id, "completed", "2026-07-28T10:00:02Z"),
                kind,
                None,
            ));
        }
    }
    ledger.record_snapshots(&batch).await.unwrap();
    let mut a = ledger.clone().activity(since, ROOMY_MANY).await.unwrap();
    let mut b = activity_from_reads(ledger.clone(), since, ROOMY_MANY)
        .await
        .unwrap();
    assert_eq!(a.tasks.len(), n);
    // Entries are per task oldest first; across tasks in no particular order.
    a.events.sort_by_key(|e| e.task);
    b.events.sort_by_key(|e| e.task);
    assert_eq!(a, b);
    let ended = a.tasks.iter().filter(|t| t.ended.is_some()).count();
    assert_eq!(ended, n.div_ceil(3));
    assert_eq!(
        a.events
            .iter()
            .filter(|e| e.kind == EventKind::Status)
            .count(),
        n + n.div_ceil(3)
    );
}

const ROOMY_MANY: ActivityLimits = ActivityLimits {
    tasks: 10_000,
    events: 100_000,
};
