//! Tests of the statistics figures: bucket boundaries, empty input, one task, tasks
//! spanning buckets, waiting for input, arrivals, the histogram and percentiles.

use super::*;

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn srv(name: &str) -> ServerId {
    ServerId::named(name)
}

fn span(started: &str, ended: Option<&str>, status: &str) -> Span {
    Span {
        server: srv("s"),
        started: at(started),
        ended: ended.map(at),
        status: status.into(),
    }
}

fn status(task: usize, when: &str, to: &str) -> Mark {
    Mark {
        task,
        at: at(when),
        kind: MarkKind::Status,
        status: Some(to.into()),
        count: 1,
    }
}

const NOW: &str = "2026-07-28T10:30:20Z";

#[test]
fn windows_are_aligned_and_end_with_now() {
    let w = Range::Hour.window(at(NOW));
    assert_eq!((w.n, w.secs), (60, 60));
    assert_eq!(w.start, at("2026-07-28T09:31:00Z"));
    assert_eq!(w.place(at(NOW)), Place::In(59));
    let w = Range::Week.window(at(NOW));
    assert_eq!((w.n, w.secs), (84, 7200));
    assert_eq!(w.place(at(NOW)), Place::In(83));
    assert_eq!(Range::Hour.step(false), Range::Hour);
    assert_eq!(Range::Hour.step(true), Range::SixHours);
    assert_eq!(Range::Week.step(true), Range::Week);
}

#[test]
fn a_bucket_holds_its_start_not_its_end() {
    let w = Range::Hour.window(at(NOW));
    assert_eq!(w.place(at("2026-07-28T09:30:59.999Z")), Place::Before);
    assert_eq!(w.place(at("2026-07-28T09:31:00Z")), Place::In(0));
    assert_eq!(w.place(at("2026-07-28T09:31:59.999Z")), Place::In(0));
    assert_eq!(w.place(at("2026-07-28T09:32:00Z")), Place::In(1));
    assert_eq!(w.place(at("2026-07-28T10:31:00Z")), Place::After);
}

#[test]
fn nothing_in_nothing_out() {
    let s = summarize(Range::Day, at(NOW), &[], &[], false);
    assert_eq!(s.status.running, vec![0; 96]);
    assert_eq!(s.status.completed, vec![0; 96]);
    assert_eq!(s.waiting, vec![0; 96]);
    assert!(s.arrivals.is_empty());
    assert_eq!(s.durations, [0; 6]);
    assert_eq!(s.tasks, 0);
}

#[test]
fn one_running_task_counts_in_every_bucket_since_it_started() {
    let spans = [span("2026-07-28T10:28:30Z", None, "working")];
    let w = Range::Hour.window(at(NOW));
    let b = by_status(&spans, &w, at(NOW));
    // 10:28 is bucket 57.
    assert_eq!(&b.running[56..], &[0, 1, 1, 1]);
    assert_eq!(b.running.iter().sum::<u64>(), 3);
    assert_eq!(b.completed.iter().sum::<u64>(), 0);
}

#[test]
fn a_task_spanning_buckets_runs_until_the_bucket_it_ends_in() {
    let spans = [
        span(
            "2026-07-28T10:25:10Z",
            Some("2026-07-28T10:28:00Z"),
            "completed",
        ),
        // Started before the window, failed inside it.
        span(
            "2026-07-28T08:00:00Z",
            Some("2026-07-28T09:32:30Z"),
            "failed",
        ),
        // Ended before the window: not in it at all.
        span(
            "2026-07-28T08:00:00Z",
            Some("2026-07-28T09:30:00Z"),
            "completed",
        ),
        // Started and ended in one bucket.
        span(
            "2026-07-28T10:29:01Z",
            Some("2026-07-28T10:29:59Z"),
            "cancelled",
        ),
    ];
    let w = Range::Hour.window(at(NOW));
    let b = by_status(&spans, &w, at(NOW));
    // 10:25 is bucket 54; 10:28 is bucket 57.
    assert_eq!(&b.running[53..58], &[0, 1, 1, 1, 0]);
    assert_eq!(b.completed[57], 1);
    assert_eq!(&b.running[..2], &[1, 0], "09:31 running, failed at 09:32");
    assert_eq!(b.failed[1], 1);
    assert_eq!(b.failed[58], 1, "cancelled counts with the failures");
    assert_eq!(b.running[58], 0);
    assert_eq!(b.completed.iter().sum::<u64>(), 1);
}

#[test]
fn waiting_for_input_lasts_until_the_next_status_change() {
    let spans = [
        span("2026-07-28T10:00:00Z", None, "input_required"),
        span(
            "2026-07-28T10:00:00Z",
            Some("2026-07-28T10:20:30Z"),
            "completed",
        ),
    ];
    let marks = [
        status(0, "2026-07-28T10:00:00Z", "working"),
        status(1, "2026-07-28T10:00:00Z", "working"),
        status(1, "2026-07-28T10:10:00Z", "input_required"),
        status(0, "2026-07-28T10:29:00Z", "input_required"),
        status(1, "2026-07-28T10:12:30Z", "working"),
        status(1, "2026-07-28T10:20:00Z", "input_required"),
    ];
    let w = Range::Hour.window(at(NOW));
    let v = waiting(&spans, &marks, &w, at(NOW));
    // 10:10 is bucket 39 .. 10:12 bucket 41; 10:20 bucket 49 until the end at 10:20:30.
    assert_eq!(&v[38..43], &[0, 1, 1, 1, 0]);
    assert_eq!(&v[48..51], &[0, 1, 0]);
    assert_eq!(&v[57..], &[0, 1, 1], "still waiting now");
}

#[test]
fn arrivals_count_polls_by_their_count_and_only_inside_the_window() {
    let mut other = span("2026-07-28T10:00:00Z", None, "working");
    other.server = srv("t");
    let spans = [span("2026-07-28T10:00:00Z", None, "working"), other];
    let mark = |task, when, kind, count| Mark {
        task,
        at: at(when),
        kind,
        status: None,
        count,
    };
    let marks = [
        mark(0, "2026-07-28T10:01:00Z", MarkKind::Push, 1),
        mark(0, "2026-07-28T10:02:00Z", MarkKind::Poll, 3),
        mark(0, "2026-07-28T09:00:00Z", MarkKind::Poll, 50),
        mark(1, "2026-07-28T10:03:00Z", MarkKind::Poll, 1),
        mark(9, "2026-07-28T10:03:00Z", MarkKind::Poll, 1),
    ];
    let a = arrivals(&spans, &marks, &Range::Hour.window(at(NOW)));
    assert_eq!(a[&srv("s")], Arrivals { push: 1, poll: 3 });
    assert_eq!(a[&srv("s")].push_percent(), Some(25));
    assert_eq!(a[&srv("t")].push_percent(), Some(0));
    assert_eq!(Arrivals::default().push_percent(), None);
}

#[test]
fn durations_fall_in_their_bins_at_the_edges() {
    let spans = [
        span(
            "2026-07-28T10:00:00Z",
            Some("2026-07-28T10:00:00.999Z"),
            "completed",
        ),
        span(
            "2026-07-28T10:00:00Z",
            Some("2026-07-28T10:00:01Z"),
            "completed",
        ),
        span(
            "2026-07-28T10:00:00Z",
            Some("2026-07-28T10:00:59Z"),
            "failed",
        ),
        span(
            "2026-07-28T10:00:00Z",
            Some("2026-07-28T10:10:00Z"),
            "completed",
        ),
        span(
            "2026-07-28T08:00:00Z",
            Some("2026-07-28T10:00:00Z"),
            "completed",
        ),
        // Running, or ended before the window: not counted.
        span("2026-07-28T10:00:00Z", None, "working"),
        span(
            "2026-07-28T08:00:00Z",
            Some("2026-07-28T08:00:05Z"),
            "completed",
        ),
    ];
    let d = durations(&spans, &Range::Hour.window(at(NOW)));
    assert_eq!(d, [1, 1, 1, 0, 1, 1]);
}

#[test]
fn percentiles_by_nearest_rank() {
    assert_eq!(percentile(&[], 50), None);
    assert_eq!(percentile(&[7], 50), Some(7));
    assert_eq!(percentile(&[7], 95), Some(7));
    let hundred: Vec<u32> = (1..=100).rev().collect();
    assert_eq!(percentile(&hundred, 50), Some(50));
    assert_eq!(percentile(&hundred, 95), Some(95));
    assert_eq!(percentile(&hundred, 100), Some(100));
    assert_eq!(percentile(&[1, 2, 3, 4], 50), Some(2));
    assert_eq!(percentile(&[10, 20, 30, 1000], 95), Some(1000));
}
