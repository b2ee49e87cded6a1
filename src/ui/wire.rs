//! The wire view: the raw JSON-RPC messages of one server (or all), newest first, one line
//! each (time, direction, transport, server, method, the message cut to the width), with
//! its filter and whether it is live or paused. Takes the body like the detail view. Must
//! not mutate state.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::Theme;
use super::popup::frame;
use super::text::fit;
use crate::state::State;
use crate::state::views::wire::{Direction, WireView, arrived_since_pause, shown};
use crate::state::widths;

pub struct WireScreen<'a> {
    pub state: &'a State,
    pub view: &'a WireView,
    pub theme: &'a Theme,
    pub focused: bool,
}

impl Widget for WireScreen<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let WireScreen {
            state,
            view,
            theme,
            focused,
        } = self;
        let list = shown(&state.wire, view);
        let whose = view.server.as_deref().unwrap_or("every server");
        let title = format!("Wire — {whose} — {} messages", list.len());
        let inner = frame(area, buf, &fit(&title, area.width as usize), theme, focused);
        if inner.height < 2 {
            return;
        }
        let width = inner.width as usize;
        // status line: live or paused, and the filter
        let mut status = match view.paused_at {
            Some(_) => vec![Span::styled(
                format!(
                    " ❚❚ paused, {} new ",
                    arrived_since_pause(&state.wire, view)
                ),
                theme.warn,
            )],
            None => vec![Span::styled(" ● live ", theme.healthy)],
        };
        let filter = view.filter.value();
        if view.editing || !filter.is_empty() {
            status.push(Span::styled(" / ", theme.key));
            status.push(Span::styled(
                crate::sanitize::sanitize_line(filter, widths::QUERY),
                theme.input,
            ));
            if view.editing {
                status.push(Span::styled("▏", theme.cursor));
            }
        }
        Line::from(status).render(Rect { height: 1, ..inner }, buf);
        let all = view.server.is_none();
        let narrow = width < 90;
        let mut header = String::from(" time          dir");
        if !narrow {
            header.push_str(" via       ");
        }
        if all {
            header.push_str(" server      ");
        }
        header.push_str(" message");
        Line::styled(fit(&header, width), theme.table_header)
            .render(Rect::new(inner.x, inner.y + 1, inner.width, 1), buf);
        let rows = inner.height.saturating_sub(2) as usize;
        if list.is_empty() {
            let text = if state.wire.last_seq() == 0 {
                " No messages yet: they are kept while this view is open (or with --wire)."
            } else {
                " No message matches."
            };
            Line::styled(fit(text, width), theme.dim)
                .render(Rect::new(inner.x, inner.y + 2, inner.width, 1), buf);
            return;
        }
        let selected = view.selected.min(list.len() - 1);
        let offset = selected.saturating_sub(rows.saturating_sub(1));
        for (i, e) in list.iter().enumerate().skip(offset).take(rows) {
            let y = inner.y + 2 + (i - offset) as u16;
            let mark = if i == selected { "›" } else { " " };
            let (arrow, arrow_style) = match e.direction {
                Direction::Send => ("→", theme.accent),
                Direction::Recv => ("←", theme.healthy),
            };
            let mut spans = vec![
                Span::styled(
                    format!("{mark}{} ", e.time.format("%H:%M:%S%.3f")),
                    theme.dim,
                ),
                Span::styled(format!(" {arrow} "), arrow_style),
            ];
            if !narrow {
                spans.push(Span::styled(
                    format!(" {:<10}", e.transport.as_str()),
                    theme.dim,
                ));
            }
            if all {
                spans.push(Span::styled(
                    format!(" {:<11} ", fit(&short_server(&e.server), 11)),
                    theme.accent,
                ));
            }
            spans.push(Span::styled(
                format!(" {} ", fit(&e.method, 28)),
                theme.label,
            ));
            let used: usize = spans.iter().map(|s| s.width()).sum();
            spans.push(Span::styled(
                fit(&e.summary, width.saturating_sub(used)),
                theme.code,
            ));
            let r = Rect::new(inner.x, y, inner.width, 1);
            let style = if i == selected {
                theme.selected
            } else {
                theme.base
            };
            buf.set_style(r, style);
            Line::from(spans).style(style).render(r, buf);
        }
    }
}

/// A server's name as the header shows it (`host:port/path` for an address).
fn short_server(server: &str) -> String {
    crate::state::servers::short_name(&crate::state::ServerId::named(server))
}
