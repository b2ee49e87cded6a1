//! Drawing the whole dashboard into a `TestBackend` at a fixed size, with an injected
//! clock and the default theme, for snapshot tests.
#![allow(dead_code)]

use chrono::{DateTime, Utc};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use taskrail::state::State;
use taskrail::ui::{Dashboard, Theme};

/// The screen of `state` at `w`x`h` as of `now`.
pub fn render(state: &State, w: u16, h: u16, now: DateTime<Utc>) -> TestBackend {
    let mut terminal = Terminal::new(TestBackend::new(w, h)).expect("a test terminal");
    let theme = Theme::default();
    terminal
        .draw(|f| {
            f.render_widget(
                Dashboard {
                    state,
                    theme: &theme,
                    now,
                },
                f.area(),
            )
        })
        .expect("drawing into a test terminal");
    terminal.backend().clone()
}
