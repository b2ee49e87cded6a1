//! The PostgreSQL ledger's connection over time: a reader following the feed from its
//! cursor sees every task several connections create at once, none skipped (writers commit
//! in change-number order, `db.rs`); a connection the server ended is made again.

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

#[tokio::test]
async fn a_connection_the_server_ended_is_made_again() {
    let name = super::testing::fresh_schema();
    let app = format!("reconnect_{name}");
    let server = super::testing::server();
    let migrate_name = name.clone();
    super::off_runtime(move || {
        super::schema::migrate(&mut server.admin(), &migrate_name, super::SCHEMA_VERSION)
    })
    .unwrap();
    let url = crate::ledger::PgUrl::parse(&format!(
        "postgres://postgres@127.0.0.1:{}/postgres?sslmode=disable&application_name={app}",
        server.port
    ))
    .unwrap();
    let resolved = url.resolve_here().unwrap();
    let local = super::LocalFiles {
        session_ids: None,
        spool: None,
    };
    let ledger = super::open_schema(&resolved, &name, local).unwrap();
    assert!(ledger.list(true).await.unwrap().is_empty());
    let ended: i64 = super::off_runtime(move || {
        Ok(server
            .admin()
            .query_one(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                  WHERE application_name = $1",
                &[&app],
            )?
            .get(0))
    })
    .unwrap();
    assert_eq!(ended, 1, "the ledger's one connection");
    // The operation that finds the connection gone may fail; the next ones work.
    let mut worked = false;
    for _ in 0..3 {
        worked = ledger
            .record_tracked(
                &ServerId::named("srv"),
                None,
                &crate::ids::TaskId::new("x"),
                None,
            )
            .await
            .is_ok();
        if worked {
            break;
        }
    }
    assert!(worked, "the ledger connected again");
    assert_eq!(ledger.list(true).await.unwrap().len(), 1);
}
