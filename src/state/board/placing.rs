//! Keeping the board's view up to date as rows change: each row's place (the tabs it counts
//! in, whether it is shown and in the view) as bits, the tab and waiting counts, and
//! re-placing only the rows touched since the last frame (a search each, or one merge)
//! instead of sorting every row again; a settings change rebuilds from every row.

use std::cmp::Ordering;

use super::tab::Tab;
use super::{Board, Place, Pos};
use crate::engine::ServerId;
use crate::state::Rows;
use crate::state::task::TaskRow;

/// The bits of a `Place` past the tabs' (a tab's bit is `1 << Tab::index`).
const SHOWN: Place = 1 << 6;
const IN_VIEW: Place = 1 << 7;
const TOUCHED: Place = 1 << 8;
const INPUT_TAB: usize = 2;

/// Above this many rows changed since the last frame, they leave the view in one pass
/// instead of one search each; up to this many coming in are shifted into it in place.
const FEW: usize = 32;

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
}
