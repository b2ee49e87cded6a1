//! `taskrail proxy` in front of an upstream that wants a signed-in user nobody has signed in
//! yet (the TypeScript SDK's OAuth example): the host's session starts anyway (the proxy
//! answers `initialize` itself, promising tool list changes), a call is a tool error naming
//! the command that signs in, and once the user runs that command in another shell the
//! proxy connects by itself and tells every host its tools changed; the same session
//! lists the real tools and its call goes through. Real hosts (the TypeScript SDK client)
//! on both listeners: stdio (the host starts the proxy) and Streamable HTTP.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;

use serde_json::Value;

use support::hosts::{Host, Sdk, Via, listen, user_with_server};

const LIMIT: Duration = Duration::from_secs(90);

/// The command a tool error tells the user to run, as argv (after `taskrail`).
fn command_in(text: &str) -> Vec<String> {
    let start = text
        .find("taskrail auth login ")
        .unwrap_or_else(|| panic!("no command in {text:?}"));
    let rest = &text[start + "taskrail ".len()..];
    let end = rest.find(" (in a shell").unwrap_or(rest.len());
    shlex::split(&rest[..end]).unwrap_or_else(|| panic!("not a shell command: {text:?}"))
}

fn waiting_host(host: &mut Host) -> String {
    let connected = host.wait("connected", LIMIT);
    assert_eq!(connected["server"], "taskrail-proxy", "{connected}");
    assert_eq!(connected["listChanged"], true, "{connected}");
    let instructions = connected["instructions"].as_str().unwrap_or_default();
    assert!(instructions.contains("taskrail auth login"), "{connected}");
    let tools = host.wait("tools", LIMIT);
    assert_eq!(tools["names"], serde_json::json!([]), "{tools}");
    let result = host.wait("result", LIMIT);
    assert_eq!(
        result["isError"], true,
        "a tool error, not a protocol error: {result}"
    );
    let text = result["text"].as_str().unwrap().to_string();
    assert!(text.contains("wants a signed-in user"), "{text}");
    host.wait("waiting_for_list_change", LIMIT);
    text
}

fn signed_in_host(host: Host) -> Vec<Value> {
    let mut host = host;
    host.wait("list_changed", LIMIT);
    let relisted = host.wait("relisted", LIMIT);
    let names = relisted["names"].as_array().unwrap();
    assert!(names.iter().any(|n| n == "greet"), "{relisted}");
    let after = host.wait("result_after", LIMIT);
    assert_eq!(after["isError"], false, "{after}");
    assert!(
        after["text"].as_str().unwrap_or_default().contains("Ada"),
        "{after}"
    );
    host.finish(LIMIT)
}

#[test]
fn a_host_waits_for_the_sign_in_and_gets_the_tools_without_a_restart() {
    let peer = support::sdk_oauth_http();
    let tr = user_with_server(&peer.url).with_fake_browser();
    let call = [
        "--list",
        "--call",
        "greet",
        "--args",
        r#"{"name":"Ada"}"#,
        "--relist",
        "--timeout",
        "90",
    ];
    // A host that starts the proxy itself, on stdio, naming the upstream by its URL.
    let mut stdio = Host::start(&tr, Sdk::Ts, Via::Stdio(&peer.url), &call);
    let stdio_text = waiting_host(&mut stdio);
    // And one that reaches a listening proxy (the configured server `up`) by URL.
    let (listener, url) = listen(&tr, "up");
    let mut http = Host::start(&tr, Sdk::Ts, Via::Url(&url), &call);
    let http_text = waiting_host(&mut http);
    assert!(http_text.contains("taskrail auth login up"), "{http_text}");
    assert_eq!(tr.browser_visits(), 0, "nobody signed in yet");

    // The user runs what the host was told, in another shell.
    let argv = command_in(&stdio_text);
    let args: Vec<&str> = argv.iter().map(String::as_str).collect();
    let login = tr.run(&args, LIMIT);
    assert_eq!(login.code, Some(0), "{login:?}\n{}", peer.log_tail(2000));
    assert_eq!(tr.browser_visits(), 1);

    // Noticed by the proxies themselves within seconds (their periodic retry after a
    // sign-in was refused is 30 s away).
    let started = std::time::Instant::now();
    stdio.wait("list_changed", LIMIT);
    http.wait("list_changed", LIMIT);
    let noticed = started.elapsed();
    assert!(noticed < Duration::from_secs(12), "{noticed:?}");
    let stdio_events = signed_in_host(stdio);
    let http_events = signed_in_host(http);
    for events in [&stdio_events, &http_events] {
        assert_eq!(
            events.iter().filter(|e| e["event"] == "connected").count(),
            1,
            "one session throughout: {events:?}"
        );
    }
    drop(listener);
}

#[test]
fn a_2026_host_is_answered_the_same_way_until_the_sign_in_then_lists_the_tools() {
    let peer = support::sdk_oauth_http();
    let tr = user_with_server(&peer.url).with_fake_browser();
    let args = [
        "--mode",
        "auto",
        "--list",
        "--call",
        "greet",
        "--args",
        r#"{"name":"Ada"}"#,
    ];
    let mut host = Host::start(&tr, Sdk::Python, Via::Stdio("up"), &args);
    let connected = host.wait("connected", LIMIT);
    assert_eq!(connected["protocolVersion"], "2026-07-28", "{connected}");
    assert_eq!(connected["server"], "taskrail-proxy", "{connected}");
    let tools = host.wait("tools", LIMIT);
    assert_eq!(tools["names"], serde_json::json!([]), "{tools}");
    let result = host.wait("result", LIMIT);
    assert_eq!(result["isError"], true, "{result}");
    let text = result["text"].as_str().unwrap_or_default();
    assert!(text.contains("taskrail auth login up"), "{result}");
    host.finish(LIMIT);

    // Signed in: the same kind of host lists the upstream's (2025-era) tools and calls one.
    let login = tr.run(&["auth", "login", "up"], LIMIT);
    assert_eq!(login.code, Some(0), "{login:?}");
    let mut host = Host::start(&tr, Sdk::Python, Via::Stdio("up"), &args);
    let tools = host.wait("tools", LIMIT);
    assert!(
        tools["names"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "greet"),
        "{tools}"
    );
    let result = host.wait("result", LIMIT);
    assert_eq!(result["isError"], false, "{result}");
    assert!(
        result["text"].as_str().unwrap_or_default().contains("Ada"),
        "{result}"
    );
    host.finish(LIMIT);
}
