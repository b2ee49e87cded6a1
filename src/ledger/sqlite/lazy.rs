//! Poll bookkeeping kept in memory and written lazily: when a task was last seen (a
//! snapshot that changed nothing but `lastUpdatedAt`) and the `polls` counts of unchanged
//! polls. Neither changes what a task is, so neither is worth a write transaction of its
//! own (which would also wake every other process's feed): they ride along with the next
//! real write of this connection, and are written on their own only when the oldest is
//! [`FLUSH_EVERY`] old, when this connection reads a timeline, or when it closes. They never
//! stamp a row as changed, so the feed never reports them.
//!
//! Must not log task ids.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::tx::{WriteTx, ensure_task, push_event};
use crate::ids::{ServerId, TaskId};
use crate::ledger::EventKind;

/// The longest pending bookkeeping waits for a write to ride along with.
pub(super) const FLUSH_EVERY: Duration = Duration::from_secs(60);

/// A `polls` event not written yet.
#[derive(Debug)]
struct PendingPolls {
    server: ServerId,
    task_id: TaskId,
    at: i64,
    detail: Value,
}

/// What this connection has not written yet.
#[derive(Debug, Default)]
pub(super) struct Lazy {
    /// Task row → when it was last seen (ms since the epoch).
    seen: HashMap<i64, i64>,
    polls: Vec<PendingPolls>,
    /// When the oldest pending item was noted.
    since: Option<Instant>,
}

impl Lazy {
    pub(super) fn is_empty(&self) -> bool {
        self.seen.is_empty() && self.polls.is_empty()
    }

    fn noted(&mut self) {
        self.since.get_or_insert_with(Instant::now);
    }

    /// Whether the oldest pending item has waited [`FLUSH_EVERY`].
    pub(super) fn due(&self) -> bool {
        self.since.is_some_and(|s| s.elapsed() >= FLUSH_EVERY)
    }

    /// Remember that task row `row` was seen unchanged at `at`.
    pub(super) fn note_seen(&mut self, row: i64, at: i64) {
        let seen = self.seen.entry(row).or_insert(at);
        *seen = (*seen).max(at);
        self.noted();
    }

    /// Keep a `polls` event for later.
    pub(super) fn defer_polls(
        &mut self,
        server: &ServerId,
        task_id: &TaskId,
        at: i64,
        detail: &Value,
    ) {
        self.polls.push(PendingPolls {
            server: server.clone(),
            task_id: task_id.clone(),
            at,
            detail: detail.clone(),
        });
        self.noted();
    }

    /// Write everything pending inside `tx` (every write transaction does this first, so
    /// the timeline keeps the order in which things were noted).
    pub(super) fn write(self, tx: &WriteTx<'_>) -> anyhow::Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        for (row, at) in self.seen {
            tx.prepare_cached(
                "UPDATE tasks SET last_seen = max(coalesce(last_seen, 0), ?2) WHERE id = ?1",
            )?
            .execute(rusqlite::params![row, at])?;
        }
        for p in self.polls {
            let (id, _) = ensure_task(tx, &p.server, &p.task_id, None, p.at)?;
            push_event(tx, id, p.at, EventKind::Polls, None, &p.detail)?;
        }
        Ok(())
    }
}
