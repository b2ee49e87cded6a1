//! The contract of two writers on one ledger: two processes' handles writing at once each
//! see every row both committed, and each task's timeline keeps its own order.

use std::sync::Arc;

use serde_json::json;
use tokio::sync::Barrier;

use super::Open;
use crate::ids::{ServerId, TaskId};
use crate::ledger::{EventKind, LedgerHandle, NewTask};
use crate::mcp::types::{Era, Task};

fn working(id: &str) -> Task {
    Task::from_wire(&json!({ "taskId": id, "status": "working" })).unwrap()
}

fn completed(id: &str) -> Task {
    Task::from_wire(&json!({ "taskId": id, "status": "completed" })).unwrap()
}

pub async fn two_ledgers_interleave_writes(open: &Open) {
    const PER_WRITER: usize = 60;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let barrier = Arc::new(Barrier::new(2));
    let writers: Vec<_> = ["dashboard", "cli"]
        .into_iter()
        .map(|name| {
            // Each writer opens its own handle, as two processes would; opened here, so a
            // failure to open fails the test instead of leaving the other writer waiting
            // at the barrier.
            let ledger = open(&path);
            let barrier = Arc::clone(&barrier);
            tokio::spawn(async move {
                barrier.wait().await;
                for i in 0..PER_WRITER {
                    let id = format!("{name}-{i}");
                    ledger
                        .record_created(NewTask {
                            server: &ServerId::named("srv"),
                            era: Era::Modern,
                            tool: "tool",
                            arguments: &json!({ "i": i }),
                            task: &working(&id),
                            parent_task: None,
                            session: None,
                            started_by: None,
                        })
                        .await
                        .unwrap();
                    ledger
                        .record_event(
                            &ServerId::named("srv"),
                            &TaskId::new(&id),
                            EventKind::Note,
                            None,
                            &json!({ "by": name }),
                        )
                        .await
                        .unwrap();
                    if i % 2 == 0 {
                        let changed = ledger
                            .record_snapshot(
                                &ServerId::named("srv"),
                                &completed(&id),
                                EventKind::Poll,
                                Some(1),
                            )
                            .await
                            .unwrap();
                        assert!(changed);
                    }
                    // Reads see the other writer's committed rows without blocking.
                    ledger.list(true).await.unwrap();
                }
                ledger
            })
        })
        .collect();
    let mut ledgers: Vec<LedgerHandle> = Vec::new();
    for w in writers {
        ledgers.push(w.await.unwrap());
    }
    for ledger in &ledgers {
        assert_eq!(ledger.list(true).await.unwrap().len(), 2 * PER_WRITER);
        assert_eq!(ledger.non_terminal().await.unwrap().len(), PER_WRITER);
    }
    let timeline = ledgers[0]
        .timeline(&ServerId::named("srv"), &TaskId::new("cli-0"))
        .await
        .unwrap();
    let kinds: Vec<EventKind> = timeline.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [
            EventKind::Created,
            EventKind::Note,
            EventKind::Status,
            EventKind::Poll
        ]
    );
}
