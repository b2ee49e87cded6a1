//! The work since a moment in compact form, for pictures of it (the dashboard's `:stats`):
//! each task's span (server, start, end, status) and the timeline entries that say how it
//! went (status changes, pushes, polls), read in one bulk query, and the reading of it any
//! backend gets for free from [`Ledger::list`] and [`Ledger::timeline`].
//!
//! Plain data and one default read; no aggregation (that is the reader's) and no task ids:
//! a span does not carry its task's id, so nothing built from it can leak one.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::{EventKind, EventRecord, Ledger, Op, TaskRecord};
use crate::ids::ServerId;

/// How much one read may return at most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActivityLimits {
    /// Tasks, newest first beyond it.
    pub tasks: usize,
    /// Timeline entries, oldest first beyond it.
    pub events: usize,
}

/// One task as the pictures need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSpan {
    pub server: ServerId,
    /// When taskrail first stored the task.
    pub started: DateTime<Utc>,
    /// When it became terminal or was tombstoned; `None` while it runs.
    pub ended: Option<DateTime<Utc>>,
    /// Its last status (`working`, `completed`, …; `expired` for a tombstone).
    pub status: String,
}

/// One timeline entry that says how a task went, pointing at its span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActivityEvent {
    /// Index into [`Activity::tasks`].
    pub task: usize,
    pub at: DateTime<Utc>,
    /// `status`, `push`, `poll`, `resync` or `polls`.
    pub kind: EventKind,
    pub latency_ms: Option<u64>,
    /// The status a `status` entry moved to (`None` for the others).
    pub status: Option<String>,
    /// How many requests it stands for: a `polls` entry counts the polls that changed
    /// nothing; every other entry is one.
    pub count: u64,
}

/// The work since a moment: every task alive at or after it (still running, or ended at
/// or after it), and of their timelines every status change (whenever it happened, so
/// the state at the moment is known) and every push and poll at or after it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Activity {
    /// Newest first.
    pub tasks: Vec<TaskSpan>,
    /// Per task oldest first; tasks in no particular order.
    pub events: Vec<ActivityEvent>,
    /// Tasks or entries were left out past the limits.
    pub truncated: bool,
}

/// Kinds an activity read keeps.
pub const ACTIVITY_KINDS: [EventKind; 5] = [
    EventKind::Status,
    EventKind::Push,
    EventKind::Poll,
    EventKind::Resync,
    EventKind::Polls,
];

/// Whether a task belongs in the activity since `since`.
pub fn alive_since(rec: &TaskRecord, since: DateTime<Utc>) -> bool {
    !rec.terminal || rec.terminal_at.is_some_and(|t| t >= since)
}

/// The span of a task record.
pub fn span_of(rec: &TaskRecord) -> TaskSpan {
    TaskSpan {
        server: rec.server.clone(),
        started: rec.recorded_at,
        ended: if rec.terminal {
            Some(rec.terminal_at.unwrap_or(rec.recorded_at))
        } else {
            None
        },
        status: if rec.expired {
            "expired".to_string()
        } else {
            rec.status.clone()
        },
    }
}

/// The activity entry of a timeline entry of task `task`, if it is one kept.
pub fn event_of(task: usize, e: &EventRecord, since: DateTime<Utc>) -> Option<ActivityEvent> {
    if !ACTIVITY_KINDS.contains(&e.kind) || (e.kind != EventKind::Status && e.at < since) {
        return None;
    }
    let count = if e.kind == EventKind::Polls {
        e.detail
            .get("unchanged")
            .and_then(|v| v.as_u64())
            .unwrap_or(1)
    } else {
        1
    };
    Some(ActivityEvent {
        task,
        at: e.at,
        kind: e.kind,
        latency_ms: e.latency_ms,
        status: (e.kind == EventKind::Status)
            .then(|| e.detail.get("to").and_then(|v| v.as_str()).map(clip))
            .flatten(),
        count,
    })
}

/// A status as stored is the server's word: kept short.
pub fn clip(s: &str) -> String {
    s.chars().take(32).collect()
}

/// The activity read from [`Ledger::list`] and one [`Ledger::timeline`] per task: what
/// [`Ledger::activity`] does unless a backend reads it faster.
pub fn activity_from_reads<L: Ledger + ?Sized>(
    ledger: Arc<L>,
    since: DateTime<Utc>,
    limits: ActivityLimits,
) -> Op<Activity> {
    let listed = ledger.list(true);
    Box::pin(async move {
        let mut recs: Vec<TaskRecord> = listed
            .await?
            .into_iter()
            .filter(|r| alive_since(r, since))
            .collect();
        recs.sort_by_key(|r| std::cmp::Reverse(r.recorded_at));
        let mut out = Activity {
            truncated: recs.len() > limits.tasks,
            ..Activity::default()
        };
        recs.truncate(limits.tasks);
        for (i, rec) in recs.iter().enumerate() {
            out.tasks.push(span_of(rec));
            let timeline = ledger.timeline(&rec.server, &rec.task_id).await?;
            for e in timeline.iter().filter_map(|e| event_of(i, e, since)) {
                if out.events.len() >= limits.events {
                    out.truncated = true;
                    break;
                }
                out.events.push(e);
            }
        }
        Ok(out)
    })
}
