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
            let key = sign_in_key(state).unwrap_or_else(|| ":login".into());
            Some(("●", format!("sign in required — press {key}"), theme.warn))
        }
        SignInState::Running => Some((
            "◌",
            "signing in… (finish in the browser)".to_string(),
            theme.degraded,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_shows_the_sign_in_prompt_with_the_configured_key() {
        use crate::ids::ServerId;
        use crate::state::{Action, Context, Key, Keymap};
        use ratatui::Terminal;
        use ratatui::backend::TestBackend;
        let now = chrono::Utc::now();
        let mut s = State::new(
            vec![ServerId::named("alpha")],
            false,
            Keymap::default_keymap(),
        );
        s.servers[0].sign_in = Some(SignInState::Required("no sign-in".into()));
        let theme = Theme::default();
        let mut t = Terminal::new(TestBackend::new(100, 3)).unwrap();
        t.draw(|f| {
            f.render_widget(
                super::super::header::Header {
                    state: &s,
                    theme: &theme,
                    now,
                },
                f.area(),
            )
        })
        .unwrap();
        let text: String = t
            .backend()
            .buffer()
            .content()
            .iter()
            .map(|c| c.symbol())
            .collect();
        assert!(text.contains("sign in required — press L"), "{text}");
        s.keymap
            .rebind(Context::Board, Action::SignIn, vec![Key::char('Z')]);
        assert_eq!(sign_in_key(&s).as_deref(), Some("Z"));
    }
}
