//! The engine's facts about tasks folded into the rows: what the ledger knows, snapshots,
//! expiry, new input requests, reused input keys and numeric progress. The rows' own
//! invariants (first terminal wins, input-key dedup) live in `task`. Must not render.

use super::task::TaskRow;
use super::{Now, State, TaskKey, forms};
use crate::engine::{EngineEvent, NoticeLevel, ServerId, UpdateSource};
use crate::mcp::{InputRequest, Task};

/// The row of `key`, created on first mention; the table is rebuilt on the next frame.
pub(super) fn row_mut<'a>(state: &'a mut State, key: &TaskKey) -> &'a mut TaskRow {
    state.board.dirty = true;
    state
        .tasks
        .entry(key.clone())
        .or_insert_with(|| TaskRow::new(key.clone()))
}

/// What the ledger knows about a followed task (`TaskKnown`; history, so it updates no
/// "last seen"). Other events are ignored.
pub(super) fn known(state: &mut State, event: EngineEvent, now: Now) {
    let EngineEvent::TaskKnown {
        server,
        task_id,
        tool,
        arguments,
        recorded_at,
        last,
        expired,
        parent_task,
    } = event
    else {
        return;
    };
    let row = row_mut(state, &TaskKey::new(&server, &task_id));
    row.tool = tool.or(row.tool.take());
    row.arguments = arguments.or(row.arguments.take());
    row.recorded_at = Some(recorded_at);
    row.parent_task = parent_task;
    row.expired |= expired;
    if let Some(task) = last {
        let seen = row.seen_at;
        row.apply_snapshot(task, None, None, now);
        row.seen_at = seen;
    }
    row.created = row.created.or(Some(recorded_at));
}

/// A new snapshot; a task that just ended closes its open input form.
pub(super) fn snapshot(
    state: &mut State,
    server: &ServerId,
    task: Task,
    source: UpdateSource,
    latency_ms: Option<u64>,
    now: Now,
) {
    let key = TaskKey::new(server, &task.task_id);
    let row = row_mut(state, &key);
    if row.apply_snapshot(task, Some(source), latency_ms, now) && row.is_terminal() {
        forms::close_for_ended_task(state, &key, now);
    }
}

pub(super) fn expired(state: &mut State, key: &TaskKey, now: Now) {
    let row = row_mut(state, key);
    row.expired = true;
    row.pending.clear();
    forms::close_for_ended_task(state, key, now);
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
