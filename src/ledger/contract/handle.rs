//! The contract's handle: cloneable and shareable across tasks, operations ordered when
//! called (a write whose future is dropped still runs before later operations), queued
//! snapshots, and the location.

use serde_json::json;

use super::{Open, fresh};
use crate::ids::{ServerId, TaskId};
use crate::ledger::{EventKind, LedgerHandle, NewTask};
use crate::mcp::types::{Era, Task, TaskStatus};

fn task(id: &str, status: TaskStatus) -> Task {
    Task::from_wire(&json!({ "taskId": id, "status": status.as_str() })).unwrap()
}

fn assert_send_sync<T: Send + Sync + Clone + 'static>() {}

pub async fn round_trip(open: &Open) {
    assert_send_sync::<LedgerHandle>();
    let (_dir, handle) = fresh(open);
    let created = task("handle-task-1", TaskStatus::Working);
    handle
        .record_created(NewTask {
            server: &ServerId::named("srv"),
            era: Era::Modern,
            tool: "tool",
            arguments: &json!({}),
            task: &created,
            parent_task: None,
            session: None,
            started_by: None,
        })
        .await
        .unwrap();
    let other = handle.clone();
    let changed = tokio::spawn(async move {
        let done = task("handle-task-1", TaskStatus::Completed);
        other
            .record_snapshot(&ServerId::named("srv"), &done, EventKind::Poll, Some(12))
            .await
    })
    .await
    .unwrap()
    .unwrap();
    assert!(changed);
    let record = handle
        .get(&ServerId::named("srv"), &TaskId::new("handle-task-1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status, "completed");
    assert!(record.terminal);
}

pub async fn queued_snapshots_are_seen_by_later_calls(open: &Open) {
    let (_dir, handle) = fresh(open);
    for (i, status) in [TaskStatus::Working, TaskStatus::Completed]
        .into_iter()
        .enumerate()
    {
        for n in 0..50 {
            let t = task(&format!("queued-{n}"), status.clone());
            handle
                .queue_snapshot((ServerId::named("srv"), t, EventKind::Poll, Some(i as u64)))
                .unwrap();
        }
    }
    let records = handle.list(true).await.unwrap();
    assert_eq!(records.len(), 50);
    assert!(
        records
            .iter()
            .all(|r| r.status == "completed" && r.terminal)
    );
    assert_eq!(handle.take_write_failure(), None);
}

pub async fn an_unawaited_write_runs_before_later_operations(open: &Open) {
    let (_dir, handle) = fresh(open);
    let (srv, id) = (ServerId::named("srv"), TaskId::new("dropped-1"));
    // Called and dropped without a poll: still queued, still before the read below.
    drop(handle.record_tracked(&srv, Some(Era::Modern), &id, None));
    drop(handle.record_event(&srv, &id, EventKind::Note, None, &json!({ "n": 1 })));
    let flushed = handle.flush();
    let rec = handle
        .get(&srv, &id)
        .await
        .unwrap()
        .expect("the dropped write ran");
    assert_eq!(rec.era, Some(Era::Modern));
    flushed.await.unwrap();
    let kinds: Vec<EventKind> = handle
        .timeline(&srv, &id)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert!(kinds.contains(&EventKind::Note), "{kinds:?}");
}

pub async fn a_url_free_location_is_reported(open: &Open) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let handle = open(&path);
    assert!(!handle.location().is_empty());
    assert!(!handle.location().contains("://"));
}
