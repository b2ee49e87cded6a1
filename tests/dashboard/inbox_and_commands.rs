//! End-to-end tests of the power features on the real binary in tmux: a config file with
//! two servers (the demo server and the FastMCP peer) shown at once and narrowed with
//! `:server`; the inbox answering a request in place; re-run linking the new task to the
//! old one. A private tmux server per test (its own `-L` socket); every check polls
//! `capture-pane` until it holds (bounded). tmux is required: a missing tmux fails.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;

use support::taskrail::{DemoProcess, Taskrail, task_id};
use support::tmux::{Tmux, quote};

const CLI_LIMIT: Duration = Duration::from_secs(60);

fn header_line<'a>(screen: &'a str, server: &str) -> Option<&'a str> {
    screen
        .lines()
        .take(4)
        .find(|l| l.contains(&format!("● {server} ")))
}

#[test]
fn a_config_with_the_demo_server_and_fastmcp_shows_both_and_narrows_by_server() {
    let demo = DemoProcess::start(&["--time-scale", "0.05"]);
    let peer = support::fastmcp_http();
    let tr = Taskrail::new();
    let config = tr.dir().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "mouse = false\n\n[[server]]\nname = \"demo\"\nurl = \"{}\"\n\n\
             [[server]]\nname = \"fastmcp\"\nurl = \"{}\"\npoll_floor_ms = 300\n",
            demo.url, peer.url
        ),
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    // configured names work as --server for the single-server commands
    let on_demo = task_id(&tr.run(
        &[
            "--config",
            cfg,
            "call",
            "--server",
            "demo",
            "render_report",
            "--args",
            r#"{"pages":2}"#,
            "--detach",
        ],
        CLI_LIMIT,
    ));
    let on_peer = task_id(&tr.run(
        &[
            "--config",
            cfg,
            "call",
            "--server",
            "fastmcp",
            "slow_count",
            "--args",
            r#"{"steps":2,"delay":0.1}"#,
            "--detach",
        ],
        CLI_LIMIT,
    ));
    let tmux = Tmux::start("config");
    tmux.start_dashboard(&tr, &format!("--config {}", quote(&config)));
    tmux.wait("both servers connected with their tasks", |s| {
        header_line(s, "demo").is_some_and(|l| l.contains("connected"))
            && header_line(s, "fastmcp").is_some_and(|l| l.contains("connected"))
            && s.contains(&on_demo[..8])
            && s.contains(&on_peer[..8])
    });
    tmux.keys(&[":"]);
    tmux.type_text("server fast");
    tmux.keys(&["Tab"]);
    tmux.wait("the completed server name", |s| {
        s.contains(": server fastmcp")
    });
    tmux.keys(&["Enter"]);
    let screen = tmux.wait("only the FastMCP task", |s| {
        s.contains(&on_peer[..8]) && !s.contains(&on_demo[..8])
    });
    assert!(screen.contains("fastmcp · sort"), "{screen}");
    tmux.keys(&[":"]);
    tmux.type_text("server all");
    tmux.keys(&["Enter"]);
    tmux.wait("both tasks again", |s| {
        s.contains(&on_peer[..8]) && s.contains(&on_demo[..8])
    });
    tmux.quit();
}

#[test]
fn the_inbox_answers_in_place_and_rerun_links_the_new_task() {
    let demo = DemoProcess::start(&["--time-scale", "0.05"]);
    let tr = Taskrail::new();
    let first = task_id(&tr.run(
        &[
            "call",
            "--server",
            &demo.url,
            "deploy",
            "--args",
            r#"{"service":"billing","env":"staging"}"#,
            "--detach",
        ],
        CLI_LIMIT,
    ));
    let tmux = Tmux::start("inbox");
    tmux.start_dashboard(&tr, &format!("--server {}", demo.url));
    tmux.wait("the deploy task waiting for input", |s| {
        s.contains("✎ 1 waiting for input")
    });
    tmux.keys(&["i"]);
    tmux.wait("the inbox with the approval request", |s| {
        s.contains("Inbox — 1 waiting for input") && s.contains(&first[..8])
    });
    tmux.keys(&["Enter"]);
    tmux.wait("the input form over the inbox", |s| s.contains("decline"));
    tmux.keys(&["C-d"]);
    tmux.wait("an empty inbox", |s| {
        s.contains("Inbox — 0 waiting for input") && s.contains("Nothing waits for input")
    });
    tmux.keys(&["Escape"]);
    tmux.wait("the inbox to close", |s| !s.contains("Inbox —"));
    tmux.wait("the deploy task to end after the decline", |s| {
        s.lines().any(|l| {
            l.contains(&first[..8])
                && (l.contains("failed") || l.contains("cancelled") || l.contains("completed"))
        })
    });
    tmux.keys(&["r"]);
    tmux.wait("the re-run confirmation", |s| s.contains("Re-run task"));
    tmux.keys(&["y"]);
    tmux.wait("the new task, waiting for input again", |s| {
        s.contains("2 tasks") && s.contains("✎ 1 waiting for input")
    });
    tmux.keys(&["i"]);
    tmux.wait("the new request in the inbox", |s| {
        s.contains("Inbox — 1 waiting for input")
    });
    tmux.keys(&["Escape"]);
    tmux.wait("the inbox to close", |s| !s.contains("Inbox —"));
    tmux.quit();
    let ls = tr.run(&["ls", "--all", "--json"], CLI_LIMIT);
    assert_eq!(ls.code, Some(0), "{ls:?}");
    let tasks = ls.json_lines();
    assert_eq!(tasks.len(), 2, "{tasks:#?}");
    let rerun = tasks
        .iter()
        .find(|t| t["taskId"] != first.as_str())
        .unwrap_or_else(|| panic!("no second task: {tasks:#?}"));
    assert_eq!(rerun["parentTask"], first.as_str(), "{tasks:#?}");
    assert_eq!(rerun["tool"], "deploy");
    assert_eq!(rerun["arguments"]["service"], "billing");
}
