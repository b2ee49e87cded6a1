//! The PostgreSQL backend behind the `Ledger` trait: each operation copies its arguments
//! and runs the `Pg` method of the same name as one job on the ledger thread; the writes a
//! database outage must not lose go as a spooled `Write` (`spool.rs`).
//!
//! Owns only the mapping; the SQL is in the files named after each concern. Must not log
//! task ids.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;

use super::db::Pg;
use super::spool::Write;
use super::thread::PgLedger;
use crate::ids::{ServerId, TaskId};
use crate::ledger::{
    Activity, ActivityLimits, AnsweredKey, Canon, Changes, Cursor, Delivery, EventKind,
    EventRecord, Ledger, NewTask, Op, OutboxKind, OutboxOutcome, OutboxRequest, Owner,
    SessionRecord, SnapshotWrite, TaskRecord, Tombstone,
};
use crate::mcp::types::{Era, Task};

impl Ledger for PgLedger {
    fn location(&self) -> String {
        PgLedger::location(self).to_string()
    }

    fn take_write_failure(&self) -> Option<String> {
        PgLedger::take_write_failure(self)
    }

    fn offline(&self) -> Option<usize> {
        PgLedger::offline(self)
    }

    fn changed(&self, every: Duration) -> anyhow::Result<mpsc::Receiver<()>> {
        self.watch(every, Pg::other_writes())
    }

    fn flush(&self) -> Op<()> {
        self.op(|_| Ok(()))
    }

    fn record_created(&self, new: NewTask<'_>) -> Op<()> {
        let write = Write::created(new, None);
        self.op(move |l| l.through(&write).map(drop))
    }

    fn record_tracked(
        &self,
        server: &ServerId,
        era: Option<Era>,
        task_id: &TaskId,
        session: Option<i64>,
    ) -> Op<()> {
        let write = Write::Tracked {
            server: server.as_str().to_string(),
            era,
            task_id: task_id.clone(),
            session,
        };
        self.op(move |l| l.through(&write).map(drop))
    }

    fn record_snapshot(
        &self,
        server: &ServerId,
        task: &Task,
        source: EventKind,
        latency_ms: Option<u64>,
    ) -> Op<bool> {
        let write = Write::snapshots(&[(server.clone(), task.clone(), source, latency_ms)]);
        self.op(move |l| Ok(l.through(&write)?.first().copied().unwrap_or(false)))
    }

    fn record_snapshots(&self, batch: &[SnapshotWrite]) -> Op<Vec<bool>> {
        let write = Write::snapshots(batch);
        self.op(move |l| l.through(&write))
    }

    fn queue_snapshot(&self, write: SnapshotWrite) -> anyhow::Result<()> {
        PgLedger::queue_snapshot(self, write)
    }

    fn record_event(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        kind: EventKind,
        latency_ms: Option<u64>,
        detail: &Value,
    ) -> Op<()> {
        let write = Write::Event {
            server: server.as_str().to_string(),
            task_id: task_id.clone(),
            kind: kind.as_str().to_string(),
            latency_ms,
            detail: detail.clone(),
        };
        self.op(move |l| l.through(&write).map(drop))
    }

    fn mark_answered(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        key: &str,
        action: &str,
    ) -> Op<()> {
        let write = Write::Answered {
            server: server.as_str().to_string(),
            task_id: task_id.clone(),
            key: key.to_string(),
            action: action.to_string(),
        };
        self.op(move |l| l.through(&write).map(drop))
    }

    fn mark_ended(&self, server: &ServerId, task_id: &TaskId, why: Tombstone) -> Op<()> {
        let write = Write::Ended {
            server: server.as_str().to_string(),
            task_id: task_id.clone(),
            why: why.as_str().to_string(),
        };
        self.op(move |l| l.through(&write).map(drop))
    }

    fn mark_expired(&self, server: &ServerId, task_id: &TaskId) -> Op<()> {
        Ledger::mark_ended(self, server, task_id, Tombstone::Expired)
    }

    fn forget_unconfirmed(&self, server: &ServerId, task_id: &TaskId) -> Op<bool> {
        let (server, task_id) = (server.clone(), task_id.clone());
        self.op(move |l| l.forget_unconfirmed(&server, &task_id))
    }

    fn get(&self, server: &ServerId, task_id: &TaskId) -> Op<Option<TaskRecord>> {
        let (server, task_id) = (server.clone(), task_id.clone());
        self.op(move |l| l.get(&server, &task_id))
    }

    fn hidden(&self, server: &ServerId, task_id: &TaskId) -> Op<bool> {
        let (server, task_id) = (server.clone(), task_id.clone());
        self.op(move |l| l.hidden(&server, &task_id))
    }

    fn find(&self, prefix: &str) -> Op<Vec<TaskRecord>> {
        let prefix = prefix.to_string();
        self.op(move |l| l.find(&prefix))
    }

    fn list(&self, include_terminal: bool) -> Op<Vec<TaskRecord>> {
        self.op(move |l| l.list(include_terminal))
    }

    fn activity(
        self: std::sync::Arc<Self>,
        since: chrono::DateTime<chrono::Utc>,
        limits: ActivityLimits,
    ) -> Op<Activity> {
        self.op(move |l| l.activity(since, limits))
    }

    fn non_terminal(&self) -> Op<Vec<TaskRecord>> {
        self.op(|l| l.non_terminal())
    }

    fn timeline(&self, server: &ServerId, task_id: &TaskId) -> Op<Vec<EventRecord>> {
        let (server, task_id) = (server.clone(), task_id.clone());
        self.op(move |l| l.timeline(&server, &task_id))
    }

    fn answered_keys(&self, server: &ServerId, task_id: &TaskId) -> Op<Vec<String>> {
        let (server, task_id) = (server.clone(), task_id.clone());
        self.op(move |l| l.answered_keys(&server, &task_id))
    }

    fn answered(&self, server: &ServerId, task_id: &TaskId) -> Op<Vec<AnsweredKey>> {
        let (server, task_id) = (server.clone(), task_id.clone());
        self.op(move |l| l.answered(&server, &task_id))
    }

    fn servers_with_open_tasks(&self) -> Op<Vec<ServerId>> {
        self.op(|l| l.servers_with_open_tasks())
    }

    fn servers(&self) -> Op<Vec<ServerId>> {
        self.op(|l| l.servers())
    }

    fn count_server(&self, server: &ServerId) -> Op<usize> {
        let server = server.clone();
        self.op(move |l| l.count_server(&server))
    }

    fn scan_server(
        &self,
        server: &ServerId,
        include_terminal: bool,
        chunk: usize,
        out: mpsc::Sender<Vec<TaskRecord>>,
    ) -> Op<()> {
        let server = server.clone();
        // On the ledger thread, outside the runtime: waiting for room is fine.
        self.op(move |l| {
            l.scan_server(&server, include_terminal, chunk, |c| {
                out.blocking_send(c).is_ok()
            })
        })
    }

    fn prune(&self, older_than: Duration) -> Op<usize> {
        self.op(move |l| l.prune(older_than))
    }

    fn prune_before(&self, cutoff: chrono::DateTime<chrono::Utc>) -> Op<usize> {
        self.op(move |l| l.prune_before(cutoff))
    }

    fn remove_unfollowed(&self, server: &ServerId, me: &Owner) -> Op<usize> {
        let (server, me) = (server.clone(), me.clone());
        self.op(move |l| l.remove_unfollowed(&server, &me))
    }

    fn canonicalize_servers(&self, canon: Canon) -> Op<usize> {
        self.op(move |l| l.canonicalize_servers(canon))
    }

    fn claim(
        &self,
        server: &ServerId,
        ids: &[TaskId],
        owner: &Owner,
        ttl: Duration,
    ) -> Op<Vec<TaskId>> {
        let (server, ids, owner) = (server.clone(), ids.to_vec(), owner.clone());
        self.op(move |l| l.claim(&server, &ids, &owner, ttl))
    }

    fn track_and_claim(
        &self,
        server: &ServerId,
        era: Option<Era>,
        task_id: &TaskId,
        session: Option<i64>,
        owner: &Owner,
        ttl: Duration,
    ) -> Op<bool> {
        let (server, task_id, owner) = (server.clone(), task_id.clone(), owner.clone());
        self.op(move |l| l.track_and_claim(&server, era, &task_id, session, &owner, ttl))
    }

    fn renew(&self, owner: &Owner, ttl: Duration) -> Op<()> {
        let owner = owner.clone();
        self.op(move |l| l.renew(&owner, ttl))
    }

    fn release(&self, server: &ServerId, ids: &[TaskId], owner: &Owner) -> Op<()> {
        let (server, ids, owner) = (server.clone(), ids.to_vec(), owner.clone());
        self.op(move |l| l.release(&server, &ids, &owner))
    }

    fn release_all(&self, owner: &Owner) -> Op<()> {
        let owner = owner.clone();
        self.op(move |l| l.release_all(&owner))
    }

    fn follower(&self, server: &ServerId, id: &TaskId, me: &Owner) -> Op<Option<String>> {
        let (server, id, me) = (server.clone(), id.clone(), me.clone());
        self.op(move |l| l.follower(&server, &id, &me))
    }

    fn followed_by_others(
        &self,
        server: &ServerId,
        ids: &[TaskId],
        me: &Owner,
    ) -> Op<HashSet<TaskId>> {
        let (server, ids, me) = (server.clone(), ids.to_vec(), me.clone());
        self.op(move |l| l.followed_by_others(&server, &ids, &me))
    }

    fn request(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        kind: OutboxKind,
        payload: &Value,
        requester: &str,
    ) -> Op<Option<i64>> {
        let (server, task_id) = (server.clone(), task_id.clone());
        let (payload, requester) = (payload.clone(), requester.to_string());
        self.op(move |l| l.request(&server, &task_id, kind, &payload, &requester))
    }

    fn complete_request(&self, id: i64, error: Option<&str>) -> Op<()> {
        let write = Write::CompleteRequest {
            id,
            error: error.map(str::to_string),
        };
        self.op(move |l| l.through(&write).map(drop))
    }

    fn open_requests(&self, owner: &str) -> Op<Vec<OutboxRequest>> {
        let owner = owner.to_string();
        self.op(move |l| l.open_requests(&owner))
    }

    fn outcomes_since(&self, requester: &str, since: i64) -> Op<Vec<OutboxOutcome>> {
        let requester = requester.to_string();
        self.op(move |l| l.outcomes_since(&requester, since))
    }

    fn abandon_request(&self, id: i64, why: &str) -> Op<()> {
        let why = why.to_string();
        self.op(move |l| l.abandon_request(id, &why))
    }

    fn feed_cursor(&self) -> Op<Cursor> {
        self.op(|l| l.feed_cursor())
    }

    fn changes(&self, since: Cursor, owner: &str, force: bool) -> Op<Option<Changes>> {
        let owner = owner.to_string();
        self.op(move |l| l.changes(since, &owner, force))
    }

    fn record_session(
        &self,
        server: &ServerId,
        session_id: &str,
        protocol_version: &str,
        capabilities: &Value,
        server_name: Option<&str>,
    ) -> Op<i64> {
        let server = server.clone();
        let (session_id, protocol_version) = (session_id.to_string(), protocol_version.to_string());
        let (capabilities, server_name) = (capabilities.clone(), server_name.map(str::to_string));
        self.op(move |l| {
            l.record_session(
                &server,
                &session_id,
                &protocol_version,
                &capabilities,
                server_name.as_deref(),
            )
        })
    }

    fn session(&self, id: i64) -> Op<Option<SessionRecord>> {
        self.op(move |l| l.session(id))
    }

    fn session_lost(&self, id: i64) -> Op<Vec<TaskId>> {
        self.op(move |l| l.session_lost(id))
    }

    fn record_proxy_task(&self, new: NewTask<'_>, owner: &Owner, ttl: Duration) -> Op<()> {
        let write = Write::created(new, Some((owner, ttl)));
        self.op(move |l| l.through(&write).map(drop))
    }

    fn set_call(&self, server: &ServerId, task_id: &TaskId, key: &str) -> Op<()> {
        let write = Write::SetCall {
            server: server.as_str().to_string(),
            task_id: task_id.clone(),
            key: key.to_string(),
        };
        self.op(move |l| l.through(&write).map(drop))
    }

    fn set_delivery(&self, server: &ServerId, task_id: &TaskId, delivery: Delivery) -> Op<()> {
        let write = Write::SetDelivery {
            server: server.as_str().to_string(),
            task_id: task_id.clone(),
            delivery: delivery as u8,
        };
        self.op(move |l| l.through(&write).map(drop))
    }

    fn host_gave_up(&self, server: &ServerId, task_id: &TaskId, note: &Value) -> Op<()> {
        let write = Write::HostGaveUp {
            server: server.as_str().to_string(),
            task_id: task_id.clone(),
            note: note.clone(),
        };
        self.op(move |l| l.through(&write).map(drop))
    }

    fn attached(&self, server: &ServerId, task_id: &TaskId, detail: &Value) -> Op<()> {
        let write = Write::Attached {
            server: server.as_str().to_string(),
            task_id: task_id.clone(),
            detail: detail.clone(),
        };
        self.op(move |l| l.through(&write).map(drop))
    }

    fn undelivered(&self, server: &ServerId, key: &str) -> Op<Option<TaskRecord>> {
        let (server, key) = (server.clone(), key.to_string());
        self.op(move |l| l.undelivered(&server, &key))
    }
}
