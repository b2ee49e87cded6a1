//! Behaviour tests of the ledger shared by several processes (two connections to one
//! file stand in for two processes): the change feed, leases, the outbox, legacy sessions,
//! canonical server ids, and the migration of a version-1 file.

use std::time::Duration;

use serde_json::json;

use super::db::Db;
use crate::ids::{ServerId, TaskId};
use crate::ledger::{NewTask, Owner, Tombstone};
use crate::mcp::types::{Era, Task};

fn pair() -> (tempfile::TempDir, Db, Db) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let a = Db::open(&path).unwrap();
    let b = Db::open(&path).unwrap();
    (dir, a, b)
}

fn srv() -> ServerId {
    ServerId::named("srv")
}

fn working(id: &str) -> Task {
    Task::from_wire(&json!({ "taskId": id, "status": "working" })).unwrap()
}

fn create(l: &Db, id: &str) {
    l.record_created(NewTask {
        server: &srv(),
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

#[cfg(target_os = "linux")]
#[test]
fn a_dead_process_lease_is_free_at_once() {
    let (_dir, a, b) = pair();
    create(&a, "t1");
    let ids = [TaskId::new("t1")];
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    a.conn
        .execute(
            "INSERT INTO follows (task, owner, until)
             SELECT id, ?1, 9223372036854775807 FROM tasks",
            [format!("{pid}:deadbeef0000")],
        )
        .unwrap();
    let me = Owner::new();
    assert_eq!(b.follower(&srv(), &ids[0], &me).unwrap(), None);
    assert!(b.followed_by_others(&srv(), &ids, &me).unwrap().is_empty());
    assert_eq!(
        b.claim(&srv(), &ids, &me, Duration::from_secs(5))
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn a_version_one_file_is_migrated_with_its_tombstones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch(super::schema::MIGRATIONS[0]).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        conn.execute(
            "INSERT INTO tasks (server, task_id, recorded_at, expired, terminal)
             VALUES ('http://127.0.0.1:1/mcp', 'old', 0, 1, 1)",
            [],
        )
        .unwrap();
    }
    let l = Db::open(&path).unwrap();
    let rec = l
        .get(
            &ServerId::ad_hoc("http://127.0.0.1:1/mcp"),
            &TaskId::new("old"),
        )
        .unwrap()
        .unwrap();
    assert_eq!(rec.end, Some(Tombstone::Expired));
    assert_eq!(rec.cancel, None);
}

fn change_seq(l: &Db) -> i64 {
    l.conn
        .query_row("SELECT value FROM meta WHERE key = 'change_seq'", [], |r| {
            r.get(0)
        })
        .unwrap()
}

fn data_version(l: &Db) -> i64 {
    l.conn
        .pragma_query_value(None, "data_version", |r| r.get(0))
        .unwrap()
}

fn at(id: &str, status: &str, message: &str, updated: &str) -> Task {
    Task::from_wire(&json!({
        "taskId": id, "status": status, "statusMessage": message,
        "lastUpdatedAt": updated,
    }))
    .unwrap()
}

#[test]
fn a_poll_that_only_bumps_last_updated_at_writes_nothing() {
    let (_dir, a, b) = pair();
    create(&a, "t1");
    let poll = crate::ledger::EventKind::Poll;
    a.record_snapshot(
        &srv(),
        &at("t1", "working", "1/3", "2026-01-01T00:00:01Z"),
        poll,
        None,
    )
    .unwrap();
    let (seq, version) = (change_seq(&a), data_version(&b));
    let cursor = b.feed_cursor().unwrap();
    // FastMCP bumps lastUpdatedAt on every read: the same state again, three times, alone
    // and in a batch, and a re-read older than the stored one.
    for s in ["02", "03"] {
        let t = at("t1", "working", "1/3", &format!("2026-01-01T00:00:{s}Z"));
        assert!(!a.record_snapshot(&srv(), &t, poll, None).unwrap());
    }
    let same = at("t1", "working", "1/3", "2026-01-01T00:00:04Z");
    let batch = [(srv(), same, poll, None)];
    assert_eq!(a.record_snapshots(&batch).unwrap(), [false]);
    // Poll bookkeeping too.
    a.record_event(
        &srv(),
        &TaskId::new("t1"),
        crate::ledger::EventKind::Polls,
        None,
        &json!({ "unchanged": 3 }),
    )
    .unwrap();
    assert_eq!(change_seq(&a), seq, "no row was stamped");
    assert_eq!(data_version(&b), version, "no transaction was committed");
    assert!(
        b.changes(cursor, "me", false).unwrap().is_none(),
        "the feed stays asleep"
    );
    assert!(a.has_pending());

    // A real change is written, stamped and reported, and the bookkeeping rides along.
    let real = at("t1", "working", "2/3", "2026-01-01T00:00:05Z");
    assert!(a.record_snapshot(&srv(), &real, poll, None).unwrap());
    assert!(!a.has_pending());
    assert!(change_seq(&a) > seq);
    assert_ne!(data_version(&b), version);
    let ch = b.changes(cursor, "me", false).unwrap().expect("a wrote");
    assert_eq!(ch.tasks.len(), 1);
    let snap = ch.tasks[0].snapshot.as_ref().unwrap();
    assert_eq!(snap.status_message.as_deref(), Some("2/3"));
    let kinds: Vec<&str> = b
        .timeline(&srv(), &TaskId::new("t1"))
        .unwrap()
        .iter()
        .map(|e| e.kind.as_str())
        .collect();
    assert_eq!(
        kinds,
        ["created", "poll", "polls", "poll"],
        "in the order noted"
    );
}

#[test]
fn poll_bookkeeping_is_written_when_the_connection_closes() {
    let (_dir, a, b) = pair();
    create(&a, "t1");
    let t = at("t1", "working", "x", "2026-01-01T00:00:01Z");
    a.record_snapshot(&srv(), &t, crate::ledger::EventKind::Poll, None)
        .unwrap();
    let seen = |l: &Db| {
        l.get(&srv(), &TaskId::new("t1"))
            .unwrap()
            .unwrap()
            .last_seen
    };
    let first = seen(&b);
    std::thread::sleep(Duration::from_millis(5));
    let again = at("t1", "working", "x", "2026-01-01T00:00:02Z");
    a.record_snapshot(&srv(), &again, crate::ledger::EventKind::Poll, None)
        .unwrap();
    a.record_event(
        &srv(),
        &TaskId::new("t1"),
        crate::ledger::EventKind::Polls,
        None,
        &json!({ "unchanged": 1 }),
    )
    .unwrap();
    assert_eq!(seen(&b), first, "kept in memory");
    drop(a);
    assert!(seen(&b) > first, "last seen written on close");
    let polls = b
        .timeline(&srv(), &TaskId::new("t1"))
        .unwrap()
        .into_iter()
        .filter(|e| e.kind == crate::ledger::EventKind::Polls)
        .count();
    assert_eq!(polls, 1);
}

#[test]
fn one_heartbeat_keeps_every_lease_of_its_process() {
    let (_dir, a, b) = pair();
    let ids: Vec<TaskId> = (0..200).map(|i| TaskId::new(&format!("t{i}"))).collect();
    for id in &ids {
        create(&a, id.as_str());
    }
    let (oa, ob) = (Owner::new(), Owner::new());
    assert_eq!(
        a.claim(&srv(), &ids, &oa, Duration::from_millis(50))
            .unwrap()
            .len(),
        200
    );
    let before = a.conn.total_changes();
    a.renew(&oa, Duration::from_secs(30)).unwrap();
    assert_eq!(a.conn.total_changes() - before, 1, "one row renewed");
    // Past the leases' own expiry, the heartbeat still holds all of them.
    std::thread::sleep(Duration::from_millis(80));
    assert_eq!(b.followed_by_others(&srv(), &ids, &ob).unwrap().len(), 200);
    assert_eq!(
        b.follower(&srv(), &ids[7], &ob).unwrap().as_deref(),
        Some(oa.as_str())
    );
    assert!(
        b.claim(&srv(), &ids, &ob, Duration::from_secs(30))
            .unwrap()
            .is_empty()
    );
    // A heartbeat that lapses (the process stopped renewing) holds nothing.
    a.renew(&oa, Duration::ZERO).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    assert!(b.followed_by_others(&srv(), &ids, &ob).unwrap().is_empty());
    assert_eq!(
        b.claim(&srv(), &ids, &ob, Duration::from_secs(30))
            .unwrap()
            .len(),
        200
    );
    // The next heartbeat clears the lapsed one; shutting down clears one's own.
    b.renew(&ob, Duration::from_secs(30)).unwrap();
    let heartbeats = |l: &Db| -> i64 {
        l.conn
            .query_row("SELECT count(*) FROM owners", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(heartbeats(&b), 1);
    b.release_all(&ob).unwrap();
    assert_eq!(heartbeats(&b), 0);
    assert!(a.followed_by_others(&srv(), &ids, &oa).unwrap().is_empty());
}

#[test]
fn the_feed_comes_in_bounded_batches() {
    let (_dir, a, b) = pair();
    let mut cursor = b.feed_cursor().unwrap();
    let n = super::feed::FEED_BATCH + 7;
    for i in 0..n {
        create(&a, &format!("t{i}"));
    }
    let mut seen = 0;
    let mut force = false;
    for _ in 0..10 {
        let Some(ch) = b.changes(cursor, "me", force).unwrap() else {
            break;
        };
        assert!(ch.tasks.len() <= super::feed::FEED_BATCH);
        seen += ch.tasks.len();
        cursor = ch.cursor;
        force = ch.more;
        if !ch.more {
            break;
        }
    }
    assert_eq!(seen, n);
}

#[test]
fn a_prune_is_in_the_feed_once() {
    let (_dir, a, b) = pair();
    create(&a, "done");
    create(&a, "running");
    let done = Task::from_wire(&json!({ "taskId": "done", "status": "completed" })).unwrap();
    a.record_snapshot(&srv(), &done, crate::ledger::EventKind::Poll, None)
        .unwrap();
    let cursor = b.feed_cursor().unwrap();
    let soon = chrono::Utc::now() + chrono::TimeDelta::seconds(1);
    assert_eq!(a.prune_before(soon).unwrap(), 1);
    let ch = b.changes(cursor, "me", false).unwrap().expect("news");
    assert_eq!(ch.removed, vec![(srv(), TaskId::new("done"))]);
    assert!(ch.tasks.is_empty());
    // the cursor moved past the prune: it is not told twice
    let again = b.changes(ch.cursor, "me", true).unwrap().expect("forced");
    assert!(again.removed.is_empty(), "{:?}", again.removed);
    // a later write is still seen after it
    create(&a, "later");
    let later = b.changes(again.cursor, "me", false).unwrap().expect("news");
    assert_eq!(later.tasks.len(), 1);
}
