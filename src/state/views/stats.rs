//! The statistics view's model (`:stats`, `t`): which range it shows, the summary the
//! ledger read brought for it, and each server's latest request durations (a bounded ring
//! fed by the engine's `Stats`). Its transitions are `state::stats`', its drawing `ui::stats`.
//!
//! Data only: must not aggregate (a summary arrives whole, see `charts`) or read the clock.

use std::collections::VecDeque;

use crate::state::charts::{Range, Summary, percentile};
use crate::state::time::Now;

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
