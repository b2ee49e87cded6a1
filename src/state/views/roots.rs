//! The roots view's data: each `roots/list` answered from a server's config entry, and the
//! view's document (what each server is offered, when it was sent, which tasks wait for
//! roots that are not offered). Must not change `State`.

use crate::engine::{ServerId, TaskId};
use crate::mcp::InputKind;
use crate::sanitize::sanitize_line;
use crate::state::State;
use crate::state::doc::{DocLine, LineKind};
use crate::state::time::Now;
use crate::state::widths;

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

/// The roots view's document.
pub fn roots_doc(state: &State, server: &ServerId) -> Vec<DocLine> {
    let mut out = vec![DocLine::new(
        LineKind::Heading,
        format!(
            "Roots of {}",
            sanitize_line(server.as_str(), widths::NAME_IN_TITLE)
        ),
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
                out.push(DocLine::new(LineKind::Link, format!("  {}", sanitize_line(&r, widths::LINK))));
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
