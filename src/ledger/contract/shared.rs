//! The contract of a ledger shared by several processes (two handles on one location
//! stand in for two processes): the change feed, leases, the outbox, legacy sessions and
//! canonical server ids.

use std::time::Duration;

use serde_json::json;

use super::Open;
use crate::ids::{ServerId, TaskId};
use crate::ledger::{LedgerHandle, NewTask, OutboxKind, Owner, Tombstone, owner_alive};
use crate::mcp::types::{Era, Task};

fn pair(open: &Open) -> (tempfile::TempDir, LedgerHandle, LedgerHandle) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let a = open(&path);
    let b = open(&path);
    (dir, a, b)
}

fn srv() -> ServerId {
    ServerId::named("srv")
}

fn working(id: &str) -> Task {
    Task::from_wire(&json!({ "taskId": id, "status": "working" })).unwrap()
}

async fn create(l: &LedgerHandle, id: &str) {
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
    .await
    .unwrap();
}

pub async fn the_feed_reports_other_connections_writes_once(open: &Open) {
    let (_dir, a, b) = pair(open);
    let cursor = b.feed_cursor().await.unwrap();
    assert!(
        b.changes(cursor, "me", false).await.unwrap().is_none(),
        "nothing written yet"
    );
    create(&a, "t1").await;
    let ch = b
        .changes(cursor, "me", false)
        .await
        .unwrap()
        .expect("a wrote");
    assert_eq!(ch.tasks.len(), 1);
    assert_eq!(ch.tasks[0].task_id, "t1");
    assert!(b.changes(ch.cursor, "me", false).await.unwrap().is_none());
    // Our own writes do not come back.
    create(&b, "t2").await;
    assert!(b.changes(ch.cursor, "me", false).await.unwrap().is_none());
    // A change to an old row comes back, alone.
    a.mark_answered(&srv(), &TaskId::new("t1"), "k", "accept")
        .await
        .unwrap();
    let again = b
        .changes(ch.cursor, "me", false)
        .await
        .unwrap()
        .expect("a wrote");
    // Rows changed since the cursor come back, ours too (folding in is idempotent).
    let t1 = again
        .tasks
        .iter()
        .find(|t| t.task_id == "t1")
        .expect("the changed row");
    assert_eq!(t1.answered_keys, ["k"]);
    assert!(again.tasks.len() <= 2);
    // An unchanged re-read writes no change.
    let before = b.feed_cursor().await.unwrap();
    a.record_snapshot(&srv(), &working("t1"), crate::ledger::EventKind::Poll, None)
        .await
        .unwrap();
    let after = b.changes(before, "me", false).await.unwrap();
    assert!(after.is_none_or(|c| c.tasks.is_empty()));
}

pub async fn one_process_follows_a_task_at_a_time(open: &Open) {
    let (_dir, a, b) = pair(open);
    create(&a, "t1").await;
    let ids = [TaskId::new("t1"), TaskId::new("absent")];
    let (oa, ob) = (Owner::new(), Owner::new());
    let ttl = Duration::from_secs(30);
    assert_eq!(
        a.claim(&srv(), &ids, &oa, ttl).await.unwrap(),
        [TaskId::new("t1")]
    );
    assert!(b.claim(&srv(), &ids, &ob, ttl).await.unwrap().is_empty());
    assert_eq!(
        b.follower(&srv(), &TaskId::new("t1"), &ob)
            .await
            .unwrap()
            .as_deref(),
        Some(oa.as_str())
    );
    assert_eq!(
        a.follower(&srv(), &TaskId::new("t1"), &oa).await.unwrap(),
        None
    );
    // The same answers for many tasks at once.
    let others = b.followed_by_others(&srv(), &ids, &ob).await.unwrap();
    assert_eq!(others, [TaskId::new("t1")].into_iter().collect());
    assert!(
        a.followed_by_others(&srv(), &ids, &oa)
            .await
            .unwrap()
            .is_empty()
    );
    a.release(&srv(), &ids, &oa).await.unwrap();
    assert!(
        b.followed_by_others(&srv(), &ids, &ob)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(b.claim(&srv(), &ids, &ob, ttl).await.unwrap().len(), 1);
    // An expired lease is taken over.
    b.claim(&srv(), &ids, &ob, Duration::ZERO).await.unwrap();
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(a.claim(&srv(), &ids, &oa, ttl).await.unwrap().len(), 1);
    a.release_all(&oa).await.unwrap();
    assert_eq!(
        b.follower(&srv(), &TaskId::new("t1"), &ob).await.unwrap(),
        None
    );
}

pub async fn tracking_by_id_records_the_task_and_takes_its_lease_once(open: &Open) {
    let (_dir, a, b) = pair(open);
    let id = TaskId::new("by-id");
    let (oa, ob) = (Owner::new(), Owner::new());
    let ttl = Duration::from_secs(30);
    assert!(
        a.track_and_claim(&srv(), Some(Era::Modern), &id, None, &oa, ttl)
            .await
            .unwrap()
    );
    let rec = b.get(&srv(), &id).await.unwrap().expect("recorded");
    assert_eq!(rec.era, Some(Era::Modern));
    // the second process records nothing new and leaves the lease to the first
    assert!(
        !b.track_and_claim(&srv(), None, &id, None, &ob, ttl)
            .await
            .unwrap()
    );
    assert_eq!(
        b.follower(&srv(), &id, &ob).await.unwrap().as_deref(),
        Some(oa.as_str())
    );
    assert!(
        a.track_and_claim(&srv(), None, &id, None, &oa, ttl)
            .await
            .unwrap()
    );
}

pub async fn leases_of_owners_on_either_side_of_mine_are_found(open: &Open) {
    let (_dir, a, b) = pair(open);
    for id in ["t1", "t2", "t3"] {
        create(&a, id).await;
    }
    let ids = [TaskId::new("t1"), TaskId::new("t2"), TaskId::new("t3")];
    let ttl = Duration::from_secs(30);
    let (low, me, high) = (Owner::new(), Owner::new(), Owner::new());
    let mut by_token = [low, me, high];
    by_token.sort_by(|x, y| x.as_str().cmp(y.as_str()));
    let [low, me, high] = by_token;
    assert_eq!(
        a.claim(&srv(), &ids[..1], &low, ttl).await.unwrap().len(),
        1
    );
    assert_eq!(
        a.claim(&srv(), &ids[1..2], &me, ttl).await.unwrap().len(),
        1
    );
    assert_eq!(
        b.claim(&srv(), &ids[2..], &high, ttl).await.unwrap().len(),
        1
    );
    let others = b.followed_by_others(&srv(), &ids, &me).await.unwrap();
    assert_eq!(
        others,
        [ids[0].clone(), ids[2].clone()].into_iter().collect()
    );
    // Another server's tasks are not this one's.
    let elsewhere = ServerId::named("elsewhere");
    assert!(
        b.followed_by_others(&elsewhere, &ids, &me)
            .await
            .unwrap()
            .is_empty()
    );
}

#[cfg(target_os = "linux")]
pub async fn a_killed_process_not_yet_reaped_holds_no_lease(_open: &Open) {
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

pub async fn outbox_requests_reach_the_follower_and_outcomes_the_requester(open: &Open) {
    let (_dir, a, b) = pair(open);
    create(&a, "t1").await;
    let (follower, requester) = (Owner::new(), Owner::new());
    a.claim(
        &srv(),
        &[TaskId::new("t1")],
        &follower,
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    let cursor_b = b.feed_cursor().await.unwrap();
    let cursor_a = a.feed_cursor().await.unwrap();
    let payload = json!({ "k": { "action": "accept", "content": { "name": "Ada" } } });
    let id = b
        .request(
            &srv(),
            &TaskId::new("t1"),
            OutboxKind::Answer,
            &payload,
            requester.as_str(),
        )
        .await
        .unwrap()
        .expect("the task is in the ledger");
    let seen = a
        .changes(cursor_a, follower.as_str(), false)
        .await
        .unwrap()
        .expect("b wrote");
    assert_eq!(seen.requests.len(), 1);
    assert_eq!(seen.requests[0].payload, payload);
    assert!(
        a.open_requests(requester.as_str())
            .await
            .unwrap()
            .is_empty()
    );
    a.complete_request(id, None).await.unwrap();
    a.complete_request(id, Some("too late")).await.unwrap();
    let done = b
        .changes(cursor_b, requester.as_str(), false)
        .await
        .unwrap()
        .expect("a wrote");
    assert_eq!(done.outcomes.len(), 1);
    assert_eq!(done.outcomes[0].error, None, "the first outcome counts");
    assert!(a.open_requests(follower.as_str()).await.unwrap().is_empty());
    assert!(
        b.request(
            &srv(),
            &TaskId::new("nope"),
            OutboxKind::Cancel,
            &json!(null),
            "x"
        )
        .await
        .unwrap()
        .is_none()
    );
}

pub async fn a_lost_session_tombstones_its_live_tasks(open: &Open) {
    let (_dir, a, _b) = pair(open);
    let caps = json!({ "tasks": { "cancel": {} } });
    let s = a
        .record_session(
            &srv(),
            "secret-session",
            "2025-11-25",
            &caps,
            Some("everything"),
        )
        .await
        .unwrap();
    assert_eq!(
        a.record_session(&srv(), "secret-session", "2025-11-25", &caps, None)
            .await
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
        .await
        .unwrap();
    }
    let rec = a.session(s).await.unwrap().unwrap();
    assert_eq!(rec.session_id, "secret-session");
    assert!(!format!("{rec:?}").contains("secret-session"));
    assert_eq!(a.session_lost(s).await.unwrap(), [TaskId::new("live")]);
    let live = a.get(&srv(), &TaskId::new("live")).await.unwrap().unwrap();
    assert!(live.expired && live.terminal);
    assert_eq!(live.end, Some(Tombstone::SessionLost));
    assert_eq!(live.session, Some(s));
    let done = a.get(&srv(), &TaskId::new("done")).await.unwrap().unwrap();
    assert!(!done.expired);
    assert!(a.session(s).await.unwrap().unwrap().lost);
}

pub async fn url_rows_move_to_the_configured_name_and_merge(open: &Open) {
    let (_dir, a, _b) = pair(open);
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
        .await
        .unwrap();
    }
    a.mark_answered(&url, &TaskId::new("both"), "k-url", "accept")
        .await
        .unwrap();
    let moved = a
        .canonicalize_servers({
            let (url, name) = (url.clone(), name.clone());
            Box::new(move |s: &ServerId| if *s == url { name.clone() } else { s.clone() })
        })
        .await
        .unwrap();
    assert_eq!(moved, 2);
    let all = a.list(true).await.unwrap();
    assert!(all.iter().all(|r| r.server == name), "{all:?}");
    assert_eq!(all.len(), 2);
    let both = a.get(&name, &TaskId::new("both")).await.unwrap().unwrap();
    assert_eq!(both.answered_keys, ["k-url"]);
    let kinds: Vec<_> = a
        .timeline(&name, &TaskId::new("both"))
        .await
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
    assert_eq!(
        a.canonicalize_servers(Box::new(|s: &ServerId| s.clone()))
            .await
            .unwrap(),
        0
    );
}

pub async fn a_prune_is_in_the_feed_once(open: &Open) {
    let (_dir, a, b) = pair(open);
    create(&a, "done").await;
    create(&a, "running").await;
    let done = Task::from_wire(&json!({ "taskId": "done", "status": "completed" })).unwrap();
    a.record_snapshot(&srv(), &done, crate::ledger::EventKind::Poll, None)
        .await
        .unwrap();
    let cursor = b.feed_cursor().await.unwrap();
    let soon = chrono::Utc::now() + chrono::TimeDelta::seconds(1);
    assert_eq!(a.prune_before(soon).await.unwrap(), 1);
    let ch = b.changes(cursor, "me", false).await.unwrap().expect("news");
    assert_eq!(ch.removed, vec![(srv(), TaskId::new("done"))]);
    assert!(ch.tasks.is_empty());
    // The cursor moved past the prune: it is not told twice.
    let again = b
        .changes(ch.cursor, "me", true)
        .await
        .unwrap()
        .expect("forced");
    assert!(again.removed.is_empty(), "{:?}", again.removed);
    // A later write is still seen after it.
    create(&a, "later").await;
    let later = b
        .changes(again.cursor, "me", false)
        .await
        .unwrap()
        .expect("news");
    assert_eq!(later.tasks.len(), 1);
    // Removing a gone server's unfollowed tasks is in the feed too.
    let me = Owner::new();
    assert_eq!(a.remove_unfollowed(&srv(), &me).await.unwrap(), 2);
    let gone = b
        .changes(later.cursor, "me", false)
        .await
        .unwrap()
        .expect("news");
    assert_eq!(gone.removed.len(), 2, "{:?}", gone.removed);
    assert!(b.servers().await.unwrap().is_empty());
}
