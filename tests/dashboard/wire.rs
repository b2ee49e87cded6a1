//! The wire view end to end in tmux: opened with `w` from the servers view (`v`) while a
//! long demo task pushes its progress, its messages newest first with the task id masked,
//! narrowed with `/`, paused with `p`, one opened as pretty JSON; `esc` back to the list.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;

use support::taskrail::{DemoProcess, Taskrail, task_id};
use support::tmux::{Tmux, quote};

const CLI_LIMIT: Duration = Duration::from_secs(60);

#[test]
fn the_wire_view_opens_from_the_servers_view_filters_pauses_and_shows_json() {
    let demo = DemoProcess::start(&[]);
    let tr = Taskrail::new();
    let config = tr.dir().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "mouse = false\n\n[[server]]\nname = \"demo\"\nurl = \"{}\"\n",
            demo.url
        ),
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    // About a minute of work: progress pushes keep coming while the view is open.
    let id = task_id(&tr.run(
        &[
            "--config",
            cfg,
            "call",
            "--server",
            "demo",
            "import_rows",
            "--args",
            r#"{"count":50000}"#,
            "--detach",
        ],
        CLI_LIMIT,
    ));
    let tmux = Tmux::start("wire");
    tmux.start_dashboard(&tr, &format!("--config {}", quote(&config)));
    tmux.wait("the task on the board", |s| s.contains(&id[..8]));
    tmux.keys(&["v"]);
    tmux.wait("the servers view", |s| s.contains("Servers"));
    tmux.keys(&["w"]);
    let screen = tmux.wait("messages of the demo server", |s| {
        s.contains("Wire — demo") && s.contains("notifications/tasks")
    });
    assert!(screen.contains("● live"), "{screen}");
    assert!(
        !screen.contains(&id),
        "the full task id is on screen:\n{screen}"
    );
    assert!(screen.contains(&format!("{}…", &id[..4])), "{screen}");
    tmux.keys(&["/"]);
    tmux.type_text("tasks/get");
    tmux.keys(&["Enter"]);
    tmux.wait("only tasks/get lines (or none yet)", |s| {
        s.lines()
            .filter(|l| l.contains(" ← ") || l.contains(" → "))
            .all(|l| l.contains("tasks/get") || l.contains("result #"))
            && s.contains("/ tasks/get")
    });
    // `/` again, then esc: the filter is cleared (esc alone leaves the view)
    tmux.keys(&["/"]);
    tmux.keys(&["Escape"]);
    tmux.wait("the filter cleared", |s| {
        !s.contains("/ tasks/get") && s.contains("notifications/tasks")
    });
    tmux.keys(&["p"]);
    tmux.wait("paused", |s| s.contains("paused,"));
    tmux.keys(&["Enter"]);
    let json = tmux.wait("a message as pretty JSON", |s| {
        s.contains("\"jsonrpc\": \"2.0\"") && s.contains("transport")
    });
    assert!(
        !json.contains(&id),
        "the full task id is on screen:\n{json}"
    );
    tmux.keys(&["Escape"]);
    tmux.wait("back to the list", |s| s.contains("Wire — demo"));
    tmux.keys(&["q"]);
    tmux.wait("back to the servers view", |s| {
        s.contains("Servers") && !s.contains("Wire — demo")
    });
    tmux.keys(&["q"]);
    tmux.wait("the board", |s| {
        s.contains("import_rows") && !s.contains("Servers")
    });
    tmux.quit();
}
