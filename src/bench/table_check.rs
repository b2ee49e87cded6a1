//! The board's task table drawn by a ratatui `Table` of the same cells, compared buffer
//! to buffer with what `TaskTable` draws itself (it lives here, beside the fixtures,
//! because `ui` may not name the engine types a board of tasks is built from).

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Cell, Row, Table, Widget};

use super::fixtures::board;
use crate::state::{Now, State};
use crate::ui::Theme;
use crate::ui::table::{Col, Field, TaskTable, cell, columns, server_width};

/// The same rows drawn by a ratatui `Table` of `Cell`s (what `TaskTable` built before
/// it drew rows itself): the first page, the selection on it.
fn as_ratatui_table(state: &State, theme: &Theme, now: Now, area: Rect) -> Buffer {
    let mut buf = Buffer::empty(area);
    let (cols, wide) = columns(area.width, state.servers.len() > 1 || area.width >= 110);
    let shown = (area.height as usize - 1).min(state.board.view_len());
    let cell_of = |f: Field| Cell::from(f.line).style(f.style);
    let server_w = server_width(state, wide);
    let rows = state
        .board
        .view_rows(&state.tasks, 0..shown)
        .enumerate()
        .map(|(i, r)| {
            let note = state.input_note(r);
            let server = crate::ui::text::fit(&state.server_name(&r.key.server), server_w as usize);
            let cells = cols
                .iter()
                .map(|c| cell_of(cell(*c, wide, r, &server, note.clone(), theme, now)));
            let selected = state.board.selected.as_ref() == Some(&r.key);
            let mark = if selected {
                Line::styled("›", theme.accent)
            } else {
                Line::raw(" ")
            };
            mark.render(Rect::new(area.x, area.y + 1 + i as u16, 1, 1), &mut buf);
            let row = Row::new(cells);
            if selected {
                row.style(theme.selected)
            } else {
                row
            }
        });
    let rows: Vec<Row> = rows.collect();
    let header = Row::new(cols.iter().map(|c| {
        let mut t = c.title().to_string();
        if c.sort() == Some(state.board.sort) {
            t.push(if state.board.descending { '↓' } else { '↑' });
        }
        Cell::from(t)
    }))
    .style(theme.table_header);
    let widths = cols.iter().map(|c| match c {
        Col::Message => Constraint::Fill(1),
        Col::Server => Constraint::Length(server_w),
        c => Constraint::Length(c.width(wide)),
    });
    let table_area = Rect {
        x: area.x + 1,
        width: area.width.saturating_sub(1),
        ..area
    };
    Widget::render(
        Table::new(rows, widths).header(header).column_spacing(1),
        table_area,
        &mut buf,
    );
    buf
}

#[test]
fn rows_are_drawn_cell_for_cell_as_a_ratatui_table_draws_them() {
    let now = chrono::Utc::now();
    let theme = Theme::default();
    let mut state = board(40, 20, now);
    // the selection on the first page at every size (the oracle does not scroll)
    let second = state.board.view_keys(&state.tasks)[1].clone();
    state.board.selected = Some(second);
    for (w, h) in [(200, 21), (120, 21), (90, 12), (60, 8), (30, 5), (12, 3)] {
        let area = Rect::new(0, 0, w, h);
        let mut buf = Buffer::empty(area);
        TaskTable {
            state: &state,
            theme: &theme,
            now,
        }
        .render(area, &mut buf);
        assert_eq!(buf, as_ratatui_table(&state, &theme, now, area), "{w}x{h}");
    }
}
