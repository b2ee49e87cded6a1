//! Durability tests of the SQLite backend: two processes' worth of connections on one file, and a writer killed
//! with SIGKILL right after `record_created` returns.

use crate::ids::{ServerId, TaskId};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use serde_json::json;

use super::db::Db;
use crate::ledger::EventKind;
use crate::mcp::types::{Era, Task};

fn working(id: &str) -> Task {
    Task::from_wire(&json!({ "taskId": id, "status": "working" })).unwrap()
}

fn completed(id: &str) -> Task {
    Task::from_wire(&json!({ "taskId": id, "status": "completed" })).unwrap()
}

#[test]
fn two_ledgers_interleave_writes_from_two_threads() {
    const PER_WRITER: usize = 60;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let barrier = Arc::new(Barrier::new(2));
    let writers: Vec<_> = ["dashboard", "cli"]
        .into_iter()
        .map(|name| {
            // Each writer opens its own connection, as two processes would; opened here,
            // so a failure to open fails the test instead of leaving the other writer
            // waiting at the barrier.
            let ledger = Db::open(&path).unwrap();
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                for i in 0..PER_WRITER {
                    let id = format!("{name}-{i}");
                    ledger
                        .record_created(crate::ledger::NewTask {
                            server: &ServerId::named("srv"),
                            era: Era::Modern,
                            tool: "tool",
                            arguments: &json!({ "i": i }),
                            task: &working(&id),
                            parent_task: None,
                            session: None,
                            started_by: None,
                        })
                        .unwrap();
                    ledger
                        .record_event(
                            &ServerId::named("srv"),
                            &TaskId::new(&id),
                            EventKind::Note,
                            None,
                            &json!({ "by": name }),
                        )
                        .unwrap();
                    if i % 2 == 0 {
                        let changed = ledger
                            .record_snapshot(
                                &ServerId::named("srv"),
                                &completed(&id),
                                EventKind::Poll,
                                Some(1),
                            )
                            .unwrap();
                        assert!(changed);
                    }
                    // Reads see the other writer's committed rows without blocking.
                    ledger.list(true).unwrap();
                }
                ledger
            })
        })
        .collect();
    let ledgers: Vec<Db> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    for ledger in &ledgers {
        assert_eq!(ledger.list(true).unwrap().len(), 2 * PER_WRITER);
        assert_eq!(ledger.non_terminal().unwrap().len(), PER_WRITER);
    }
    let timeline = ledgers[0]
        .timeline(&ServerId::named("srv"), &TaskId::new("cli-0"))
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

/// Env var telling the helper test below which database to write before it gets killed.
const CRASH_DB_ENV: &str = "TASKRAIL_LEDGER_CRASH_CHILD_DB";
const CRASH_TASK_ID: &str = "crash-task-7f3c9a1e5b2d4c6f";
const READY: &str = "LEDGER-CHILD-RECORDED";

/// Helper run in a child process by `task_survives_sigkill_after_record_created`.
#[test]
#[ignore = "helper process for task_survives_sigkill_after_record_created"]
fn crash_child_records_then_hangs() {
    let Some(path) = std::env::var_os(CRASH_DB_ENV) else {
        return;
    };
    let ledger = Db::open(Path::new(&path)).unwrap();
    ledger
        .record_created(crate::ledger::NewTask {
            server: &ServerId::named("srv"),
            era: Era::Legacy,
            tool: "long_job",
            arguments: &json!({ "x": 1 }),
            task: &working(CRASH_TASK_ID),
            parent_task: None,
            session: None,
            started_by: None,
        })
        .unwrap();
    println!("{READY}");
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

#[cfg(unix)]
#[test]
fn task_survives_sigkill_after_record_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.db");
    let module = module_path!()
        .split_once("::")
        .map_or(module_path!(), |(_, rest)| rest);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            &format!("{module}::crash_child_records_then_hangs"),
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CRASH_DB_ENV, &path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let ready = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|line| line.contains(READY));
    // `Child::kill` sends SIGKILL on Unix: no destructors, no clean close.
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(ready, "child never reported the task as recorded");
    assert!(!status.success());

    let ledger = Db::open(&path).unwrap();
    let record = ledger
        .get(&ServerId::named("srv"), &TaskId::new(CRASH_TASK_ID))
        .unwrap()
        .expect("task survived the crash");
    assert_eq!(record.tool.as_deref(), Some("long_job"));
    assert_eq!(record.era, Some(Era::Legacy));
    assert_eq!(record.arguments, Some(json!({ "x": 1 })));
    let resumable: Vec<String> = ledger
        .non_terminal()
        .unwrap()
        .into_iter()
        .map(|r| r.task_id.as_str().to_string())
        .collect();
    assert_eq!(resumable, [CRASH_TASK_ID]);
}
