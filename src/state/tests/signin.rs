//! Reducer tests for signing in: the engine's sign-in events, the sign-in key, `:login`
//! and `:redirect`.

use super::{code, fresh, key, run, srv};
use crate::engine::{EngineCommand, EngineEvent, ServerId};
use crate::state::*;

fn required(server: &ServerId, why: &str) -> Msg {
    Msg::Engine(EngineEvent::SignInRequired {
        server: server.clone(),
        reason: why.to_string(),
    })
}

fn typed(s: &mut State, text: &str) -> Vec<Effect> {
    let mut fx = run(s, vec![key(':')]);
    for c in text.chars() {
        fx.extend(run(s, vec![key(c)]));
    }
    fx.extend(run(s, vec![code(KeyCode::Enter)]));
    fx
}

fn notices(s: &State) -> Vec<String> {
    s.notices.iter().map(|n| n.text.clone()).collect()
}

#[test]
fn a_server_that_wants_a_sign_in_says_so_once_and_l_starts_it() {
    let mut s = fresh();
    run(&mut s, vec![required(&srv(), "no sign-in")]);
    assert_eq!(
        s.servers[0].sign_in,
        Some(SignInState::Required("no sign-in".into()))
    );
    assert_eq!(notices(&s), ["alpha: sign in required — press L"]);
    run(&mut s, vec![required(&srv(), "no sign-in")]);
    assert_eq!(s.notices.len(), 1, "the same reason is not repeated");

    let fx = run(&mut s, vec![key('L')]);
    assert_eq!(
        fx,
        vec![Effect::Engine(EngineCommand::SignIn { server: srv() })]
    );
}

#[test]
fn the_flow_shows_its_url_and_closes_when_signed_in() {
    let mut s = fresh();
    run(&mut s, vec![required(&srv(), "no sign-in"), key('L')]);
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::SignInStarted {
            server: srv(),
            url: "https://as.example/authorize?state=\u{1b}[31mx".into(),
            browser: false,
        })],
    );
    assert_eq!(s.servers[0].sign_in, Some(SignInState::Running));
    let Some(Modal::Doc(doc)) = s.modals.last() else {
        panic!("a sign-in view: {:?}", s.modals);
    };
    let url = doc
        .lines
        .iter()
        .find(|l| l.text.contains("/authorize"))
        .unwrap();
    assert!(!url.text.contains('\u{1b}'), "server text is sanitized");
    // Pressing L again does not start a second flow.
    run(&mut s, vec![code(KeyCode::Esc)]);
    assert!(run(&mut s, vec![key('L')]).is_empty());
    // A pasted redirect goes to the running sign-in.
    let fx = typed(
        &mut s,
        "redirect http://127.0.0.1:5/callback?code=c&state=s",
    );
    assert_eq!(
        fx,
        vec![Effect::Engine(EngineCommand::SignInRedirect {
            server: srv(),
            url: "http://127.0.0.1:5/callback?code=c&state=s".into(),
        })]
    );
    run(
        &mut s,
        vec![
            Msg::Engine(EngineEvent::SignInStarted {
                server: srv(),
                url: "https://as.example/authorize".into(),
                browser: true,
            }),
            Msg::Engine(EngineEvent::SignedIn { server: srv() }),
        ],
    );
    assert_eq!(s.servers[0].sign_in, None);
    assert!(
        s.modals.is_empty(),
        "the sign-in view closed: {:?}",
        s.modals
    );
    assert!(notices(&s).iter().any(|n| n == "signed in to alpha"));
}

#[test]
fn a_failed_sign_in_asks_again_and_login_names_a_server() {
    let beta = ServerId::named("beta");
    let mut s = State::new(vec![srv(), beta.clone()], false, Keymap::default_keymap());
    // Nobody asks: L says so, :login SERVER still works.
    assert!(run(&mut s, vec![key('L')]).is_empty());
    assert!(notices(&s).last().unwrap().contains("no server asks"));
    let fx = typed(&mut s, "login beta");
    assert_eq!(
        fx,
        vec![Effect::Engine(EngineCommand::SignIn {
            server: beta.clone()
        })]
    );
    run(
        &mut s,
        vec![Msg::Engine(EngineEvent::SignInFailed {
            server: beta.clone(),
            error: "the authorization server declined".into(),
        })],
    );
    assert!(matches!(
        s.servers[1].sign_in,
        Some(SignInState::Required(_))
    ));
    // Now only beta asks: L picks it.
    let fx = run(&mut s, vec![key('L')]);
    assert_eq!(
        fx,
        vec![Effect::Engine(EngineCommand::SignIn { server: beta })]
    );
    let fx = typed(&mut s, "redirect http://x/cb?code=1");
    assert!(fx.is_empty(), "no sign-in runs");
}
