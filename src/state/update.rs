//! The reducer: folds key presses, actions and engine events into `State` and returns the
//! effects the loop must run. Synchronous and pure (the clock comes in as `now`); form and
//! new-task flows live in `update_forms`. Must not do I/O.

use tui_input::InputRequest;

use super::detail::result_lines;
use super::keymap::{Action, Context};
use super::keys::{Key, KeyCode};
use super::modal::{Confirm, ConfirmOp, DetailView, DocView, Modal, TimelineState};
use super::task::{CancelMark, TaskRow, short_id};
use super::{Effect, Health, Msg, NOTICE_SECS, Now, State, TaskKey};
use super::{update_forms, update_power};
use crate::engine::{CallResult, EngineCommand, EngineEvent, NoticeLevel};

/// Apply one message; returns the effects to execute, in order.
pub fn update(state: &mut State, msg: Msg, now: Now) -> Vec<Effect> {
    let mut fx = Vec::new();
    if matches!(msg, Msg::Key(_) | Msg::Action(_)) {
        state.ensure_view();
    }
    match msg {
        Msg::Key(key) => on_key(state, key, now, &mut fx),
        Msg::Action(action) => on_action(state, action, now, &mut fx),
        Msg::Engine(event) => {
            let watch = update_power::alert_watch(state, &event);
            if !update_power::on_engine(state, &event, now) {
                on_engine(state, event, now);
            }
            update_power::alerts(state, watch, &mut fx);
        }
        Msg::Mouse(mouse) => {
            state.ensure_view();
            if let Some(action) = update_power::on_mouse(state, mouse) {
                on_action(state, action, now, &mut fx);
            }
        }
        Msg::Exported(result) => match result {
            Ok(path) => state.notify(
                NoticeLevel::Info,
                &format!("timeline written to {path}"),
                now,
            ),
            Err(e) => state.notify(NoticeLevel::Error, &format!("export failed: {e}"), now),
        },
        Msg::TimelineLoaded { key, result } => {
            for m in &mut state.modals {
                if let Modal::Detail(d) = m
                    && d.key == key
                {
                    d.timeline = match &result {
                        Ok(entries) => TimelineState::Loaded(entries.clone()),
                        Err(e) => TimelineState::Failed(e.clone()),
                    };
                }
            }
        }
        Msg::Viewport {
            table_rows,
            page_rows,
        } => {
            state.board.viewport = table_rows.max(1);
            state.page_rows = page_rows.max(1);
            state.board.clamp_offset();
        }
        Msg::Tick => {
            state
                .notices
                .retain(|n| (now - n.at).num_seconds() < NOTICE_SECS * 4);
            update_power::tick(state);
        }
    }
    fx
}

fn on_key(state: &mut State, key: Key, now: Now, fx: &mut Vec<Effect>) {
    let ctx = state.context();
    match ctx {
        Context::Command => match state.keymap.action(ctx, key) {
            Some(action) => on_action(state, action, now, fx),
            None => update_power::command_key(state, key),
        },
        Context::Form => {
            if let Some(action) = update_forms::form_key(state, key) {
                on_action(state, action, now, fx);
            }
        }
        Context::Filter => {
            if let Some(action) = state.keymap.action(ctx, key) {
                return on_action(state, action, now, fx);
            }
            let req = match key.code {
                _ if key.text_char().is_some() => key.text_char().map(InputRequest::InsertChar),
                KeyCode::Backspace => Some(InputRequest::DeletePrevChar),
                KeyCode::Delete => Some(InputRequest::DeleteNextChar),
                KeyCode::Left => Some(InputRequest::GoToPrevChar),
                KeyCode::Right => Some(InputRequest::GoToNextChar),
                KeyCode::Home => Some(InputRequest::GoToStart),
                KeyCode::End => Some(InputRequest::GoToEnd),
                _ => None,
            };
            if let Some(req) = req {
                state.board.filter.edit(req);
                state.board.dirty = true;
                state.ensure_view();
            }
        }
        _ => {
            if let Some(action) = state.keymap.action(ctx, key) {
                on_action(state, action, now, fx);
            }
        }
    }
}

/// Refuse a mutating action in read-only mode. Returns true when refused.
pub(super) fn refuse_read_only(state: &mut State, now: Now) -> bool {
    if state.read_only {
        state.notify(
            NoticeLevel::Warn,
            "read-only: cancel, answer and new calls are disabled",
            now,
        );
    }
    state.read_only
}

fn scroll(state: &mut State, delta: isize) -> bool {
    let slot = match state.modals.last_mut() {
        Some(Modal::Detail(d)) => &mut d.scroll,
        Some(Modal::Doc(d)) => &mut d.scroll,
        Some(Modal::Help { scroll }) => scroll,
        _ => return false,
    };
    *slot = if delta == isize::MIN {
        0
    } else if delta == isize::MAX {
        usize::MAX / 2
    } else {
        slot.saturating_add_signed(delta).min(usize::MAX / 2)
    };
    true
}

fn on_action(state: &mut State, action: Action, now: Now, fx: &mut Vec<Effect>) {
    if update_power::on_action(state, action, now, fx) {
        state.ensure_view();
        return;
    }
    let page = state.page_rows as isize;
    let rows = state.board.viewport as isize;
    let (delta, board_delta) = match action {
        Action::Up => (-1, -1),
        Action::Down => (1, 1),
        Action::PageUp => (-page, -rows),
        Action::PageDown => (page, rows),
        Action::Top => (isize::MIN, isize::MIN / 2),
        Action::Bottom => (isize::MAX, isize::MAX / 2),
        _ => (0, 0),
    };
    match action {
        Action::Quit => {
            state.quit = true;
            fx.push(Effect::Quit);
        }
        Action::Help => state.modals.push(Modal::Help { scroll: 0 }),
        Action::Close | Action::Deny => {
            state.modals.pop();
        }
        Action::Up
        | Action::Down
        | Action::PageUp
        | Action::PageDown
        | Action::Top
        | Action::Bottom => {
            if scroll(state, delta) {
                return;
            }
            if update_forms::picker_move(state, delta.signum()) {
                return;
            }
            state.ensure_view();
            state.board.move_by(board_delta);
        }
        Action::OpenDetail => {
            let Some(row) = state.selected_row() else {
                return;
            };
            if row.needs_input() && !row.pending.is_empty() && !state.read_only {
                return update_forms::open_input_form(state, now);
            }
            let key = row.key.clone();
            state.modals.push(Modal::Detail(DetailView {
                key: key.clone(),
                scroll: 0,
                timeline: TimelineState::Loading,
            }));
            fx.push(Effect::LoadTimeline(key));
        }
        Action::Answer => {
            if !refuse_read_only(state, now) {
                update_forms::open_input_form(state, now);
            }
        }
        Action::Cancel => ask_cancel(state, now),
        Action::Confirm => {
            if let Some(Modal::Confirm(c)) = state.modals.pop() {
                match c.on_confirm {
                    ConfirmOp::CancelTask(key) => {
                        if let Some(row) = state.tasks.get_mut(&key)
                            && !row.is_terminal()
                        {
                            row.cancel = Some(CancelMark { acked: false });
                            state.board.dirty = true;
                            fx.push(Effect::Engine(EngineCommand::Cancel {
                                server: key.server.clone(),
                                task_id: key.task_id.clone(),
                            }));
                        }
                    }
                    ConfirmOp::Rerun(key) => update_power::rerun(state, key, now, fx),
                }
            }
        }
        Action::NewTask => {
            if !refuse_read_only(state, now) {
                update_forms::start_new_task(state, now, fx);
            }
        }
        Action::Select => update_forms::picker_select(state, now, fx),
        Action::Refresh
        | Action::Rerun
        | Action::Inbox
        | Action::Hints
        | Action::Command
        | Action::CommandRun
        | Action::CommandCancel
        | Action::Complete => {}
        Action::Filter => state.board.filter.editing = true,
        Action::FilterApply => state.board.filter.editing = false,
        Action::FilterClear => {
            state.board.filter = Default::default();
            state.board.dirty = true;
        }
        Action::NextTab | Action::PrevTab => {
            state.board.tab = state.board.tab.cycle(action == Action::NextTab);
            state.board.dirty = true;
        }
        Action::SortNext => {
            state.board.sort = state.board.sort.next();
            state.board.dirty = true;
        }
        Action::SortReverse => {
            state.board.descending = !state.board.descending;
            state.board.dirty = true;
        }
        Action::DismissNotice => {
            state
                .notices
                .retain(|n| (now - n.at).num_seconds() < NOTICE_SECS);
            state.notices.pop();
        }
        Action::NextField
        | Action::PrevField
        | Action::Toggle
        | Action::Submit
        | Action::Decline
        | Action::Dismiss => update_forms::form_action(state, action, now, fx),
    }
    state.ensure_view();
}

fn ask_cancel(state: &mut State, now: Now) {
    if refuse_read_only(state, now) {
        return;
    }
    let key = match state.modals.last() {
        Some(Modal::Detail(d)) => Some(d.key.clone()),
        _ => state.board.selected.clone(),
    };
    let Some(row) = key.as_ref().and_then(|k| state.tasks.get(k)) else {
        return state.notify(NoticeLevel::Info, "no task selected", now);
    };
    if row.is_terminal() {
        let status = row
            .status()
            .map(|s| s.as_str().to_string())
            .unwrap_or_default();
        return state.notify(NoticeLevel::Info, &format!("task already {status}"), now);
    }
    if row.cancel.is_some() {
        return state.notify(NoticeLevel::Info, "cancel already requested", now);
    }
    let tool = row.tool.clone().unwrap_or_else(|| "task".to_string());
    let body = format!(
        "Cancel {} {} on {}? The server may still finish it.",
        crate::sanitize::sanitize_line(&tool, 40),
        row.short_id(),
        crate::sanitize::sanitize_line(row.key.server.as_str(), 40),
    );
    let key = row.key.clone();
    state.modals.push(Modal::Confirm(Confirm {
        title: "Cancel task".to_string(),
        body,
        on_confirm: ConfirmOp::CancelTask(key),
    }));
}

fn row_mut<'a>(state: &'a mut State, key: &TaskKey) -> &'a mut TaskRow {
    state.board.dirty = true;
    state
        .tasks
        .entry(key.clone())
        .or_insert_with(|| TaskRow::new(key.clone()))
}

fn on_engine(state: &mut State, event: EngineEvent, now: Now) {
    match event {
        EngineEvent::ServerConnected {
            server,
            era,
            push,
            server_name,
        } => {
            let s = state.server_mut(&server);
            s.era = Some(era);
            s.push = push;
            s.health = Health::Connected;
            s.name = server_name.map(|n| crate::sanitize::sanitize_line(&n, 40));
        }
        EngineEvent::PushChanged { server, push } => {
            let s = state.server_mut(&server);
            s.push = push;
            // A push stream that is back means the reconnect it announced is over.
            if push && matches!(s.health, Health::Reconnecting { .. }) {
                s.health = Health::Connected;
            }
        }
        EngineEvent::ServerDegraded { server, reason } => {
            state.server_mut(&server).health =
                Health::Degraded(crate::sanitize::sanitize_line(&reason, 120));
        }
        EngineEvent::Reconnecting {
            server, attempt, ..
        } => state.server_mut(&server).health = Health::Reconnecting { attempt },
        EngineEvent::TaskKnown {
            server,
            task_id,
            tool,
            arguments,
            recorded_at,
            last,
            expired,
            parent_task,
        } => {
            let key = TaskKey::new(&server, &task_id);
            let row = row_mut(state, &key);
            row.tool = tool.or(row.tool.take());
            row.arguments = arguments.or(row.arguments.take());
            row.recorded_at = Some(recorded_at);
            row.parent_task = parent_task;
            row.expired |= expired;
            if let Some(task) = last {
                let seen = row.seen_at;
                row.apply_snapshot(task, None, None, now);
                row.seen_at = seen;
            }
            row.created = row.created.or(Some(recorded_at));
        }
        EngineEvent::TaskUpdated {
            server,
            task,
            source,
            latency_ms,
        } => {
            let key = TaskKey::new(&server, &task.task_id);
            let row = row_mut(state, &key);
            if row.apply_snapshot(task, Some(source), latency_ms, now) && row.is_terminal() {
                close_input_form(state, &key, now);
            }
        }
        EngineEvent::TaskExpired { server, task_id } => {
            let key = TaskKey::new(&server, &task_id);
            let row = row_mut(state, &key);
            row.expired = true;
            row.pending.clear();
            close_input_form(state, &key, now);
        }
        EngineEvent::InputRequested {
            server,
            task_id,
            key,
            request,
        } => {
            let tk = TaskKey::new(&server, &task_id);
            row_mut(state, &tk).offer_input(&key, request);
        }
        EngineEvent::InputKeyReused {
            server,
            task_id,
            key,
        } => {
            let tk = TaskKey::new(&server, &task_id);
            let row = row_mut(state, &tk);
            row.pending.remove(&key);
            row.reused.insert(key.clone());
            let text = format!(
                "{} reused input key {key} for a different request (server bug); not re-prompted",
                short_id(&task_id)
            );
            state.notify(NoticeLevel::Warn, &text, now);
        }
        EngineEvent::AnswerSent {
            server, task_id, ..
        } => {
            let tk = TaskKey::new(&server, &task_id);
            if let Some(mark) = state.tasks.get_mut(&tk).and_then(|r| r.answer.as_mut()) {
                mark.acked = true;
                state.board.dirty = true;
            }
        }
        EngineEvent::AnswerFailed {
            server,
            task_id,
            keys,
            error,
        } => {
            let tk = TaskKey::new(&server, &task_id);
            if let Some(row) = state.tasks.get_mut(&tk) {
                if let Some(mark) = row.answer.take() {
                    for (k, req) in mark.requests {
                        row.answered.remove(&k);
                        if keys.contains(&k) || keys.is_empty() {
                            row.offer_input(&k, req);
                        }
                    }
                }
                state.board.dirty = true;
            }
            let text = format!("answer to {} failed: {error}", short_id(&task_id));
            state.notify(NoticeLevel::Error, &text, now);
        }
        EngineEvent::CancelSent { server, task_id } => {
            let tk = TaskKey::new(&server, &task_id);
            if let Some(c) = state.tasks.get_mut(&tk).and_then(|r| r.cancel.as_mut()) {
                c.acked = true;
                state.board.dirty = true;
            }
        }
        EngineEvent::CancelFailed {
            server,
            task_id,
            error,
        } => {
            let tk = TaskKey::new(&server, &task_id);
            if let Some(row) = state.tasks.get_mut(&tk) {
                row.cancel = None;
                state.board.dirty = true;
            }
            let text = format!("cancel of {} failed: {error}", short_id(&task_id));
            state.notify(NoticeLevel::Error, &text, now);
        }
        EngineEvent::CallFinished {
            server,
            call_id,
            tool,
            result,
        } => {
            state.calls.remove(&call_id);
            match result {
                CallResult::Task { task_id } => {
                    let tk = TaskKey::new(&server, &task_id);
                    let row = row_mut(state, &tk);
                    row.tool = row.tool.take().or(Some(tool.clone()));
                    let text = format!("{tool}: task {} started", short_id(&task_id));
                    state.notify(NoticeLevel::Info, &text, now);
                }
                CallResult::Plain { result } => {
                    let title = format!(
                        "{} on {}: result",
                        crate::sanitize::sanitize_line(&tool, 40),
                        crate::sanitize::sanitize_line(server.as_str(), 40)
                    );
                    state.modals.push(Modal::Doc(DocView {
                        title,
                        lines: result_lines(&result),
                        scroll: 0,
                    }));
                }
                CallResult::Error { message } => {
                    let text = format!("{tool} failed: {message}");
                    state.notify(NoticeLevel::Error, &text, now);
                }
            }
        }
        EngineEvent::ToolsListed { server, tools } => {
            update_forms::tools_listed(state, server, tools, now)
        }
        EngineEvent::Progress {
            server,
            task_id,
            progress,
            total,
        } => {
            row_mut(state, &TaskKey::new(&server, &task_id)).reported = Some((progress, total));
        }
        EngineEvent::Stats {
            server,
            requests_total,
            requests_per_sec,
            errors_total,
        } => {
            let s = state.server_mut(&server);
            s.requests_total = requests_total;
            s.requests_per_sec = requests_per_sec;
            s.errors_total = errors_total;
        }
        // handled by update_power
        EngineEvent::ToolsListFailed { .. } | EngineEvent::ServerMisbehaved { .. } => {}
        EngineEvent::Notice {
            server,
            level,
            text,
        } => {
            let text = match server {
                Some(s) => format!("{s}: {text}"),
                None => text,
            };
            state.notify(level, &text, now);
        }
    }
}

/// A terminal or expired task closes its open input form without sending anything.
fn close_input_form(state: &mut State, key: &TaskKey, now: Now) {
    let before = state.modals.len();
    state
        .modals
        .retain(|m| !matches!(m, Modal::Input(f) if &f.key == key));
    if state.modals.len() != before {
        let text = format!(
            "task {} ended while its form was open; nothing was sent",
            short_id(&key.task_id)
        );
        state.notify(NoticeLevel::Info, &text, now);
    }
}
