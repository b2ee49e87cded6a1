//! The lines above the task table: the status tabs (each label recorded as a click on its
//! tab) with the sort and server note, and the `/` filter line with its inline error. Must
//! not mutate state.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::{HitMap, Theme};
use crate::state::widths;
use crate::state::{Hit, State, Tab};

/// The status tabs with counts, and the sort on the right.
pub struct Tabs<'a> {
    pub state: &'a State,
    pub theme: &'a Theme,
}

impl Widget for Tabs<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        self.draw(area, buf, &mut HitMap::default());
    }
}

impl Tabs<'_> {
    /// Draw the tabs line and record each label as a click on its tab.
    pub fn draw(self, area: Rect, buf: &mut Buffer, hits: &mut HitMap) {
        let Tabs { state, theme } = self;
        let narrow = area.width < 80;
        let mut spans = vec![Span::raw(" ")];
        for (i, tab) in Tab::ALL.iter().enumerate() {
            let count = state.board.tab_counts[i];
            let label = if narrow {
                format!(" {} {count} ", &tab.title()[..tab.title().len().min(4)])
            } else {
                format!(" {} {count} ", tab.title())
            };
            let style = if *tab == state.board.tab {
                theme.tab_active
            } else {
                theme.tab_inactive
            };
            let style = if *tab == Tab::Input && count > 0 && *tab != state.board.tab {
                theme.input
            } else {
                style
            };
            let x = area
                .x
                .saturating_add(spans.iter().map(|s| s.width() as u16).sum());
            let label = Span::styled(label, style);
            let width = (label.width() as u16).min(area.right().saturating_sub(x));
            hits.add(
                Rect::new(x, area.y, width, area.height.min(1)),
                Hit::Tab(*tab),
            );
            spans.push(label);
        }
        let arrow = if state.board.descending { "↓" } else { "↑" };
        let only = match &state.board.server {
            Some(s) => format!(
                "{} · ",
                crate::sanitize::sanitize_line(s.as_str(), widths::SERVER_IN_TAB_BAR)
            ),
            None => String::new(),
        };
        let sort = format!("{only}sort {}{arrow} ", state.board.sort.title());
        let used: usize = spans.iter().map(|s| s.width()).sum();
        if used + sort.len() < area.width as usize {
            spans.push(Span::raw(
                " ".repeat(area.width as usize - used - sort.chars().count()),
            ));
            spans.push(Span::styled(sort, theme.dim));
        }
        Line::from(spans).render(area, buf);
    }
}

/// `/` filter line with an inline error for an invalid regex.
pub struct FilterLine<'a> {
    pub state: &'a State,
    pub theme: &'a Theme,
}

impl Widget for FilterLine<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let FilterLine { state, theme } = self;
        let f = &state.board.filter;
        let value = f.input.value();
        let width = (area.width as usize).saturating_sub(30).max(10);
        let scroll = f.input.visual_scroll(width);
        let shown: String = value.chars().skip(scroll).take(width).collect();
        let mut spans = vec![Span::styled(" / ", theme.key)];
        if f.editing {
            let cur = f.input.visual_cursor().saturating_sub(scroll);
            let (a, b) = split_at_col(&shown, cur);
            let mut rest = b.chars();
            let at = rest.next().map(String::from).unwrap_or_else(|| " ".into());
            spans.push(Span::raw(a));
            spans.push(Span::styled(at, theme.cursor));
            spans.push(Span::raw(rest.collect::<String>()));
        } else {
            spans.push(Span::styled(shown, theme.accent));
        }
        if let Some(err) = &f.error {
            spans.push(Span::styled(format!("  invalid regex: {err}"), theme.error));
        } else if !value.is_empty() {
            let n = state.board.view_len();
            spans.push(Span::styled(
                format!("  {n} match{}", if n == 1 { "" } else { "es" }),
                theme.dim,
            ));
        }
        Line::from(spans).render(area, buf);
    }
}

fn split_at_col(s: &str, col: usize) -> (String, String) {
    let i = s.char_indices().nth(col).map_or(s.len(), |(i, _)| i);
    (s[..i].to_string(), s[i..].to_string())
}
