//! Input requests outside any task (a call that elicits on its way, a request on the
//! session stream, a task a server hosts on us): kept until answered, expired or
//! withdrawn, listed in the inbox, and answered in the same views as task input. A request
//! from a call this dashboard just started opens at once. Must not render or do I/O.

use super::alerts::{Alert, AlertKind};
use super::input_target::InputTarget;
use super::{Effect, Now, State, forms};
use crate::engine::{EngineEvent, InputOrigin, NoticeLevel, ServerId};
use crate::mcp::InputRequest;
use crate::sanitize::sanitize_line;
use crate::state::widths;

/// At most this many foreground requests are kept (older ones first go).
const MAX_KEPT: usize = 256;

/// One foreground request waiting for the person.
#[derive(Debug, Clone, PartialEq)]
pub struct ForegroundInput {
    pub server: ServerId,
    /// The engine's key (answers name it).
    pub key: String,
    /// The call it came with, if any (the dashboard's own call id).
    pub call_id: Option<u64>,
    /// The call's tool, sanitized ("" when asked on the session stream).
    pub tool: String,
    pub request: InputRequest,
    pub since: Now,
    /// When the engine stops waiting and answers on the person's behalf.
    pub expires: Option<Now>,
}

impl ForegroundInput {
    /// "during fetch_data" / "on the session", for titles.
    pub fn origin_text(&self) -> String {
        if self.tool.is_empty() {
            "outside any call".to_string()
        } else {
            format!("during {}", self.tool)
        }
    }

    pub fn target(&self) -> InputTarget {
        InputTarget::Foreground {
            server: self.server.clone(),
            key: self.key.clone(),
        }
    }
}

impl State {
    /// The foreground request `key` of `server`.
    pub fn foreground_input(&self, server: &ServerId, key: &str) -> Option<&ForegroundInput> {
        self.foreground
            .iter()
            .find(|f| &f.server == server && f.key == key)
    }
}

/// `ForegroundInputRequested` (other events are ignored).
pub(super) fn requested(state: &mut State, event: EngineEvent, now: Now, fx: &mut Vec<Effect>) {
    let EngineEvent::ForegroundInputRequested {
        server,
        key,
        origin,
        request,
        expires_in,
    } = event
    else {
        return;
    };
    let (call_id, tool) = match origin {
        InputOrigin::Call { call_id, tool } => {
            (Some(call_id), sanitize_line(&tool, widths::TOOL_NAME))
        }
        InputOrigin::Session => (None, String::new()),
    };
    state
        .foreground
        .retain(|f| !(f.server == server && f.key == key));
    if state.foreground.len() >= MAX_KEPT {
        state.foreground.remove(0);
    }
    let expires = chrono::TimeDelta::from_std(expires_in)
        .ok()
        .and_then(|d| now.checked_add_signed(d));
    let entry = ForegroundInput {
        server: server.clone(),
        key: key.clone(),
        call_id,
        tool,
        request,
        since: now,
        expires,
    };
    let ours = call_id.is_some_and(|c| state.calls.contains_key(&c));
    let text = format!(
        "{} asks for input {}",
        sanitize_line(server.as_str(), widths::SERVER_NAME),
        entry.origin_text()
    );
    state.foreground.push(entry);
    fx.push(Effect::Alert(Alert {
        kind: AlertKind::Input,
        text: text.clone(),
    }));
    if ours && state.modals.is_empty() && state.command.is_none() && !state.read_only {
        let target = InputTarget::Foreground { server, key };
        forms::open_target(state, &target, now);
    } else {
        state.notify(NoticeLevel::Info, &format!("{text} (i: inbox)"), now);
    }
}

/// `ForegroundInputClosed`: gone without (or after a failed) answer; its view closes.
pub(super) fn closed(state: &mut State, server: &ServerId, key: &str, reason: &str, now: Now) {
    let before = state.foreground.len();
    state
        .foreground
        .retain(|f| !(&f.server == server && f.key == key));
    let target = InputTarget::Foreground {
        server: server.clone(),
        key: key.to_string(),
    };
    let open_before = state.modals.len();
    state.modals.retain(|m| m.target() != Some(&target));
    if before != state.foreground.len() || open_before != state.modals.len() {
        let text = format!(
            "input request of {}: {}",
            sanitize_line(server.as_str(), widths::SERVER_NAME),
            sanitize_line(reason, widths::ERROR_LINE)
        );
        state.notify(NoticeLevel::Info, &text, now);
    }
}
