//! The task table (virtualised: only visible rows are built; each drawn row recorded as a
//! click on its task). Columns are dropped by priority on narrow terminals (the lines above
//! the table are `tab_bar`). Must not mutate state.

use chrono::TimeDelta;
use ratatui::buffer::Buffer;
use ratatui::layout::{Alignment, Constraint, Flex, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use super::text::fit;
use super::theme::status_icon;
use super::{HitMap, Theme};
use crate::sanitize::{display_width, sanitize_line};
use crate::state::Tombstone;
use crate::state::task::{Phase, TaskRow};
use crate::state::time::short_duration;
use crate::state::widths;
use crate::state::{Hit, Now, SortColumn, State};

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Col {
    Server,
    Id,
    Tool,
    Status,
    Message,
    Progress,
    Age,
    Seen,
    Ttl,
}

impl Col {
    /// Display order.
    const ORDER: [Col; 9] = [
        Col::Server,
        Col::Id,
        Col::Tool,
        Col::Status,
        Col::Progress,
        Col::Message,
        Col::Age,
        Col::Seen,
        Col::Ttl,
    ];
    /// Dropped first → last.
    const DROP: [Col; 7] = [
        Col::Seen,
        Col::Age,
        Col::Ttl,
        Col::Server,
        Col::Message,
        Col::Progress,
        Col::Tool,
    ];

    pub(crate) fn width(self, wide: bool) -> u16 {
        match self {
            Col::Server => 12,
            Col::Id => 8,
            Col::Tool if wide => 14,
            Col::Tool => 10,
            Col::Status => 18,
            Col::Message if wide => 16,
            Col::Message => 8,
            Col::Progress if wide => 12,
            Col::Progress => 10,
            Col::Age => 6,
            Col::Seen => 6,
            Col::Ttl => 7,
        }
    }

    pub(crate) fn title(self) -> &'static str {
        match self {
            Col::Server => "server",
            Col::Id => "id",
            Col::Tool => "tool",
            Col::Status => "status",
            Col::Message => "message",
            Col::Progress => "progress",
            Col::Age => "age",
            Col::Seen => "seen",
            Col::Ttl => "ttl",
        }
    }

    pub(crate) fn sort(self) -> Option<SortColumn> {
        Some(match self {
            Col::Server => SortColumn::Server,
            Col::Id => SortColumn::Id,
            Col::Tool => SortColumn::Tool,
            Col::Status => SortColumn::Status,
            Col::Age => SortColumn::Created,
            Col::Seen => SortColumn::Seen,
            Col::Ttl => SortColumn::Ttl,
            Col::Message | Col::Progress => return None,
        })
    }
}

/// Columns that fit in `width` (1 column of spacing, 1 for the selection mark).
pub(crate) fn columns(width: u16, many_servers: bool) -> (Vec<Col>, bool) {
    let wide = width >= 90;
    let mut cols: Vec<Col> = Col::ORDER
        .into_iter()
        .filter(|c| many_servers || *c != Col::Server)
        .collect();
    let need = |cols: &[Col]| -> u16 { cols.iter().map(|c| c.width(wide) + 1).sum::<u16>() + 1 };
    for drop in Col::DROP {
        if need(&cols) <= width {
            break;
        }
        cols.retain(|c| *c != drop);
    }
    (cols, wide)
}

pub struct TaskTable<'a> {
    pub state: &'a State,
    pub theme: &'a Theme,
    pub now: Now,
}

impl Widget for TaskTable<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        self.draw(area, buf, &mut HitMap::default());
    }
}

impl TaskTable<'_> {
    /// Draw the table and record each drawn row as a click on its task.
    pub fn draw(self, area: Rect, buf: &mut Buffer, hits: &mut HitMap) {
        let TaskTable { state, theme, now } = self;
        let board = &state.board;
        let (cols, wide) = columns(area.width, state.servers.len() > 1 || area.width >= 110);
        let height = area.height.saturating_sub(1) as usize;
        if board.view_len() == 0 {
            let msg = if state.tasks.is_empty() {
                "No tasks yet. Press n to start one; tasks from the ledger appear as they are resumed."
            } else {
                "No task matches this tab and filter."
            };
            let y = area.y + area.height / 2;
            let line = Line::styled(fit(msg, area.width as usize), theme.dim).centered();
            line.render(
                Rect::new(
                    area.x,
                    y.min(area.bottom().saturating_sub(1)),
                    area.width,
                    1,
                ),
                buf,
            );
        }
        // keep the selection visible even if the reducer has not been told the size yet
        let mut offset = board
            .offset
            .min(board.view_len().saturating_sub(height.max(1)));
        let sel = board.selected_index(&state.tasks);
        if let Some(i) = sel {
            if i < offset {
                offset = i;
            } else if height > 0 && i >= offset + height {
                offset = i + 1 - height;
            }
        }
        let end = (offset + height).min(board.view_len());
        let server_w = server_width(state, wide);
        let widths: Vec<Constraint> = cols
            .iter()
            .map(|c| match c {
                Col::Message => Constraint::Fill(1),
                Col::Server => Constraint::Length(server_w),
                c => Constraint::Length(c.width(wide)),
            })
            .collect();
        let table_area = Rect {
            x: area.x + 1,
            width: area.width.saturating_sub(1),
            ..area
        };
        let rects = column_rects(widths, table_area.width);
        let header = cols.iter().map(|c| {
            let mut t = c.title().to_string();
            if c.sort() == Some(board.sort) {
                t.push(if board.descending { '↓' } else { '↑' });
            }
            Field::new(t)
        });
        draw_row(buf, table_area, 0, theme.table_header, &rects, header);
        if offset > 0 && board.new_above > 0 {
            // Rows came in above the first one drawn (sorted newest first, scrolled down).
            let mark = format!(" ↑ {} new above ", board.new_above);
            let w = (mark.chars().count() as u16).min(table_area.width);
            let x = table_area.right().saturating_sub(w);
            buf.set_stringn(x, table_area.y, &mark, w as usize, theme.warn);
        }
        let rows = board.view_rows(&state.tasks, offset..end);
        for (i, r) in rows.enumerate() {
            let y = i as u16 + 1;
            let selected = board.selected.as_ref() == Some(&r.key);
            let (mark, mark_style) = if selected {
                ("›", theme.accent)
            } else {
                (" ", Style::default())
            };
            if area.width > 0 && y < area.height {
                buf.set_stringn(area.x, area.y + y, mark, 1, mark_style);
                hits.add(
                    Rect::new(area.x, area.y + y, area.width, 1),
                    Hit::Row(r.key.clone()),
                );
            }
            let note = state.input_note(r);
            let row_style = if selected {
                theme.selected
            } else {
                Style::default()
            };
            let server = fit(&state.server_name(&r.key.server), server_w as usize);
            let fields = cols
                .iter()
                .map(|c| cell(*c, wide, r, &server, note.clone(), theme, now));
            draw_row(buf, table_area, y, row_style, &rects, fields);
        }
    }
}

/// The server column's width: the longest name the header shows, within bounds.
pub(crate) fn server_width(state: &State, wide: bool) -> u16 {
    let names = state.server_names();
    let longest = names.iter().map(|n| display_width(n)).max().unwrap_or(0);
    (longest.min(24) as u16).max(Col::Server.width(wide))
}

/// Where each column starts and how wide it is within a table `width` wide: the layout a
/// ratatui `Table` with these widths and one column of spacing gives its cells.
fn column_rects(widths: Vec<Constraint>, width: u16) -> std::rc::Rc<[Rect]> {
    Layout::horizontal(widths)
        .flex(Flex::Start)
        .spacing(1)
        .split(Rect::new(0, 0, width, 1))
}

/// A cell's text and the style over its whole width.
pub(crate) struct Field {
    pub(crate) line: Line<'static>,
    pub(crate) style: Style,
}

impl Field {
    /// Text that is one clean line already (sanitized, or made here).
    fn new(text: String) -> Field {
        Field::line(Line::from(Span::raw(text)))
    }

    fn line(line: Line<'static>) -> Field {
        Field {
            line,
            style: Style::default(),
        }
    }

    fn style(self, style: Style) -> Field {
        Field { style, ..self }
    }
}

/// Row `y` of the table in `area`: `row_style` over its width, then each field in its
/// column — what a ratatui `Table` draws for a row, without building one each frame.
fn draw_row(
    buf: &mut Buffer,
    area: Rect,
    y: u16,
    row_style: Style,
    rects: &[Rect],
    fields: impl Iterator<Item = Field>,
) {
    if y >= area.height {
        return;
    }
    let row = Rect {
        y: area.y + y,
        height: 1,
        ..area
    };
    if row_style != Style::default() {
        buf.set_style(row, row_style);
    }
    for (rect, field) in rects.iter().zip(fields) {
        let cell = Rect::new(row.x + rect.x, row.y, rect.width, 1).intersection(row);
        if cell.is_empty() {
            continue;
        }
        if field.style != Style::default() {
            buf.set_style(cell, field.style);
        }
        draw_line(&field.line, cell, buf);
    }
}

/// `line` drawn in `cell` exactly as `Line::render` draws it, with a short way for the
/// common case of left-aligned printable ASCII: one cell per byte, no grapheme breaking
/// or width lookup.
fn draw_line(line: &Line<'_>, cell: Rect, buf: &mut Buffer) {
    let plain = matches!(line.alignment, None | Some(Alignment::Left))
        && line
            .spans
            .iter()
            .all(|s| s.content.bytes().all(|b| (0x20..0x7f).contains(&b)));
    let area = cell.intersection(buf.area);
    if !plain || area.is_empty() {
        line.render(cell, buf);
        return;
    }
    if line.spans.iter().all(|s| s.content.is_empty()) {
        return;
    }
    let area = Rect { height: 1, ..area };
    buf.set_style(area, line.style);
    let mut x = area.x;
    for span in &line.spans {
        let style = Style::default().patch(span.style);
        for b in span.content.bytes() {
            if x >= area.right() {
                return;
            }
            buf[(x, area.y)].set_char(char::from(b)).set_style(style);
            x += 1;
        }
    }
}

fn status_cell(r: &TaskRow, theme: &Theme) -> (String, Style) {
    let (text, style) = match r.phase() {
        Phase::Unknown => ("· unknown".to_string(), theme.unknown),
        Phase::CancelRequested { acked: true } => {
            ("⊘ cancel requested".to_string(), theme.pending_op)
        }
        Phase::CancelRequested { acked: false } => ("⊘ cancelling…".to_string(), theme.pending_op),
        Phase::EndedAnyway(s) => (
            format!("{} {} anyway", status_icon(&s), s.as_str()),
            theme.status(&s),
        ),
        Phase::ToolError => ("✖ tool error".to_string(), theme.failed),
        Phase::Gone(Tombstone::SessionLost) => ("⌛ session lost".to_string(), theme.unknown),
        Phase::Gone(Tombstone::ProxyLost) => ("⌛ lost".to_string(), theme.unknown),
        Phase::Gone(_) => ("⌛ expired".to_string(), theme.unknown),
        Phase::Done(s) => (
            format!("{} {}", status_icon(&s), s.as_str()),
            theme.status(&s),
        ),
        Phase::Live(_) if r.answer.is_some() => ("✉ answer sent".to_string(), theme.pending_op),
        Phase::Live(_) if r.needs_input() => ("✎ input needed".to_string(), theme.input),
        Phase::Live(s) => (
            format!(
                "{} {}",
                status_icon(&s),
                sanitize_line(s.as_str(), widths::STATUS)
            ),
            theme.status(&s),
        ),
    };
    (text, style)
}

/// A text gauge (`████▌░░░ 42%`) or a spinner with the elapsed time.
fn progress_cell(r: &TaskRow, theme: &Theme, now: Now, width: usize) -> Line<'static> {
    if let Some(f) = r.fraction() {
        let pct = format!("{:>3.0}%", f * 100.0);
        let bar_w = width.saturating_sub(pct.len() + 1);
        let eighths = (f * bar_w as f64 * 8.0).round() as usize;
        let full = eighths / 8;
        let part = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"][eighths % 8];
        let mut filled = "█".repeat(full.min(bar_w));
        filled.push_str(if full < bar_w { part } else { "" });
        let used = full.min(bar_w) + usize::from(!part.is_empty() && full < bar_w);
        return Line::from(vec![
            Span::styled(filled, theme.gauge_fill),
            Span::styled("░".repeat(bar_w.saturating_sub(used)), theme.gauge_empty),
            Span::styled(format!(" {pct}"), theme.label),
        ]);
    }
    if r.is_over() {
        return Line::raw("");
    }
    let start = r.created.or(r.recorded_at);
    let elapsed = start.map(|s| now - s).unwrap_or(TimeDelta::zero());
    let frame = SPINNER[(elapsed.num_seconds().rem_euclid(10)) as usize];
    Line::from(vec![
        Span::styled(frame, theme.accent),
        Span::styled(format!(" {}", short_duration(elapsed)), theme.dim),
    ])
}

/// One cell; `note` says why the task waits on input nobody here can give.
pub(crate) fn cell(
    c: Col,
    wide: bool,
    r: &TaskRow,
    server: &str,
    note: Option<(String, String)>,
    theme: &Theme,
    now: Now,
) -> Field {
    let w = c.width(wide) as usize;
    match c {
        // already fitted by the caller, to the column's width on this screen
        Col::Server => Field::new(server.to_string()).style(theme.accent),
        Col::Id => Field::new(r.text.id.clone()),
        Col::Tool => Field::new(fit(&r.text.tool, w)),
        Col::Status => {
            let (text, style) = match &note {
                Some((wants, _)) => (format!("⚠ {wants}"), theme.warn),
                None => status_cell(r, theme),
            };
            Field::new(fit(&text, w)).style(style)
        }
        Col::Message => match (note, &r.text.reason) {
            (Some((_, n)), _) => Field::new(n).style(theme.warn),
            (None, Some(why)) => Field::new(why.clone()).style(theme.error),
            (None, None) => {
                let msg = r.text.message.clone();
                let msg = msg.or_else(|| r.note_line()).unwrap_or_default();
                Field::new(msg).style(theme.label)
            }
        },
        Col::Progress => Field::line(progress_cell(r, theme, now, w)),
        Col::Age => {
            let age = r.created.or(r.recorded_at).map(|c| short_duration(now - c));
            Field::new(age.unwrap_or_else(|| "-".into())).style(theme.dim)
        }
        Col::Seen => {
            let seen = r.seen_at.map(|s| short_duration(now - s));
            let stale = r.seen_at.is_some_and(|s| (now - s).num_seconds() > 30) && !r.is_terminal();
            Field::new(seen.unwrap_or_else(|| "-".into())).style(if stale {
                theme.warn
            } else {
                theme.dim
            })
        }
        Col::Ttl => {
            let text = match r.expires_at() {
                _ if r.expired => "expired".to_string(),
                Some(at) if at > now => short_duration(at - now),
                Some(_) => "past".to_string(),
                None if r.task.as_ref().is_some_and(|t| t.ttl_ms.is_none()) => "∞".to_string(),
                None => "-".to_string(),
            };
            let soon = r
                .expires_at()
                .is_some_and(|at| (at - now).num_seconds() < 60);
            Field::new(text).style(if soon { theme.warn } else { theme.dim })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_drops_columns_by_priority() {
        assert_eq!(
            columns(60, true).0,
            vec![Col::Id, Col::Tool, Col::Status, Col::Progress, Col::Message]
        );
        let wide = columns(140, true).0;
        assert!(wide.contains(&Col::Seen) && wide.contains(&Col::Server));
        assert!(!columns(100, false).0.contains(&Col::Server));
    }

    #[test]
    fn a_line_is_drawn_as_ratatui_draws_it() {
        use ratatui::style::{Color, Modifier, Stylize};
        let lines = [
            Line::raw("plain ascii text"),
            Line::from(vec![
                Span::styled("red ", Style::new().fg(Color::Red)),
                Span::raw(""),
                Span::styled("bold", Style::new().add_modifier(Modifier::BOLD)),
            ])
            .style(Style::new().bg(Color::Blue)),
            Line::raw("cut off at the cell's right edge, well past it"),
            Line::raw("centred").centered(),
            Line::raw("tab\there"),
            Line::raw("wide 任务 and é"),
            Line::raw(""),
            Line::styled("", Style::new().bg(Color::Green)),
            Line::raw("x").reversed(),
        ];
        for line in &lines {
            for cell in [
                Rect::new(2, 0, 20, 1),
                Rect::new(0, 0, 3, 1),
                Rect::new(30, 0, 10, 1),
            ] {
                let area = Rect::new(0, 0, 32, 1);
                let (mut ours, mut theirs) = (Buffer::empty(area), Buffer::empty(area));
                ours.set_style(area, Style::new().fg(Color::Yellow));
                theirs.set_style(area, Style::new().fg(Color::Yellow));
                draw_line(line, cell, &mut ours);
                line.render(cell, &mut theirs);
                assert_eq!(ours, theirs, "{line:?} in {cell:?}");
            }
        }
    }
}
