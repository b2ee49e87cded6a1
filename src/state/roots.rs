//! Roots (`roots/list`): answered from the server's config entry without asking, so the
//! person can see what each server is offered and when it was sent — the roots view, per
//! server — and which tasks wait for roots that are not offered. Must not render or do I/O.

use super::modal::Modal;
use super::views::roots::{RootsShare, RootsView};
use super::{Now, State};
use crate::engine::{ServerId, TaskId};

/// Shares kept per server (the oldest go first).
const MAX_SHARES: usize = 50;

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
