//! The `?` help, generated from the keymap's descriptions so it can never drift from the
//! bindings. Must not mutate state.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::Theme;
use super::popup::{centered, frame};
use crate::state::doc::wrap_words;
use crate::state::{Context, Keymap};

pub struct HelpPopup<'a> {
    pub keymap: &'a Keymap,
    pub scroll: usize,
    pub theme: &'a Theme,
}

/// Every binding, grouped by context, each description wrapped to `width` columns under
/// its own column.
pub fn help_lines<'a>(
    keymap: &Keymap,
    theme: &Theme,
    key_width: usize,
    width: usize,
) -> Vec<Line<'a>> {
    let text_width = width.saturating_sub(key_width + 3).max(20);
    let mut lines = Vec::new();
    for ctx in Context::ALL {
        let bindings: Vec<_> = keymap.bindings(ctx).collect();
        if bindings.is_empty() {
            continue;
        }
        if !lines.is_empty() {
            lines.push(Line::raw(""));
        }
        lines.push(Line::styled(ctx.title(), theme.heading));
        for b in bindings {
            let keys: Vec<String> = b.keys.iter().map(ToString::to_string).collect();
            let keys = keys.join(" ");
            // keys too wide for their column get a line of their own
            let (first_keys, keys_alone) = if keys.chars().count() > key_width {
                (String::new(), Some(keys))
            } else {
                (keys, None)
            };
            if let Some(k) = keys_alone {
                lines.push(Line::styled(format!("  {k}"), theme.key));
            }
            for (i, part) in wrap_words(&b.description, text_width)
                .into_iter()
                .enumerate()
            {
                let keys = if i == 0 { first_keys.as_str() } else { "" };
                lines.push(Line::from(vec![
                    Span::styled(format!("  {keys:<key_width$} "), theme.key),
                    Span::raw(part),
                ]));
            }
        }
    }
    lines
}

impl Widget for HelpPopup<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let HelpPopup {
            keymap,
            scroll,
            theme,
        } = self;
        let rect = centered(
            area,
            area.width.saturating_sub(4).min(96),
            area.height.saturating_sub(2),
        );
        let inner = frame(rect, buf, "Help", theme, true);
        let key_width = if inner.width < 70 { 10 } else { 16 };
        let lines = help_lines(keymap, theme, key_width, inner.width as usize);
        let max = lines.len().saturating_sub(inner.height as usize);
        let scroll = scroll.min(max) as u16;
        Paragraph::new(lines).scroll((scroll, 0)).render(inner, buf);
    }
}
