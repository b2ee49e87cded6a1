//! The wire view's transitions: opening it (on a server, from the board, the detail view,
//! the servers view or `:wire`), moving, the filter typed in place, pause and live again,
//! switching servers, a message opened as pretty JSON. The rings and the view's data are
//! `views::wire`'s, the drawing `ui::wire`. The loop feeds records only while the view is open or `--wire` is on.
//! Must not do I/O or render.

use tui_input::Input;

use super::doc::{DocLine, LineKind, json_lines};
use super::keymap::Action;
use super::keys::Key;
use super::modal::{DocView, Modal};
use super::views::wire::{Direction, WireView, shown};
use super::{State, line_edit};
use crate::sanitize::sanitize_line;
use crate::state::widths;

/// Whether the wire view is open anywhere in the stack (the loop feeds it then).
pub fn is_open(state: &State) -> bool {
    state.modals.iter().any(|m| matches!(m, Modal::Wire(_)))
}

/// `w` / `:wire [server]`: open the view on `server` (every server for `None`).
pub(super) fn open(state: &mut State, server: Option<String>) {
    if let Some(Modal::Wire(v)) = state.modals.last_mut() {
        v.server = server;
        v.selected = 0;
        return;
    }
    state.modals.push(Modal::Wire(WireView::for_server(server)));
}

/// `w` wherever it is pressed: the detail view's task's server, the server under the top
/// of the servers view, the selected task's server, else every server.
pub(super) fn open_focused(state: &mut State) {
    let server = match state.modals.last() {
        Some(Modal::Doc(d)) if d.title == super::servers::VIEW_TITLE => {
            let above = d
                .lines
                .iter()
                .take(d.scroll + 1)
                .filter(|l| l.kind == LineKind::Heading)
                .count();
            state
                .servers
                .get(above.saturating_sub(1))
                .map(|s| s.id.as_str().to_string())
        }
        Some(Modal::Doc(_) | Modal::Roots(_)) => None,
        _ => state.focused_task().map(|k| k.server.as_str().to_string()),
    };
    open(state, server.map(|s| sanitize_line(&s, widths::SERVER_REF)));
}

/// An action while the wire view is on top; false when it is not the view's to take.
pub(super) fn on_action(state: &mut State, action: Action) -> bool {
    let last_seq = state.wire.last_seq();
    let servers: Vec<String> = state
        .wire
        .servers()
        .into_iter()
        .map(str::to_string)
        .collect();
    let len = match state.modals.last() {
        Some(Modal::Wire(v)) => shown(&state.wire, v).len(),
        _ => return false,
    };
    let page = state.page_rows.max(1) as isize;
    let Some(Modal::Wire(v)) = state.modals.last_mut() else {
        return false;
    };
    let step = match action {
        Action::Up => Some(-1),
        Action::Down => Some(1),
        Action::PageUp => Some(-page),
        Action::PageDown => Some(page),
        Action::Top => Some(isize::MIN / 2),
        Action::Bottom => Some(isize::MAX / 2),
        _ => None,
    };
    if let Some(step) = step {
        let last = len.saturating_sub(1) as isize;
        v.selected = (v.selected as isize).saturating_add(step).clamp(0, last) as usize;
        return true;
    }
    match action {
        Action::Pause => {
            v.paused_at = match v.paused_at {
                Some(_) => None,
                None => Some(last_seq),
            };
            v.selected = 0;
        }
        Action::Filter => v.editing = true,
        Action::FilterApply => v.editing = false,
        Action::FilterClear => {
            v.filter = Input::default();
            v.editing = false;
            v.selected = 0;
        }
        Action::NextTab | Action::PrevTab => {
            // every server, then each one in turn
            let mut order: Vec<Option<String>> = vec![None];
            order.extend(servers.into_iter().map(Some));
            let at = order.iter().position(|s| *s == v.server).unwrap_or(0) as isize;
            let delta = if action == Action::NextTab { 1 } else { -1 };
            let next = (at + delta).rem_euclid(order.len() as isize) as usize;
            v.server = order[next].clone();
            v.selected = 0;
        }
        Action::Select => open_selected(state),
        _ => return false,
    }
    true
}

/// A key typed into the filter line; false when the wire view is not editing.
pub(super) fn edit_filter(state: &mut State, key: Key) -> bool {
    let Some(Modal::Wire(v)) = state.modals.last_mut() else {
        return false;
    };
    if !v.editing {
        return false;
    }
    if let Some(req) = line_edit::request(key) {
        v.filter.handle(req);
        v.selected = 0;
    }
    true
}

/// `enter`: the selected message as pretty JSON, over the view.
fn open_selected(state: &mut State) {
    let Some(Modal::Wire(v)) = state.modals.last() else {
        return;
    };
    let list = shown(&state.wire, v);
    let Some(e) = list.get(v.selected.min(list.len().saturating_sub(1))) else {
        return;
    };
    let arrow = match e.direction {
        Direction::Send => "sent to",
        Direction::Recv => "received from",
    };
    let mut lines = vec![
        DocLine::field("message", &e.method),
        DocLine::field(arrow, &e.server),
        DocLine::field("transport", e.transport.as_str()),
        DocLine::field(
            "time",
            e.time.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        ),
        DocLine::new(LineKind::Dim, ""),
    ];
    lines.extend(json_lines(&e.message, 2000));
    let title = format!("{} {}", e.method, e.transport.as_str());
    state.modals.push(Modal::Doc(DocView {
        title: sanitize_line(&title, widths::WIRE_TITLE),
        lines,
        scroll: 0,
    }));
}
