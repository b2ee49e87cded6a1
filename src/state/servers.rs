//! Per-server state the header shows (`ServerState`): era, push, connection health and
//! request statistics, folded from the engine's connection events. Must not render.

use super::State;
use super::hints::HintRecord;
use crate::engine::ServerId;
use crate::mcp::Era;

/// A server's connection health.
#[derive(Debug, Clone, PartialEq)]
pub enum Health {
    Connecting,
    Connected,
    Degraded(String),
    Reconnecting { attempt: u32 },
}

/// What the header shows about one server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerState {
    pub id: ServerId,
    pub name: Option<String>,
    pub era: Option<Era>,
    pub push: bool,
    pub health: Health,
    pub requests_per_sec: f64,
    pub requests_total: u64,
    pub errors_total: u64,
    /// Conformance problems the server showed, one record per kind.
    pub hints: Vec<HintRecord>,
    /// Where its sign-in stands (none: nothing to do).
    pub sign_in: Option<super::SignInState>,
}

impl ServerState {
    pub fn new(id: ServerId) -> ServerState {
        ServerState {
            id,
            name: None,
            era: None,
            push: false,
            health: Health::Connecting,
            requests_per_sec: 0.0,
            requests_total: 0,
            errors_total: 0,
            hints: Vec::new(),
            sign_in: None,
        }
    }
}

impl State {
    /// The server's state, added on first mention.
    pub fn server_mut(&mut self, id: &ServerId) -> &mut ServerState {
        if let Some(i) = self.servers.iter().position(|s| &s.id == id) {
            return &mut self.servers[i];
        }
        self.servers.push(ServerState::new(id.clone()));
        self.servers.last_mut().expect("just pushed")
    }
}

pub(super) fn connected(
    state: &mut State,
    server: &ServerId,
    era: Era,
    push: bool,
    server_name: Option<String>,
) {
    let s = state.server_mut(server);
    s.era = Some(era);
    s.push = push;
    s.health = Health::Connected;
    s.name = server_name.map(|n| crate::sanitize::sanitize_line(&n, 40));
}

pub(super) fn push_changed(state: &mut State, server: &ServerId, push: bool) {
    state.server_mut(server).push = push;
}

pub(super) fn degraded(state: &mut State, server: &ServerId, reason: &str) {
    state.server_mut(server).health = Health::Degraded(crate::sanitize::sanitize_line(reason, 120));
}

pub(super) fn reconnecting(state: &mut State, server: &ServerId, attempt: u32) {
    state.server_mut(server).health = Health::Reconnecting { attempt };
}

pub(super) fn stats(
    state: &mut State,
    server: &ServerId,
    requests_total: u64,
    requests_per_sec: f64,
    errors_total: u64,
) {
    let s = state.server_mut(server);
    s.requests_total = requests_total;
    s.requests_per_sec = requests_per_sec;
    s.errors_total = errors_total;
}
