//! The statistics view's read: the ledger's activity since the range began, turned into
//! the view's summary on a blocking thread (never on the UI task), within fixed bounds so
//! a ledger of any size costs a bounded read.
//!
//! Owns only the mapping from ledger records to the figures' input; the figures are
//! `state::charts`'.

use std::time::Instant;

use chrono::{DateTime, Utc};

use crate::ledger::{Activity, ActivityLimits, EventKind, LedgerHandle};
use crate::state::charts::{Mark, MarkKind, Range, Span, Summary, summarize};

/// At most this much is read for one picture (about 70 bytes an entry while it is summed
/// up: 70 MB at most, 25 MB for 100,000 tasks with their status changes and polls).
pub const LIMITS: ActivityLimits = ActivityLimits {
    tasks: 200_000,
    events: 1_000_000,
};

/// The figures' input from an activity read (moved, not copied).
pub fn spans_and_marks(a: Activity) -> (Vec<Span>, Vec<Mark>) {
    let spans = a
        .tasks
        .into_iter()
        .map(|t| Span {
            server: t.server,
            started: t.started,
            ended: t.ended,
            status: t.status,
        })
        .collect();
    let marks = a
        .events
        .into_iter()
        .filter_map(|e| {
            let kind = match e.kind {
                EventKind::Status => MarkKind::Status,
                EventKind::Push => MarkKind::Push,
                EventKind::Poll | EventKind::Polls | EventKind::Resync => MarkKind::Poll,
                _ => return None,
            };
            Some(Mark {
                task: e.task,
                at: e.at,
                kind,
                // Only a status change's new status is used.
                status: if kind == MarkKind::Status {
                    e.status
                } else {
                    None
                },
                count: e.count,
            })
        })
        .collect();
    (spans, marks)
}

/// The summary of `range` ending at `now`, read from `ledger`; with how long the read and
/// the aggregation took.
pub async fn summary(
    ledger: LedgerHandle,
    range: Range,
    now: DateTime<Utc>,
) -> anyhow::Result<(Box<Summary>, std::time::Duration)> {
    let started = Instant::now();
    let since = range.window(now).start;
    let activity = ledger.activity(since, LIMITS).await?;
    let summary = tokio::task::spawn_blocking(move || {
        let truncated = activity.truncated;
        let (spans, marks) = spans_and_marks(activity);
        Box::new(summarize(range, now, &spans, &marks, truncated))
    })
    .await?;
    Ok((summary, started.elapsed()))
}
