//! Form popups: the input form answering form-mode requests (of a task, or outside any
//! task; unsupported requests as JSON) and the new-task argument form. The focused field is
//! kept in view. Must not mutate state.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget};

use super::Theme;
use super::detail::doc_window;
use super::popup::{answer_frame, asked_by, centered, frame};
use super::text::{fit, wrap};
use crate::sanitize::sanitize_line;
use crate::state::InputTarget;
use crate::state::State;
use crate::state::form::{Field, FieldKind, Form};
use crate::state::modal::{InputForm, SectionKind, ToolForm};
use crate::state::widths;

fn text_box(value: &str, cursor: Option<usize>, width: usize, theme: &Theme) -> Vec<Span<'static>> {
    let chars: Vec<char> = value.chars().collect();
    let width = width.max(4);
    let start = cursor.map_or(0, |c| c.saturating_sub(width - 1));
    let shown: String = chars.iter().skip(start).take(width).collect();
    let mut spans = vec![Span::styled("[", theme.dim)];
    match cursor {
        Some(c) => {
            let c = c - start;
            let before: String = shown.chars().take(c).collect();
            let at: String = shown.chars().nth(c).map_or(" ".into(), String::from);
            let after: String = shown.chars().skip(c + 1).collect();
            let pad = width.saturating_sub(shown.chars().count().max(c + 1));
            spans.push(Span::raw(before));
            spans.push(Span::styled(at, theme.cursor));
            spans.push(Span::raw(after + &" ".repeat(pad)));
        }
        None => {
            let pad = width.saturating_sub(shown.chars().count());
            spans.push(Span::raw(shown + &" ".repeat(pad)));
        }
    }
    spans.push(Span::styled("]", theme.dim));
    spans
}

/// The lines of one field; returns them with the field's label line first.
fn field_lines(field: &Field, focused: bool, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mark = if focused { "› " } else { "  " };
    let mut label = vec![
        Span::styled(mark, theme.field_focus),
        Span::styled(
            field.label.clone(),
            if focused {
                theme.field_focus
            } else {
                theme.label
            },
        ),
    ];
    if field.required {
        label.push(Span::styled(" *", theme.required));
    }
    let hint = match &field.kind {
        FieldKind::Text {
            format,
            min_len,
            max_len,
        } => {
            let mut h: Vec<String> = format
                .iter()
                .map(|f| sanitize_line(f, widths::FORMAT))
                .collect();
            match (min_len, max_len) {
                (Some(a), Some(b)) => h.push(format!("{a}–{b} chars")),
                (Some(a), None) => h.push(format!("≥{a} chars")),
                (None, Some(b)) => h.push(format!("≤{b} chars")),
                _ => {}
            }
            h.join(", ")
        }
        FieldKind::Number { integer, min, max } => {
            let mut h = vec![if *integer { "integer" } else { "number" }.to_string()];
            match (min, max) {
                (Some(a), Some(b)) => h.push(format!("{a}…{b}")),
                (Some(a), None) => h.push(format!("≥ {a}")),
                (None, Some(b)) => h.push(format!("≤ {b}")),
                _ => {}
            }
            h.join(", ")
        }
        FieldKind::Multi {
            min_items,
            max_items,
            ..
        } => match (min_items, max_items) {
            (Some(a), Some(b)) => format!("pick {a}–{b}"),
            (Some(a), None) => format!("pick ≥ {a}"),
            (None, Some(b)) => format!("pick ≤ {b}"),
            _ => "pick any".to_string(),
        },
        FieldKind::Json => "JSON".to_string(),
        _ => String::new(),
    };
    if !hint.is_empty() {
        label.push(Span::styled(format!("  ({hint})"), theme.dim));
    }
    if let Some(d) = &field.description {
        let used: usize = label.iter().map(|s| s.width()).sum();
        label.push(Span::styled(
            format!("  {}", fit(d, width.saturating_sub(used + 2))),
            theme.dim,
        ));
    }
    lines.push(Line::from(label));
    let indent = Span::raw("    ");
    let box_w = width.saturating_sub(8).min(60);
    match &field.kind {
        FieldKind::Text { .. } | FieldKind::Number { .. } => {
            let cursor = focused.then(|| field.input.visual_cursor());
            let mut spans = vec![indent];
            spans.extend(text_box(
                &sanitize_line(field.input.value(), widths::TYPED),
                cursor,
                box_w,
                theme,
            ));
            lines.push(Line::from(spans));
        }
        FieldKind::Bool => {
            let b = if field.checked { "[x] yes" } else { "[ ] no" };
            lines.push(Line::from(vec![
                indent,
                Span::styled(
                    b,
                    if focused {
                        theme.field_focus
                    } else {
                        theme.base
                    },
                ),
            ]));
        }
        FieldKind::Select { options } => {
            let mut spans = vec![indent, Span::styled("◀ ", theme.dim)];
            let chosen = field.chosen.and_then(|i| options.get(i));
            spans.push(match chosen {
                Some(c) => Span::styled(
                    c.label.clone(),
                    if focused {
                        theme.field_focus
                    } else {
                        theme.base
                    },
                ),
                None => Span::styled("(choose)", theme.dim),
            });
            spans.push(Span::styled(
                format!(
                    " ▶  {}/{}",
                    field.chosen.map_or(0, |i| i + 1),
                    options.len()
                ),
                theme.dim,
            ));
            lines.push(Line::from(spans));
        }
        FieldKind::Multi { options, .. } => {
            // The option under the cursor is marked `›` (space ticks it, ←/→ move);
            // options wrap onto more lines rather than run off the edge.
            let mut spans = vec![indent.clone()];
            let mut used = 4;
            for (i, c) in options.iter().enumerate() {
                let tick = if field.ticked.get(i).copied().unwrap_or(false) {
                    "[x]"
                } else {
                    "[ ]"
                };
                let here = focused && i == field.cursor;
                let text = format!("{}{tick} {}", if here { "›" } else { " " }, c.label);
                let w = crate::sanitize::display_width(&text) + 1;
                if used + w > width && spans.len() > 1 {
                    lines.push(Line::from(std::mem::replace(
                        &mut spans,
                        vec![indent.clone()],
                    )));
                    used = 4;
                }
                let style = if here { theme.cursor } else { theme.base };
                spans.push(Span::styled(text, style));
                spans.push(Span::raw(" "));
                used += w;
            }
            lines.push(Line::from(spans));
        }
        FieldKind::Json => {
            for (i, l) in field.area.lines.iter().enumerate() {
                let l = sanitize_line(l, widths::TYPED);
                let mut spans = vec![indent.clone(), Span::styled("│ ", theme.dim)];
                if focused && i == field.area.row {
                    let col = field.area.col;
                    let before: String = l.chars().take(col).collect();
                    let at: String = l.chars().nth(col).map_or(" ".into(), String::from);
                    let after: String = l.chars().skip(col + 1).collect();
                    spans.push(Span::styled(before, theme.code));
                    spans.push(Span::styled(at, theme.cursor));
                    spans.push(Span::styled(after, theme.code));
                } else {
                    spans.push(Span::styled(l, theme.code));
                }
                lines.push(Line::from(spans));
            }
        }
    }
    if let Some(e) = &field.error {
        lines.push(Line::styled(
            format!("    ✖ {}", sanitize_line(e, widths::ERROR_LINE)),
            theme.error,
        ));
    }
    lines
}

/// Render `lines` into `inner`, scrolled so that line `focus` is visible.
fn render_scrolled(lines: Vec<Line<'static>>, focus: usize, inner: Rect, buf: &mut Buffer) {
    let h = inner.height as usize;
    let offset = (focus + 3).saturating_sub(h);
    let offset = offset.min(lines.len().saturating_sub(h));
    Paragraph::new(lines)
        .scroll((offset as u16, 0))
        .render(inner, buf);
}

fn push_fields(
    form: &Form,
    group: usize,
    width: usize,
    theme: &Theme,
    lines: &mut Vec<Line<'static>>,
    focus_line: &mut usize,
) {
    for (i, f) in form
        .fields
        .iter()
        .enumerate()
        .filter(|(_, f)| f.group == group)
    {
        if i == form.focus {
            *focus_line = lines.len() + 1;
        }
        lines.extend(field_lines(f, i == form.focus, width, theme));
    }
}

fn popup_rect(area: Rect) -> Rect {
    centered(
        area,
        area.width.saturating_sub(4).min(100),
        area.height.saturating_sub(2),
    )
}

pub struct InputFormPopup<'a> {
    pub state: &'a State,
    pub form: &'a InputForm,
    pub theme: &'a Theme,
    pub focused: bool,
}

impl Widget for InputFormPopup<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let InputFormPopup {
            state,
            form,
            theme,
            focused,
        } = self;
        let inner = answer_frame(area, buf, 100, "Input", &form.title, theme, focused);
        let width = inner.width as usize;
        let mut asked = asked_by(form.target.server(), "", theme);
        let started_by = match &form.target {
            InputTarget::Task(key) => state.tasks.get(key).and_then(|r| r.started_by.as_deref()),
            InputTarget::Foreground { .. } => None,
        };
        if let Some(by) = started_by {
            asked.spans.push(Span::styled(" for a call by ", theme.dim));
            // made display-safe when the row learnt it
            asked.spans.push(Span::styled(by.to_string(), theme.accent));
        }
        let mut lines: Vec<Line<'static>> = vec![asked];
        if state.read_only {
            lines.push(Line::styled("read-only: answers are disabled", theme.warn));
        }
        let mut focus_line = 0;
        for (group, section) in form.sections.iter().enumerate() {
            lines.push(Line::raw(""));
            // A task's requests are told apart by their keys; others have one request.
            if matches!(form.target, crate::state::InputTarget::Task(_)) {
                lines.push(Line::styled(
                    format!("── {} ", sanitize_line(&section.input_key, widths::KEY)),
                    theme.dim,
                ));
            }
            for part in wrap(&section.message, width) {
                lines.push(Line::styled(part, theme.heading));
            }
            match &section.kind {
                SectionKind::Fields => {
                    push_fields(&form.form, group, width, theme, &mut lines, &mut focus_line)
                }
                SectionKind::Unsupported { method, json } => {
                    let note = format!(
                        "The server asks for {method}, which taskrail cannot answer; decline it."
                    );
                    for part in wrap(&note, width.saturating_sub(2)) {
                        lines.push(Line::styled(format!("  {part}"), theme.warn));
                    }
                    let (window, _, _) = doc_window(json, width.saturating_sub(2), 0, 12, theme);
                    lines.extend(window);
                }
            }
        }
        lines.push(Line::raw(""));
        if let Some(e) = &form.error {
            lines.push(Line::styled(format!("✖ {e}"), theme.error));
        }
        let keys = &state.keymap;
        let k = |a| {
            keys.key_for(crate::state::Context::Form, a)
                .map(|k| k.to_string())
                .unwrap_or_default()
        };
        use crate::state::Action;
        lines.push(Line::from(vec![
            Span::styled(k(Action::Submit), theme.key),
            Span::raw(" accept  "),
            Span::styled(k(Action::Decline), theme.key),
            Span::raw(" decline  "),
            Span::styled(k(Action::Dismiss), theme.key),
            Span::raw(" cancel  "),
            Span::styled(k(Action::Close), theme.key),
            Span::raw(" close without sending"),
        ]));
        render_scrolled(lines, focus_line, inner, buf);
    }
}

pub struct ToolFormPopup<'a> {
    pub form: &'a ToolForm,
    pub theme: &'a Theme,
    pub focused: bool,
}

impl Widget for ToolFormPopup<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let ToolFormPopup {
            form,
            theme,
            focused,
        } = self;
        let rect = popup_rect(area);
        let title = format!(
            "New task: {} on {}",
            sanitize_line(&form.tool.name, widths::TOOL_IN_HEADER),
            sanitize_line(form.server.as_str(), widths::SERVER_IN_HEADER)
        );
        let inner = frame(rect, buf, &title, theme, focused);
        let width = inner.width as usize;
        let mut lines: Vec<Line<'static>> = Vec::new();
        if let Some(d) = form.tool.description.as_deref() {
            for l in crate::sanitize::sanitize_block(d, 3, width) {
                lines.push(Line::styled(l, theme.dim));
            }
        }
        if form.json_fallback {
            lines.push(Line::styled(
                "No flat form for this schema: edit the JSON (^s sends).",
                theme.label,
            ));
        }
        if form.form.fields.is_empty() {
            lines.push(Line::styled("This tool takes no arguments.", theme.label));
        }
        lines.push(Line::raw(""));
        let mut focus_line = 0;
        push_fields(&form.form, 0, width, theme, &mut lines, &mut focus_line);
        lines.push(Line::raw(""));
        if let Some(e) = &form.error {
            lines.push(Line::styled(format!("✖ {e}"), theme.error));
        }
        render_scrolled(lines, focus_line, inner, buf);
    }
}
