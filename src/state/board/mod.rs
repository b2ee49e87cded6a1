//! The task table's view model: the status tab, the regex filter, the sort column and order,
//! the derived list of visible rows, and the selection (kept by task identity, never by
//! index) with its scroll offset; and the board's part of the reducer (the `/` line's keys,
//! tabs, sort, the viewport). Keeping the view up to date is `placing`. Must not render
//! anything.

mod filter;
mod placing;
mod sort;
mod tab;

use std::cell::Cell;
use std::collections::HashMap;

pub use filter::Filter;
pub use sort::SortColumn;
pub use tab::Tab;

use super::keymap::Action;
use super::keys::Key;
use super::{Rows, State, TaskKey, line_edit};
use crate::engine::ServerId;
use crate::state::task::TaskRow;

/// A row's place on the board, as bits: one per tab it counts in (`Tab::ALL` order, every
/// server), whether its server is shown, whether it is in `view`, and whether it was
/// touched since the last update.
type Place = u16;

/// A row's position in [`Rows`]: rows are never removed, so it names the row for good.
type Pos = u32;

/// Table view model.
#[derive(Debug, Clone)]
pub struct Board {
    pub tab: Tab,
    pub sort: SortColumn,
    pub descending: bool,
    pub filter: Filter,
    /// Show only this server's tasks (`:server NAME`).
    pub server: Option<ServerId>,
    /// Positions of the visible rows in display order (brought up to date by
    /// `ensure_view`): 4 bytes an entry, and a comparison reads the row without a lookup.
    view: Vec<Pos>,
    /// The view's settings changed (tab, sort, filter, server): rebuild it from every row.
    pub dirty: bool,
    /// Rows changed since the view was last brought up to date (each once: `TOUCHED`).
    touched: Vec<Pos>,
    /// Each row's place as of the last update, by position.
    placed: Vec<Place>,
    pub selected: Option<TaskKey>,
    /// Where `selected` was last found in `view` (checked before it is used).
    selected_at: Cell<usize>,
    /// Index of the first row drawn.
    pub offset: usize,
    /// Rows the table can show (told by the loop on resize).
    pub viewport: usize,
    /// Rows that came into the view above the first row drawn since the top was last in
    /// sight (the table's "N new above" mark).
    pub new_above: usize,
    /// Rows per tab (of the shown server), for the tab bar.
    pub tab_counts: [usize; 6],
    /// Rows waiting for input, per server (every server, whatever is shown).
    waiting: HashMap<ServerId, usize>,
}

impl Default for Board {
    fn default() -> Self {
        Board {
            tab: Tab::All,
            sort: SortColumn::Created,
            descending: true,
            filter: Filter::default(),
            server: None,
            view: Vec::new(),
            dirty: true,
            touched: Vec::new(),
            placed: Vec::new(),
            selected: None,
            selected_at: Cell::new(0),
            offset: 0,
            viewport: 20,
            new_above: 0,
            tab_counts: [0; 6],
            waiting: HashMap::new(),
        }
    }
}

impl Board {
    /// How many rows are visible (in the view).
    pub fn view_len(&self) -> usize {
        self.view.len()
    }

    /// The visible rows from `range` of the view, in display order.
    pub fn view_rows<'a>(
        &'a self,
        rows: &'a Rows,
        range: std::ops::Range<usize>,
    ) -> impl Iterator<Item = &'a TaskRow> + 'a {
        let range = range.start.min(self.view.len())..range.end.min(self.view.len());
        self.view[range]
            .iter()
            .filter_map(|&p| rows.get_index(p as usize).map(|(_, r)| r))
    }

    /// The key of the `i`th visible row.
    pub fn view_key(&self, rows: &Rows, i: usize) -> Option<TaskKey> {
        let p = *self.view.get(i)?;
        rows.get_index(p as usize).map(|(k, _)| k.clone())
    }

    /// Whether the row of `key` is in the view.
    pub fn shows(&self, rows: &Rows, key: &TaskKey) -> bool {
        rows.get_index_of(key)
            .is_some_and(|p| self.view.contains(&(p as Pos)))
    }

    /// The keys of the visible rows, in display order.
    pub fn view_keys(&self, rows: &Rows) -> Vec<TaskKey> {
        self.view_rows(rows, 0..self.view.len())
            .map(|r| r.key.clone())
            .collect()
    }

    /// Rows of `server` waiting for input.
    pub fn waiting(&self, server: &ServerId) -> usize {
        self.waiting.get(server).copied().unwrap_or(0)
    }

    /// Rows waiting for input on every server.
    pub fn waiting_total(&self) -> usize {
        self.waiting.values().sum()
    }

    /// Shown rows that are over (finished, or tombstones), as of the last `ensure_view`.
    pub fn over_total(&self) -> usize {
        let (all, active) = (
            self.tab_counts[Tab::All.index()],
            self.tab_counts[Tab::Active.index()],
        );
        all.saturating_sub(active)
    }

    /// The selected row's index in `view`: where it was last found when it is still
    /// there (every frame asks, often several times), else a search.
    pub fn selected_index(&self, rows: &Rows) -> Option<usize> {
        let sel = self.selected.as_ref()?;
        let p = rows.get_index_of(sel)? as Pos;
        let hint = self.selected_at.get();
        if self.view.get(hint) == Some(&p) {
            return Some(hint);
        }
        let i = self.view.iter().position(|&v| v == p)?;
        self.selected_at.set(i);
        Some(i)
    }

    /// Move the selection by `delta` rows (clamped).
    pub fn move_by(&mut self, delta: isize, rows: &Rows) {
        if self.view.is_empty() {
            self.selected = None;
            return;
        }
        let cur = self.selected_index(rows).unwrap_or(0) as isize;
        let last = self.view.len() as isize - 1;
        let next = (cur + delta).clamp(0, last) as usize;
        self.selected = self.view_key(rows, next);
        self.clamp_offset(rows);
    }

    /// Keep the selection inside the viewport and the offset inside the list.
    pub fn clamp_offset(&mut self, rows: &Rows) {
        let height = self.viewport.max(1);
        let max_offset = self.view.len().saturating_sub(height);
        if let Some(i) = self.selected_index(rows) {
            if i < self.offset {
                self.offset = i;
            } else if i >= self.offset + height {
                self.offset = i + 1 - height;
            }
        }
        self.offset = self.offset.min(max_offset);
    }
}

/// The board's own actions: the filter line, tabs and sort.
pub(super) fn on_action(state: &mut State, action: Action) {
    let board = &mut state.board;
    match action {
        Action::Filter => board.filter.editing = true,
        Action::FilterApply => board.filter.editing = false,
        Action::FilterClear => {
            board.filter = Filter::default();
            board.dirty = true;
        }
        Action::NextTab | Action::PrevTab => {
            board.tab = board.tab.cycle(action == Action::NextTab);
            board.dirty = true;
        }
        Action::SortNext => {
            board.sort = board.sort.next();
            board.dirty = true;
        }
        Action::SortReverse => {
            board.descending = !board.descending;
            board.dirty = true;
        }
        _ => {}
    }
}

/// A key the keymap does not bind, typed into the `/` line: the rows follow as you type.
pub(super) fn edit_filter(state: &mut State, key: Key) {
    if let Some(req) = line_edit::request(key) {
        state.board.filter.edit(req);
        state.board.dirty = true;
        state.ensure_view();
    }
}

/// The loop measured how many rows the table and a page of the detail views hold.
pub(super) fn viewport(state: &mut State, table_rows: usize, page_rows: usize) {
    state.board.viewport = table_rows.max(1);
    state.page_rows = page_rows.max(1);
    state.board.clamp_offset(&state.tasks);
}
