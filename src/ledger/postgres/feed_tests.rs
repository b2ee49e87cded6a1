//! The change feed on PostgreSQL with writers racing: a reader following the feed from
//! its cursor sees every task several connections create at once, none skipped (writers
//! commit in change-number order, `db.rs`).

use std::collections::HashSet;

use serde_json::json;

use crate::ids::ServerId;
use crate::ledger::NewTask;
use crate::mcp::types::{Era, Task};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_reader_misses_nothing_while_writers_race() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let open = |p: &std::path::Path| super::open_for_test(p).unwrap();
    let reader = open(&path);
    let writers: Vec<_> = (0..4).map(|_| open(&path)).collect();
    let mut cursor = reader.feed_cursor().await.unwrap();
    const EACH: usize = 60;
    let mut jobs = Vec::new();
    for (w, ledger) in writers.into_iter().enumerate() {
        jobs.push(tokio::spawn(async move {
            for i in 0..EACH {
                let task = Task::from_wire(&json!({
                    "taskId": format!("race-{w}-{i}"), "status": "working"
                }))
                .unwrap();
                ledger
                    .record_created(NewTask {
                        server: &ServerId::named("srv"),
                        era: Era::Modern,
                        tool: "t",
                        arguments: &json!({}),
                        task: &task,
                        parent_task: None,
                        session: None,
                        started_by: None,
                    })
                    .await
                    .unwrap();
            }
        }));
    }
    let mut seen = HashSet::new();
    let mut writing = true;
    while writing || seen.len() < 4 * EACH {
        writing = !jobs.iter().all(|j| j.is_finished());
        let ch = reader
            .changes(cursor, "reader", true)
            .await
            .unwrap()
            .unwrap();
        cursor = ch.cursor;
        seen.extend(ch.tasks.into_iter().map(|t| t.task_id.as_str().to_string()));
        if !writing && seen.len() < 4 * EACH {
            // One last read after the writers stopped: nothing may be missing by then.
            let ch = reader
                .changes(cursor, "reader", true)
                .await
                .unwrap()
                .unwrap();
            seen.extend(ch.tasks.into_iter().map(|t| t.task_id.as_str().to_string()));
            break;
        }
    }
    for j in jobs {
        j.await.unwrap();
    }
    assert_eq!(seen.len(), 4 * EACH, "every task came through the feed");
}
