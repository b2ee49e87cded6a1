//! Signing in, as the dashboard sees it: where each server's sign-in stands (`SignInState`,
//! folded from the engine's sign-in events: required, started, ignored redirect, done,
//! failed) and the user's intents (the sign-in key, `:login [SERVER]`, `:redirect URL`).
//! Pure: the sign-in itself is an engine command.

use super::doc::{DocLine, LineKind};
use super::modal::{DocView, Modal};
use super::{Context, Effect, Now, State};
use crate::engine::{EngineCommand, EngineEvent, NoticeLevel, ServerId};
use crate::sanitize::sanitize_line;
use crate::state::widths;

/// Where a server's sign-in stands (none: nothing to do).
#[derive(Debug, Clone, PartialEq)]
pub enum SignInState {
    /// The server wants a signed-in user; why (sanitized).
    Required(String),
    /// The browser flow runs.
    Running,
}

/// The key that starts a sign-in, as the keymap has it (for "press L").
pub fn sign_in_key(state: &State) -> Option<String> {
    state
        .keymap
        .key_for(Context::Board, super::Action::SignIn)
        .map(|k| k.to_string())
}

/// Fold a sign-in event (others are ignored).
pub(super) fn on_event(state: &mut State, event: &EngineEvent, now: Now) {
    match event {
        EngineEvent::SignInRequired { server, reason } => {
            let reason = sanitize_line(reason, widths::ERROR_LINE);
            let s = state.server_mut(server);
            let fresh = !matches!(&s.sign_in, Some(SignInState::Required(r)) if *r == reason);
            s.sign_in = Some(SignInState::Required(reason));
            if fresh {
                let key = sign_in_key(state).unwrap_or_else(|| ":login".into());
                let text = format!("{server}: sign in required — press {key}");
                state.notify(NoticeLevel::Warn, &text, now);
            }
        }
        EngineEvent::SignInStarted {
            server,
            url,
            browser,
        } => {
            let url = sanitize_line(url, widths::SIGN_IN_LINK);
            state.server_mut(server).sign_in = Some(SignInState::Running);
            if *browser {
                let text = format!("{server}: finish signing in in the browser");
                state.notify(NoticeLevel::Info, &text, now);
            }
            state
                .modals
                .push(Modal::Doc(sign_in_doc(server, &url, *browser)));
        }
        EngineEvent::SignInIgnored { server, reason } => {
            let text = format!("{server}: {}", sanitize_line(reason, widths::ERROR_LINE));
            state.notify(NoticeLevel::Warn, &text, now);
        }
        EngineEvent::SignedIn { server } => {
            state.server_mut(server).sign_in = None;
            close_sign_in_doc(state, server);
            state.notify(NoticeLevel::Info, &format!("signed in to {server}"), now);
        }
        EngineEvent::SignInFailed { server, error } => {
            let error = sanitize_line(error, widths::ERROR_LINE);
            close_sign_in_doc(state, server);
            state.server_mut(server).sign_in = Some(SignInState::Required(error.clone()));
            state.notify(
                NoticeLevel::Error,
                &format!("{server}: sign-in failed: {error}"),
                now,
            );
        }
        _ => {}
    }
}

const DOC_TITLE: &str = "Sign in to ";

fn sign_in_doc(server: &ServerId, url: &str, browser: bool) -> DocView {
    let mut lines = vec![DocLine::new(
        LineKind::Body,
        if browser {
            "The browser opened the sign-in page. If it did not, open this URL:"
        } else {
            "Open this URL in a browser to sign in:"
        },
    )];
    lines.push(DocLine::new(LineKind::Link, url));
    lines.push(DocLine::new(LineKind::Body, ""));
    lines.push(DocLine::new(
        LineKind::Dim,
        "If the browser runs on another machine (SSH), it ends on a page that does not \
         load: copy that page's address and run  :redirect ADDRESS",
    ));
    lines.push(DocLine::new(
        LineKind::Dim,
        "This view closes by itself once signed in; the dashboard keeps running meanwhile.",
    ));
    DocView {
        title: format!(
            "{DOC_TITLE}{}",
            sanitize_line(server.as_str(), widths::NAME_IN_TITLE)
        ),
        lines,
        scroll: 0,
    }
}

fn close_sign_in_doc(state: &mut State, server: &ServerId) {
    let title = format!(
        "{DOC_TITLE}{}",
        sanitize_line(server.as_str(), widths::NAME_IN_TITLE)
    );
    state
        .modals
        .retain(|m| !matches!(m, Modal::Doc(d) if d.title == title));
}

/// The server a sign-in is for: `named`, else the focused task's server when it needs
/// one, else the only server that needs one, else the only server.
fn target(state: &State, named: Option<ServerId>) -> Result<ServerId, String> {
    if let Some(s) = named {
        return Ok(s);
    }
    let needs = |id: &ServerId| {
        state
            .servers
            .iter()
            .any(|s| &s.id == id && matches!(s.sign_in, Some(SignInState::Required(_))))
    };
    if let Some(k) = state.focused_task().filter(|k| needs(&k.server)) {
        return Ok(k.server);
    }
    let waiting: Vec<&ServerId> = state
        .servers
        .iter()
        .filter(|s| matches!(s.sign_in, Some(SignInState::Required(_))))
        .map(|s| &s.id)
        .collect();
    match (waiting.as_slice(), state.servers.as_slice()) {
        ([one], _) => Ok((*one).clone()),
        ([], [only]) => Ok(only.id.clone()),
        ([], _) => Err("no server asks for a sign-in (:login SERVER signs in to one)".into()),
        _ => Err("several servers ask for a sign-in: :login SERVER picks one".into()),
    }
}

/// The sign-in key or `:login [SERVER]`.
pub(super) fn sign_in(state: &mut State, named: Option<ServerId>, now: Now, fx: &mut Vec<Effect>) {
    match target(state, named) {
        Ok(server) => {
            if matches!(
                state
                    .servers
                    .iter()
                    .find(|s| s.id == server)
                    .and_then(|s| s.sign_in.as_ref()),
                Some(SignInState::Running)
            ) {
                return state.notify(
                    NoticeLevel::Info,
                    &format!("{server}: a sign-in is already running"),
                    now,
                );
            }
            state.notify(NoticeLevel::Info, &format!("{server}: signing in…"), now);
            fx.push(Effect::Engine(EngineCommand::SignIn { server }));
        }
        Err(why) => state.notify(NoticeLevel::Info, &why, now),
    }
}

/// `:redirect URL`: hand a pasted redirect to the running sign-in.
pub(super) fn pasted(state: &mut State, url: String, now: Now, fx: &mut Vec<Effect>) {
    let running: Vec<ServerId> = state
        .servers
        .iter()
        .filter(|s| matches!(s.sign_in, Some(SignInState::Running)))
        .map(|s| s.id.clone())
        .collect();
    match running.as_slice() {
        [] => state.notify(NoticeLevel::Info, "no sign-in is running", now),
        servers => {
            for server in servers {
                fx.push(Effect::Engine(EngineCommand::SignInRedirect {
                    server: server.clone(),
                    url: url.clone(),
                }));
            }
        }
    }
}
