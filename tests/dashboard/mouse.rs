//! Clicks in the real dashboard: tmux types an SGR mouse press and release at the screen
//! cell where the capture shows a tab label or a task row, and the board follows (the tab
//! switches, the row is selected). The click is looked up in the regions recorded while
//! the frame was drawn.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::time::Duration;

use crate::support;
use support::taskrail::{DemoProcess, Taskrail, task_id};
use support::tmux::Tmux;

const CLI_LIMIT: Duration = Duration::from_secs(60);

fn call(tr: &Taskrail, url: &str, tool: &str, args: &str) -> String {
    task_id(&tr.run(
        &["call", "--server", url, tool, "--args", args, "--detach"],
        CLI_LIMIT,
    ))
}

/// Where `text` first shows on screen: (column, line), both from 0.
fn position(screen: &str, text: &str) -> Option<(usize, usize)> {
    screen.lines().enumerate().find_map(|(y, l)| {
        let at = l.find(text)?;
        Some((l[..at].chars().count(), y))
    })
}

/// A left click at (column, line) from 0, as a terminal reports it (SGR mouse mode).
fn click(tmux: &Tmux, (x, y): (usize, usize)) {
    let (x, y) = (x + 1, y + 1);
    tmux.type_text(&format!("\u{1b}[<0;{x};{y}M\u{1b}[<0;{x};{y}m"));
}

#[test]
fn a_click_switches_the_tab_and_selects_the_row_it_lands_on() {
    let demo = DemoProcess::start(&[]);
    let url = demo.url.as_str();
    let tr = Taskrail::new();
    let ask = call(
        &tr,
        url,
        "wait_for_input",
        r#"{"prompt":"Name the release"}"#,
    );
    let lint = call(&tr, url, "lint", r#"{"repo":"taskrail"}"#);
    let (ask, lint) = (&ask[..8], &lint[..8]);

    let tmux = Tmux::start("mouse");
    tmux.start_dashboard(&tr, &format!("--server {url}"));
    let screen = tmux.wait("both rows, lint finished", |s| {
        s.contains(ask)
            && s.lines()
                .any(|l| l.contains(lint) && l.contains("tool error"))
    });

    // The Failed tab: only the tool error stays.
    click(&tmux, position(&screen, "Failed").unwrap());
    let screen = tmux.wait("the Failed tab", |s| s.contains(lint) && !s.contains(ask));

    // Back to All, then a click on the waiting task's row selects it.
    click(&tmux, position(&screen, "All ").unwrap());
    let screen = tmux.wait("the All tab", |s| s.contains(lint) && s.contains(ask));
    click(&tmux, position(&screen, ask).unwrap());
    tmux.wait("the clicked row selected", |s| {
        s.lines().any(|l| l.starts_with('›') && l.contains(ask))
    });
    click(&tmux, position(&screen, lint).unwrap());
    tmux.wait("the other row selected", |s| {
        s.lines().any(|l| l.starts_with('›') && l.contains(lint))
    });
    tmux.quit();
}
