//! Behaviour tests of the ledger shared by several processes (two connections to one
//! file stand in for two processes): the change feed, leases, the outbox, legacy sessions,
//! canonical server ids, and the migration of a version-1 file.

use std::time::Duration;

use serde_json::json;

use super::db::Db;
use crate::ids::{ServerId, TaskId};
use crate::ledger::{NewTask, OutboxKind, Owner, Tombstone, owner_alive};
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

#[test]
fn the_feed_reports_other_connections_writes_once() {
    let (_dir, a, b) = pair();
    let cursor = b.feed_cursor().unwrap();
    assert!(
        b.changes(cursor, "me", false).unwrap().is_none(),
        "nothing written yet"
    );
    create(&a, "t1");
    let ch = b.changes(cursor, "me", false).unwrap().expect("a wrote");
    assert_eq!(ch.tasks.len(), 1);
    assert_eq!(ch.tasks[0].task_id, "t1");
    assert!(b.changes(ch.cursor, "me", false).unwrap().is_none());
    // Our own writes do not come back.
    create(&b, "t2");
    assert!(b.changes(ch.cursor, "me", false).unwrap().is_none());
    // A change to an old row comes back, alone.
    a.mark_answered(&srv(), &TaskId::new("t1"), "k", "accept")
        .unwrap();
    let again = b.changes(ch.cursor, "me", false).unwrap().expect("a wrote");
    // Rows changed since the cursor come back, ours too (folding in is idempotent).
    let t1 = again
        .tasks
        .iter()
        .find(|t| t.task_id == "t1")
        .expect("the changed row");
    assert_eq!(t1.answered_keys, ["k"]);
    assert!(again.tasks.len() <= 2);
    // An unchanged re-read writes no change.
    let before = b.feed_cursor().unwrap();
    a.record_snapshot(&srv(), &working("t1"), crate::ledger::EventKind::Poll, None)
        .unwrap();
    let after = b.changes(before, "me", false).unwrap();
    assert!(after.is_none_or(|c| c.tasks.is_empty()));
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
fn one_process_follows_a_task_at_a_time() {
    let (_dir, a, b) = pair();
    create(&a, "t1");
    let ids = [TaskId::new("t1"), TaskId::new("absent")];
    let (oa, ob) = (Owner::new(), Owner::new());
    let ttl = Duration::from_secs(30);
    assert_eq!(
        a.claim(&srv(), &ids, &oa, ttl).unwrap(),
        [TaskId::new("t1")]
    );
    assert!(b.claim(&srv(), &ids, &ob, ttl).unwrap().is_empty());
    assert_eq!(
        b.follower(&srv(), &TaskId::new("t1"), &ob)
            .unwrap()
            .as_deref(),
        Some(oa.as_str())
    );
    assert_eq!(a.follower(&srv(), &TaskId::new("t1"), &oa).unwrap(), None);
    // The same answers for many tasks at once.
    let others = b.followed_by_others(&srv(), &ids, &ob).unwrap();
    assert_eq!(others, [TaskId::new("t1")].into_iter().collect());
    assert!(a.followed_by_others(&srv(), &ids, &oa).unwrap().is_empty());
    a.release(&srv(), &ids, &oa).unwrap();
    assert!(b.followed_by_others(&srv(), &ids, &ob).unwrap().is_empty());
    assert_eq!(b.claim(&srv(), &ids, &ob, ttl).unwrap().len(), 1);
    // An expired lease is taken over.
    b.claim(&srv(), &ids, &ob, Duration::ZERO).unwrap();
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(a.claim(&srv(), &ids, &oa, ttl).unwrap().len(), 1);
    a.release_all(&oa).unwrap();
    assert_eq!(b.follower(&srv(), &TaskId::new("t1"), &ob).unwrap(), None);
}

#[test]
fn tracking_by_id_records_the_task_and_takes_its_lease_once() {
    let (_dir, a, b) = pair();
    let id = TaskId::new("by-id");
    let (oa, ob) = (Owner::new(), Owner::new());
    let ttl = Duration::from_secs(30);
    assert!(
        a.track_and_claim(&srv(), Some(Era::Modern), &id, None, &oa, ttl)
            .unwrap()
    );
    let rec = b.get(&srv(), &id).unwrap().expect("recorded");
    assert_eq!(rec.era, Some(Era::Modern));
    // the second process records nothing new and leaves the lease to the first
    assert!(
        !b.track_and_claim(&srv(), None, &id, None, &ob, ttl)
            .unwrap()
    );
    assert_eq!(
        b.follower(&srv(), &id, &ob).unwrap().as_deref(),
        Some(oa.as_str())
    );
    assert!(
        a.track_and_claim(&srv(), None, &id, None, &oa, ttl)
            .unwrap()
    );
}

#[test]
fn leases_of_owners_on_either_side_of_mine_are_found() {
    let (_dir, a, b) = pair();
    for id in ["t1", "t2", "t3"] {
        create(&a, id);
    }
    let ids = [TaskId::new("t1"), TaskId::new("t2"), TaskId::new("t3")];
    let ttl = Duration::from_secs(30);
    let (low, me, high) = (Owner::new(), Owner::new(), Owner::new());
    let mut by_token = [low, me, high];
    by_token.sort_by(|x, y| x.as_str().cmp(y.as_str()));
    let [low, me, high] = by_token;
    assert_eq!(a.claim(&srv(), &ids[..1], &low, ttl).unwrap().len(), 1);
    assert_eq!(a.claim(&srv(), &ids[1..2], &me, ttl).unwrap().len(), 1);
    assert_eq!(b.claim(&srv(), &ids[2..], &high, ttl).unwrap().len(), 1);
    let others = b.followed_by_others(&srv(), &ids, &me).unwrap();
    assert_eq!(
        others,
        [ids[0].clone(), ids[2].clone()].into_iter().collect()
    );
    // Another server's tasks are not this one's.
    let elsewhere = ServerId::named("elsewhere");
    assert!(
        b.followed_by_others(&elsewhere, &ids, &me)
            .unwrap()
            .is_empty()
    );
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

#[cfg(target_os = "linux")]
#[test]
fn a_killed_process_not_yet_reaped_holds_no_lease() {
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let owner = format!("{}:deadbeef0000", child.id());
    assert!(owner_alive(&owner), "a running process");
    child.kill().unwrap();
    // Not waited for: a zombie until reaped, its /proc entry still there.
    let stat = format!("/proc/{}/stat", child.id());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&stat).is_ok_and(|s| s.contains(") Z")) {
        assert!(
            std::time::Instant::now() < deadline,
            "the child became a zombie"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!owner_alive(&owner), "a zombie has exited");
    child.wait().unwrap();
    assert!(!owner_alive(&owner), "a reaped process is gone");
}

#[test]
fn outbox_requests_reach_the_follower_and_outcomes_the_requester() {
    let (_dir, a, b) = pair();
    create(&a, "t1");
    let (follower, requester) = (Owner::new(), Owner::new());
    a.claim(
        &srv(),
        &[TaskId::new("t1")],
        &follower,
        Duration::from_secs(30),
    )
    .unwrap();
    let cursor_b = b.feed_cursor().unwrap();
    let cursor_a = a.feed_cursor().unwrap();
    let payload = json!({ "k": { "action": "accept", "content": { "name": "Ada" } } });
    let id = b
        .request(
            &srv(),
            &TaskId::new("t1"),
            OutboxKind::Answer,
            &payload,
            requester.as_str(),
        )
        .unwrap()
        .expect("the task is in the ledger");
    let seen = a
        .changes(cursor_a, follower.as_str(), false)
        .unwrap()
        .expect("b wrote");
    assert_eq!(seen.requests.len(), 1);
    assert_eq!(seen.requests[0].payload, payload);
    assert!(a.open_requests(requester.as_str()).unwrap().is_empty());
    a.complete_request(id, None).unwrap();
    a.complete_request(id, Some("too late")).unwrap();
    let done = b
        .changes(cursor_b, requester.as_str(), false)
        .unwrap()
        .expect("a wrote");
    assert_eq!(done.outcomes.len(), 1);
    assert_eq!(done.outcomes[0].error, None, "the first outcome counts");
    assert!(a.open_requests(follower.as_str()).unwrap().is_empty());
    assert!(
        b.request(
            &srv(),
            &TaskId::new("nope"),
            OutboxKind::Cancel,
            &json!(null),
            "x"
        )
        .unwrap()
        .is_none()
    );
}

#[test]
fn a_lost_session_tombstones_its_live_tasks() {
    let (_dir, a, _b) = pair();
    let caps = json!({ "tasks": { "cancel": {} } });
    let s = a
        .record_session(
            &srv(),
            "secret-session",
            "2025-11-25",
            &caps,
            Some("everything"),
        )
        .unwrap();
    assert_eq!(
        a.record_session(&srv(), "secret-session", "2025-11-25", &caps, None)
            .unwrap(),
        s
    );
    for (id, status) in [("live", "working"), ("done", "completed")] {
        let t = Task::from_wire(&json!({ "taskId": id, "status": status })).unwrap();
        a.record_created(NewTask {
            server: &srv(),
            era: Era::Legacy,
            tool: "t",
            arguments: &json!({}),
            task: &t,
            parent_task: None,
            session: Some(s),
            started_by: None,
        })
        .unwrap();
    }
    let rec = a.session(s).unwrap().unwrap();
    assert_eq!(rec.session_id, "secret-session");
    assert!(!format!("{rec:?}").contains("secret-session"));
    assert_eq!(a.session_lost(s).unwrap(), [TaskId::new("live")]);
    let live = a.get(&srv(), &TaskId::new("live")).unwrap().unwrap();
    assert!(live.expired && live.terminal);
    assert_eq!(live.end, Some(Tombstone::SessionLost));
    assert_eq!(live.session, Some(s));
    let done = a.get(&srv(), &TaskId::new("done")).unwrap().unwrap();
    assert!(!done.expired);
    assert!(a.session(s).unwrap().unwrap().lost);
}

#[test]
fn url_rows_move_to_the_configured_name_and_merge() {
    let (_dir, a, _b) = pair();
    let url = ServerId::ad_hoc("http://127.0.0.1:8765/mcp");
    let name = ServerId::named("demo");
    for (server, id) in [(&url, "only-url"), (&url, "both"), (&name, "both")] {
        a.record_created(NewTask {
            server,
            era: Era::Modern,
            tool: "t",
            arguments: &json!({}),
            task: &working(id),
            parent_task: None,
            session: None,
            started_by: None,
        })
        .unwrap();
    }
    a.mark_answered(&url, &TaskId::new("both"), "k-url", "accept")
        .unwrap();
    let moved = a
        .canonicalize_servers(|s| if *s == url { name.clone() } else { s.clone() })
        .unwrap();
    assert_eq!(moved, 2);
    let all = a.list(true).unwrap();
    assert!(all.iter().all(|r| r.server == name), "{all:?}");
    assert_eq!(all.len(), 2);
    let both = a.get(&name, &TaskId::new("both")).unwrap().unwrap();
    assert_eq!(both.answered_keys, ["k-url"]);
    let kinds: Vec<_> = a
        .timeline(&name, &TaskId::new("both"))
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds
            .iter()
            .filter(|k| **k == crate::ledger::EventKind::Created)
            .count(),
        2
    );
    assert_eq!(a.canonicalize_servers(|s| s.clone()).unwrap(), 0);
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
