//! The detail view: every field of a task, its result (see `doc.rs` for the content
//! blocks) or its error, and its timeline, as sanitized, bounded lines; and its part of the
//! reducer: opening a task, its timeline arriving, scrolling. Must not render.

use super::doc::{DocLine, LineKind, MAX_COLS, json_lines, result_lines};
use super::modal::{DetailView, Modal, TimelineState};
use super::payload::{self, AfterPayload};
use super::task::{Phase, TaskRow};
use super::time::{Now, short_duration};
use super::{Effect, State, TaskKey, TimelineEntry, forms};
use crate::sanitize::sanitize_line;
use crate::state::widths;

fn phase_text(row: &TaskRow) -> String {
    match row.phase() {
        Phase::Unknown => "unknown (no snapshot yet)".to_string(),
        Phase::Live(s) | Phase::Done(s) => s.as_str().to_string(),
        Phase::ToolError => "ended with a tool error (isError: true)".to_string(),
        Phase::CancelRequested { acked: true } => "cancel requested".to_string(),
        Phase::CancelRequested { acked: false } => "cancel sending".to_string(),
        Phase::EndedAnyway(s) => format!("{} anyway (cancel was requested)", s.as_str()),
        Phase::Gone(why) => format!("{} (no longer followed)", why.describe()),
    }
}

/// The whole detail document of a task.
pub fn task_doc(row: &TaskRow, timeline: &TimelineState, now: Now) -> Vec<DocLine> {
    let mut out = vec![DocLine::new(LineKind::Heading, "Task")];
    out.push(DocLine::field("server", row.key.server.as_str()));
    out.push(DocLine::field("task id", row.key.task_id.as_str()));
    out.push(DocLine::field(
        "tool",
        row.tool.as_deref().unwrap_or("(unknown)"),
    ));
    if let Some(by) = &row.started_by {
        out.push(DocLine::field("started by", by));
    }
    if let Some(note) = row.note.as_deref() {
        if let Some(host) = &note.host {
            let still = if row.is_over() { "" } else { "; still running" };
            let why = note
                .host_reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default();
            out.push(DocLine::field("client", format!("{host}{still}{why}")));
        }
        if let Some(by) = &note.cancel_by {
            out.push(DocLine::field("cancel asked by", by));
        }
    }
    out.push(DocLine::field("state", phase_text(row)));
    if let Some(why) = row.failure_reason() {
        out.push(DocLine {
            kind: LineKind::Error,
            label: Some("reason".to_string()),
            text: why,
        });
    }
    if let Some(m) = row.task.as_ref().and_then(|t| t.status_message.as_ref()) {
        out.push(DocLine::field("message", m));
    }
    if row.payload_in_ledger {
        out.push(DocLine::new(LineKind::Heading, "Result"));
        out.push(DocLine::new(LineKind::Dim, "loading from the ledger…"));
    }
    if let Some(t) = &row.task {
        if let Some(r) = &t.result {
            out.push(DocLine::new(LineKind::Heading, "Result"));
            out.extend(result_lines(r));
        }
        if let Some(e) = &t.error {
            out.push(DocLine::new(LineKind::Heading, "Error"));
            out.push(DocLine::field("code", e.code.to_string()));
            out.push(DocLine::field("message", &e.message));
            if let Some(d) = &e.data {
                out.push(DocLine::new(LineKind::Dim, "data:"));
                out.extend(json_lines(d, 60));
            }
        }
    }
    out.push(DocLine::new(LineKind::Heading, "Timing"));
    if let Some(t) = &row.task {
        let ts = |raw: &Option<String>| raw.clone().unwrap_or_else(|| "-".to_string());
        out.push(DocLine::field("created", ts(&t.created_at)));
        out.push(DocLine::field("updated", ts(&t.last_updated_at)));
        let ttl = match (t.ttl_ms, row.expires_at()) {
            (None, _) => "unlimited".to_string(),
            (Some(ms), Some(at)) if at > now => {
                format!("{ms} ms ({} left)", short_duration(at - now))
            }
            (Some(ms), Some(_)) => format!("{ms} ms (past)"),
            (Some(ms), None) => format!("{ms} ms"),
        };
        out.push(DocLine::field("ttl", ttl));
        if let Some(p) = t.poll_interval_ms {
            out.push(DocLine::field("poll interval", format!("{p} ms")));
        }
    }
    if let Some(seen) = row.seen_at {
        let via = row.last_source.map(|s| s.as_str()).unwrap_or("-");
        let lat = row
            .latency_ms
            .map(|l| format!(", {l} ms"))
            .unwrap_or_default();
        out.push(DocLine::field(
            "last seen",
            format!("{} ago via {via}{lat}", short_duration(now - seen)),
        ));
    }
    if let Some(f) = row.fraction() {
        out.push(DocLine::field("progress", format!("{:.0}%", f * 100.0)));
    }
    if row.expired {
        out.push(DocLine::field(
            "expired",
            "the server no longer knows this task",
        ));
    }
    if let Some(p) = &row.parent_task {
        out.push(DocLine::field("re-run of", p.prefix()));
    }
    if let Some(args) = &row.arguments {
        out.push(DocLine::new(LineKind::Heading, "Arguments"));
        out.extend(json_lines(args, 60));
    }
    if !row.pending.is_empty() {
        out.push(DocLine::new(LineKind::Heading, "Waiting for input"));
        for (k, req) in &row.pending {
            let msg = req.message().unwrap_or("");
            out.push(DocLine::field(
                &sanitize_line(k, widths::KEY),
                format!("{}: {msg}", req.method),
            ));
        }
    }
    if let Some(more) = row
        .task
        .as_ref()
        .map(|t| t.more_input_requests)
        .filter(|n| *n > 0)
    {
        out.push(DocLine::new(
            LineKind::Dim,
            format!(
                "… {more} more input request{} not shown (they appear as these are answered)",
                if more == 1 { "" } else { "s" }
            ),
        ));
    }
    for k in &row.reused {
        out.push(DocLine::new(
            LineKind::Error,
            format!(
                "input key {} was reused for a different request",
                sanitize_line(k, widths::KEY)
            ),
        ));
    }
    out.push(DocLine::new(LineKind::Heading, "Timeline"));
    match timeline {
        TimelineState::Loading => out.push(DocLine::new(LineKind::Dim, "loading…")),
        TimelineState::Failed(e) => out.push(DocLine::new(
            LineKind::Error,
            format!(
                "timeline unavailable: {}",
                sanitize_line(e, widths::ERROR_LINE)
            ),
        )),
        TimelineState::Loaded(entries) if entries.is_empty() => {
            out.push(DocLine::new(LineKind::Dim, "(no entries)"))
        }
        TimelineState::Loaded(entries) => {
            for e in entries.iter().take(500) {
                let lat = e
                    .latency_ms
                    .map(|l| format!(" ({l} ms)"))
                    .unwrap_or_default();
                out.push(DocLine {
                    kind: LineKind::Field,
                    label: Some(e.at.format("%H:%M:%S").to_string()),
                    text: sanitize_line(&format!("{}{lat} {}", e.kind, e.detail), MAX_COLS),
                });
            }
        }
    }
    out
}

/// `enter` on a task: its input form when it waits for input (and may be answered), else
/// its detail view, whose timeline loads through an effect.
pub(super) fn open(state: &mut State, now: Now, fx: &mut Vec<Effect>) {
    let Some(row) = state.selected_row() else {
        return;
    };
    if row.needs_input() && !row.pending.is_empty() && !state.read_only {
        return forms::open_focused(state, now);
    }
    let key = row.key.clone();
    payload::load(state, &key, AfterPayload::Show, fx);
    state.modals.push(Modal::Detail(DetailView {
        key: key.clone(),
        scroll: 0,
        timeline: TimelineState::Loading,
    }));
    fx.push(Effect::LoadTimeline(key));
}

/// The ledger answered an `Effect::LoadTimeline`.
pub(super) fn timeline_loaded(
    state: &mut State,
    key: &TaskKey,
    result: Result<Vec<TimelineEntry>, String>,
) {
    for m in &mut state.modals {
        if let Modal::Detail(d) = m
            && &d.key == key
        {
            d.timeline = match &result {
                Ok(entries) => TimelineState::Loaded(entries.clone()),
                Err(e) => TimelineState::Failed(e.clone()),
            };
        }
    }
}

/// Scroll the document on top (detail, result or hints view, help) by `delta` lines;
/// false when no document is on top. The view clamps past the end.
pub(super) fn scroll(state: &mut State, delta: isize) -> bool {
    let slot = match state.modals.last_mut() {
        Some(Modal::Detail(d)) => &mut d.scroll,
        Some(Modal::Doc(d)) => &mut d.scroll,
        Some(Modal::Help { scroll }) => scroll,
        Some(Modal::Roots(v)) => &mut v.scroll,
        Some(Modal::Consent(v)) => &mut v.scroll,
        Some(Modal::Sampling(v)) => &mut v.scroll,
        _ => return false,
    };
    *slot = slot.saturating_add_signed(delta).min(usize::MAX / 2);
    true
}
