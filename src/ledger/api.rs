//! The `Ledger` trait: every durable operation taskrail asks of its ledger, by name, for
//! any backend (SQLite, PostgreSQL), and `LedgerHandle`, the cloneable handle callers hold.
//!
//! Owns the contract, not its storage: what each operation means and the ordering every
//! caller relies on. Must not name a backend, and must not log task ids.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;

use super::activity::{Activity, ActivityLimits, activity_from_reads};
use super::owner::Owner;
use super::records::{
    AnsweredKey, Changes, Cursor, Delivery, NewTask, OutboxKind, OutboxOutcome, OutboxRequest,
    SessionRecord, SnapshotWrite,
};
use super::{EventKind, EventRecord, TaskRecord, Tombstone};
use crate::ids::{ServerId, TaskId};
use crate::mcp::types::Era;

/// One ledger operation under way: already queued, its result to await (or drop).
pub type Op<T> = Pin<Box<dyn Future<Output = anyhow::Result<T>> + Send + 'static>>;

/// Maps a stored server id to the id the configuration uses now.
pub type Canon = Box<dyn Fn(&ServerId) -> ServerId + Send + 'static>;

/// The cloneable handle callers hold: one ledger, shared.
pub type LedgerHandle = Arc<dyn Ledger>;

/// Operations already called, awaited in order as one (they are queued already, so they
/// run in order whether or not this is awaited). The first error is returned, after every
/// operation ran.
pub fn all(ops: Vec<Op<()>>) -> Op<()> {
    Box::pin(async move {
        let mut first = Ok(());
        for op in ops {
            if let Err(e) = op.await
                && first.is_ok()
            {
                first = Err(e);
            }
        }
        first
    })
}

/// Everything durable about tasks: creation data, snapshots, the timeline, answered keys,
/// tombstones, leases, the outbox, legacy sessions, a proxy's calls, and the change feed
/// other processes read. The ledger is also the bus between processes sharing it.
///
/// # Contract
///
/// * **Ordered at the call.** An operation is queued when its method is *called*, not when
///   its future is first polled: it runs after every operation called before it on the
///   same ledger (through any clone of the handle) and before every one called after it.
///   So a write whose future is dropped unpolled (fire and forget) still happens, and any
///   later operation sees it. Dropping a future never cancels its operation.
/// * **Borrowed arguments.** Methods take borrowed arguments and copy what they keep; the
///   returned future is `Send + 'static` and borrows nothing.
/// * **Each write is durable and atomic** once its future resolves `Ok`; a failed write
///   leaves nothing half done.
/// * **A panicking or failing operation is an error** of that operation only: later ones
///   still run.
/// * **Snapshots pass `mcp::judge`**: the first terminal state wins, older snapshots are
///   ignored, tombstones are final.
/// * **Every write that changes a task is reported by [`Ledger::changes`]** to every
///   process sharing the ledger, and wakes [`Ledger::changed`] in the others.
///
/// Task ids are bearer secrets: no implementation logs a full id.
pub trait Ledger: Send + Sync + std::fmt::Debug + 'static {
    // --- where it is, and its health ---

    /// Where the ledger lives, for people (a file path; never a secret).
    fn location(&self) -> String;

    /// The last failure of a [`Ledger::queue_snapshot`] write since the previous call.
    fn take_write_failure(&self) -> Option<String>;

    /// `Some(writes waiting)` while the ledger's database cannot be reached (writes are
    /// kept on this machine meanwhile, and reads fail with [`super::Offline`]) or kept
    /// writes still wait to be replayed; `None` when all is well. A local file is never
    /// offline.
    fn offline(&self) -> Option<usize> {
        None
    }

    /// A token each time another process may have written (checked every `every`, the
    /// first check one `every` from now, and it always says "look"). At most one token
    /// waits. Dropping the receiver ends the watch; the receiver ends when the ledger
    /// closes.
    fn changed(&self, every: Duration) -> anyhow::Result<mpsc::Receiver<()>>;

    /// Resolves once every operation called before it has run (queued writes included).
    fn flush(&self) -> Op<()>;

    // --- writes: tasks and their timeline ---

    /// Store a task our own call created (idempotent: a second call changes nothing).
    fn record_created(&self, new: NewTask<'_>) -> Op<()>;
    /// Track a task known only by id (inserted once).
    fn record_tracked(
        &self,
        server: &ServerId,
        era: Option<Era>,
        task_id: &TaskId,
        session: Option<i64>,
    ) -> Op<()>;
    /// Store a snapshot; whether it changed the task.
    fn record_snapshot(
        &self,
        server: &ServerId,
        task: &crate::mcp::types::Task,
        source: EventKind,
        latency_ms: Option<u64>,
    ) -> Op<bool>;
    /// Store snapshots in order; whether each changed its task.
    fn record_snapshots(&self, batch: &[SnapshotWrite]) -> Op<Vec<bool>>;
    /// Queue a snapshot without a result to wait for (ordered like every operation); a
    /// failure is kept for [`Ledger::take_write_failure`]. Fails only if the ledger closed.
    fn queue_snapshot(&self, write: SnapshotWrite) -> anyhow::Result<()>;
    /// Append an event to a task's timeline.
    fn record_event(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        kind: EventKind,
        latency_ms: Option<u64>,
        detail: &Value,
    ) -> Op<()>;
    /// Record an answered input key (the first answer wins).
    fn mark_answered(&self, server: &ServerId, task_id: &TaskId, key: &str, action: &str)
    -> Op<()>;
    /// Tombstone a task: it ended for `why` (final).
    fn mark_ended(&self, server: &ServerId, task_id: &TaskId, why: Tombstone) -> Op<()>;
    /// Tombstone a task as expired.
    fn mark_expired(&self, server: &ServerId, task_id: &TaskId) -> Op<()>;
    /// Forget a tracked task the server never confirmed; whether one was forgotten.
    fn forget_unconfirmed(&self, server: &ServerId, task_id: &TaskId) -> Op<bool>;

    // --- reads ---

    /// One task.
    fn get(&self, server: &ServerId, task_id: &TaskId) -> Op<Option<TaskRecord>>;
    /// Tasks whose id starts with `prefix`, any server.
    fn find(&self, prefix: &str) -> Op<Vec<TaskRecord>>;
    /// Whether the ledger has this task but the caller may not see it (a shared ledger's
    /// row-level security); a file every process of the user reads hides nothing.
    fn hidden(&self, server: &ServerId, task_id: &TaskId) -> Op<bool> {
        let _ = (server, task_id);
        Box::pin(async { Ok(false) })
    }
    /// Every task (finished ones too if `include_terminal`).
    fn list(&self, include_terminal: bool) -> Op<Vec<TaskRecord>>;
    /// Every task still running.
    fn non_terminal(&self) -> Op<Vec<TaskRecord>>;
    /// A task's timeline, in the order it was written.
    fn timeline(&self, server: &ServerId, task_id: &TaskId) -> Op<Vec<EventRecord>>;
    /// A task's answered input keys, oldest first.
    fn answered_keys(&self, server: &ServerId, task_id: &TaskId) -> Op<Vec<String>>;
    /// A task's answered input keys with when and how.
    fn answered(&self, server: &ServerId, task_id: &TaskId) -> Op<Vec<AnsweredKey>>;
    /// Servers that have unfinished tasks.
    fn servers_with_open_tasks(&self) -> Op<Vec<ServerId>>;
    /// Every server that has tasks, finished or not.
    fn servers(&self) -> Op<Vec<ServerId>>;
    /// How many tasks `server` has.
    fn count_server(&self, server: &ServerId) -> Op<usize>;
    /// Read `server`'s tasks in chunks of at most `chunk` into `out` (unfinished ones
    /// always; finished ones, read lean, if `include_terminal`); stops early once `out`
    /// closes. `out` is sent to from the backend's own thread or task, so it may wait.
    fn scan_server(
        &self,
        server: &ServerId,
        include_terminal: bool,
        chunk: usize,
        out: mpsc::Sender<Vec<TaskRecord>>,
    ) -> Op<()>;

    /// The work since `since` in compact form, for pictures of it (see [`Activity`]),
    /// within `limits`. Called on a handle (`ledger.clone().activity(…)`). The default
    /// reads it with [`activity_from_reads`] (the list queued at the call, then one
    /// timeline per task); a backend overrides it with one bulk read.
    fn activity(
        self: Arc<Self>,
        since: chrono::DateTime<chrono::Utc>,
        limits: ActivityLimits,
    ) -> Op<Activity> {
        activity_from_reads(self, since, limits)
    }

    // --- retention and identities ---

    /// Remove finished tasks older than `older_than`; how many.
    fn prune(&self, older_than: Duration) -> Op<usize>;
    /// Remove finished tasks that ended before `cutoff`; how many.
    fn prune_before(&self, cutoff: chrono::DateTime<chrono::Utc>) -> Op<usize>;
    /// Remove every task of `server` that no live process other than `me` follows (a
    /// demo server's tasks of earlier runs: that server is gone); how many. Other
    /// processes learn it from the feed, as for a prune.
    fn remove_unfollowed(&self, server: &ServerId, me: &Owner) -> Op<usize>;
    /// Move rows keyed by an old server id to `canon`'s, merging duplicates; how many moved.
    fn canonicalize_servers(&self, canon: Canon) -> Op<usize>;

    // --- leases: who follows a task ---

    /// Take the leases of `ids` that are free; the ids now ours.
    fn claim(
        &self,
        server: &ServerId,
        ids: &[TaskId],
        owner: &Owner,
        ttl: Duration,
    ) -> Op<Vec<TaskId>>;
    /// Track a task by id and take its lease, in one step; whether the lease is ours.
    fn track_and_claim(
        &self,
        server: &ServerId,
        era: Option<Era>,
        task_id: &TaskId,
        session: Option<i64>,
        owner: &Owner,
        ttl: Duration,
    ) -> Op<bool>;
    /// The owner's heartbeat: every lease it holds lasts `ttl` more.
    fn renew(&self, owner: &Owner, ttl: Duration) -> Op<()>;
    /// Let go of the leases of `ids`.
    fn release(&self, server: &ServerId, ids: &[TaskId], owner: &Owner) -> Op<()>;
    /// Let go of every lease of `owner`.
    fn release_all(&self, owner: &Owner) -> Op<()>;
    /// The live process following a task, if another than `me`.
    fn follower(&self, server: &ServerId, id: &TaskId, me: &Owner) -> Op<Option<String>>;
    /// Which of `ids` another live process follows.
    fn followed_by_others(
        &self,
        server: &ServerId,
        ids: &[TaskId],
        me: &Owner,
    ) -> Op<HashSet<TaskId>>;

    // --- the outbox: answers and cancels for the follower ---

    /// Leave a request for the task's follower; its id, `None` if the task is unknown.
    fn request(
        &self,
        server: &ServerId,
        task_id: &TaskId,
        kind: OutboxKind,
        payload: &Value,
        requester: &str,
    ) -> Op<Option<i64>>;
    /// The follower carried a request out (`error` says why it failed).
    fn complete_request(&self, id: i64, error: Option<&str>) -> Op<()>;
    /// Requests waiting for `owner`'s tasks.
    fn open_requests(&self, owner: &str) -> Op<Vec<OutboxRequest>>;
    /// Outcomes of `requester`'s requests finished after `since`.
    fn outcomes_since(&self, requester: &str, since: i64) -> Op<Vec<OutboxOutcome>>;
    /// Give up a request.
    fn abandon_request(&self, id: i64, why: &str) -> Op<()>;

    // --- the feed ---

    /// Where the feed is now (a reader starts here).
    fn feed_cursor(&self) -> Op<Cursor>;
    /// What changed since `since` (task rows, requests for `owner`, outcomes of its
    /// requests); `None` when nobody else wrote and `force` is false.
    fn changes(&self, since: Cursor, owner: &str, force: bool) -> Op<Option<Changes>>;

    // --- legacy sessions ---

    /// Store a legacy session; its row id.
    fn record_session(
        &self,
        server: &ServerId,
        session_id: &str,
        protocol_version: &str,
        capabilities: &Value,
        server_name: Option<&str>,
    ) -> Op<i64>;
    /// One session.
    fn session(&self, id: i64) -> Op<Option<SessionRecord>>;
    /// The session is gone from its server: tombstone its live tasks; their ids.
    fn session_lost(&self, id: i64) -> Op<Vec<TaskId>>;

    // --- a proxy's calls ---

    /// Store a proxy's own task (a blocking call tracked as a task) and take its lease.
    fn record_proxy_task(&self, new: NewTask<'_>, owner: &Owner, ttl: Duration) -> Op<()>;
    /// `task_id` serves the host call `key`.
    fn set_call(&self, server: &ServerId, task_id: &TaskId, key: &str) -> Op<()>;
    /// Where the call's result stands.
    fn set_delivery(&self, server: &ServerId, task_id: &TaskId, delivery: Delivery) -> Op<()>;
    /// A host stopped waiting for the task (it runs on).
    fn host_gave_up(&self, server: &ServerId, task_id: &TaskId, note: &Value) -> Op<()>;
    /// A host's repeated call was attached to the task.
    fn attached(&self, server: &ServerId, task_id: &TaskId, detail: &Value) -> Op<()>;
    /// The task serving call `key` whose result no host received, if any.
    fn undelivered(&self, server: &ServerId, key: &str) -> Op<Option<TaskRecord>>;
}
