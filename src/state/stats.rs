//! The statistics view (`:stats`, `t`): which range it shows, the summary the ledger read
//! brought for it (asked for with `Effect::LoadStats`, read off the UI task), and each
//! server's latest request durations (a bounded ring fed by the engine's `Stats`).
//!
//! Transitions only: open, change the range, reload, take a summary, take latencies. Must
//! not aggregate (a summary arrives whole, see `charts`) or read the clock.

use std::collections::VecDeque;

use super::charts::{Range, Summary, percentile};
use super::modal::Modal;
use super::{Effect, Now, State};
use crate::engine::ServerId;

/// While the view is open, the summary is read again this often.
pub const RELOAD_SECS: i64 = 15;

/// Request durations kept per server.
pub const LATENCY_RING: usize = 240;

/// A server's latest request durations, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LatencyRing {
    samples: VecDeque<u32>,
}

impl LatencyRing {
    /// Keep `ms`, forgetting the oldest past [`LATENCY_RING`].
    pub fn push(&mut self, ms: u32) {
        if self.samples.len() == LATENCY_RING {
            self.samples.pop_front();
        }
        self.samples.push_back(ms);
    }

    pub fn is_empty(&self) -> bool {
        self.samples.is_empty()
    }

    /// The latest `n` durations, oldest first.
    pub fn latest(&self, n: usize) -> Vec<u64> {
        let skip = self.samples.len().saturating_sub(n);
        self.samples
            .iter()
            .skip(skip)
            .map(|v| u64::from(*v))
            .collect()
    }

    /// The 50th and 95th percentiles of what is kept.
    pub fn p50_p95(&self) -> Option<(u32, u32)> {
        let all: Vec<u32> = self.samples.iter().copied().collect();
        Some((percentile(&all, 50)?, percentile(&all, 95)?))
    }
}

/// Where the view's summary stands.
#[derive(Debug, Clone, PartialEq)]
pub enum StatsData {
    Loading,
    Loaded(Box<Summary>),
    Failed(String),
}

/// The open statistics view.
#[derive(Debug, Clone, PartialEq)]
pub struct StatsView {
    pub range: Range,
    pub data: StatsData,
    /// A read is under way (for `range`).
    pub loading: bool,
    /// When the last read was asked for, or answered if it was since.
    pub asked_at: Option<Now>,
}

impl StatsView {
    /// The view on `range`, its summary not read yet.
    pub fn new(range: Range) -> StatsView {
        StatsView {
            range,
            data: StatsData::Loading,
            loading: false,
            asked_at: None,
        }
    }
}

fn view_mut(state: &mut State) -> Option<&mut StatsView> {
    match state.modals.last_mut() {
        Some(Modal::Stats(v)) => Some(v),
        _ => None,
    }
}

/// Ask for the view's summary (unless a read is under way).
fn load(view: &mut StatsView, now: Now, fx: &mut Vec<Effect>) {
    if view.loading {
        return;
    }
    view.loading = true;
    view.asked_at = Some(now);
    fx.push(Effect::LoadStats { range: view.range });
}

/// `:stats` / `t`: open the view on the last hour (or the range it showed last) and read.
pub(super) fn open(state: &mut State, now: Now, fx: &mut Vec<Effect>) {
    if view_mut(state).is_some() {
        return;
    }
    let mut view = StatsView::new(state.stats_range);
    load(&mut view, now, fx);
    state.modals.push(Modal::Stats(view));
}

/// A longer (`longer`) or shorter range, read anew.
pub(super) fn step_range(state: &mut State, longer: bool, now: Now, fx: &mut Vec<Effect>) {
    let Some(view) = view_mut(state) else {
        return;
    };
    let range = view.range.step(longer);
    if range == view.range {
        return;
    }
    view.range = range;
    view.data = StatsData::Loading;
    view.loading = false;
    load(view, now, fx);
    state.stats_range = range;
}

/// `r`: read again now.
pub(super) fn reload(state: &mut State, now: Now, fx: &mut Vec<Effect>) {
    if let Some(view) = view_mut(state) {
        load(view, now, fx);
    }
}

/// The tick: read again [`RELOAD_SECS`] after the last read while the view is open.
pub(super) fn tick(state: &mut State, now: Now, fx: &mut Vec<Effect>) {
    if let Some(view) = view_mut(state)
        && view
            .asked_at
            .is_none_or(|t| (now - t).num_seconds() >= RELOAD_SECS)
    {
        load(view, now, fx);
    }
}

/// A read finished: kept if it is of the range shown, else dropped (another is under way).
pub(super) fn loaded(
    state: &mut State,
    range: Range,
    result: Result<Box<Summary>, String>,
    now: Now,
) {
    let Some(view) = state.modals.iter_mut().rev().find_map(|m| match m {
        Modal::Stats(v) => Some(v),
        _ => None,
    }) else {
        return;
    };
    if range != view.range {
        return;
    }
    view.loading = false;
    view.asked_at = Some(now);
    view.data = match result {
        Ok(summary) => StatsData::Loaded(summary),
        // A summary already shown stays; the failure is said only when there is none.
        Err(e) => match &view.data {
            StatsData::Loaded(_) => return,
            _ => StatsData::Failed(crate::sanitize::sanitize_line(&e, 200)),
        },
    };
}

/// Request durations a server's engine reported.
pub(super) fn latencies(state: &mut State, server: &ServerId, samples: &[u32]) {
    if let Some(s) = state.servers.iter_mut().find(|s| &s.id == server) {
        for ms in samples {
            s.latency.push(*ms);
        }
    }
}
