//! Views: pure functions of `&State` (plus the theme and an injected `now`) drawn into a
//! ratatui buffer. Must not mutate state, read the clock, or do I/O.

pub mod command;
pub mod consent;
pub mod detail;
pub mod footer;
pub mod form;
pub mod header;
pub mod help;
pub mod hits;
pub mod inbox;
pub mod popup;
pub mod roots;
pub mod sampling;
pub mod signin;
pub mod stats;
pub mod tab_bar;
pub mod table;
pub mod text;
pub mod theme;
pub mod wire;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::Widget;

use crate::state::{Modal, Now, State};
pub use hits::HitMap;
pub use theme::Theme;

/// The screen's regions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub header: Rect,
    pub tabs: Rect,
    pub filter: Rect,
    /// The task table, or the detail view over it.
    pub body: Rect,
    pub notice: Rect,
    pub footer: Rect,
}

/// Split the screen; the loop uses it too, to tell the reducer how many rows fit.
pub fn areas(area: Rect, state: &State) -> Areas {
    let header_rows = header::header_rows(state.servers.len(), area.height);
    let filter_rows = u16::from(
        state.command.is_some()
            || state.board.filter.editing
            || !state.board.filter.input.value().is_empty(),
    );
    let [header, tabs, filter, body, notice, footer] = Layout::vertical([
        Constraint::Length(header_rows),
        Constraint::Length(1),
        Constraint::Length(filter_rows),
        Constraint::Min(3),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    Areas {
        header,
        tabs,
        filter,
        body,
        notice,
        footer,
    }
}

/// Table rows that fit in `body` (minus the column header line).
pub fn table_rows(areas: &Areas) -> usize {
    areas.body.height.saturating_sub(1) as usize
}

/// The whole screen.
///
/// ```text
/// ┌ header: one line per server (era, push/poll, health, req/s, inbox) + title line ┐
/// │ tabs: All │ Active │ Input │ Done │ Failed │ Cancelled        sort + filter info │
/// │ [filter line: / regex, inline error — or the `:` command line with completions] │
/// │ body: task table (virtualised) — or the detail view of one task                 │
/// │ notice line (latest notice, or a summary)                                       │
/// └ footer: key hints generated from the keymap for the focused context             ┘
///   modals (confirm, input form, link consent, sampling, help, pickers, result) float
///   above, centred; the roots view takes the body like the detail view, the statistics
///   view the tabs and the body
/// ```
pub struct Dashboard<'a> {
    pub state: &'a State,
    pub theme: &'a Theme,
    pub now: Now,
}

impl Widget for Dashboard<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        self.draw(area, buf, &mut HitMap::default());
    }
}

impl Dashboard<'_> {
    /// Draw the screen into `buf` and record its clickable regions in `hits` (cleared
    /// first): the loop hit-tests clicks against the frame as drawn.
    pub fn draw(self, area: Rect, buf: &mut Buffer, hits: &mut HitMap) {
        let Dashboard { state, theme, now } = self;
        hits.clear();
        buf.set_style(area, theme.base);
        let a = areas(area, state);
        header::Header { state, theme, now }.render(a.header, buf);
        tab_bar::Tabs { state, theme }.draw(a.tabs, buf, hits);
        if state.command.is_some() && a.filter.height > 0 {
            command::CommandBar { state, theme }.render(a.filter, buf);
        } else if a.filter.height > 0 {
            tab_bar::FilterLine { state, theme }.render(a.filter, buf);
        }
        table::TaskTable { state, theme, now }.draw(a.body, buf, hits);
        footer::NoticeLine { state, theme, now }.render(a.notice, buf);
        footer::Footer { state, theme }.render(a.footer, buf);
        for (i, modal) in state.modals.iter().enumerate() {
            let top = i + 1 == state.modals.len();
            // A view over the board takes the clicks: the board beneath is not clickable.
            hits.cover();
            match modal {
                Modal::Detail(d) => detail::DetailScreen {
                    state,
                    view: d,
                    theme,
                    now,
                }
                .render(a.body, buf),
                Modal::Doc(d) => detail::DocScreen { view: d, theme }.render(a.body, buf),
                Modal::Confirm(c) => popup::ConfirmPopup { confirm: c, theme }.render(area, buf),
                Modal::Input(f) => form::InputFormPopup {
                    state,
                    form: f,
                    theme,
                    focused: top,
                }
                .render(area, buf),
                Modal::ToolForm(f) => form::ToolFormPopup {
                    form: f,
                    theme,
                    focused: top,
                }
                .render(area, buf),
                Modal::Help { scroll } => help::HelpPopup {
                    keymap: &state.keymap,
                    scroll: *scroll,
                    theme,
                }
                .render(area, buf),
                Modal::ServerPicker(p) => popup::ServerPickerPopup {
                    state,
                    picker: p,
                    theme,
                }
                .render(area, buf),
                Modal::ToolPicker(p) => {
                    popup::ToolPickerPopup { picker: p, theme }.render(area, buf)
                }
                Modal::Consent(v) => consent::ConsentPopup {
                    state,
                    view: v,
                    theme,
                    focused: top,
                }
                .render(area, buf),
                Modal::Sampling(v) => sampling::SamplingPopup {
                    state,
                    view: v,
                    theme,
                    focused: top,
                }
                .render(area, buf),
                Modal::Roots(v) => roots::RootsScreen {
                    state,
                    view: v,
                    theme,
                }
                .render(a.body, buf),
                Modal::Wire(v) => wire::WireScreen {
                    state,
                    view: v,
                    theme,
                    focused: top,
                }
                .render(a.body, buf),
                // The tabs line too: the pictures want every row.
                Modal::Stats(v) => stats::StatsScreen {
                    state,
                    view: v,
                    theme,
                }
                .render(a.tabs.union(a.body), buf),
                Modal::Inbox(v) => inbox::InboxPopup {
                    state,
                    view: v,
                    theme,
                    now,
                    focused: top,
                }
                .draw(area, buf, hits),
            }
        }
    }
}

/// Convenience for tests and the loop: draw the dashboard into `buf`.
pub fn render(state: &State, theme: &Theme, now: Now, area: Rect, buf: &mut Buffer) {
    Dashboard { state, theme, now }.render(area, buf);
}
