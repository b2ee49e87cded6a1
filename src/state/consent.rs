//! URL-mode input: the consent view. A server asks the person to visit a link (sign in,
//! enter a secret, confirm a payment); taskrail shows the whole link with its host, warns
//! about what disguises a host (punycode, credentials before the host) and about plain
//! http to another machine, refuses anything but http(s), fetches nothing itself, and
//! opens the browser only when asked (or copies the link). "Done" answers `accept`.
//!
//! Must not render or do I/O: opening and copying are effects the loop runs.

use serde_json::json;

use super::modal::Modal;
use super::views::consent::ConsentView;
use super::{Effect, Now, State, answer};
use crate::engine::{NoticeLevel, ServerId};
use crate::sanitize::sanitize_line;
use crate::state::widths;

fn top(state: &mut State) -> Option<&mut ConsentView> {
    match state.modals.last_mut() {
        Some(Modal::Consent(c)) => Some(c),
        _ => None,
    }
}

/// `o`: open the link in the browser (never for a refused link).
pub(super) fn open_url(state: &mut State, fx: &mut Vec<Effect>) {
    let Some(view) = top(state) else { return };
    if let Some(why) = &view.check.refused {
        view.error = Some(sanitize_line(&format!("not opened: {why}"), widths::REASON));
        return;
    }
    view.opened = true;
    view.error = None;
    fx.push(Effect::OpenBrowser(view.check.url.clone()));
}

/// `y`: copy the link (OSC 52) to open it by hand.
pub(super) fn copy_url(state: &mut State, fx: &mut Vec<Effect>) {
    let Some(view) = top(state) else { return };
    if let Some(why) = &view.check.refused {
        view.error = Some(sanitize_line(&format!("not copied: {why}"), widths::REASON));
        return;
    }
    view.copied = true;
    view.error = None;
    fx.push(Effect::Copy(view.check.url.clone()));
}

/// `d` / enter: the person is done in the browser; the answer is `accept`.
pub(super) fn done(state: &mut State, now: Now, fx: &mut Vec<Effect>) {
    if state.refuse_read_only(now) {
        return;
    }
    let Some(view) = top(state) else { return };
    if view.check.refused.is_some() {
        view.error = Some("this link is refused: decline or cancel it".into());
        return;
    }
    let (target, key) = (view.target.clone(), view.input_key.clone());
    let responses = [(key, json!({ "action": "accept" }))].into_iter().collect();
    answer::send(state, target, responses, fx);
}

/// The browser could not be started.
pub(super) fn browser_failed(state: &mut State, error: &str, now: Now) {
    let text = format!(
        "could not start the browser: {}; copy the link instead",
        sanitize_line(error, widths::ERROR_LINE)
    );
    match top(state) {
        Some(view) => view.error = Some(text),
        None => state.notify(NoticeLevel::Error, &text, now),
    }
}

/// `notifications/elicitation/complete`: the consent views of that interaction say so.
pub(super) fn completed(state: &mut State, server: &ServerId, elicitation_id: &str, now: Now) {
    let mut any = false;
    for m in &mut state.modals {
        if let Modal::Consent(c) = m
            && c.target.server() == server
            && c.elicitation_id.as_deref() == Some(elicitation_id)
        {
            c.completed = true;
            any = true;
        }
    }
    if !any {
        let text = format!(
            "{} reports a link interaction complete",
            sanitize_line(server.as_str(), widths::SERVER_NAME)
        );
        state.notify(NoticeLevel::Info, &text, now);
    }
}
