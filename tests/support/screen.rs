//! Drawing the whole dashboard into a `TestBackend` at a fixed size, with an injected
//! clock and the default theme (or a given one), for snapshot tests; the view tests' pinned
//! clock and their way of applying messages.
#![allow(dead_code)]

use chrono::{DateTime, TimeZone, Utc};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use taskrail::state::{Msg, State, update};
use taskrail::ui::{Dashboard, Theme};

/// The pinned clock of the view tests: 2026-07-28 10:00:00 UTC.
pub fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 7, 28, 10, 0, 0)
        .single()
        .expect("a valid date")
}

/// Applies `msgs` to `state` at the pinned clock, then settles the view.
pub fn apply(state: &mut State, msgs: Vec<Msg>) {
    for m in msgs {
        update(state, m, now());
    }
    state.ensure_view();
}

/// The screen of `state` at `w`x`h` as of `now`.
pub fn render(state: &State, w: u16, h: u16, now: DateTime<Utc>) -> TestBackend {
    render_themed(state, &Theme::default(), w, h, now)
}

/// The screen of `state` at `w`x`h` as of `now`, drawn with `theme`.
pub fn render_themed(
    state: &State,
    theme: &Theme,
    w: u16,
    h: u16,
    now: DateTime<Utc>,
) -> TestBackend {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("a test terminal");
    terminal
        .draw(|f| f.render_widget(Dashboard { state, theme, now }, f.area()))
        .expect("drawing into a test terminal");
    terminal.backend().clone()
}
