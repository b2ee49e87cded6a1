//! The task table's view model: status tabs, regex filter, sort column and order, the
//! derived list of visible row keys, and the selection (kept by task identity, never by
//! index) with its scroll offset; and the board's part of the reducer (the `/` line's
//! keys, tabs, sort, the viewport). Must not render anything.

use std::cmp::Ordering;
use std::collections::HashMap;

use regex::{Regex, RegexBuilder};
use tui_input::{Input, InputRequest};

use super::keymap::Action;
use super::keys::Key;
use super::task::TaskRow;
use super::{State, TaskKey, line_edit};
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

/// Table view model.
#[derive(Debug, Clone)]
pub struct Board {
    pub tab: Tab,
    pub sort: SortColumn,
    pub descending: bool,
    pub filter: Filter,
    /// Show only this server's tasks (`:server NAME`).
    pub server: Option<crate::engine::ServerId>,
    /// Keys of the visible rows in display order (rebuilt lazily when `dirty`).
    pub view: Vec<TaskKey>,
    pub dirty: bool,
    pub selected: Option<TaskKey>,
    /// Index of the first row drawn.
    pub offset: usize,
    /// Rows the table can show (told by the loop on resize).
    pub viewport: usize,
    /// Rows per tab, for the tab bar.
    pub tab_counts: [usize; 6],
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
            selected: None,
            offset: 0,
            viewport: 20,
            tab_counts: [0; 6],
        }
    }
}

impl Board {
    /// Rebuild `view` if anything changed, keeping the selected task and its screen row.
    pub fn ensure_view(&mut self, rows: &HashMap<TaskKey, TaskRow>) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        let old_index = self.selected_index();
        let mut counts = [0usize; 6];
        let mut view: Vec<&TaskRow> = Vec::with_capacity(rows.len());
        for row in rows.values() {
            if self.server.as_ref().is_some_and(|s| &row.key.server != s) {
                continue;
            }
            for (i, tab) in Tab::ALL.iter().enumerate() {
                if tab.matches(row) {
                    counts[i] += 1;
                }
            }
            if self.tab.matches(row) && self.filter.matches(row) {
                view.push(row);
            }
        }
        let sort = self.sort;
        if self.descending {
            view.sort_unstable_by(|a, b| sort.compare(b, a));
        } else {
            view.sort_unstable_by(|a, b| sort.compare(a, b));
        }
        self.view = view.into_iter().map(|r| r.key.clone()).collect();
        self.tab_counts = counts;
        match (self.selected_index(), old_index) {
            (Some(new), Some(old)) => {
                // keep the selected row on the same screen line
                let screen_row = old.saturating_sub(self.offset);
                self.offset = new.saturating_sub(screen_row);
            }
            (None, _) => {
                let keep = old_index
                    .unwrap_or(0)
                    .min(self.view.len().saturating_sub(1));
                self.selected = self.view.get(keep).cloned();
            }
            (Some(_), None) => {}
        }
        self.clamp_offset();
    }

    pub fn selected_index(&self) -> Option<usize> {
        let sel = self.selected.as_ref()?;
        self.view.iter().position(|k| k == sel)
    }

    /// Move the selection by `delta` rows (clamped).
    pub fn move_by(&mut self, delta: isize) {
        if self.view.is_empty() {
            self.selected = None;
            return;
        }
        let cur = self.selected_index().unwrap_or(0) as isize;
        let last = self.view.len() as isize - 1;
        let next = (cur + delta).clamp(0, last) as usize;
        self.selected = self.view.get(next).cloned();
        self.clamp_offset();
    }

    /// Keep the selection inside the viewport and the offset inside the list.
    pub fn clamp_offset(&mut self) {
        let height = self.viewport.max(1);
        let max_offset = self.view.len().saturating_sub(height);
        if let Some(i) = self.selected_index() {
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
    state.board.clamp_offset();
}
