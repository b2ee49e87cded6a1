//! End to end in tmux: the real dashboard and an agent host (the Python SDK client) that
//! starts `taskrail proxy` on the same ledger, in front of FastMCP. The host's blocking call
//! to `ask_name` is answered in the dashboard's inbox and the host receives the greeting; a
//! host killed mid-call leaves its task to the dashboard, which shows it to its end; a
//! cancel on the host's side reaches the upstream and the dashboard shows it cancelled.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;

use support::hosts::{Host, Sdk, Via, event, user_with_server};
use support::shared::fastmcp;
use support::tmux::Tmux;

const LIMIT: Duration = Duration::from_secs(90);

/// The dashboard on the user's config (the upstream named `up`) and ledger.
fn start_dashboard(tmux: &Tmux, tr: &support::taskrail::Taskrail) {
    let config = support::tmux::quote(&tr.dir().join("config.toml"));
    tmux.start_dashboard(tr, &format!("--config {config}"));
}

fn row_with<'a>(screen: &'a str, tool: &str) -> Option<&'a str> {
    screen
        .lines()
        .find(|l| l.contains(tool) && l.trim_start_matches('›').starts_with("up "))
}

#[test]
fn a_hosts_blocking_call_is_answered_in_the_dashboard_inbox() {
    let tr = user_with_server(fastmcp());
    let tmux = Tmux::start("proxy-inbox");
    start_dashboard(&tmux, &tr);
    let host = Host::start(
        &tr,
        Sdk::Python,
        Via::Stdio("up"),
        &["--name", "claude-code", "--call", "ask_name"],
    );
    tmux.wait("the host's task waiting for input", |s| {
        row_with(s, "ask_name").is_some_and(|l| l.contains("input needed"))
    });
    tmux.wait("who started it", |s| s.contains("started by claude-code"));
    tmux.keys(&["i"]);
    tmux.wait("the inbox", |s| s.contains("What is your name?"));
    tmux.keys(&["Enter"]);
    tmux.wait("the form", |s| s.contains("for a call by claude-code"));
    tmux.type_text("Grace");
    tmux.keys(&["Enter"]);
    tmux.wait("an empty inbox", |s| {
        s.contains("Inbox — 0 waiting for input")
    });
    tmux.keys(&["Escape"]);
    tmux.wait("the inbox to close", |s| !s.contains("Inbox —"));
    let events = host.finish(LIMIT);
    assert_eq!(event(&events, "result")["text"], "Hello, Grace!");
    tmux.wait("the task completed", |s| {
        row_with(s, "ask_name").is_some_and(|l| l.contains("completed"))
    });
    tmux.quit();
}

#[test]
fn a_killed_host_leaves_its_task_to_the_dashboard() {
    let tr = user_with_server(fastmcp());
    let tmux = Tmux::start("proxy-killed");
    start_dashboard(&tmux, &tr);
    let mut host = Host::start(
        &tr,
        Sdk::Python,
        Via::Stdio("up"),
        &[
            "--call",
            "slow_count",
            "--args",
            r#"{"steps":16,"delay":0.5}"#,
            "--progress",
        ],
    );
    host.wait("progress", LIMIT);
    tmux.wait("the host's task", |s| {
        row_with(s, "slow_count").is_some_and(|l| l.contains("working"))
    });
    host.kill9();
    tmux.wait("the task followed to its end", |s| {
        row_with(s, "slow_count").is_some_and(|l| l.contains("completed"))
    });
    tmux.keys(&["Enter"]);
    tmux.wait("its result", |s| s.contains("counted to 16"));
    tmux.escape_from("╭ Task ");
    tmux.quit();
}

#[test]
fn a_host_side_cancel_reaches_the_upstream() {
    let tr = user_with_server(fastmcp());
    let tmux = Tmux::start("proxy-cancel");
    start_dashboard(&tmux, &tr);
    let mut host = Host::start(
        &tr,
        Sdk::Python,
        Via::Stdio("up"),
        &[
            "--call",
            "long_sleep",
            "--args",
            r#"{"seconds":120}"#,
            "--cancel-after",
            "5",
        ],
    );
    tmux.wait("the host's task", |s| row_with(s, "long_sleep").is_some());
    host.wait("cancelled", LIMIT);
    tmux.wait("the task cancelled upstream", |s| {
        row_with(s, "long_sleep").is_some_and(|l| l.contains("cancelled"))
    });
    let events = host.finish(LIMIT);
    assert!(!events.iter().any(|e| e["event"] == "result"), "{events:?}");
    tmux.quit();
}
