//! The engine's facts about tasks folded into the rows: what the ledger knows, snapshots,
//! expiry, new input requests, reused input keys and numeric progress. The rows' own
//! invariants (first terminal wins, input-key dedup) live in `task`. Must not render.

use super::task::{CancelMark, TaskRow};
use super::{Now, State, TaskKey, answer};
use crate::engine::{KnownTask, NoticeLevel, ServerId, TaskId, TaskNote, Tombstone, UpdateSource};
use crate::mcp::{InputRequest, Task};
use crate::state::widths;

/// The row of `key`, created on first mention; the table re-places it on the next frame.
pub(super) fn row_mut<'a>(state: &'a mut State, key: &TaskKey) -> &'a mut TaskRow {
    let entry = state.tasks.entry(key.clone());
    state.board.touch(entry.index());
    entry.or_insert_with(|| TaskRow::new(key.clone()))
}

/// What people and hosts did about a task (`TaskNoted`): who asked to cancel it, a host
/// that stopped waiting. A task not on the board yet gets its row when it is known.
pub(super) fn noted(state: &mut State, server: &ServerId, task_id: &TaskId, note: TaskNote) {
    let key = TaskKey::new(server, task_id);
    if let Some(row) = state.tasks.get_mut(&key) {
        row.note = Some(Box::new(note));
        state.touch_row(&key);
    }
}

/// The task left the ledger (another process pruned it): its row leaves the board and
/// any view answering it closes.
pub(super) fn removed(state: &mut State, key: &TaskKey, now: Now) {
    let Some(row) = state.tasks.get_mut(key) else {
        return;
    };
    if row.removed {
        return;
    }
    row.removed = true;
    row.pending.clear();
    state.removed_rows += 1;
    state.touch_row(key);
    answer::close_for_ended_task(state, key, now);
}

/// What the ledger knows about a followed task (`TaskKnown`; history, so it updates no
/// "last seen").
pub(super) fn known(state: &mut State, server: &ServerId, task: KnownTask, now: Now) {
    let row = row_mut(state, &TaskKey::new(server, &task.task_id));
    row.tool = task.tool.or(row.tool.take());
    row.refresh_text();
    row.arguments = task.arguments.map(Box::new).or(row.arguments.take());
    row.recorded_at = Some(task.recorded_at);
    row.parent_task = task.parent_task;
    row.started_by = task
        .started_by
        .map(|s| crate::sanitize::sanitize_line(&s, widths::STARTED_BY))
        .or(row.started_by.take());
    if let Some(why) = task.end {
        row.expired = true;
        row.end = Some(why);
    }
    row.payload_in_ledger |= task.lean;
    if let Some(acked) = task.cancel
        && row.cancel.is_none()
    {
        row.cancel = Some(CancelMark { acked });
    }
    if let Some(last) = task.last {
        let seen = row.seen_at;
        row.apply_snapshot(last, &task.pending, None, None, now);
        row.seen_at = seen;
    }
    row.created = row.created.or(Some(task.recorded_at));
}

/// A chunk of finished tasks from the ledger, with about `more` to come: room is made
/// for all of them at once, so the table is not regrown while they arrive.
pub(super) fn resumed(
    state: &mut State,
    server: &ServerId,
    tasks: Vec<KnownTask>,
    more: usize,
    now: Now,
) {
    let room = tasks.len() + more;
    state.tasks.reserve(room);
    state.board.reserve(room);
    for task in tasks {
        known(state, server, task, now);
    }
}

/// A new snapshot with the keys the engine still counts as pending; a task that just
/// ended closes its open input form.
pub(super) fn snapshot(
    state: &mut State,
    server: &ServerId,
    task: Task,
    pending: &[String],
    source: UpdateSource,
    latency_ms: Option<u64>,
    now: Now,
) {
    let key = TaskKey::new(server, &task.task_id);
    let row = row_mut(state, &key);
    if row.apply_snapshot(task, pending, Some(source), latency_ms, now) {
        if row.is_terminal() {
            answer::close_for_ended_task(state, &key, now);
        }
    } else {
        row.set_pending(pending);
    }
}

/// A tombstone: the server no longer knows the task, or dropped its session.
pub(super) fn expired(state: &mut State, key: &TaskKey, why: Tombstone, now: Now) {
    let row = row_mut(state, key);
    row.expired = true;
    row.end = Some(why);
    row.pending.clear();
    answer::close_for_ended_task(state, key, now);
}

/// An id given to follow that its server does not know: no row, a notice.
pub(super) fn not_found(state: &mut State, server: &ServerId, task_id: &TaskId, now: Now) {
    let text = format!("no task {} on {server}", task_id.prefix());
    state.notify(NoticeLevel::Warn, &text, now);
}

pub(super) fn input_requested(
    state: &mut State,
    key: &TaskKey,
    input_key: &str,
    req: InputRequest,
) {
    row_mut(state, key).offer_input(input_key, req);
}

pub(super) fn input_key_reused(state: &mut State, key: &TaskKey, input_key: &str, now: Now) {
    let row = row_mut(state, key);
    row.pending.remove(input_key);
    row.reused.insert(input_key.to_string());
    let text = format!(
        "{} reused input key {input_key} for a different request (server bug); not re-prompted",
        key.task_id.prefix()
    );
    state.notify(NoticeLevel::Warn, &text, now);
}

pub(super) fn progress(state: &mut State, key: &TaskKey, progress: f64, total: Option<f64>) {
    row_mut(state, key).reported = Some((progress, total));
}
