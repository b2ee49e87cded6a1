//! Per-server state the header and the servers view show (`ServerState`): era, what the
//! server can do for push, connection health with the reason in words (kept while it
//! reconnects, cleared by the first sign of recovery), request statistics, and the name a
//! person can tell apart from the others. Folded from the engine's connection events.
//! Must not render.

use super::State;
use super::doc::{DocLine, LineKind};
use super::hints::HintRecord;
use super::modal::{DocView, Modal};
use crate::engine::ServerId;
use crate::mcp::Era;
use crate::sanitize::sanitize_line;
use crate::state::widths;

/// A server's connection health.
#[derive(Debug, Clone, PartialEq)]
pub enum Health {
    Connecting,
    Connected,
    /// Failing for `reason` (in words, the gist first); `retry` is the reconnect attempt
    /// under way, if any. Tasks keep their last state.
    Degraded {
        reason: String,
        retry: Option<u32>,
    },
    /// A stream is being re-established; nothing failed that needs the user.
    Reconnecting {
        attempt: u32,
    },
    /// Never connected: the configuration cannot be used as it is (why, in words).
    Disabled(String),
    /// Not reachable from this process (why, in words): its tasks are shown as the ledger
    /// has them, and answers and cancels go to the process that follows each task.
    Elsewhere(String),
    /// Met in the ledger's history only: not connected while none of its tasks is live.
    Idle,
}

/// What the server can do for push, as far as it has shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushMode {
    /// Not connected yet.
    Unknown,
    /// A push stream is open.
    InUse,
    /// The server pushed before; the stream is down for now (taskrail polls meanwhile).
    Supported,
    /// No push from this server (not offered, or turned off): taskrail polls.
    Polling,
}

impl PushMode {
    pub fn label(self) -> &'static str {
        match self {
            PushMode::Unknown => "?",
            PushMode::InUse => "push",
            PushMode::Supported => "push supported",
            PushMode::Polling => "polling",
        }
    }
}

/// What the header shows about one server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerState {
    pub id: ServerId,
    /// The name the server gives itself (`serverInfo.name`), sanitized.
    pub name: Option<String>,
    pub era: Option<Era>,
    /// A push stream is open now.
    pub push: bool,
    /// A push stream was open at some point (the server supports push).
    pub push_seen: bool,
    pub health: Health,
    pub requests_per_sec: f64,
    pub requests_total: u64,
    pub errors_total: u64,
    /// Conformance problems the server showed, one record per kind.
    pub hints: Vec<HintRecord>,
    /// Where its sign-in stands (none: nothing to do).
    pub sign_in: Option<super::SignInState>,
    /// Its latest request durations.
    pub latency: super::views::stats::LatencyRing,
}

impl ServerState {
    pub fn new(id: ServerId) -> ServerState {
        ServerState {
            id,
            name: None,
            era: None,
            push: false,
            push_seen: false,
            health: Health::Connecting,
            requests_per_sec: 0.0,
            requests_total: 0,
            errors_total: 0,
            hints: Vec::new(),
            sign_in: None,
            latency: Default::default(),
        }
    }

    pub fn push_mode(&self) -> PushMode {
        match (self.era, self.push, self.push_seen) {
            (None, false, false) => PushMode::Unknown,
            (_, true, _) => PushMode::InUse,
            (_, false, true) => PushMode::Supported,
            (_, false, false) => PushMode::Polling,
        }
    }

    /// The health in a few words, for a status line.
    pub fn health_text(&self) -> String {
        match &self.health {
            Health::Connecting => "connecting".into(),
            Health::Connected => "connected".into(),
            Health::Degraded {
                reason,
                retry: None,
            } => reason.clone(),
            Health::Degraded {
                reason,
                retry: Some(n),
            } => format!("{reason} (retry #{n})"),
            Health::Reconnecting { attempt } => format!("reconnecting (#{attempt})"),
            Health::Disabled(why) => format!("disabled: {why}"),
            Health::Idle => "not connected: only finished tasks here".into(),
            Health::Elsewhere(why) => {
                format!("followed by other processes ({why}); answers and cancels go to them")
            }
        }
    }
}

/// A short name a person can tell apart from the others: a configured name as it is, a
/// URL without its scheme (`127.0.0.1:18765/mcp`), a stdio server by its program (or the
/// script an interpreter runs: `fastmcp_peer.py`, `server-everything`). Sanitized.
pub fn short_name(id: &ServerId) -> String {
    let s = id.as_str();
    let name = if let Some(rest) = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
    {
        let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
        rest.trim_end_matches('/').to_string()
    } else if let Some(cmd) = s.strip_prefix("stdio:") {
        program_name(cmd)
    } else {
        s.to_string()
    };
    sanitize_line(&name, widths::SERVER_REF)
}

/// The program a stdio command runs; for an interpreter, its script or module.
fn program_name(cmd: &str) -> String {
    const INTERPRETERS: &[&str] = &[
        "python", "python3", "node", "deno", "bun", "uv", "uvx", "npx", "pnpm", "ruby", "perl",
        "sh", "bash", "env",
    ];
    let words =
        shlex::split(cmd).unwrap_or_else(|| cmd.split_whitespace().map(String::from).collect());
    let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
    let Some(first) = words.first() else {
        return cmd.to_string();
    };
    let program = base(first);
    if !INTERPRETERS.contains(&program.as_str()) {
        return program;
    }
    let mut rest = words[1..].iter();
    while let Some(w) = rest.next() {
        match w.as_str() {
            "-m" => return rest.next().map_or(program.clone(), |m| m.clone()),
            "run" | "exec" | "x" => continue,
            w if w.starts_with('-') || w.contains('=') => continue,
            w => return base(w),
        }
    }
    program
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

    /// Show `server` as disabled (its configuration cannot be used).
    pub fn disable_server(&mut self, server: &ServerId, why: &str) {
        self.server_mut(server).health = Health::Disabled(sanitize_line(why, widths::REASON));
    }

    /// The name `id` is shown by everywhere on screen (header, server column, footer,
    /// popups): its [`short_name`], or its whole id (sanitized) where another server of
    /// the board has the same short name. The one owner of a server's display name.
    pub fn server_name(&self, id: &ServerId) -> String {
        let short = short_name(id);
        let clash = self
            .servers
            .iter()
            .any(|s| &s.id != id && short_name(&s.id) == short);
        if clash {
            sanitize_line(id.as_str(), widths::SERVER_REF)
        } else {
            short
        }
    }

    /// [`State::server_name`] of every server of the header, in its order.
    pub fn server_names(&self) -> Vec<String> {
        self.servers
            .iter()
            .map(|s| self.server_name(&s.id))
            .collect()
    }
}

/// The engine has nothing live on `server` (met in the ledger's history): not connected.
pub(super) fn idle(state: &mut State, server: &ServerId) {
    state.server_mut(server).health = Health::Idle;
}

/// The engine cannot reach `server` from this process.
pub(super) fn unreachable(state: &mut State, server: &ServerId, why: &str) {
    state.server_mut(server).health = Health::Elsewhere(sanitize_line(why, widths::REASON));
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
    s.push_seen |= push;
    s.health = Health::Connected;
    s.name = server_name.map(|n| sanitize_line(&n, widths::SERVER_NAME));
}

pub(super) fn push_changed(state: &mut State, server: &ServerId, push: bool) {
    let s = state.server_mut(server);
    s.push = push;
    s.push_seen |= push;
    if push {
        recovered(state, server);
    }
}

pub(super) fn degraded(state: &mut State, server: &ServerId, reason: &str) {
    state.server_mut(server).health = Health::Degraded {
        reason: sanitize_line(reason, widths::REASON),
        retry: None,
    };
}

/// A reconnect is under way: a failing server keeps its reason.
pub(super) fn reconnecting(state: &mut State, server: &ServerId, attempt: u32) {
    let s = state.server_mut(server);
    s.health = match std::mem::replace(&mut s.health, Health::Connecting) {
        Health::Degraded { reason, .. } => Health::Degraded {
            reason,
            retry: Some(attempt),
        },
        _ => Health::Reconnecting { attempt },
    };
}

/// The server answered (a snapshot, a listing, an acknowledgement): whatever was wrong
/// is over.
pub(super) fn recovered(state: &mut State, server: &ServerId) {
    let Some(s) = state.servers.iter_mut().find(|s| &s.id == server) else {
        return;
    };
    if matches!(
        s.health,
        Health::Degraded { .. } | Health::Reconnecting { .. }
    ) && s.era.is_some()
    {
        s.health = Health::Connected;
    }
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

/// The servers view's title (the wire view opens on the server under its top).
pub const VIEW_TITLE: &str = "Servers";

/// `v` / `:servers`: every server with its address, what it can do for push, its health
/// in words (a failure says what to do about it) and its request counts.
pub(super) fn open_view(state: &mut State) {
    let names = state.server_names();
    let mut lines = Vec::new();
    for (s, name) in state.servers.iter().zip(names) {
        lines.push(DocLine::new(LineKind::Heading, name));
        lines.push(DocLine::field("server", s.id.as_str()));
        if let Some(n) = &s.name {
            lines.push(DocLine::field("calls itself", n));
        }
        let era = s.era.map_or("not known yet", |e| e.as_str());
        lines.push(DocLine::field("protocol", era));
        let updates = match s.push_mode() {
            PushMode::Unknown => "not known yet",
            mode => mode.label(),
        };
        lines.push(DocLine::field("updates", updates));
        let health = s.health_text();
        let failing = matches!(s.health, Health::Degraded { .. } | Health::Disabled(_));
        lines.push(DocLine {
            kind: if failing {
                LineKind::Error
            } else {
                LineKind::Field
            },
            label: Some("state".into()),
            text: health,
        });
        lines.push(DocLine::field(
            "requests",
            format!(
                "{} in all, {:.1}/s now, {} failed",
                s.requests_total, s.requests_per_sec, s.errors_total
            ),
        ));
        if !s.hints.is_empty() {
            lines.push(DocLine::field(
                "hints",
                format!("{} kind(s): H lists them", s.hints.len()),
            ));
        }
        lines.push(DocLine::new(LineKind::Dim, ""));
    }
    state.modals.push(Modal::Doc(DocView {
        title: VIEW_TITLE.to_string(),
        lines,
        scroll: 0,
    }));
}

/// The failure to show where a server's answer is awaited (the tool picker), if failing.
pub fn failure(state: &State, server: &ServerId) -> Option<String> {
    let s = state.servers.iter().find(|s| &s.id == server)?;
    match &s.health {
        Health::Degraded { .. } | Health::Disabled(_) => Some(s.health_text()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_tell_servers_apart() {
        let n = |s: &str| short_name(&ServerId::ad_hoc(s));
        assert_eq!(n("http://127.0.0.1:18765/mcp"), "127.0.0.1:18765/mcp");
        assert_eq!(
            n("https://user:***@tasks.example.com/"),
            "tasks.example.com"
        );
        assert_eq!(n("prod"), "prod");
        assert_eq!(n("stdio:/usr/local/bin/my-server --stdio"), "my-server");
        assert_eq!(
            n("stdio:python3 tests/interop/fastmcp_peer.py --stdio"),
            "fastmcp_peer.py"
        );
        assert_eq!(n("stdio:python3 -m my_server --stdio"), "my_server");
        assert_eq!(
            n("stdio:npx -y @modelcontextprotocol/server-everything stdio"),
            "server-everything"
        );
        assert_eq!(n("stdio:uv run server.py"), "server.py");
    }
}
