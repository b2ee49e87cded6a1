//! Floating popups: the geometry helper, the confirmation dialog, and the server and tool
//! pickers of the new-task flow. Must not mutate state.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Widget, Wrap};

use super::Theme;
use super::text::fit;
use crate::sanitize::sanitize_line;
use crate::state::ServerId;
use crate::state::modal::{Confirm, Picker, ToolPicker};

/// A rectangle of `w`x`h` (clamped to `area`) centred in `area`.
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    )
}

/// Clear `area` and draw a titled border; returns the inner area.
pub fn frame(area: Rect, buf: &mut Buffer, title: &str, theme: &Theme, focused: bool) -> Rect {
    Clear.render(area, buf);
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(if focused {
            theme.border_focus
        } else {
            theme.border
        })
        .title(Span::styled(format!(" {title} "), theme.title));
    let inner = block.inner(area);
    block.render(area, buf);
    inner
}

pub struct ConfirmPopup<'a> {
    pub confirm: &'a Confirm,
    pub theme: &'a Theme,
}

impl Widget for ConfirmPopup<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let ConfirmPopup { confirm, theme } = self;
        let rect = centered(area, 56, 7);
        let inner = frame(rect, buf, &confirm.title, theme, true);
        let text = vec![
            Line::raw(confirm.body.clone()),
            Line::raw(""),
            Line::from(vec![
                Span::styled(" y ", theme.key),
                Span::raw("yes   "),
                Span::styled(" n ", theme.key),
                Span::raw("no"),
            ]),
        ];
        Paragraph::new(text)
            .wrap(Wrap { trim: true })
            .render(inner, buf);
    }
}

fn list_lines<'a>(
    items: impl Iterator<Item = (String, Option<String>)>,
    selected: usize,
    height: usize,
    width: usize,
    theme: &Theme,
) -> Vec<Line<'a>> {
    let offset = selected.saturating_sub(height.saturating_sub(1));
    items
        .enumerate()
        .skip(offset)
        .take(height)
        .map(|(i, (name, desc))| {
            let mark = if i == selected { "› " } else { "  " };
            let style = if i == selected {
                theme.selected
            } else {
                theme.base
            };
            let mut spans = vec![Span::styled(format!("{mark}{name}"), style)];
            if let Some(d) = desc {
                let room = width.saturating_sub(name.chars().count() + 4);
                spans.push(Span::styled(format!("  {}", fit(&d, room)), theme.dim));
            }
            Line::from(spans)
        })
        .collect()
}

pub struct ServerPickerPopup<'a> {
    pub picker: &'a Picker<ServerId>,
    pub theme: &'a Theme,
}

impl Widget for ServerPickerPopup<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let ServerPickerPopup { picker, theme } = self;
        let h = (picker.items.len() as u16 + 2).min(area.height);
        let rect = centered(area, 50, h.max(4));
        let inner = frame(rect, buf, "New task: pick a server", theme, true);
        let items = picker
            .items
            .iter()
            .map(|s| (sanitize_line(s.as_str(), 44), None));
        let lines = list_lines(
            items,
            picker.selected,
            inner.height as usize,
            inner.width as usize,
            theme,
        );
        Paragraph::new(lines).render(inner, buf);
    }
}

pub struct ToolPickerPopup<'a> {
    pub picker: &'a ToolPicker,
    pub theme: &'a Theme,
}

impl Widget for ToolPickerPopup<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let ToolPickerPopup { picker, theme } = self;
        let rect = centered(
            area,
            area.width.saturating_sub(8).min(90),
            area.height.saturating_sub(4).min(20),
        );
        let title = format!(
            "New task on {}: pick a tool",
            sanitize_line(picker.server.as_str(), 30)
        );
        let inner = frame(rect, buf, &title, theme, true);
        let Some(tools) = &picker.tools else {
            Line::styled("listing tools…", theme.dim).render(inner, buf);
            return;
        };
        if tools.items.is_empty() {
            Line::styled("this server lists no tools", theme.dim).render(inner, buf);
            return;
        }
        let items = tools.items.iter().map(|t| {
            let mut name = sanitize_line(&t.name, 30);
            if t.task_support.as_deref() == Some("required") {
                name.push_str(" ⧗");
            }
            let desc = t
                .title
                .as_deref()
                .or(t.description.as_deref())
                .map(|d| sanitize_line(d, 200));
            (name, desc)
        });
        let lines = list_lines(
            items,
            tools.selected,
            inner.height as usize,
            inner.width as usize,
            theme,
        );
        Paragraph::new(lines).render(inner, buf);
    }
}
