//! The header's word on a server's sign-in: "sign in required — press L" (the key from
//! the keymap) or "signing in…". Must not mutate state.

use ratatui::style::Style;

use super::Theme;
use crate::state::{ServerState, SignInState, State, sign_in_key};

/// The dot, text and style that replace a server's health while a sign-in matters.
pub fn badge(
    state: &State,
    s: &ServerState,
    theme: &Theme,
) -> Option<(&'static str, String, Style)> {
    match s.sign_in.as_ref()? {
        SignInState::Required(_) => {
            let key = sign_in_key(state).unwrap_or_else(|| ":signin".into());
            Some(("●", format!("sign in required — press {key}"), theme.warn))
        }
        SignInState::Running => Some((
            "◌",
            "signing in… (finish in the browser)".to_string(),
            theme.degraded,
        )),
    }
}
