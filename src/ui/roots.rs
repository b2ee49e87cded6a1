//! The roots view: what a server is offered as roots, what it was sent and when, and the
//! tasks waiting for roots that are not offered. Must not mutate state.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::{Paragraph, Widget};

use super::Theme;
use super::detail::doc_window;
use super::popup::frame;
use crate::state::State;
use crate::state::views::roots::{RootsView, roots_doc};

pub struct RootsScreen<'a> {
    pub state: &'a State,
    pub view: &'a RootsView,
    pub theme: &'a Theme,
}

impl Widget for RootsScreen<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let RootsScreen { state, view, theme } = self;
        let doc = roots_doc(state, &view.server);
        let inner_w = area.width.saturating_sub(2) as usize;
        let inner_h = area.height.saturating_sub(2) as usize;
        let (lines, _, _) = doc_window(&doc, inner_w, view.scroll, inner_h, theme);
        let inner = frame(area, buf, "Roots", theme, true);
        Paragraph::new(lines).render(inner, buf);
    }
}
