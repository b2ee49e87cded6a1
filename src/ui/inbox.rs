//! The inbox popup: every pending input request of every server, oldest first, with its
//! server, task, tool, age and message. Must not mutate state.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::popup::{centered, frame};
use super::text::fit;
use super::{HitMap, Theme};
use crate::state::time::short_duration;
use crate::state::views::inbox::{InboxView, entries, more_not_shown};
use crate::state::{Hit, Now, State};

/// Where the inbox popup goes on a screen of `area`.
fn inbox_rect(area: Rect) -> Rect {
    centered(
        area,
        area.width.saturating_sub(4).min(100),
        area.height.saturating_sub(2).min(20),
    )
}

pub struct InboxPopup<'a> {
    pub state: &'a State,
    pub view: &'a InboxView,
    pub theme: &'a Theme,
    pub now: Now,
    pub focused: bool,
}

impl Widget for InboxPopup<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        self.draw(area, buf, &mut HitMap::default());
    }
}

impl InboxPopup<'_> {
    /// Draw the popup and record each drawn entry as a click on it.
    pub fn draw(self, area: Rect, buf: &mut Buffer, hits: &mut HitMap) {
        let InboxPopup {
            state,
            view,
            theme,
            now,
            focused,
        } = self;
        let list = entries(state);
        let rect = inbox_rect(area);
        let mut title = format!("Inbox — {} waiting for input", list.len());
        let more = more_not_shown(state);
        if more > 0 {
            title.push_str(&format!(", {more} more not shown"));
        }
        let inner = frame(rect, buf, &title, theme, focused);
        if inner.height == 0 {
            return;
        }
        let width = inner.width as usize;
        let narrow = width < 70;
        let header = if narrow {
            " age    task      message"
        } else {
            " age    server       task      tool          message"
        };
        Line::styled(fit(header, width), theme.table_header)
            .render(Rect { height: 1, ..inner }, buf);
        if list.is_empty() {
            Line::styled(" Nothing waits for input.", theme.dim)
                .render(Rect::new(inner.x, inner.y + 1, inner.width, 1), buf);
            return;
        }
        let rows = inner.height.saturating_sub(1) as usize;
        let selected = view.selected.min(list.len() - 1);
        let offset = selected.saturating_sub(rows.saturating_sub(1));
        for (i, e) in list.iter().enumerate().skip(offset).take(rows) {
            let y = inner.y + 1 + (i - offset) as u16;
            let age = e
                .since
                .map(|t| short_duration(now - t))
                .unwrap_or_else(|| "?".into());
            let mark = if i == selected { "›" } else { " " };
            let mut spans = vec![Span::styled(format!("{mark}{age:<6} "), theme.dim)];
            if !narrow {
                spans.push(Span::styled(
                    format!("{:<12} ", fit(&e.server, 12)),
                    theme.accent,
                ));
            }
            spans.push(Span::styled(format!("{:<9} ", e.short_id()), theme.label));
            if !narrow {
                let tool = e.tool.as_deref().unwrap_or("?");
                spans.push(Span::styled(format!("{:<13} ", fit(tool, 13)), theme.label));
            }
            let message = if e.message.is_empty() {
                e.method.clone()
            } else {
                e.message.clone()
            };
            let used: usize = spans.iter().map(|s| s.width()).sum();
            spans.push(Span::styled(
                fit(&message, width.saturating_sub(used)),
                theme.input,
            ));
            let mut line = Line::from(spans);
            if i == selected {
                line = line.style(theme.selected);
            }
            let r = Rect::new(inner.x, y, inner.width, 1);
            buf.set_style(
                r,
                if i == selected {
                    theme.selected
                } else {
                    theme.base
                },
            );
            line.render(r, buf);
            hits.add(r, Hit::InboxRow(i));
        }
    }
}
