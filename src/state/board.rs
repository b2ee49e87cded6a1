//! The task table's view model: status tabs, regex filter, sort column and order, the
//! derived list of visible row keys, and the selection (kept by task identity, never by
//! index) with its scroll offset; and the board's part of the reducer (the `/` line's
//! keys, tabs, sort, the viewport). Must not render anything.

use std::cell::Cell;
use std::cmp::Ordering;
use std::collections::HashMap;

use regex::{Regex, RegexBuilder};
use tui_input::{Input, InputRequest};

use super::keymap::Action;
use super::keys::Key;
use super::task::TaskRow;
use super::{Rows, State, TaskKey, line_edit};
use crate::engine::ServerId;
use crate::mcp::TaskStatus;

/// Status tabs narrowing the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tab {
    All,
    Active,
    Input,
    Done,
    Failed,
    Cancelled,
}

impl Tab {
    pub const ALL: [Tab; 6] = [
        Tab::All,
        Tab::Active,
        Tab::Input,
        Tab::Done,
        Tab::Failed,
        Tab::Cancelled,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Tab::All => "All",
            Tab::Active => "Active",
            Tab::Input => "Input",
            Tab::Done => "Done",
            Tab::Failed => "Failed",
            Tab::Cancelled => "Cancelled",
        }
    }

    pub fn matches(self, row: &TaskRow) -> bool {
        match self {
            Tab::All => true,
            Tab::Active => !row.is_over(),
            Tab::Input => row.needs_input(),
            Tab::Done => row.status() == Some(&TaskStatus::Completed) && !row.tool_error(),
            Tab::Failed => row.status() == Some(&TaskStatus::Failed) || row.tool_error(),
            Tab::Cancelled => row.status() == Some(&TaskStatus::Cancelled),
        }
    }

    fn index(self) -> usize {
        Tab::ALL.iter().position(|t| *t == self).unwrap_or(0)
    }

    pub fn cycle(self, forward: bool) -> Tab {
        let n = Tab::ALL.len();
        let i = self.index();
        Tab::ALL[if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        }]
    }
}

/// Sortable columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortColumn {
    Created,
    Server,
    Id,
    Tool,
    Status,
    Seen,
    Ttl,
}

impl SortColumn {
    pub const ALL: [SortColumn; 7] = [
        SortColumn::Created,
        SortColumn::Server,
        SortColumn::Id,
        SortColumn::Tool,
        SortColumn::Status,
        SortColumn::Seen,
        SortColumn::Ttl,
    ];

    pub fn title(self) -> &'static str {
        match self {
            SortColumn::Created => "age",
            SortColumn::Server => "server",
            SortColumn::Id => "id",
            SortColumn::Tool => "tool",
            SortColumn::Status => "status",
            SortColumn::Seen => "seen",
            SortColumn::Ttl => "ttl",
        }
    }

    pub fn next(self) -> SortColumn {
        let i = SortColumn::ALL.iter().position(|c| *c == self).unwrap_or(0);
        SortColumn::ALL[(i + 1) % SortColumn::ALL.len()]
    }

    fn compare(self, a: &TaskRow, b: &TaskRow) -> Ordering {
        let created = |r: &TaskRow| r.created.or(r.recorded_at);
        match self {
            SortColumn::Created => created(a).cmp(&created(b)),
            SortColumn::Server => a.key.server.cmp(&b.key.server),
            SortColumn::Id => Ordering::Equal,
            SortColumn::Tool => a.tool.cmp(&b.tool),
            SortColumn::Status => status_rank(a).cmp(&status_rank(b)),
            SortColumn::Seen => a.seen_at.cmp(&b.seen_at),
            SortColumn::Ttl => a.expires_at().cmp(&b.expires_at()),
        }
        .then_with(|| a.key.task_id.cmp(&b.key.task_id))
        .then_with(|| a.key.server.cmp(&b.key.server))
    }
}

fn status_rank(r: &TaskRow) -> u8 {
    match r.status() {
        _ if r.needs_input() => 0,
        _ if r.tool_error() => 4,
        Some(TaskStatus::Working) => 1,
        Some(TaskStatus::Other(_)) | None => 2,
        Some(TaskStatus::InputRequired) => 3,
        Some(TaskStatus::Failed) => 4,
        Some(TaskStatus::Cancelled) => 5,
        Some(TaskStatus::Completed) => 6,
    }
}

/// The `/` filter line.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub input: Input,
    pub editing: bool,
    /// The compiled pattern (the last valid one while an invalid one is being typed).
    pub regex: Option<Regex>,
    pub error: Option<String>,
}

impl Filter {
    /// Replace the pattern (`:filter REGEX`); empty clears it.
    pub fn set(&mut self, text: &str) {
        self.input = Input::new(text.to_string());
        self.recompile();
    }

    pub fn edit(&mut self, req: InputRequest) {
        self.input.handle(req);
        self.recompile();
    }

    fn recompile(&mut self) {
        let text = self.input.value();
        if text.is_empty() {
            self.regex = None;
            self.error = None;
            return;
        }
        match RegexBuilder::new(text)
            .case_insensitive(true)
            .size_limit(1 << 20)
            .build()
        {
            Ok(re) => {
                self.regex = Some(re);
                self.error = None;
            }
            Err(e) => {
                let msg = e.to_string();
                let last = msg.lines().rev().find(|l| !l.trim().is_empty());
                let last = last.unwrap_or("invalid regex").trim();
                self.error = Some(last.trim_start_matches("error:").trim().to_string());
            }
        }
    }

    fn matches(&self, row: &TaskRow) -> bool {
        let Some(re) = &self.regex else {
            return true;
        };
        row.tool.as_deref().is_some_and(|t| re.is_match(t))
            || re.is_match(row.key.task_id.as_str())
            || row.status().is_some_and(|s| re.is_match(s.as_str()))
            || (row.tool_error() && re.is_match("tool error"))
            || row
                .task
                .as_ref()
                .and_then(|t| t.status_message.as_deref())
                .is_some_and(|m| re.is_match(m))
    }
}

/// A row's place on the board, as bits: one per tab it counts in (`Tab::ALL` order, every
/// server), whether its server is shown, whether it is in `view`, and whether it was
/// touched since the last update.
type Place = u16;
const SHOWN: Place = 1 << 6;
const IN_VIEW: Place = 1 << 7;
const TOUCHED: Place = 1 << 8;
const INPUT_TAB: usize = 2;

/// A row's position in [`Rows`]: rows are never removed, so it names the row for good.
type Pos = u32;

/// Above this many rows changed since the last frame, they leave the view in one pass
/// instead of one search each; up to this many coming in are shifted into it in place.
const FEW: usize = 32;

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
    /// Make room for `n` more rows at once (a resume about to bring them).
    pub fn reserve(&mut self, n: usize) {
        self.placed.reserve(n);
        self.view.reserve(n);
    }

    /// The row at `pos` in the rows changed (or is new): it is re-placed on the next
    /// `ensure_view`.
    pub fn touch(&mut self, pos: usize) {
        if self.dirty {
            return;
        }
        if self.placed.len() <= pos {
            self.placed.resize(pos + 1, 0);
        }
        if self.placed[pos] & TOUCHED == 0 {
            self.placed[pos] |= TOUCHED;
            self.touched.push(pos as Pos);
        }
    }

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

    /// Bring `view` and the counts up to date, keeping the selected task and its screen
    /// row: after a settings change from every row, else by re-placing the changed rows
    /// only (a frame after one change costs a search, not a sort of every row).
    pub fn ensure_view(&mut self, rows: &Rows) {
        if self.offset == 0 {
            self.new_above = 0;
        }
        if !self.dirty && self.touched.is_empty() {
            return;
        }
        let old_index = self.selected_index(rows);
        let old_len = self.view.len();
        let settings_changed = self.dirty;
        if self.dirty || self.touched.len() > rows.len() / 2 {
            self.rebuild(rows);
        } else {
            self.replace_touched(rows);
        }
        match (self.selected_index(rows), old_index) {
            // The top of the board is in sight and the selected task stays on screen:
            // rows coming in above it show (the selection moves down with its task).
            (Some(new), Some(_)) if self.offset == 0 && new < self.viewport.max(1) => {}
            (Some(new), Some(old)) => {
                // keep the selected row on the same screen line; rows that came in above
                // it are out of sight: count them for the "N new above" mark
                let screen_row = old.saturating_sub(self.offset);
                self.offset = new.saturating_sub(screen_row);
                if !settings_changed && new > old {
                    let grew = self.view.len().saturating_sub(old_len);
                    self.new_above += (new - old).min(grew);
                }
            }
            (None, _) => {
                let keep = old_index
                    .unwrap_or(0)
                    .min(self.view.len().saturating_sub(1));
                self.selected = self.view_key(rows, keep);
            }
            (Some(_), None) => {}
        }
        self.clamp_offset(rows);
    }

    /// Where `row` belongs under the current settings.
    fn place(&self, row: &TaskRow) -> Place {
        let mut place = 0;
        if row.removed {
            return place;
        }
        for (i, tab) in Tab::ALL.iter().enumerate() {
            if tab.matches(row) {
                place |= 1 << i;
            }
        }
        if self.server.as_ref().is_none_or(|s| &row.key.server == s) {
            place |= SHOWN;
            if self.tab.matches(row) && self.filter.matches(row) {
                place |= IN_VIEW;
            }
        }
        place
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

    /// Add (`by` 1) or take away (`by` -1) a place of a row of `server` from the counts.
    fn count(&mut self, server: &ServerId, place: Place, by: isize) {
        if place & (1 << INPUT_TAB) != 0 {
            let n = self.waiting.entry(server.clone()).or_default();
            *n = n.saturating_add_signed(by);
        }
        if place & SHOWN != 0 {
            for (i, n) in self.tab_counts.iter_mut().enumerate() {
                if place & (1 << i) != 0 {
                    *n = n.saturating_add_signed(by);
                }
            }
        }
    }

    /// Display order: `a` before `b` when `Less`.
    fn order(&self, a: &TaskRow, b: &TaskRow) -> Ordering {
        if self.descending {
            self.sort.compare(b, a)
        } else {
            self.sort.compare(a, b)
        }
    }

    fn rebuild(&mut self, rows: &Rows) {
        self.dirty = false;
        self.touched.clear();
        self.placed.clear();
        self.placed.reserve(rows.len());
        self.tab_counts = [0; 6];
        self.waiting.clear();
        let mut view: Vec<(&TaskRow, Pos)> = Vec::with_capacity(rows.len());
        for (p, row) in rows.values().enumerate() {
            let place = self.place(row);
            self.count(&row.key.server, place, 1);
            self.placed.push(place);
            if place & IN_VIEW != 0 {
                view.push((row, p as Pos));
            }
        }
        view.sort_unstable_by(|a, b| self.order(a.0, b.0));
        self.view.clear();
        self.view.extend(view.into_iter().map(|(_, p)| p));
    }

    /// Re-place the touched rows: recount them, take those that moved out of `view` and
    /// merge them back in at their new places. A row still between its untouched
    /// neighbours stays where it is.
    fn replace_touched(&mut self, rows: &Rows) {
        let touched = std::mem::take(&mut self.touched);
        let mut incoming: Vec<Pos> = Vec::new();
        let mut leaving: Vec<usize> = Vec::new();
        let mut leave_all = false;
        for &p in &touched {
            let row = rows.get_index(p as usize).map(|(_, r)| r);
            let old = self.placed[p as usize] & !TOUCHED;
            let new = row.map_or(0, |r| self.place(r));
            if let Some(r) = row {
                self.count(&r.key.server, old, -1);
                self.count(&r.key.server, new, 1);
            }
            // still marked: `stays` asks whether a neighbour was touched too
            self.placed[p as usize] = new | TOUCHED;
            let row = row.filter(|_| new & IN_VIEW != 0);
            if old & IN_VIEW == 0 {
                incoming.extend(row.map(|_| p));
            } else if touched.len() > FEW {
                leave_all = true;
                incoming.extend(row.map(|_| p));
            } else {
                match (self.view.iter().position(|&v| v == p), row) {
                    (Some(i), Some(row)) if self.stays(i, row, rows) => {}
                    (at, row) => {
                        leaving.extend(at);
                        incoming.extend(row.map(|_| p));
                    }
                }
            }
        }
        if leave_all {
            let placed = &self.placed;
            self.view.retain(|&v| placed[v as usize] & TOUCHED == 0);
        } else {
            leaving.sort_unstable();
            for i in leaving.into_iter().rev() {
                self.view.remove(i);
            }
        }
        for &p in &touched {
            self.placed[p as usize] &= !TOUCHED;
        }
        self.merge(incoming, rows);
        // the allocation is kept for the next frame's changes
        self.touched = touched;
        self.touched.clear();
    }

    /// Whether the row at `i` of `view` is still in order between untouched neighbours.
    fn stays(&self, i: usize, row: &TaskRow, rows: &Rows) -> bool {
        let fits = |j: Option<usize>, want: Ordering| {
            let Some(&n) = j.and_then(|j| self.view.get(j)) else {
                return true;
            };
            self.placed[n as usize] & TOUCHED == 0 && self.order(row, &rows[n as usize]) == want
        };
        fits(i.checked_sub(1), Ordering::Greater) && fits(Some(i + 1), Ordering::Less)
    }

    /// Merge `incoming` (not in `view`) into the sorted `view`: a binary search per
    /// incoming row when they are few against the view, else one walk of the view.
    fn merge(&mut self, mut incoming: Vec<Pos>, rows: &Rows) {
        if incoming.is_empty() {
            return;
        }
        let row = |p: Pos| &rows[p as usize];
        incoming.sort_unstable_by(|&a, &b| self.order(row(a), row(b)));
        let searches = incoming.len() * (usize::BITS - self.view.len().leading_zeros()) as usize;
        if searches > self.view.len() {
            let old = std::mem::take(&mut self.view);
            let mut view = Vec::with_capacity(old.len() + incoming.len());
            let mut incoming = incoming.into_iter().peekable();
            for p in old {
                let n = row(p);
                while let Some(q) = incoming.next_if(|&q| self.order(n, row(q)) != Ordering::Less) {
                    view.push(q);
                }
                view.push(p);
            }
            view.extend(incoming);
            self.view = view;
            return;
        }
        let mut cuts = Vec::with_capacity(incoming.len());
        let mut from = 0;
        for &q in &incoming {
            let r = row(q);
            let rest = &self.view[from..];
            from += rest.partition_point(|&p| self.order(row(p), r) == Ordering::Less);
            cuts.push(from);
        }
        if incoming.len() <= FEW {
            // A few rows: shifted in place (from the last, so earlier cuts stay valid)
            // rather than copying the whole view into a new allocation.
            for (q, cut) in incoming.into_iter().zip(cuts).rev() {
                self.view.insert(cut, q);
            }
            return;
        }
        let old = std::mem::take(&mut self.view);
        let mut view = Vec::with_capacity(old.len() + incoming.len());
        let mut old = old.into_iter();
        let mut taken = 0;
        for (q, cut) in incoming.into_iter().zip(cuts) {
            view.extend(old.by_ref().take(cut - taken));
            taken = cut;
            view.push(q);
        }
        view.extend(old);
        self.view = view;
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
