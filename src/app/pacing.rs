//! When the dashboard draws its next frame: the first change after a quiet spell at once,
//! a burst of changes coalesced, and drawing kept to a small share of one core.
//!
//! Frames come at most every `FRAME` (60 fps) in general. While drawing has used less
//! than `SHARE` of the time (a credit that refills with wall time and is spent by each
//! frame's cost), bursts are drawn faster, at most every `FAST_FRAME`: a burst of pushes
//! from many tasks at once then reaches the screen within a few milliseconds, and a board
//! that changes all the time still costs no more than the 60 fps cap or that share.

use std::time::Duration;

use tokio::time::Instant;

/// Minimum time between two frames once the fast-frame credit is spent (a 60 fps cap).
const FRAME: Duration = Duration::from_millis(16);

/// Minimum time between two frames while the credit lasts.
const FAST_FRAME: Duration = Duration::from_millis(4);

/// Within a burst (changes keep coming less than a gap after the last frame), a frame
/// waits this long for the burst's next message, so it lands in one frame.
const SETTLE: Duration = Duration::from_millis(2);

/// The share of wall time fast frames may spend drawing: one tenth (10 % of a core).
const SHARE: u32 = 10;

/// The most credit saved up while quiet: enough for a burst of some dozens of cheap frames.
const CREDIT_MAX: Duration = Duration::from_millis(20);

/// The frame clock of one dashboard loop.
#[derive(Debug)]
pub(super) struct Pacer {
    last_draw: Instant,
    /// Least time before the next frame (see [`Pacer::drawn`]).
    gap: Duration,
    /// `FAST_FRAME` while the credit lasts, else `FRAME`.
    floor: Duration,
    /// Drawing time fast frames may still spend.
    credit: Duration,
    /// The sender said the burst is over (a resume's last rows): the next frame is not
    /// held back.
    burst_over: bool,
}

impl Pacer {
    /// A pacer whose first frame may be drawn at once.
    pub(super) fn new(now: Instant) -> Pacer {
        Pacer {
            last_draw: now - FRAME,
            gap: FRAME,
            floor: FRAME,
            credit: CREDIT_MAX,
            burst_over: false,
        }
    }

    /// Nothing more of the current burst is coming: its changes are drawn without waiting
    /// for the pause that would otherwise tell (until the next frame).
    pub(super) fn burst_over(&mut self) {
        self.burst_over = true;
    }

    /// A frame that began at `started` was drawn and flushed at `ended`. The next gap is
    /// the floor, or four times the frame's cost when frames are dear (a board of 100,000
    /// rows filling up), so drawing takes at most a fifth of the loop and the rest folds
    /// messages in.
    pub(super) fn drawn(&mut self, started: Instant, ended: Instant) {
        let cost = ended.saturating_duration_since(started);
        let earned = ended.saturating_duration_since(self.last_draw) / SHARE;
        self.credit = (self.credit + earned).min(CREDIT_MAX).saturating_sub(cost);
        self.floor = if self.credit >= cost {
            FAST_FRAME
        } else {
            FRAME
        };
        self.gap = self.floor.max(cost * 4);
        self.last_draw = ended;
        self.burst_over = false;
    }

    /// When the next frame may be drawn, the screen having been dirty since
    /// `dirty_since` and the last message having come at `last_msg`. The first change
    /// after a quiet gap is drawn at once (whatever already waited in the channel was
    /// folded in first); later changes of a burst wait for the gap after the last frame
    /// and for messages to pause for `SETTLE` (or for a whole gap). A dear frame's spacing
    /// is for bursts: once messages have paused for as long as a frame costs (a quarter of
    /// the gap), the burst is over and is drawn then, though not sooner than that cost (or
    /// the floor) after the last frame: a board that stops and goes is then drawn at most
    /// half the time, and the loop was idle during the pause anyway. A burst the sender
    /// said is over ([`Pacer::burst_over`]) is drawn at its last message.
    pub(super) fn draw_at(&self, dirty_since: Instant, last_msg: Instant) -> Instant {
        let (last_draw, gap) = (self.last_draw, self.gap);
        if self.burst_over {
            return last_msg;
        }
        if dirty_since >= last_draw + gap {
            return dirty_since;
        }
        let burst = (last_draw + gap).max((last_msg + SETTLE).min(dirty_since + gap));
        let over = (last_msg + gap / 4).max(last_draw + self.floor.max(gap / 4));
        burst.min(over)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// A pacer whose last frame ended at `at` after costing `cost`, its credit spent.
    fn spent(at: Instant, cost: Duration) -> Pacer {
        let mut p = Pacer::new(at - cost);
        p.credit = Duration::ZERO;
        p.last_draw = at - cost;
        p.drawn(at - cost, at);
        p
    }

    #[test]
    fn the_first_change_after_a_quiet_frame_is_drawn_at_once_and_a_burst_is_coalesced() {
        let drawn = Instant::now();
        let p = spent(drawn, MS / 10);
        assert_eq!(p.gap, FRAME);
        // quiet for a second, then one change: no wait at all
        let change = drawn + Duration::from_secs(1);
        assert_eq!(p.draw_at(change, change), change);
        // a change 5 ms after a frame waits for the frame budget
        let soon = drawn + 5 * MS;
        assert_eq!(p.draw_at(soon, soon), drawn + FRAME);
        // a burst still coming past the budget: drawn once it pauses for SETTLE…
        let (first, last) = (drawn + 10 * MS, drawn + 17 * MS);
        assert_eq!(p.draw_at(first, last), last + SETTLE);
        // …or when its first undrawn change has waited a whole FRAME
        let busy = drawn + 40 * MS;
        assert_eq!(p.draw_at(first, busy), first + FRAME);
    }

    #[test]
    fn a_burst_said_to_be_over_is_drawn_at_its_last_message_once() {
        let drawn = Instant::now();
        let mut p = spent(drawn, 20 * MS);
        let (first, last) = (drawn + MS, drawn + 2 * MS);
        assert!(p.draw_at(first, last) > last, "a burst waits for its pause");
        p.burst_over();
        assert_eq!(p.draw_at(first, last), last);
        p.drawn(last, last + 20 * MS);
        let next = last + 21 * MS;
        assert!(p.draw_at(next, next) > next, "the next burst waits again");
    }

    #[test]
    fn with_credit_a_burst_is_drawn_every_few_milliseconds() {
        let start = Instant::now();
        let mut p = Pacer::new(start);
        // a burst of changes every 0.1 ms for 12 ms, frames costing 0.2 ms
        let (mut t, mut frames, mut dirty) = (start, vec![], None::<Instant>);
        while t < start + 12 * MS {
            let d = *dirty.get_or_insert(t);
            if t >= p.draw_at(d, t) {
                p.drawn(t, t + MS / 5);
                frames.push(t - start);
                dirty = None;
            }
            t += MS / 10;
        }
        assert_eq!(
            frames[0],
            Duration::ZERO,
            "the first change is drawn at once"
        );
        assert!(frames.len() >= 3, "frames within 12 ms: {frames:?}");
        for w in frames.windows(2) {
            assert!(
                w[1] - w[0] >= FAST_FRAME,
                "frames closer than the floor: {frames:?}"
            );
            assert!(
                w[1] - w[0] < FRAME,
                "a burst waited for the 60 fps cap: {frames:?}"
            );
        }
    }

    #[test]
    fn drawing_all_the_time_spends_the_credit_and_falls_back_to_the_frame_cap() {
        let start = Instant::now();
        let mut p = Pacer::new(start);
        let cost = MS; // a frame of 1 ms drawn every 4 ms is a quarter of the time
        let mut t = start;
        let mut gaps = vec![];
        for _ in 0..200 {
            t = p.draw_at(t, t).max(t);
            let before = p.last_draw;
            p.drawn(t, t + cost);
            gaps.push(p.last_draw - before);
            t += cost;
        }
        let busy: Duration = gaps.iter().rev().take(100).sum();
        let drawing = cost * 100;
        assert!(
            drawing * SHARE <= busy,
            "drawing took {drawing:?} of the last {busy:?}: more than the share"
        );
        assert!(gaps.iter().rev().take(100).all(|g| *g >= FAST_FRAME));
        // after a quiet second the credit is back and a burst is fast again
        t += Duration::from_secs(1);
        p.drawn(t, t + MS / 5);
        assert_eq!(p.floor, FAST_FRAME);
    }

    #[test]
    fn dear_frames_are_spaced_out_cheap_ones_keep_the_floor() {
        let drawn = Instant::now();
        let p = spent(drawn, 10 * MS);
        let gap = p.gap;
        assert_eq!(gap, 40 * MS);
        // changes still coming after a dear frame wait for its whole gap, not the 60 fps cap
        let (first, busy) = (drawn + 5 * MS, drawn + 38 * MS);
        assert_eq!(p.draw_at(first, busy), drawn + gap);
        // a burst that stopped is drawn once quiet for a frame's cost (10 ms here)…
        let last = drawn + 25 * MS;
        assert_eq!(p.draw_at(first, last), last + gap / 4);
        // …but never sooner than the floor (and that cost) after the frame
        assert_eq!(p.draw_at(first, first), drawn + FRAME.max(gap / 4));
        // a burst that ended as a 30 ms frame did is drawn 30 ms after it, not 60
        let dearer = spent(drawn, 30 * MS);
        assert_eq!(dearer.draw_at(drawn, drawn), drawn + 30 * MS);
        // and after a quiet gap it is drawn at once
        let later = drawn + 50 * MS;
        assert_eq!(p.draw_at(later, later), later);
    }
}
