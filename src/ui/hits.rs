//! The clickable regions of the frame on screen: each widget records the rect it drew a
//! clickable thing in (a tab label, a table row, an inbox entry) with what a click there
//! does, and the loop looks a click up here. The layout is computed once, while drawing,
//! so what is clicked is what was drawn.

use ratatui::layout::{Position, Rect};

use crate::state::Hit;

/// The regions of one frame, in drawing order (a later one lies on top).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HitMap {
    regions: Vec<(Rect, Hit)>,
}

impl HitMap {
    /// Forget the last frame's regions (a new frame is being drawn).
    pub fn clear(&mut self) {
        self.regions.clear();
    }

    /// A click inside `rect` means `hit`.
    pub fn add(&mut self, rect: Rect, hit: Hit) {
        if !rect.is_empty() {
            self.regions.push((rect, hit));
        }
    }

    /// A popup or a view over the board takes every click: what was drawn beneath it stops
    /// being clickable.
    pub fn cover(&mut self) {
        self.regions.clear();
    }

    /// What a click at column `x`, row `y` lands on.
    pub fn at(&self, x: u16, y: u16) -> Hit {
        self.regions
            .iter()
            .rev()
            .find(|(r, _)| r.contains(Position::new(x, y)))
            .map_or(Hit::Elsewhere, |(_, h)| h.clone())
    }

    /// Every region, in drawing order.
    pub fn regions(&self) -> &[(Rect, Hit)] {
        &self.regions
    }
}
