//! The notice line (latest fresh notice, else a short summary) and the footer's key hints,
//! generated from the keymap for the focused context. Must not mutate state.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::Theme;
use super::text::fit;
use crate::state::NoticeLevel;
use crate::state::servers::Health;
use crate::state::widths;
use crate::state::{Now, State};

pub struct NoticeLine<'a> {
    pub state: &'a State,
    pub theme: &'a Theme,
    pub now: Now,
}

impl Widget for NoticeLine<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let NoticeLine { state, theme, now } = self;
        let width = area.width as usize;
        if let Some(n) = state.live_notices(now).last() {
            let tag = match n.level {
                NoticeLevel::Info => "•",
                NoticeLevel::Warn => "!",
                NoticeLevel::Error => "✖",
            };
            let text = fit(&format!(" {tag} {}", n.text), width);
            Line::styled(text, theme.notice(n.level)).render(area, buf);
            return;
        }
        if let Some(r) = state.selected_row() {
            // The row's text is display-safe already (made so when it arrived).
            let by = r
                .started_by
                .as_deref()
                .map(|b| format!(", started by {b}"))
                .unwrap_or_default();
            let elsewhere = state
                .servers
                .iter()
                .any(|s| s.id == r.key.server && matches!(s.health, Health::Elsewhere(_)));
            let via = if elsewhere && !r.is_over() {
                "; followed by another process: answers and cancels go to it"
            } else {
                ""
            };
            let text = format!(
                " {} {} on {}{by}{via}",
                fit(&r.text.tool, widths::TOOL_IN_HEADER),
                r.short_id(),
                fit(&state.server_name(&r.key.server), 30)
            );
            Line::styled(fit(&text, width), theme.dim).render(area, buf);
        }
    }
}

pub struct Footer<'a> {
    pub state: &'a State,
    pub theme: &'a Theme,
}

impl Widget for Footer<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let Footer { state, theme } = self;
        let ctx = state.context();
        let mut spans = Vec::new();
        let mut used = 0usize;
        let max = area.width as usize;
        for b in state.keymap.bindings(ctx) {
            let (Some(k), Some(desc)) = (b.keys.first(), b.hint.as_deref()) else {
                continue;
            };
            let key = k.to_string();
            let w = key.chars().count() + desc.chars().count() + 3;
            if used + w > max {
                break;
            }
            used += w;
            spans.push(Span::styled(format!(" {key}"), theme.key));
            spans.push(Span::styled(format!(" {desc} "), theme.dim));
        }
        Line::from(spans).render(area, buf);
    }
}
