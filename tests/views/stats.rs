//! Snapshots of the statistics view (`:stats`) at 100x30 and 80x24 with a pinned clock and
//! fixed data, one drawn with the monochrome theme (its layers told apart by symbol), and
//! the header's latency sparklines.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use chrono::{DateTime, TimeDelta, Utc};
use ratatui::backend::TestBackend;
use ratatui::style::Color;

use support::screen::{apply, now};
use taskrail::engine::{EngineEvent, ServerId};
use taskrail::mcp::Era;
use taskrail::state::charts::{Mark, MarkKind, Range, Span, summarize};
use taskrail::state::{Key, Keymap, Msg, State};
use taskrail::ui::Theme;

fn srv(n: &str) -> ServerId {
    ServerId::named(n)
}

fn ago(secs: i64) -> DateTime<Utc> {
    now() - TimeDelta::seconds(secs)
}

/// Forty-eight tasks over the last hour on two servers: most completed, some failed or
/// cancelled, every fourth still running, a few waiting for input for a while.
fn fixed_work() -> (Vec<Span>, Vec<Mark>) {
    let mut spans = Vec::new();
    let mut marks = Vec::new();
    for i in 0..48i64 {
        let started = ago(3600 - i * 70);
        let running = i % 4 == 0;
        let took = [500, 4_000, 30_000, 170_000, 900_000, 3_000_000][i as usize % 6];
        let ended = (!running).then(|| started + TimeDelta::milliseconds(took + i));
        let status = match (running, i % 5) {
            (true, _) => "working",
            (false, 1) => "failed",
            (false, 3) if i % 2 == 0 => "cancelled",
            _ => "completed",
        };
        let server = if i % 3 == 0 { "search" } else { "demo" };
        spans.push(Span {
            server: srv(server),
            started,
            ended: ended.map(|e| e.min(now())),
            status: status.into(),
        });
        let task = spans.len() - 1;
        let mark = |at, kind, status: Option<&str>, count| Mark {
            task,
            at,
            kind,
            status: status.map(str::to_string),
            count,
        };
        marks.push(mark(started, MarkKind::Status, Some("working"), 1));
        if i % 6 == 2 {
            marks.push(mark(
                started + TimeDelta::seconds(30),
                MarkKind::Status,
                Some("input_required"),
                1,
            ));
            marks.push(mark(
                started + TimeDelta::seconds(200),
                MarkKind::Status,
                Some("working"),
                1,
            ));
        }
        let (kind, count) = if server == "demo" {
            (MarkKind::Push, 2)
        } else {
            (MarkKind::Poll, 5)
        };
        marks.push(mark(started + TimeDelta::seconds(10), kind, None, count));
        marks.push(mark(
            started + TimeDelta::seconds(20),
            MarkKind::Poll,
            None,
            1,
        ));
    }
    (spans, marks)
}

fn stats_board() -> State {
    let mut s = State::new(
        vec![srv("demo"), srv("search")],
        false,
        Keymap::default_keymap(),
    );
    let mut msgs = Vec::new();
    for (name, push) in [("demo", true), ("search", false)] {
        msgs.push(Msg::Engine(EngineEvent::ServerConnected {
            server: srv(name),
            era: Era::Modern,
            push,
            server_name: Some(name.into()),
        }));
    }
    let wave =
        |base: u32| -> Vec<u32> { (0..64).map(|i| base + (i * 37 % 23) * base / 10).collect() };
    for (name, base) in [("demo", 12), ("search", 180)] {
        msgs.push(Msg::Engine(EngineEvent::Stats {
            server: srv(name),
            requests_total: 640,
            requests_per_sec: 2.0,
            errors_total: 0,
            latencies_ms: wave(base),
        }));
    }
    apply(&mut s, msgs);
    s
}

fn opened(range: Range) -> State {
    let mut s = stats_board();
    apply(&mut s, vec![Msg::Key(Key::char('t'))]);
    let (spans, marks) = fixed_work();
    let summary = summarize(range, now(), &spans, &marks, false);
    apply(
        &mut s,
        vec![Msg::StatsLoaded {
            range,
            result: Ok(Box::new(summary)),
        }],
    );
    s
}

fn render(state: &State, theme: &Theme, w: u16, h: u16) -> TestBackend {
    support::screen::render_themed(state, theme, w, h, now())
}

#[test]
fn the_last_hour_at_two_sizes() {
    let s = opened(Range::Hour);
    for (w, h) in [(100, 30), (80, 24)] {
        insta::assert_snapshot!(
            format!("stats_hour_{w}x{h}"),
            render(&s, &Theme::default(), w, h)
        );
    }
}

#[test]
fn a_longer_range_while_it_is_read() {
    let mut s = opened(Range::Hour);
    // Stepped to 6 h from the hour: the hour's summary is not shown as the 6 h one.
    apply(&mut s, vec![Msg::Key(Key::char(']'))]);
    insta::assert_snapshot!("stats_reading_80x24", render(&s, &Theme::default(), 80, 24));
}

#[test]
fn monochrome_layers_differ_by_symbol() {
    let s = opened(Range::Hour);
    let mono = Theme::bundled("mono").unwrap();
    let screen = render(&s, &mono, 80, 24);
    insta::assert_snapshot!("stats_hour_mono_80x24", screen);
    let buf = screen.buffer();
    for symbol in ["█", "▄", "•"] {
        let cells: Vec<_> = buf
            .content()
            .iter()
            .filter(|c| c.symbol() == symbol)
            .collect();
        assert!(!cells.is_empty(), "the layer drawn with {symbol} shows");
        assert!(
            cells.iter().all(|c| c.fg == Color::Reset),
            "mono: {symbol} has no colour, only its shape"
        );
    }
}

#[test]
fn the_header_shows_latency_sparklines_where_the_width_allows() {
    let s = stats_board();
    let wide = render(&s, &Theme::default(), 100, 30);
    let line = |b: &TestBackend, y: u16| -> String {
        (0..b.buffer().area.width)
            .map(|x| b.buffer()[(x, y)].symbol().to_string())
            .collect()
    };
    let sparks = "▁▂▃▄▅▆▇█";
    assert!(
        line(&wide, 1)
            .chars()
            .rev()
            .take(17)
            .any(|c| sparks.contains(c)),
        "{}",
        line(&wide, 1)
    );
    let narrow = render(&s, &Theme::default(), 80, 24);
    assert!(
        !line(&narrow, 1).chars().any(|c| sparks.contains(c)),
        "{}",
        line(&narrow, 1)
    );
}
