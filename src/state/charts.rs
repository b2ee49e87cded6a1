//! The statistics view's figures from the work as the ledger tells it: time buckets of a
//! range, tasks by status per bucket, tasks waiting for input per bucket, push vs poll
//! counts per server, a histogram of task durations, and percentiles of latencies.
//!
//! Pure functions of their inputs (`now` passed in), linear in the tasks and entries they
//! are given: they run off the UI task, on whatever the read brought, never in the reducer.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use crate::engine::ServerId;

/// A time range the view shows, and how it is cut into buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Range {
    /// The last hour by minute.
    #[default]
    Hour,
    /// Six hours by five minutes.
    SixHours,
    /// A day by fifteen minutes.
    Day,
    /// A week by two hours.
    Week,
}

impl Range {
    pub const ALL: [Range; 4] = [Range::Hour, Range::SixHours, Range::Day, Range::Week];

    /// Seconds per bucket.
    pub fn bucket_secs(self) -> i64 {
        match self {
            Range::Hour => 60,
            Range::SixHours => 5 * 60,
            Range::Day => 15 * 60,
            Range::Week => 2 * 3600,
        }
    }

    /// Buckets in the range.
    pub fn buckets(self) -> usize {
        match self {
            Range::Hour => 60,
            Range::SixHours => 72,
            Range::Day => 96,
            Range::Week => 84,
        }
    }

    /// How a person reads it.
    pub fn label(self) -> &'static str {
        match self {
            Range::Hour => "last hour by minute",
            Range::SixHours => "6 h by 5 min",
            Range::Day => "24 h by 15 min",
            Range::Week => "7 d by 2 h",
        }
    }

    /// The next longer range (`forward`) or shorter one, stopping at the ends.
    pub fn step(self, forward: bool) -> Range {
        let i = Range::ALL.iter().position(|r| *r == self).unwrap_or(0);
        let j = if forward {
            (i + 1).min(Range::ALL.len() - 1)
        } else {
            i.saturating_sub(1)
        };
        Range::ALL[j]
    }

    /// The buckets of this range ending with the one `now` is in (aligned to whole
    /// buckets since the epoch, so they do not move as seconds pass).
    pub fn window(self, now: DateTime<Utc>) -> Window {
        let secs = self.bucket_secs();
        let n = self.buckets();
        let last = now.timestamp().div_euclid(secs) * secs;
        let start = last - secs * (n as i64 - 1);
        Window {
            start: DateTime::from_timestamp(start, 0).unwrap_or_default(),
            secs,
            n,
        }
    }
}

/// `n` buckets of `secs` seconds from `start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub start: DateTime<Utc>,
    pub secs: i64,
    pub n: usize,
}

/// Where a moment falls in a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    Before,
    In(usize),
    After,
}

impl Window {
    /// The bucket `t` falls in (a bucket holds its start, not its end).
    pub fn place(&self, t: DateTime<Utc>) -> Place {
        let ms = (t - self.start).num_milliseconds();
        if ms < 0 {
            return Place::Before;
        }
        let i = (ms / (self.secs * 1000)) as usize;
        if i >= self.n {
            Place::After
        } else {
            Place::In(i)
        }
    }

    /// Buckets `[from, to]` an interval `[a, b]` touches, if any.
    fn touched(&self, a: DateTime<Utc>, b: DateTime<Utc>) -> Option<(usize, usize)> {
        let from = match self.place(a) {
            Place::Before => 0,
            Place::In(i) => i,
            Place::After => return None,
        };
        let to = match self.place(b) {
            Place::Before => return None,
            Place::In(i) => i,
            Place::After => self.n - 1,
        };
        (from <= to).then_some((from, to))
    }
}

/// One task as the figures need it.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub server: ServerId,
    pub started: DateTime<Utc>,
    pub ended: Option<DateTime<Utc>>,
    /// Its last status (`expired` for a tombstone).
    pub status: String,
}

/// What a timeline entry says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkKind {
    /// The status changed.
    Status,
    /// A snapshot came by push.
    Push,
    /// Snapshots came by polling (`count` of them).
    Poll,
}

/// One timeline entry of task `task` (an index into the spans).
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    pub task: usize,
    pub at: DateTime<Utc>,
    pub kind: MarkKind,
    /// The status it moved to (`Status`).
    pub status: Option<String>,
    pub count: u64,
}

/// How tasks ended, as the picture layers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layer {
    /// Alive in the bucket and not ended in it.
    Running,
    Completed,
    /// Failed, cancelled, expired or lost.
    Failed,
}

impl Layer {
    /// The layer of a task that ended with `status`.
    pub fn of_end(status: &str) -> Layer {
        match status {
            "completed" => Layer::Completed,
            _ => Layer::Failed,
        }
    }
}

/// Per bucket: tasks running, and tasks that ended in it (completed, or otherwise).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatusBuckets {
    pub running: Vec<u64>,
    pub completed: Vec<u64>,
    pub failed: Vec<u64>,
}

/// Add one to every bucket of `[from, to]` (a difference array).
fn add(diff: &mut [i64], from: usize, to: usize) {
    diff[from] += 1;
    diff[to + 1] -= 1;
}

fn sum_up(diff: &[i64], n: usize) -> Vec<u64> {
    let mut out = Vec::with_capacity(n);
    let mut acc = 0i64;
    for d in &diff[..n] {
        acc += d;
        out.push(acc.max(0) as u64);
    }
    out
}

/// Tasks by status per bucket: a task counts as running in every bucket it was alive in
/// before the one it ended in, and in the bucket it ended in by how it ended.
pub fn by_status(spans: &[Span], w: &Window, now: DateTime<Utc>) -> StatusBuckets {
    let mut diff = vec![0i64; w.n + 1];
    let mut out = StatusBuckets {
        completed: vec![0; w.n],
        failed: vec![0; w.n],
        ..StatusBuckets::default()
    };
    for s in spans {
        let end = s.ended.unwrap_or(now).max(s.started);
        let Some((from, to)) = w.touched(s.started, end) else {
            continue;
        };
        match s.ended {
            None => add(&mut diff, from, to),
            Some(e) => {
                if to > from {
                    add(&mut diff, from, to - 1);
                }
                if let Place::In(i) = w.place(e) {
                    match Layer::of_end(&s.status) {
                        Layer::Completed => out.completed[i] += 1,
                        _ => out.failed[i] += 1,
                    }
                } else if to >= from {
                    // Ended after the window (a clock ahead): running to the end.
                    add(&mut diff, to, to);
                }
            }
        }
    }
    out.running = sum_up(&diff, w.n);
    out
}

/// Tasks waiting for input at some moment of each bucket, from their status changes
/// (given per task oldest first): a task waits from a change to `input_required` until
/// its next change, its end, or `now`.
pub fn waiting(spans: &[Span], marks: &[Mark], w: &Window, now: DateTime<Utc>) -> Vec<u64> {
    let mut diff = vec![0i64; w.n + 1];
    let mut open: Vec<Option<DateTime<Utc>>> = vec![None; spans.len()];
    let close = |diff: &mut Vec<i64>, a: DateTime<Utc>, b: DateTime<Utc>| {
        if let Some((from, to)) = w.touched(a, b.max(a)) {
            add(diff, from, to);
        }
    };
    for m in marks.iter().filter(|m| m.kind == MarkKind::Status) {
        let Some(slot) = open.get_mut(m.task) else {
            continue;
        };
        let to_input = m.status.as_deref() == Some("input_required");
        match (*slot, to_input) {
            (None, true) => *slot = Some(m.at),
            (Some(since), false) => {
                *slot = None;
                close(&mut diff, since, m.at);
            }
            _ => {}
        }
    }
    for (span, slot) in spans.iter().zip(&open) {
        if let Some(since) = slot {
            close(&mut diff, *since, span.ended.unwrap_or(now));
        }
    }
    sum_up(&diff, w.n)
}

/// How snapshots of one server's tasks arrived in the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Arrivals {
    pub push: u64,
    pub poll: u64,
}

impl Arrivals {
    /// Push's share in whole percent (`None` when nothing arrived).
    pub fn push_percent(&self) -> Option<u64> {
        let total = self.push + self.poll;
        (total > 0).then(|| (self.push * 100 + total / 2) / total)
    }
}

/// Push and poll counts per server, of entries inside the window.
pub fn arrivals(spans: &[Span], marks: &[Mark], w: &Window) -> BTreeMap<ServerId, Arrivals> {
    let mut out: BTreeMap<ServerId, Arrivals> = BTreeMap::new();
    for m in marks {
        if !matches!(w.place(m.at), Place::In(_)) {
            continue;
        }
        let Some(span) = spans.get(m.task) else {
            continue;
        };
        match m.kind {
            MarkKind::Status => {}
            MarkKind::Push => {
                out.entry(span.server.clone()).or_default().push += m.count;
            }
            MarkKind::Poll => {
                out.entry(span.server.clone()).or_default().poll += m.count;
            }
        }
    }
    out
}

/// The histogram's bins: upper bounds in seconds (the last bin is everything longer).
pub const DURATION_BINS: [(&str, i64); 6] = [
    ("<1s", 1),
    ("<10s", 10),
    ("<1m", 60),
    ("<10m", 600),
    ("<1h", 3600),
    (">1h", i64::MAX),
];

/// Durations of the tasks that ended inside the window, counted per [`DURATION_BINS`].
pub fn durations(spans: &[Span], w: &Window) -> [u64; DURATION_BINS.len()] {
    let mut out = [0u64; DURATION_BINS.len()];
    for s in spans {
        let Some(end) = s.ended else {
            continue;
        };
        if !matches!(w.place(end), Place::In(_)) {
            continue;
        }
        let ms = (end - s.started).num_milliseconds().max(0);
        let bin = DURATION_BINS
            .iter()
            .position(|(_, upper)| ms < upper.saturating_mul(1000))
            .unwrap_or(DURATION_BINS.len() - 1);
        out[bin] += 1;
    }
    out
}

/// The `p`th percentile (0–100) of `samples` by nearest rank; `None` when empty.
pub fn percentile(samples: &[u32], p: u32) -> Option<u32> {
    if samples.is_empty() {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let rank = (u64::from(p.min(100)) * sorted.len() as u64).div_ceil(100) as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Everything the view draws for one range, computed once per read.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub range: Range,
    pub window: Window,
    pub status: StatusBuckets,
    pub waiting: Vec<u64>,
    pub arrivals: BTreeMap<ServerId, Arrivals>,
    pub durations: [u64; DURATION_BINS.len()],
    /// Tasks the read brought.
    pub tasks: usize,
    /// The read left tasks or entries out (past its limits).
    pub truncated: bool,
}

/// The summary of `range` ending now.
pub fn summarize(
    range: Range,
    now: DateTime<Utc>,
    spans: &[Span],
    marks: &[Mark],
    truncated: bool,
) -> Summary {
    let window = range.window(now);
    Summary {
        range,
        window,
        status: by_status(spans, &window, now),
        waiting: waiting(spans, marks, &window, now),
        arrivals: arrivals(spans, marks, &window),
        durations: durations(spans, &window),
        tasks: spans.len(),
        truncated,
    }
}

#[cfg(test)]
#[path = "charts_tests.rs"]
mod tests;
