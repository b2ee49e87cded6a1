//! Notices: what the user should read (`Notice { level, text, at }`), their life on screen
//! (fresh for `NOTICE_SECS`, dismissed with a key, aged out on the tick) and the engine's
//! own notices. Texts are sanitized on the way in. Must not render.

use super::{Now, State};
use crate::engine::{NoticeLevel, ServerId};
use crate::state::widths;

/// How long a notice stays on screen (seconds).
pub const NOTICE_SECS: i64 = 8;

/// Notices kept at most (the oldest leave first).
const MAX_NOTICES: usize = 50;

/// Something the user should read.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub level: NoticeLevel,
    /// Sanitized text.
    pub text: String,
    pub at: Now,
}

impl State {
    /// Notices still fresh at `now`, newest last.
    pub fn live_notices(&self, now: Now) -> impl Iterator<Item = &Notice> {
        self.notices
            .iter()
            .filter(move |n| (now - n.at).num_seconds() < NOTICE_SECS)
    }

    pub fn notify(&mut self, level: NoticeLevel, text: &str, now: Now) {
        self.notices.push(Notice {
            level,
            text: crate::sanitize::sanitize_line(text, widths::REASON),
            at: now,
        });
        if self.notices.len() > MAX_NOTICES {
            self.notices.remove(0);
        }
    }
}

/// The engine's notice, prefixed with its server.
pub(super) fn engine_notice(
    state: &mut State,
    server: Option<ServerId>,
    level: NoticeLevel,
    text: String,
    now: Now,
) {
    let text = match server {
        Some(s) => format!("{s}: {text}"),
        None => text,
    };
    state.notify(level, &text, now);
}

/// The ledger's database went away (`Some(writes waiting)`) or came back (`None`): the
/// header shows the first; a notice says each change in words.
pub(super) fn ledger_offline(state: &mut State, waiting: Option<usize>, now: Now) {
    let was = state.ledger_offline.replace(waiting.unwrap_or(0));
    match (was, waiting) {
        (None, Some(_)) => state.notify(
            NoticeLevel::Warn,
            "the ledger's database cannot be reached: tasks are still followed, and their \
             changes are kept on this machine until it is back",
            now,
        ),
        (Some(_), None) => {
            state.ledger_offline = None;
            state.notify(
                NoticeLevel::Info,
                "the ledger's database is back; every change kept meanwhile is in it",
                now,
            );
        }
        (None, None) => state.ledger_offline = None,
        (Some(_), Some(_)) => {}
    }
}

/// Dismiss the latest fresh notice (stale ones leave with it).
pub(super) fn dismiss(state: &mut State, now: Now) {
    state
        .notices
        .retain(|n| (now - n.at).num_seconds() < NOTICE_SECS);
    state.notices.pop();
}

/// The tick: forget notices long gone from the screen.
pub(super) fn age(state: &mut State, now: Now) {
    state
        .notices
        .retain(|n| (now - n.at).num_seconds() < NOTICE_SECS * 4);
}
