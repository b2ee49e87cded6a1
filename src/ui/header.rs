//! The header: the title line and one line per server (its short name, era, what it can do
//! for push, request rate, inbox count, conformance-hint badge, health in words, and a
//! latency sparkline where the width allows), as many servers as the screen leaves room
//! for. Must not mutate state.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Sparkline, Widget};

use super::Theme;
use super::text::fit;
use crate::sanitize::display_width;
use crate::state::{Health, Now, State};

/// Columns of a server's latency sparkline (on screens 100 columns wide or more).
const SPARK_W: u16 = 16;

/// `s` padded with spaces to `width` columns.
fn pad(s: &str, width: usize) -> String {
    let w = display_width(s);
    format!("{s}{}", " ".repeat(width.saturating_sub(w)))
}

/// Header lines for `servers` servers on a screen `height` rows tall: the title line and
/// one per server, as many as leave the table room (at least two servers' worth).
pub fn header_rows(servers: usize, height: u16) -> u16 {
    let room = (height / 3).max(3);
    (servers.max(1) as u16 + 1).min(room)
}

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
        let total = state.tasks.len().saturating_sub(state.removed_rows);
        let inbox = state.board.waiting_total();
        let mut title = vec![
            Span::styled(" taskrail ", theme.title),
            Span::styled(
                format!("{total} task{}", if total == 1 { "" } else { "s" }),
                theme.dim,
            ),
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
        if let Some(waiting) = state.ledger_offline {
            title.push(Span::styled(
                format!(
                    "  ledger offline — {waiting} write{} waiting",
                    if waiting == 1 { "" } else { "s" }
                ),
                theme.warn,
            ));
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
        let names = state.server_names();
        let longest = names.iter().map(|n| display_width(n)).max().unwrap_or(0);
        let name_w = longest.clamp(8, if narrow { 14 } else { 26 });
        let mode_w = state
            .servers
            .iter()
            .map(|s| s.push_mode().label().len())
            .max()
            .unwrap_or(1)
            .min(if narrow { 7 } else { 14 });
        for (i, (s, name)) in state.servers.iter().zip(&names).take(rows).enumerate() {
            let y = area.y + 1 + i as u16;
            if i + 1 == rows && state.servers.len() > rows {
                let more = state.servers.len() - rows + 1;
                Line::styled(
                    format!(
                        "  … and {more} more server{} (v lists them)",
                        if more == 1 { "" } else { "s" }
                    ),
                    theme.dim,
                )
                .render(Rect::new(area.x, y, area.width, 1), buf);
                break;
            }
            // a sign-in that matters replaces the health
            let (dot, health, hstyle) = match super::signin::badge(state, s, theme) {
                Some(badge) => badge,
                None => {
                    let (dot, style) = match &s.health {
                        Health::Connecting => ("○", theme.dim),
                        Health::Connected => ("●", theme.healthy),
                        Health::Degraded { .. } => ("●", theme.degraded),
                        Health::Reconnecting { .. } => ("◌", theme.degraded),
                        Health::Disabled(_) => ("✖", theme.error),
                        Health::Elsewhere(_) => ("◇", theme.dim),
                        Health::Idle => ("·", theme.dim),
                    };
                    (dot, s.health_text(), style)
                }
            };
            let era = s.era.map(|e| e.as_str()).unwrap_or("?");
            let mode = s.push_mode().label();
            let mut spans = vec![
                Span::styled(format!(" {dot} "), hstyle),
                Span::styled(pad(&fit(name, name_w), name_w), theme.accent),
                Span::styled(
                    format!(" {era:<6} {:<mode_w$} ", fit(mode, mode_w)),
                    theme.label,
                ),
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
            // A latency sparkline at the right end where the line has room for it.
            let spark_w = if area.width >= 100 && !s.latency.is_empty() {
                SPARK_W
            } else {
                0
            };
            let used: usize = spans.iter().map(|s| s.width()).sum();
            let room = (area.width as usize).saturating_sub(used + 2 + spark_w as usize);
            spans.push(Span::styled(format!("  {}", fit(&health, room)), hstyle));
            Line::from(spans).render(Rect::new(area.x, y, area.width, 1), buf);
            if spark_w > 0 {
                let at = Rect::new(area.x + area.width - spark_w - 1, y, spark_w, 1);
                Sparkline::default()
                    .data(s.latency.latest(spark_w as usize))
                    .style(theme.dim)
                    .render(at, buf);
            }
        }
    }
}
