//! Floating popups: the geometry helper, the confirmation dialog, and the server and tool
//! pickers of the new-task flow (with their `/` query line). Must not mutate state.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph, Widget, Wrap};

use super::Theme;
use super::text::fit;
use crate::sanitize::sanitize_line;
use crate::state::modal::{Confirm, Picker, PickerItem, ToolPicker};
use crate::state::servers::short_name;
use crate::state::widths;
use crate::state::{ServerId, State, ToolInfo};

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

/// The frame of a view answering input: centred, at most `max_w` wide, titled
/// "`kind` for deploy 1a2b3c4d" from the view's "Input for deploy 1a2b3c4d".
pub fn answer_frame(
    area: Rect,
    buf: &mut Buffer,
    max_w: u16,
    kind: &str,
    title: &str,
    theme: &Theme,
    focused: bool,
) -> Rect {
    let rect = centered(
        area,
        area.width.saturating_sub(4).min(max_w),
        area.height.saturating_sub(2),
    );
    let title = match title.strip_prefix("Input ") {
        Some(rest) if kind != "Input" => format!("{kind} {rest}"),
        _ => title.to_string(),
    };
    frame(rect, buf, &title, theme, focused)
}

/// "Asked by server demo" and what follows, for the views answering input.
pub fn asked_by(server: &ServerId, then: &str, theme: &Theme) -> Line<'static> {
    Line::from(vec![
        Span::styled("Asked by server ", theme.dim),
        Span::styled(
            sanitize_line(server.as_str(), widths::SERVER_NAME),
            theme.accent,
        ),
        Span::styled(then.to_string(), theme.dim),
    ])
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

/// A picker's list under its query line (shown while typing or when a query narrows it):
/// the shown entries, the cursor on `picker.selected`.
fn render_picker<T: PickerItem>(
    picker: &Picker<T>,
    entry: impl Fn(&T) -> (String, Option<String>),
    inner: Rect,
    buf: &mut Buffer,
    theme: &Theme,
) {
    let mut list = inner;
    let query = picker.query.value();
    if picker.editing || !query.is_empty() {
        let count = format!("  {} of {}", picker.shown.len(), picker.items.len());
        let room = (inner.width as usize).saturating_sub(count.chars().count() + 3);
        let cursor = if picker.editing { "▏" } else { "" };
        let line = Line::from(vec![
            Span::styled("/", theme.key),
            Span::raw(format!(
                "{}{cursor}",
                fit(&sanitize_line(query, widths::QUERY), room)
            )),
            Span::styled(count, theme.dim),
        ]);
        line.render(Rect { height: 1, ..inner }, buf);
        list = Rect {
            y: inner.y + 1,
            height: inner.height.saturating_sub(1),
            ..inner
        };
    }
    if picker.shown.is_empty() {
        Line::styled("nothing matches", theme.dim).render(list, buf);
        return;
    }
    let items = picker.shown.iter().map(|&i| entry(&picker.items[i]));
    let lines = list_lines(
        items,
        picker.selected,
        list.height as usize,
        list.width as usize,
        theme,
    );
    Paragraph::new(lines).render(list, buf);
}

pub struct ServerPickerPopup<'a> {
    pub state: &'a State,
    pub picker: &'a Picker<ServerId>,
    pub theme: &'a Theme,
}

impl Widget for ServerPickerPopup<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let ServerPickerPopup {
            state,
            picker,
            theme,
        } = self;
        let h = (picker.items.len() as u16 + 3).min(area.height);
        let rect = centered(area, area.width.saturating_sub(8).min(90), h.max(4));
        let inner = frame(rect, buf, "New task: pick a server", theme, true);
        // each server with its health, so a failing one shows before it is picked
        let entry = |s: &ServerId| {
            let health = state
                .servers
                .iter()
                .find(|x| &x.id == s)
                .map(|x| x.health_text());
            (fit(&short_name(s), 40), health)
        };
        render_picker(picker, entry, inner, buf, theme);
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
            fit(&short_name(&picker.server), 30)
        );
        let inner = frame(rect, buf, &title, theme, true);
        let Some(tools) = &picker.tools else {
            let lines = match &picker.error {
                Some(e) => vec![
                    Line::styled(e.clone(), theme.error),
                    Line::raw(""),
                    Line::styled("the list comes if the server recovers", theme.dim),
                ],
                None => vec![Line::styled("listing tools…", theme.dim)],
            };
            Paragraph::new(lines)
                .wrap(Wrap { trim: true })
                .render(inner, buf);
            return;
        };
        if tools.items.is_empty() {
            Line::styled("this server lists no tools", theme.dim).render(inner, buf);
            return;
        }
        let entry = |t: &ToolInfo| {
            let mut name = sanitize_line(&t.name, widths::TOOL_IN_HEADER);
            if t.task_support.as_deref() == Some("required") {
                name.push_str(" ⧗");
            }
            let desc = t
                .title
                .as_deref()
                .or(t.description.as_deref())
                .map(|d| sanitize_line(d, widths::DESCRIPTION));
            (name, desc)
        };
        render_picker(tools, entry, inner, buf, theme);
    }
}
