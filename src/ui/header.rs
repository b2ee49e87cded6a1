//! The header: the title line and one line per server (era, push/poll, health, request
//! rate, inbox count, conformance-hint badge). Must not mutate state.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::Theme;
use super::text::fit;
use crate::state::{Health, Now, State};

pub struct Header<'a> {
    pub state: &'a State,
    pub theme: &'a Theme,
    pub now: Now,
}

impl Widget for Header<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let Header { state, theme, now } = self;
        if area.height == 0 {
            return;
        }
        let total = state.tasks.len();
        let inbox: usize = state.tasks.values().filter(|r| r.needs_input()).count();
        let mut title = vec![
            Span::styled(" taskrail ", theme.title),
            Span::styled(format!("{total} tasks"), theme.dim),
        ];
        if inbox > 0 {
            title.push(Span::styled(
                format!("  ✎ {inbox} waiting for input"),
                theme.input,
            ));
        }
        if state.read_only {
            title.push(Span::styled("  [read-only]", theme.warn));
        }
        let clock = now.format("%H:%M:%S UTC").to_string();
        let used: usize = title.iter().map(|s| s.width()).sum();
        // the clock only where it fits with a space before it
        if used + 1 + clock.len() < area.width as usize {
            let pad = area.width as usize - used - clock.len() - 1;
            title.push(Span::raw(" ".repeat(pad)));
            title.push(Span::styled(clock, theme.dim));
        }
        Line::from(title).render(Rect { height: 1, ..area }, buf);

        let rows = area.height.saturating_sub(1) as usize;
        let narrow = area.width < 80;
        for (i, s) in state.servers.iter().take(rows).enumerate() {
            let y = area.y + 1 + i as u16;
            if i + 1 == rows && state.servers.len() > rows {
                let more = state.servers.len() - rows + 1;
                Line::styled(format!("  … and {more} more servers"), theme.dim)
                    .render(Rect::new(area.x, y, area.width, 1), buf);
                break;
            }
            let (dot, health, hstyle) = match super::signin::badge(state, s, theme) {
                Some(badge) => badge,
                None => match &s.health {
                    Health::Connecting => ("○", "connecting".to_string(), theme.dim),
                    Health::Connected => ("●", "connected".to_string(), theme.healthy),
                    Health::Degraded(r) => ("●", format!("degraded: {r}"), theme.degraded),
                    Health::Reconnecting { attempt } => {
                        ("◌", format!("reconnecting (#{attempt})"), theme.degraded)
                    }
                },
            };
            let era = s.era.map(|e| e.as_str()).unwrap_or("?");
            let mode = if s.era.is_none() {
                "?"
            } else if s.push {
                "push"
            } else {
                "poll"
            };
            let name_w = if narrow { 14 } else { 22 };
            let mut spans = vec![
                Span::styled(format!(" {dot} "), hstyle),
                Span::styled(
                    format!(
                        "{:<name_w$}",
                        crate::sanitize::sanitize_line(s.id.as_str(), name_w)
                    ),
                    theme.accent,
                ),
                Span::styled(format!(" {era:<6} {mode:<4} "), theme.label),
            ];
            let inbox = state.inbox(&s.id);
            let rate = format!("{:>5.1} req/s", s.requests_per_sec);
            spans.push(Span::styled(rate, theme.label));
            if inbox > 0 {
                spans.push(Span::styled(format!("  ✎ {inbox}"), theme.input));
            } else if !narrow {
                spans.push(Span::styled("  inbox 0", theme.dim));
            }
            if !s.hints.is_empty() {
                let n = s.hints.len();
                let badge = if narrow {
                    format!("  ⚠{n}")
                } else {
                    format!("  ⚠ {n} hint{}", if n == 1 { "" } else { "s" })
                };
                spans.push(Span::styled(badge, theme.warn));
            }
            if !narrow && s.errors_total > 0 {
                spans.push(Span::styled(
                    format!("  {} err", s.errors_total),
                    theme.warn,
                ));
            }
            let used: usize = spans.iter().map(|s| s.width()).sum();
            let room = (area.width as usize).saturating_sub(used + 2);
            spans.push(Span::styled(format!("  {}", fit(&health, room)), hstyle));
            Line::from(spans).render(Rect::new(area.x, y, area.width, 1), buf);
        }
    }
}
