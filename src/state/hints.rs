//! Conformance hints per server: what a server did against the tasks protocol, kept as
//! one record per kind (count, first and last time, latest evidence), one notice the first
//! time a kind shows, and the document listing them with advice for the server's authors.
//! Must not render or do I/O.

use super::doc::{DocLine, LineKind, wrap_words};
use super::modal::{DocView, Modal};
use super::{Now, ServerState, State};
use crate::engine::{Hint, NoticeLevel, ServerId};
use crate::sanitize::sanitize_line;
use crate::state::widths;

#[derive(Debug, Clone, PartialEq)]
pub struct HintRecord {
    pub hint: Hint,
    /// The latest evidence (sanitized).
    pub detail: String,
    pub count: u32,
    pub first_at: Now,
    pub last_at: Now,
}

/// Fold one finding into the server's records.
pub fn record(server: &mut ServerState, hint: Hint, detail: &str, now: Now) {
    let detail = sanitize_line(detail, widths::ERROR_LINE);
    match server.hints.iter_mut().find(|r| r.hint == hint) {
        Some(r) => {
            r.count = r.count.saturating_add(1);
            r.detail = detail;
            r.last_at = now;
        }
        None => {
            server.hints.push(HintRecord {
                hint,
                detail,
                count: 1,
                first_at: now,
                last_at: now,
            });
            server.hints.sort_by_key(|r| r.hint);
        }
    }
}

/// The engine saw the server break a rule: record it, and say so the first time.
pub(super) fn misbehaved(state: &mut State, server: &ServerId, hint: Hint, detail: &str, now: Now) {
    let s = state.server_mut(server);
    let first = !s.hints.iter().any(|r| r.hint == hint);
    record(s, hint, detail, now);
    if first {
        let text = format!(
            "{server}: conformance hint: {} (H lists them)",
            hint.title()
        );
        state.notify(NoticeLevel::Warn, &text, now);
    }
}

/// `H` / `:hints`: the hints view.
pub(super) fn open(state: &mut State) {
    state.modals.push(Modal::Doc(DocView {
        title: "Conformance hints for server authors".to_string(),
        lines: hints_doc(state),
        scroll: 0,
    }));
}

/// Every server's hints with advice, for the hints view.
pub fn hints_doc(state: &State) -> Vec<DocLine> {
    let mut out = Vec::new();
    let mut any = false;
    for s in &state.servers {
        if s.hints.is_empty() {
            continue;
        }
        any = true;
        out.push(DocLine::new(
            LineKind::Heading,
            format!(
                "{} — {} kind(s)",
                sanitize_line(s.id.as_str(), widths::NAME_IN_TITLE),
                s.hints.len()
            ),
        ));
        for r in &s.hints {
            out.push(DocLine::new(
                LineKind::SubHeading,
                format!("⚠ {} (×{})", r.hint.title(), r.count),
            ));
            out.push(DocLine::field("last seen", r.detail.clone()));
            out.push(DocLine::field(
                "since",
                r.first_at.format("%H:%M:%S UTC").to_string(),
            ));
            for line in wrap_words(r.hint.advice(), 76) {
                out.push(DocLine::new(LineKind::Body, line));
            }
            out.push(DocLine::new(LineKind::Dim, ""));
        }
    }
    if !any {
        out.push(DocLine::new(
            LineKind::Dim,
            "No server has broken a rule of the tasks protocol so far.",
        ));
    }
    out
}
