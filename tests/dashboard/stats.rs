//! The statistics view end to end in tmux at 80x24: `:stats` on the demo dashboard counts
//! the demo's tasks and one another process left in the ledger, its ranges step with `]`
//! and `[`, the latency of the demo server shows, and `q` goes back to the board.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;

use support::taskrail::{DemoProcess, Taskrail, task_id};
use support::tmux::Tmux;

/// The task count in the view's title (`… · 5 tasks`).
fn counted(screen: &str) -> Option<usize> {
    let title = screen.lines().find(|l| l.contains("Statistics ·"))?;
    let before = title.split(" tasks").next()?;
    before.rsplit(' ').next()?.parse().ok()
}

#[test]
fn stats_on_the_demo_counts_every_task_in_the_ledger_and_steps_its_ranges() {
    let demo = DemoProcess::start(&["--time-scale", "0.05"]);
    let tr = Taskrail::new();
    // A task of another process, before the dashboard starts.
    let before = task_id(&tr.run(
        &[
            "call",
            "--server",
            &demo.url,
            "render_report",
            "--args",
            r#"{"pages":2}"#,
            "--detach",
        ],
        Duration::from_secs(60),
    ));
    assert!(!before.is_empty());

    let tmux = Tmux::start("stats");
    tmux.resize(80, 24);
    tmux.start_dashboard(&tr, "demo");
    tmux.wait("the demo's four tasks", |s| {
        s.contains("4 tasks") || s.contains("5 tasks")
    });
    tmux.keys(&[":"]);
    tmux.type_text("stats");
    tmux.keys(&["Enter"]);
    let screen = tmux.wait("the statistics of the last hour", |s| {
        s.contains("last hour by minute") && counted(s).is_some_and(|n| n >= 5)
    });
    for part in [
        "Tasks by status",
        "Latency p50/p95",
        "Push vs poll",
        "Durations",
        "Waiting for input",
    ] {
        assert!(screen.contains(part), "{part}:\n{screen}");
    }
    assert!(screen.contains("█ running"), "{screen}");
    println!("{screen}");
    // The demo server's requests are timed: its p50/p95 show once it was polled.
    tmux.wait("the demo server's latency", |s| {
        s.lines().any(|l| l.contains("demo") && l.contains(" ms"))
    });
    tmux.keys(&["]"]);
    tmux.wait("6 hours", |s| {
        s.contains("6 h by 5 min") && counted(s).is_some_and(|n| n >= 5)
    });
    tmux.keys(&["]", "]"]);
    tmux.wait("a week", |s| {
        s.contains("7 d by 2 h") && counted(s).is_some()
    });
    tmux.keys(&["["]);
    tmux.wait("a day", |s| s.contains("24 h by 15 min"));
    tmux.keys(&["q"]);
    tmux.wait("the board again", |s| {
        !s.contains("Statistics ·") && s.contains(" taskrail ")
    });
    tmux.quit();
}
