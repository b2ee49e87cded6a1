//! Documents for the detail and result views: every field of a task, its result's content
//! blocks (text, structured JSON, media placeholders, resource links) or its error, and
//! its timeline, as sanitized, bounded lines. Large payloads are cut before any work, so
//! building a document never freezes the UI. Also the views' part of the reducer: opening
//! a task, its timeline arriving, scrolling. Must not render.

use std::io::{self, Write};

use serde_json::Value;

use super::modal::{DetailView, Modal, TimelineState};
use super::payload::{self, AfterPayload};
use super::task::{Phase, TaskRow};
use super::time::{Now, short_duration};
use super::{Effect, State, TaskKey, TimelineEntry, forms};
use crate::sanitize::{sanitize_block, sanitize_line};

/// Lines kept per text block.
const MAX_BLOCK_LINES: usize = 400;
/// Columns kept per line (views wrap what is kept).
const MAX_COLS: usize = 400;
/// Bytes of pretty JSON produced at most.
const MAX_JSON_BYTES: usize = 64 * 1024;

/// How a line is styled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    Heading,
    /// A heading inside a section (a content block).
    SubHeading,
    /// `label: value`.
    Field,
    Body,
    Code,
    Dim,
    Error,
    Link,
}

/// One line of a document; `text` is already sanitized.
#[derive(Debug, Clone, PartialEq)]
pub struct DocLine {
    pub kind: LineKind,
    pub label: Option<String>,
    pub text: String,
}

impl DocLine {
    pub fn new(kind: LineKind, text: impl Into<String>) -> DocLine {
        DocLine {
            kind,
            label: None,
            text: text.into(),
        }
    }

    pub fn field(label: &str, value: impl AsRef<str>) -> DocLine {
        DocLine {
            kind: LineKind::Field,
            label: Some(label.to_string()),
            text: sanitize_line(value.as_ref(), MAX_COLS),
        }
    }
}

struct Limited {
    buf: Vec<u8>,
    limit: usize,
}

impl Write for Limited {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.buf.len() + data.len() > self.limit {
            return Err(io::Error::other("limit"));
        }
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Break `text` into lines of at most `width` characters at spaces (a longer word gets a
/// line of its own).
pub fn wrap_words(text: &str, width: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split_whitespace() {
        let last = lines.last_mut().expect("never empty");
        if !last.is_empty() && last.chars().count() + 1 + word.chars().count() > width {
            lines.push(word.to_string());
        } else {
            if !last.is_empty() {
                last.push(' ');
            }
            last.push_str(word);
        }
    }
    lines
}

/// Pretty JSON, cut after `MAX_JSON_BYTES` and `max_lines` lines.
pub fn json_lines(v: &Value, max_lines: usize) -> Vec<DocLine> {
    let mut w = Limited {
        buf: Vec::new(),
        limit: MAX_JSON_BYTES,
    };
    let cut = serde_json::to_writer_pretty(&mut w, v).is_err();
    let text = String::from_utf8_lossy(&w.buf);
    let mut lines: Vec<DocLine> = sanitize_block(&text, max_lines, MAX_COLS)
        .into_iter()
        .map(|l| DocLine::new(LineKind::Code, l))
        .collect();
    if cut {
        lines.push(DocLine::new(
            LineKind::Dim,
            format!("… (JSON cut at {})", human_bytes(MAX_JSON_BYTES as u64)),
        ));
    }
    lines
}

/// `1.5 KB`, `10.0 MB`.
pub fn human_bytes(n: u64) -> String {
    match n {
        n if n < 1024 => format!("{n} B"),
        n if n < 1024 * 1024 => format!("{:.1} KB", n as f64 / 1024.0),
        n => format!("{:.1} MB", n as f64 / (1024.0 * 1024.0)),
    }
}

fn base64_size(data: &str) -> u64 {
    let trimmed = data.trim_end_matches('=');
    (trimmed.len() as u64 * 3) / 4
}

/// The content blocks of a `CallToolResult` (and its `structuredContent`).
pub fn result_lines(result: &Value) -> Vec<DocLine> {
    let mut out = Vec::new();
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        out.push(DocLine::new(
            LineKind::Error,
            "The tool reported an error (isError: true)",
        ));
    }
    let blocks = result.get("content").and_then(Value::as_array);
    for (i, block) in blocks.into_iter().flatten().enumerate() {
        let ty = block.get("type").and_then(Value::as_str).unwrap_or("?");
        let mime = block
            .get("mimeType")
            .or_else(|| block.pointer("/resource/mimeType"))
            .and_then(Value::as_str)
            .map(|m| sanitize_line(m, 60))
            .unwrap_or_else(|| "unknown type".to_string());
        let heading = |s: String| DocLine::new(LineKind::SubHeading, format!("[{}] {s}", i + 1));
        match ty {
            "text" => {
                let text = block.get("text").and_then(Value::as_str).unwrap_or("");
                out.push(heading(format!("text, {}", human_bytes(text.len() as u64))));
                out.extend(text_lines(text));
            }
            "image" | "audio" => {
                let data = block.get("data").and_then(Value::as_str).unwrap_or("");
                out.push(heading(format!(
                    "{ty} ({mime}, {})",
                    human_bytes(base64_size(data))
                )));
                out.push(DocLine::new(LineKind::Dim, format!("<{ty} not shown>")));
            }
            "resource" => {
                let res = block.get("resource").cloned().unwrap_or(Value::Null);
                let uri = res.get("uri").and_then(Value::as_str).unwrap_or("");
                out.push(heading(format!("embedded resource ({mime})")));
                out.push(DocLine::new(LineKind::Link, sanitize_line(uri, MAX_COLS)));
                if let Some(text) = res.get("text").and_then(Value::as_str) {
                    out.extend(text_lines(text));
                } else if let Some(blob) = res.get("blob").and_then(Value::as_str) {
                    out.push(DocLine::new(
                        LineKind::Dim,
                        format!("<binary, {}>", human_bytes(base64_size(blob))),
                    ));
                }
            }
            "resource_link" => {
                let uri = block.get("uri").and_then(Value::as_str).unwrap_or("");
                let name = block.get("name").and_then(Value::as_str).unwrap_or("");
                out.push(heading(format!("resource link ({mime})")));
                if !name.is_empty() {
                    out.push(DocLine::field("name", name));
                }
                out.push(DocLine::new(LineKind::Link, sanitize_line(uri, MAX_COLS)));
            }
            other => {
                out.push(heading(format!("{} block", sanitize_line(other, 40))));
                out.extend(json_lines(block, 40));
            }
        }
    }
    if let Some(s) = result.get("structuredContent") {
        out.push(DocLine::new(LineKind::SubHeading, "structuredContent"));
        out.extend(json_lines(s, MAX_BLOCK_LINES));
    }
    if blocks.is_none() && result.get("structuredContent").is_none() {
        out.push(DocLine::new(LineKind::SubHeading, "result (raw JSON)"));
        out.extend(json_lines(result, MAX_BLOCK_LINES));
    }
    out
}

fn text_lines(text: &str) -> Vec<DocLine> {
    let mut lines: Vec<DocLine> = sanitize_block(text, MAX_BLOCK_LINES, MAX_COLS)
        .into_iter()
        .map(|l| DocLine::new(LineKind::Body, l))
        .collect();
    if text.len() > 256 * 1024 || lines.len() > MAX_BLOCK_LINES {
        lines.push(DocLine::new(
            LineKind::Dim,
            format!(
                "… ({} in total; truncated for display: `taskrail get ID` prints it whole)",
                human_bytes(text.len() as u64)
            ),
        ));
    }
    lines
}

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
                &sanitize_line(k, 30),
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
                sanitize_line(k, 30)
            ),
        ));
    }
    out.push(DocLine::new(LineKind::Heading, "Timeline"));
    match timeline {
        TimelineState::Loading => out.push(DocLine::new(LineKind::Dim, "loading…")),
        TimelineState::Failed(e) => out.push(DocLine::new(
            LineKind::Error,
            format!("timeline unavailable: {}", sanitize_line(e, 200)),
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
