//! The reducer's one dispatch point: `update` routes each message — a key read through the
//! keymap of the focused context, an action, an engine event, a loop result — to the
//! concept that owns it (board, forms, new task, cancel, inbox, command line, hints,
//! detail, notices, servers, rows, alerts, mouse). Synchronous and pure (the clock comes
//! in as `now`). Must not hold behaviour of its own beyond the routing.

use super::keymap::{Action, Context};
use super::keys::Key;
use super::modal::{ConfirmOp, Modal};
use super::payload::AfterPayload;
use super::{Effect, Msg, Now, State, TaskKey};
use super::{
    alerts, answer, board, cancel, command, consent, detail, foreground, forms, hints, inbox,
    mouse, new_task, notices, payload, roots, rows, sampling, servers, signin, stats, wire,
};
use crate::engine::{CallResult, EngineCommand, EngineEvent, UpdateSource};

/// Apply one message; returns the effects to execute, in order.
pub fn update(state: &mut State, msg: Msg, now: Now) -> Vec<Effect> {
    let mut fx = Vec::new();
    if !matches!(msg, Msg::Tick) {
        state.input_swept = false;
    }
    match msg {
        Msg::Key(key) => {
            state.ensure_view();
            on_key(state, key, now, &mut fx);
        }
        Msg::Mouse(m) => {
            state.ensure_view();
            if let Some(action) = mouse::on_mouse(state, m) {
                on_action(state, action, now, &mut fx);
            }
        }
        Msg::Engine(event) => {
            let watch = alerts::watch(state, &event);
            on_engine(state, event, now, &mut fx);
            alerts::ring(state, watch, &mut fx);
        }
        Msg::Wire(record) => state.wire.push(record),
        Msg::Answer(target) => forms::open_target(state, &target, now),
        Msg::BrowserFailed(error) => consent::browser_failed(state, &error, now),
        Msg::SamplingFinished {
            target,
            input_key,
            result,
        } => sampling::command_finished(state, target, input_key, result, now),
        Msg::Exported(result) => command::exported(state, result, now),
        Msg::TimelineLoaded { key, result } => detail::timeline_loaded(state, &key, result),
        Msg::PayloadLoaded { key, result, then } => {
            if payload::loaded(state, &key, result, then, now) == Some(AfterPayload::AskRerun) {
                new_task::ask_rerun(state, now, &mut fx);
            }
        }
        Msg::Viewport {
            table_rows,
            page_rows,
        } => board::viewport(state, table_rows, page_rows),
        Msg::StatsLoaded { range, result } => stats::loaded(state, range, result, now),
        Msg::Tick => {
            stats::tick(state, now, &mut fx);
            notices::age(state, now);
            if !std::mem::replace(&mut state.input_swept, true) {
                inbox::forget_answered(state);
            }
        }
    }
    fx
}

/// A key: the keymap of the focused context first; unbound keys edit the focused line.
fn on_key(state: &mut State, key: Key, now: Now, fx: &mut Vec<Effect>) {
    let ctx = state.context();
    let action = state.keymap.action(ctx, key);
    let action = match (ctx, action) {
        (Context::Form, action) => forms::key(state, key, action),
        (Context::Sampling, action) => sampling::key(state, key, action),
        (_, Some(action)) => Some(action),
        (Context::Command, None) => {
            command::edit(state, key);
            None
        }
        (Context::Filter, None) => {
            if !wire::edit_filter(state, key) && !new_task::edit_picker_query(state, key) {
                board::edit_filter(state, key);
            }
            None
        }
        (_, None) => None,
    };
    if let Some(action) = action {
        on_action(state, action, now, fx);
    }
}

/// An action, routed to the concept it belongs to.
fn on_action(state: &mut State, action: Action, now: Now, fx: &mut Vec<Effect>) {
    if wire::on_action(state, action) {
        return;
    }
    match action {
        Action::Quit => fx.push(Effect::Quit),
        Action::Help => state.modals.push(Modal::Help { scroll: 0 }),
        Action::Close | Action::Deny => {
            sampling::keep_draft(state);
            state.modals.pop();
        }
        Action::Up
        | Action::Down
        | Action::PageUp
        | Action::PageDown
        | Action::Top
        | Action::Bottom => navigate(state, action),
        Action::OpenDetail => detail::open(state, now, fx),
        Action::Answer => {
            if !state.refuse_read_only(now) {
                forms::open_focused(state, now);
            }
        }
        Action::Cancel => cancel::ask(state, now),
        Action::Rerun => new_task::ask_rerun(state, now, fx),
        Action::Confirm => {
            if let Some(Modal::Confirm(c)) = state.modals.pop() {
                match c.on_confirm {
                    ConfirmOp::CancelTask(key) => cancel::send(state, key, fx),
                    ConfirmOp::Rerun(key) => new_task::rerun(state, key, now, fx),
                }
            }
        }
        Action::NewTask => new_task::start(state, now, fx),
        Action::Select => match state.modals.last() {
            Some(Modal::Inbox(_)) => inbox::answer_selected(state, now),
            _ => new_task::picker_select(state, now, fx),
        },
        Action::Refresh if matches!(state.modals.last(), Some(Modal::Stats(_))) => {
            stats::reload(state, now, fx)
        }
        Action::Refresh => {
            if let Some(key) = state.focused_task() {
                fx.push(Effect::Engine(EngineCommand::Refresh {
                    server: key.server,
                    task_id: Some(key.task_id),
                }));
            }
        }
        Action::Inbox => inbox::open(state),
        Action::Servers => servers::open_view(state),
        Action::Hints => hints::open(state),
        Action::Command => command::open(state),
        Action::CommandRun => command::run(state, now, fx),
        Action::CommandCancel => command::close(state),
        Action::Complete => command::complete_line(state),
        Action::Filter | Action::FilterApply | Action::FilterClear
            if new_task::picker_query(state, action) => {}
        Action::Filter
        | Action::FilterApply
        | Action::FilterClear
        | Action::NextTab
        | Action::PrevTab
        | Action::SortNext
        | Action::SortReverse => board::on_action(state, action),
        Action::DismissNotice => notices::dismiss(state, now),
        Action::SignIn => signin::sign_in(state, None, now, fx),
        Action::NextField | Action::PrevField => {
            forms::move_focus(state, action == Action::NextField)
        }
        Action::Toggle => forms::toggle(state),
        Action::Submit => match state.modals.last() {
            Some(Modal::Input(_)) => forms::submit(state, now, fx),
            Some(Modal::ToolForm(_)) => new_task::submit(state, now, fx),
            Some(Modal::Sampling(_)) => sampling::submit(state, now, fx),
            Some(Modal::Consent(_)) => consent::done(state, now, fx),
            _ => {}
        },
        Action::OpenUrl => consent::open_url(state, fx),
        Action::CopyUrl => consent::copy_url(state, fx),
        Action::Done => consent::done(state, now, fx),
        Action::RunCommand => sampling::run_command(state, now, fx),
        Action::Roots => roots::open(state),
        Action::Wire => wire::open_focused(state),
        // Only the wire view pauses (it takes the action itself when on top).
        Action::Pause => {}
        Action::Stats => stats::open(state, now, fx),
        Action::StatsLonger | Action::StatsShorter => {
            stats::step_range(state, action == Action::StatsLonger, now, fx)
        }
        Action::Decline | Action::Dismiss => forms::decline(state, action, now, fx),
    }
    state.ensure_view();
}

/// How far a movement goes in a list whose page holds `page` rows.
fn steps(action: Action, page: usize) -> isize {
    let page = page as isize;
    match action {
        Action::Up => -1,
        Action::Down => 1,
        Action::PageUp => -page,
        Action::PageDown => page,
        Action::Top => isize::MIN / 2,
        _ => isize::MAX / 2,
    }
}

/// Up, down, page and top/bottom move whatever is on top: a document, the inbox, a
/// picker, else the table's selection.
fn navigate(state: &mut State, action: Action) {
    let page = state.page_rows;
    if detail::scroll(state, steps(action, page))
        || inbox::move_by(state, steps(action, page))
        || new_task::picker_move(state, steps(action, page))
    {
        return;
    }
    state.ensure_view();
    let rows = state.board.viewport;
    state.board.move_by(steps(action, rows), &state.tasks);
}

/// An engine event, routed to the concept that owns the fact.
fn on_engine(state: &mut State, event: EngineEvent, now: Now, fx: &mut Vec<Effect>) {
    match event {
        EngineEvent::ServerConnected {
            server,
            era,
            push,
            server_name,
        } => servers::connected(state, &server, era, push, server_name),
        EngineEvent::PushChanged { server, push } => servers::push_changed(state, &server, push),
        EngineEvent::ServerIdle { server } => servers::idle(state, &server),
        EngineEvent::LedgerOffline { waiting } => notices::ledger_offline(state, waiting, now),
        EngineEvent::TaskRemoved { server, task_id } => {
            rows::removed(state, &TaskKey::new(&server, &task_id), now)
        }
        EngineEvent::ServerUnreachable { server, why } => {
            servers::unreachable(state, &server, &why)
        }
        EngineEvent::ServerDegraded { server, reason } => {
            servers::degraded(state, &server, &reason);
            new_task::server_failing(state, &server);
        }
        EngineEvent::Reconnecting {
            server, attempt, ..
        } => {
            servers::reconnecting(state, &server, attempt);
            new_task::server_failing(state, &server);
        }
        EngineEvent::Stats {
            server,
            requests_total,
            requests_per_sec,
            errors_total,
            latencies_ms,
        } => {
            servers::stats(
                state,
                &server,
                requests_total,
                requests_per_sec,
                errors_total,
            );
            stats::latencies(state, &server, &latencies_ms);
        }
        EngineEvent::ServerMisbehaved {
            server,
            hint,
            detail,
        } => hints::misbehaved(state, &server, hint, &detail, now),
        EngineEvent::TaskKnown { server, task } => rows::known(state, &server, task, now),
        // The proxy that runs the call carries it out.
        EngineEvent::LocalAsked { .. } => {}
        EngineEvent::TaskNoted {
            server,
            task_id,
            note,
        } => rows::noted(state, &server, &task_id, note),
        EngineEvent::TasksResumed {
            server,
            tasks,
            more,
        } => rows::resumed(state, &server, tasks, more, now),
        EngineEvent::TaskUpdated {
            server,
            task,
            source,
            latency_ms,
            pending,
        } => {
            // a snapshot from the server itself (not one another process recorded)
            if source != UpdateSource::Ledger {
                servers::recovered(state, &server);
            }
            rows::snapshot(state, &server, task, &pending, source, latency_ms, now)
        }
        EngineEvent::TaskExpired {
            server,
            task_id,
            why,
        } => rows::expired(state, &TaskKey::new(&server, &task_id), why, now),
        EngineEvent::TaskNotFound { server, task_id } => {
            rows::not_found(state, &server, &task_id, now)
        }
        EngineEvent::InputRequested {
            server,
            task_id,
            key,
            request,
        } => {
            let task = TaskKey::new(&server, &task_id);
            inbox::first_seen(state, &task, &key, now);
            rows::input_requested(state, &task, &key, request);
        }
        EngineEvent::InputKeyReused {
            server,
            task_id,
            key,
        } => rows::input_key_reused(state, &TaskKey::new(&server, &task_id), &key, now),
        EngineEvent::Progress {
            server,
            task_id,
            progress,
            total,
        } => rows::progress(state, &TaskKey::new(&server, &task_id), progress, total),
        EngineEvent::AnswerSent {
            server, task_id, ..
        } => {
            servers::recovered(state, &server);
            answer::answer_sent(state, &TaskKey::new(&server, &task_id))
        }
        EngineEvent::AnswerFailed {
            server,
            task_id,
            keys,
            error,
        } => {
            let error = error.to_string();
            answer::answer_failed(state, &TaskKey::new(&server, &task_id), &keys, &error, now)
        }
        EngineEvent::CancelSent {
            server,
            task_id,
            acked,
        } => {
            if acked {
                servers::recovered(state, &server);
            }
            cancel::sent(state, &TaskKey::new(&server, &task_id), acked)
        }
        EngineEvent::CancelFailed {
            server,
            task_id,
            error,
        } => cancel::failed(state, &TaskKey::new(&server, &task_id), error.text(), now),
        EngineEvent::CallFinished {
            server,
            call_id,
            tool,
            result,
        } => {
            if !matches!(result, CallResult::Error { .. }) {
                servers::recovered(state, &server);
            }
            new_task::call_finished(state, server, call_id, tool, result, now)
        }
        EngineEvent::ToolsListed { server, tools } => {
            servers::recovered(state, &server);
            new_task::tools_listed(state, server, tools, now)
        }
        EngineEvent::ToolsListFailed { server, error } => {
            new_task::tools_list_failed(state, &server, &error, now)
        }
        EngineEvent::Notice {
            server,
            level,
            text,
        } => notices::engine_notice(state, server, level, text, now),
        EngineEvent::ForegroundInputRequested { .. } => {
            foreground::requested(state, event, now, fx)
        }
        EngineEvent::ForegroundInputClosed {
            server,
            key,
            reason,
        } => foreground::closed(state, &server, &key, &reason, now),
        EngineEvent::UrlElicitationCompleted {
            server,
            elicitation_id,
        } => consent::completed(state, &server, &elicitation_id, now),
        EngineEvent::RootsShared {
            server,
            task_id,
            roots,
        } => roots::shared(state, &server, task_id, roots, now),
        EngineEvent::SignInRequired { .. }
        | EngineEvent::SignInStarted { .. }
        | EngineEvent::SignInIgnored { .. }
        | EngineEvent::SignedIn { .. }
        | EngineEvent::SignInFailed { .. } => signin::on_event(state, &event, now),
    }
}
