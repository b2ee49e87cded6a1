//! Durability of the SQLite file: a writer killed with SIGKILL right after
//! `record_created` returns loses nothing (two writers at once are in the contract).

use crate::ids::{ServerId, TaskId};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use super::db::Db;
use crate::mcp::types::{Era, Task};

fn working(id: &str) -> Task {
    Task::from_wire(&json!({ "taskId": id, "status": "working" })).unwrap()
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
