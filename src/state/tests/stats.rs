//! The statistics view's reducer: opening (`t` and `:stats`), changing the range, reading
//! again, a summary arriving (the range shown, or a stale one), and latency samples.

use super::*;
use crate::state::charts::{Range, summarize};
use crate::state::views::stats::{LATENCY_RING, StatsData};

fn key(c: char) -> Msg {
    Msg::Key(Key::char(c))
}

fn view(s: &State) -> &crate::state::views::stats::StatsView {
    match s.modals.last() {
        Some(Modal::Stats(v)) => v,
        other => panic!("not the statistics view: {other:?}"),
    }
}

fn summary(range: Range) -> Result<Box<charts::Summary>, String> {
    Ok(Box::new(summarize(range, t0(), &[], &[], false)))
}

#[test]
fn t_opens_the_view_on_the_last_hour_and_asks_for_its_summary() {
    let mut s = fresh();
    let fx = update(&mut s, key('t'), t0());
    assert_eq!(fx, [Effect::LoadStats { range: Range::Hour }]);
    assert_eq!(view(&s).range, Range::Hour);
    assert_eq!(view(&s).data, StatsData::Loading);
    assert_eq!(s.context(), Context::Stats);
    assert!(
        update(&mut s, key('t'), t0()).is_empty(),
        "t is not bound here"
    );
    update(&mut s, Msg::Key(Key::plain(KeyCode::Esc)), t0());
    assert!(s.modals.is_empty());
}

#[test]
fn the_command_line_opens_it_too() {
    let mut s = fresh();
    update(&mut s, key(':'), t0());
    for c in "stats".chars() {
        update(&mut s, key(c), t0());
    }
    let fx = update(&mut s, Msg::Key(Key::plain(KeyCode::Enter)), t0());
    assert_eq!(fx, [Effect::LoadStats { range: Range::Hour }]);
    assert!(matches!(s.modals.last(), Some(Modal::Stats(_))));
}

#[test]
fn ranges_step_longer_and_shorter_and_each_is_read_anew() {
    let mut s = fresh();
    update(&mut s, key('t'), t0());
    update(
        &mut s,
        Msg::StatsLoaded {
            range: Range::Hour,
            result: summary(Range::Hour),
        },
        t0(),
    );
    let fx = update(&mut s, key(']'), t0());
    assert_eq!(
        fx,
        [Effect::LoadStats {
            range: Range::SixHours
        }]
    );
    assert_eq!(
        view(&s).data,
        StatsData::Loading,
        "the hour's figures are not shown as 6 h"
    );
    update(&mut s, key(']'), t0());
    let fx = update(&mut s, key(']'), t0());
    assert_eq!(fx, [Effect::LoadStats { range: Range::Week }]);
    assert!(
        update(&mut s, key(']'), t0()).is_empty(),
        "the week is the longest"
    );
    let fx = update(&mut s, key('['), t0());
    assert_eq!(fx, [Effect::LoadStats { range: Range::Day }]);
    // Closed and opened again: on the range it showed last.
    update(&mut s, key('q'), t0());
    assert_eq!(
        update(&mut s, key('t'), t0()),
        [Effect::LoadStats { range: Range::Day }]
    );
}

#[test]
fn a_summary_of_another_range_is_dropped_and_the_one_shown_kept() {
    let mut s = fresh();
    update(&mut s, key('t'), t0());
    update(&mut s, key(']'), t0());
    update(
        &mut s,
        Msg::StatsLoaded {
            range: Range::Hour,
            result: summary(Range::Hour),
        },
        t0(),
    );
    assert_eq!(
        view(&s).data,
        StatsData::Loading,
        "stale: the hour was left"
    );
    assert!(view(&s).loading);
    update(
        &mut s,
        Msg::StatsLoaded {
            range: Range::SixHours,
            result: summary(Range::SixHours),
        },
        t0(),
    );
    assert!(matches!(&view(&s).data, StatsData::Loaded(x) if x.range == Range::SixHours));
    assert!(!view(&s).loading);
    // A later failure keeps the figures shown; with none shown it is said.
    update(&mut s, key('r'), t0());
    update(
        &mut s,
        Msg::StatsLoaded {
            range: Range::SixHours,
            result: Err("gone".into()),
        },
        t0(),
    );
    assert!(matches!(view(&s).data, StatsData::Loaded(_)));
    update(&mut s, key('['), t0());
    update(
        &mut s,
        Msg::StatsLoaded {
            range: Range::Hour,
            result: Err("disk \u{1b}[2J full".into()),
        },
        t0(),
    );
    assert_eq!(view(&s).data, StatsData::Failed("disk  full".into()));
}

#[test]
fn it_is_read_again_while_open_but_never_twice_at_once() {
    let mut s = fresh();
    assert!(
        update(&mut s, Msg::Tick, t0()).is_empty(),
        "closed: nothing read"
    );
    update(&mut s, key('t'), t0());
    let later = t0() + chrono::Duration::seconds(20);
    assert!(
        update(&mut s, Msg::Tick, later).is_empty(),
        "the first read is under way"
    );
    assert!(update(&mut s, key('r'), later).is_empty());
    update(
        &mut s,
        Msg::StatsLoaded {
            range: Range::Hour,
            result: summary(Range::Hour),
        },
        later,
    );
    let soon = later + chrono::Duration::seconds(5);
    assert!(update(&mut s, Msg::Tick, soon).is_empty(), "read 5 s ago");
    let due = later + chrono::Duration::seconds(15);
    assert_eq!(
        update(&mut s, Msg::Tick, due),
        [Effect::LoadStats { range: Range::Hour }]
    );
    update(
        &mut s,
        Msg::StatsLoaded {
            range: Range::Hour,
            result: summary(Range::Hour),
        },
        due,
    );
    assert_eq!(
        update(&mut s, key('r'), due),
        [Effect::LoadStats { range: Range::Hour }]
    );
}

#[test]
fn latency_samples_fill_a_bounded_ring_per_server() {
    let mut s = fresh();
    let stats = |latencies_ms: Vec<u32>| {
        Msg::Engine(EngineEvent::Stats {
            server: srv(),
            requests_total: 1,
            requests_per_sec: 1.0,
            errors_total: 0,
            latencies_ms,
        })
    };
    assert_eq!(s.servers[0].latency.p50_p95(), None);
    update(&mut s, stats((1..=100).collect()), t0());
    assert_eq!(s.servers[0].latency.p50_p95(), Some((50, 95)));
    for _ in 0..10 {
        update(&mut s, stats(vec![7; 64]), t0());
    }
    assert_eq!(s.servers[0].latency.latest(usize::MAX).len(), LATENCY_RING);
    assert_eq!(
        s.servers[0].latency.p50_p95(),
        Some((7, 7)),
        "the oldest forgotten"
    );
    assert_eq!(s.servers[0].latency.latest(3), [7, 7, 7]);
}
