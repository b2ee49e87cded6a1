//! Roots (`roots/list`): answered from the server's config entry without asking, so the
//! person can see what each server is offered and when it was sent — the roots view, per
//! server — and which tasks wait for roots that are not offered. Must not render or do I/O.

use super::detail::{DocLine, LineKind};
use super::modal::Modal;
use super::{Now, State};
use crate::engine::{ServerId, TaskId};
use crate::mcp::InputKind;
use crate::sanitize::sanitize_line;

/// Shares kept per server (the oldest go first).
const MAX_SHARES: usize = 50;

/// One `roots/list` answered from the config.
#[derive(Debug, Clone, PartialEq)]
pub struct RootsShare {
    pub at: Now,
    /// The task that asked (`None`: the session, or a call).
    pub task: Option<TaskId>,
    pub roots: Vec<String>,
}

/// The roots view of one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootsView {
    pub server: ServerId,
    pub scroll: usize,
}

/// `RootsShared`.
pub(super) fn shared(
    state: &mut State,
    server: &ServerId,
    task: Option<TaskId>,
    roots: Vec<String>,
    now: Now,
) {
    let log = state.roots_shared.entry(server.clone()).or_default();
    if log.len() >= MAX_SHARES {
        log.remove(0);
    }
    log.push(RootsShare {
        at: now,
        task,
        roots: roots.into_iter().take(64).collect(),
    });
}

/// `o`: the roots view of the focused task's server (else the first server).
pub(super) fn open(state: &mut State) {
    let server = state
        .focused_task()
        .map(|k| k.server)
        .or_else(|| state.servers.first().map(|s| s.id.clone()));
    if let Some(server) = server {
        open_for(state, server);
    }
}

pub(super) fn open_for(state: &mut State, server: ServerId) {
    state
        .modals
        .push(Modal::Roots(RootsView { server, scroll: 0 }));
}

/// The roots view's document.
pub fn roots_doc(state: &State, server: &ServerId) -> Vec<DocLine> {
    let mut out = vec![DocLine::new(
        LineKind::Heading,
        format!("Roots of {}", sanitize_line(server.as_str(), 60)),
    )];
    match state.offer(server).roots {
        Some(roots) if roots.is_empty() => out.push(DocLine::new(
            LineKind::Body,
            "Offered: an empty list (the server is told there are no roots).",
        )),
        Some(roots) => {
            out.push(DocLine::new(
                LineKind::Body,
                "Offered (answered to roots/list without asking, from the config):",
            ));
            for r in roots {
                out.push(DocLine::new(LineKind::Link, format!("  {}", sanitize_line(&r, 300))));
            }
        }
        None => out.push(DocLine::new(
            LineKind::Dim,
            "Not offered: roots/list is refused. Add roots = [\"file:///…\"] to this server's config entry to offer some.",
        )),
    }
    out.push(DocLine::new(LineKind::Heading, "Sent"));
    match state.roots_shared.get(server) {
        Some(log) if !log.is_empty() => {
            for share in log.iter().rev() {
                let to = share.task.as_ref().map_or("the session".to_string(), |t| {
                    format!("task {}", t.prefix())
                });
                out.push(DocLine {
                    kind: LineKind::Field,
                    label: Some(share.at.format("%H:%M:%S").to_string()),
                    text: format!("to {to}: {} root(s)", share.roots.len()),
                });
            }
        }
        _ => out.push(DocLine::new(LineKind::Dim, "(nothing sent yet)")),
    }
    let mut waiting: Vec<String> = state
        .tasks
        .values()
        .filter(|r| &r.key.server == server && !r.is_over())
        .filter(|r| {
            r.pending
                .values()
                .any(|q| InputKind::of(q) == InputKind::Roots)
        })
        .map(|r| r.short_id())
        .collect();
    if !waiting.is_empty() {
        waiting.sort();
        out.push(DocLine::new(LineKind::Heading, "Waiting"));
        out.push(DocLine::new(
            LineKind::Error,
            format!(
                "tasks asking for roots this server is not offered: {} (cancel them with c)",
                waiting.join(", ")
            ),
        ));
    }
    out
}
