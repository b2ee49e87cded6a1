//! The statistics view's transitions: open it, change its range, read again (now, or every
//! few seconds while it is open), take a summary, take a server's request durations.
//!
//! Pure: asks for reads with `Effect::LoadStats`; must not aggregate or read the clock.

use super::charts::{Range, Summary};
use super::modal::Modal;
use super::views::stats::{RELOAD_SECS, StatsData, StatsView};
use super::{Effect, Now, State};
use crate::engine::ServerId;
use crate::state::widths;

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
            _ => StatsData::Failed(crate::sanitize::sanitize_line(&e, widths::ERROR_LINE)),
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
