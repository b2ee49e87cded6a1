//! The dashboard and a server that wants a sign-in, in tmux: the header says "sign in
//! required — press L", `L` runs the browser flow while the board keeps updating the other
//! server's tasks, and the server connects once signed in. The protected server is
//! FastMCP's OAuth provider; the browser is `tests/interop/fake_browser.py`, approving when
//! the test says so.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;

use support::taskrail::{DemoProcess, Taskrail, task_id};
use support::tmux::Tmux;

fn percent(line: &str) -> Option<u32> {
    line.split_whitespace()
        .find_map(|w| w.strip_suffix('%')?.parse().ok())
}

#[test]
fn pressing_l_signs_in_without_stopping_the_board() {
    let demo = DemoProcess::start(&["--time-scale", "1.0"]);
    let protected = support::fastmcp_oauth_http();
    // The browser waits for this file: the test decides when the person approves.
    let gate = tempfile::tempdir().unwrap();
    let approve = gate.path().join("approve");
    let tr = Taskrail::new()
        .with_fake_browser()
        .with_env("FAKE_BROWSER_WAIT_FOR", approve.display().to_string());
    let report = task_id(&tr.run(
        &[
            "call",
            "-s",
            &demo.url,
            "render_report",
            "--args",
            r#"{"pages":100}"#,
            "--detach",
        ],
        Duration::from_secs(60),
    ));
    let row = |s: &str| {
        s.lines()
            .find(|l| l.contains(&report[..8]))
            .map(str::to_string)
    };

    let tmux = Tmux::start("signin");
    tmux.launch_dashboard(
        &tr,
        &format!("--server {} --server {}", demo.url, protected.url),
    );
    let screen = tmux.wait("the sign-in prompt in the header", |s| {
        s.contains("sign in required — press L")
    });
    assert_eq!(
        tr.browser_visits(),
        0,
        "no browser before the key: {screen}"
    );

    tmux.keys(&["L"]);
    // The sign-in view shows the URL (for a browser elsewhere); esc leaves it to the board.
    tmux.wait("the sign-in view", |s| {
        s.contains("Sign in to") && s.contains("/authorize?")
    });
    tmux.keys(&["Escape"]);
    let screen = tmux.wait("the board while signing in", |s| {
        s.contains("signing in…") && row(s).and_then(|l| percent(&l)).is_some()
    });
    let before = row(&screen).and_then(|l| percent(&l));
    // The other server's task keeps moving while the browser takes its time.
    let during = tmux.wait("progress while signing in", |s| {
        s.contains("signing in…")
            && row(s)
                .and_then(|l| percent(&l))
                .is_some_and(|p| Some(p) > before)
    });
    println!("---- during the sign-in ----\n{during}");
    std::fs::write(&approve, "yes").unwrap();

    let screen = tmux.wait("the protected server to connect", |s| {
        !s.contains("sign in required")
            && !s.contains("signing in…")
            && s.lines().filter(|l| l.contains("connected")).count() >= 2
    });
    println!("---- signed in ----\n{screen}");
    assert_eq!(tr.browser_visits(), 1);
    let doc = std::fs::read_to_string(tr.tokens()).unwrap();
    assert!(doc.contains("access_token"), "the sign-in is stored");
    tmux.quit();
}
