//! Signing in to real OAuth-protected MCP servers nobody here wrote, with a fake browser
//! that follows the authorization URL (`tests/interop/fake_browser.py`):
//! - the TypeScript SDK's OAuth example (`simpleStreamableHttp.js --oauth`: its own
//!   authorization server on a second port, dynamic registration, no refresh tokens);
//! - FastMCP's in-memory OAuth provider (same origin, rotating refresh tokens).
//!
//! First run signs in through the browser, the second uses the stored token without one,
//! an expiring token is refreshed (before expiry and on a 401), a refresh that fails
//! asks to sign in again, and `auth logout` forgets the sign-in.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use serde_json::Value;
use std::time::Duration;
use support::taskrail::Taskrail;
use taskrail::cli::exit;

const LIMIT: Duration = Duration::from_secs(90);

/// The current issuer entry of the only server in the token store.
fn tokens(tr: &Taskrail) -> Value {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(tr.tokens()).unwrap()).unwrap();
    let servers = doc["servers"].as_object().unwrap();
    assert_eq!(servers.len(), 1, "{doc}");
    let server = servers.values().next().unwrap();
    let issuer = server["current"].as_str().unwrap();
    server["issuers"][issuer]["tokens"].clone()
}

/// Change the current tokens in the store, as time (or a revocation) would.
fn edit_tokens(tr: &Taskrail, f: impl FnOnce(&mut Value)) {
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(tr.tokens()).unwrap()).unwrap();
    let server = doc["servers"]
        .as_object_mut()
        .unwrap()
        .values_mut()
        .next()
        .unwrap();
    let issuer = server["current"].as_str().unwrap().to_string();
    f(&mut server["issuers"][&issuer]["tokens"]);
    std::fs::write(tr.tokens(), serde_json::to_vec(&doc).unwrap()).unwrap();
}

#[test]
fn the_sdk_example_signs_in_once_reuses_the_token_and_forgets_it_on_logout() {
    let peer = support::sdk_oauth_http();
    let tr = Taskrail::new().with_fake_browser();
    let url = peer.url.as_str();

    let before = tr.run(&["tools", "-s", url], LIMIT);
    assert_eq!(before.code, Some(exit::SIGN_IN.into()), "{before:?}");
    assert!(before.stderr.contains("sign in required"), "{before:?}");
    assert!(before.stderr.contains("taskrail auth login"), "{before:?}");
    assert_eq!(tr.browser_visits(), 0, "no browser without `auth login`");

    let login = tr.run(&["auth", "login", url], LIMIT);
    assert_eq!(login.code, Some(0), "{login:?}\n{}", peer.log_tail(2000));
    assert!(login.stderr.contains("signed in to"), "{login:?}");
    assert_eq!(tr.browser_visits(), 1);
    let first = tokens(&tr);
    assert!(
        first["access_token"]
            .as_str()
            .is_some_and(|t| !t.is_empty())
    );
    assert_eq!(
        first["scopes"][0], "mcp:tools",
        "the example's scopes_supported"
    );

    // Second run: the stored token, no browser.
    let tools = tr.run(&["tools", "-s", url], LIMIT);
    assert_eq!(tools.code, Some(0), "{tools:?}");
    assert!(tools.stdout.contains("greet"), "{tools:?}");
    let call = tr.run(
        &["call", "-s", url, "greet", "--args", r#"{"name":"Ada"}"#],
        LIMIT,
    );
    assert_eq!(call.code, Some(0), "{call:?}");
    assert!(call.stdout.contains("Ada"), "{call:?}");
    assert_eq!(tr.browser_visits(), 1, "the stored token was used");
    let again = tr.run(&["auth", "login", url], LIMIT);
    assert!(again.stderr.contains("already signed in"), "{again:?}");
    assert_eq!(tr.browser_visits(), 1);

    let status = tr.run(&["auth", "status", "-s", url, "--json"], LIMIT);
    let line: Value = serde_json::from_str(status.stdout.trim()).unwrap();
    assert_eq!(line["signedIn"], true, "{status:?}");
    assert_eq!(
        line["renewable"], false,
        "the example issues no refresh token"
    );

    // This example issues no refresh token: an expired sign-in asks for a new one.
    edit_tokens(&tr, |t| t["expires_at"] = 1.into());
    let expired = tr.run(&["tools", "-s", url], LIMIT);
    assert_eq!(expired.code, Some(exit::SIGN_IN.into()), "{expired:?}");
    assert!(
        expired.stderr.contains("could not be renewed"),
        "{expired:?}"
    );
    let relogin = tr.run(&["auth", "login", url], LIMIT);
    assert_eq!(relogin.code, Some(0), "{relogin:?}");
    assert_eq!(tr.browser_visits(), 2);

    let logout = tr.run(&["auth", "logout", url], LIMIT);
    assert_eq!(logout.code, Some(0), "{logout:?}");
    assert!(logout.stderr.contains("signed out"), "{logout:?}");
    let doc = std::fs::read_to_string(tr.tokens()).unwrap();
    assert!(!doc.contains("localhost"), "the sign-in is gone: {doc}");
    let status = tr.run(&["auth", "status", "-s", url], LIMIT);
    assert!(status.stdout.contains("not signed in"), "{status:?}");
    let after = tr.run(&["tools", "-s", url], LIMIT);
    assert_eq!(after.code, Some(exit::SIGN_IN.into()), "{after:?}");
    assert_eq!(tr.browser_visits(), 2);
}

#[test]
fn fastmcp_tokens_are_refreshed_before_expiry_and_on_a_401() {
    let peer = support::fastmcp_oauth_http();
    let tr = Taskrail::new().with_fake_browser();
    let url = peer.url.as_str();
    let login = tr.run(&["auth", "login", url], LIMIT);
    assert_eq!(login.code, Some(0), "{login:?}\n{}", peer.log_tail(2000));
    assert_eq!(tr.browser_visits(), 1);
    let first = tokens(&tr);
    let refresh = first["refresh_token"]
        .as_str()
        .expect("a refresh token")
        .to_string();

    // Expired by the clock: renewed before the request, with the rotated refresh token.
    edit_tokens(&tr, |t| t["expires_at"] = 1.into());
    let run = tr.run(&["tools", "-s", url], LIMIT);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("slow_count"), "{run:?}");
    let second = tokens(&tr);
    assert_ne!(second["access_token"], first["access_token"]);
    assert_ne!(
        second["refresh_token"].as_str(),
        Some(refresh.as_str()),
        "rotated"
    );
    assert!(second["expires_at"].as_i64().unwrap() > 1);

    // Refused by the server (a revoked access token): a 401, then a refresh.
    edit_tokens(&tr, |t| t["access_token"] = "revoked-by-the-test".into());
    let run = tr.run(&["tools", "-s", url], LIMIT);
    assert_eq!(run.code, Some(0), "{run:?}");
    let third = tokens(&tr);
    assert_ne!(third["access_token"], "revoked-by-the-test");
    assert_ne!(third["refresh_token"], second["refresh_token"]);

    // A task runs on the refreshed sign-in.
    let call = tr.run(
        &[
            "call",
            "-s",
            url,
            "slow_count",
            "--args",
            r#"{"steps":2,"delay":0.05}"#,
        ],
        LIMIT,
    );
    assert_eq!(call.code, Some(0), "{call:?}");
    assert_eq!(tr.browser_visits(), 1, "no browser for any refresh");

    // A refresh the server refuses: sign in again, said plainly.
    edit_tokens(&tr, |t| {
        t["access_token"] = "revoked-again".into();
        t["refresh_token"] = "revoked-refresh".into();
    });
    let run = tr.run(&["tools", "-s", url], LIMIT);
    assert_eq!(run.code, Some(exit::SIGN_IN.into()), "{run:?}");
    assert!(run.stderr.contains("sign in required"), "{run:?}");
    assert!(run.stderr.contains("could not be renewed"), "{run:?}");
    let status = tr.run(&["auth", "status", "-s", url, "--json"], LIMIT);
    let line: Value = serde_json::from_str(status.stdout.trim()).unwrap();
    assert_eq!(line["signedIn"], false, "{status:?}");
    let login = tr.run(&["auth", "login", url], LIMIT);
    assert_eq!(login.code, Some(0), "{login:?}");
    assert_eq!(tr.browser_visits(), 2);
}

/// GET `url` without following redirects; the `Location` it redirects to.
fn redirect_of(url: &str) -> String {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_once('/').unwrap();
    let mut s = std::net::TcpStream::connect(authority).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "GET /{path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("location")
                .then(|| value.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no redirect: {answer}"))
}

#[test]
fn no_browser_prints_the_url_and_a_pasted_redirect_completes_the_sign_in() {
    // Over SSH the browser runs elsewhere and cannot reach the loopback listener: the user
    // opens the printed URL there and pastes the address it ends on.
    let peer = support::fastmcp_oauth_http();
    let tr = Taskrail::new().with_fake_browser();
    let mut login = tr.spawn(&["auth", "login", &peer.url, "--no-browser"]);
    login.wait_stderr("Open this URL in a browser", LIMIT);
    let url = login.wait_stderr("/authorize?", LIMIT).trim().to_string();
    login.wait_stderr("paste that page's address", LIMIT);
    let location = redirect_of(&url);
    assert!(location.contains("code="), "{location}");
    // Another response (a stale tab, a forgery) is ignored, and said so.
    login.write_line("http://127.0.0.1:1/callback?code=forged&state=not-ours");
    login.wait_stderr("not the response to this sign-in", LIMIT);
    login.write_line(&location);
    let run = login.finish(LIMIT);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stderr.contains("signed in to"), "{run:?}");
    assert_eq!(tr.browser_visits(), 0, "no browser was started");
    let tools = tr.run(&["tools", "-s", &peer.url], LIMIT);
    assert_eq!(tools.code, Some(0), "{tools:?}");
}

#[test]
fn a_loopback_server_named_another_way_is_offered_the_spelling_that_signs_in() {
    // The example's resource metadata says `localhost`; the user typed 127.0.0.1.
    let peer = support::sdk_oauth_http();
    let tr = Taskrail::new().with_fake_browser();
    let typed = peer.url.replace("localhost", "127.0.0.1");
    assert_ne!(
        typed, peer.url,
        "the example names itself localhost: {}",
        peer.url
    );
    let works = format!("taskrail auth login {}", peer.url);

    let login = tr.run(&["auth", "login", &typed], LIMIT);
    assert_ne!(login.code, Some(0), "{login:?}");
    assert!(login.stderr.contains(&works), "{login:?}");
    assert_eq!(tr.browser_visits(), 0, "refused before the browser");
    let tools = tr.run(&["tools", "-s", &typed], LIMIT);
    assert_eq!(tools.code, Some(exit::SIGN_IN.into()), "{tools:?}");
    assert!(
        tools.stderr.contains(&works),
        "not the failing spelling: {tools:?}"
    );

    // The suggested command signs in.
    let login = tr.run(&["auth", "login", &peer.url], LIMIT);
    assert_eq!(login.code, Some(0), "{login:?}");
}
