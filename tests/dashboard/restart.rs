//! A prompt answered before a restart is never shown after it, end to end: the demo server
//! with `--ack-delay` acknowledges an answer at once but keeps reporting the answered input
//! request for a while. The answer is given from another shell (through the ledger's outbox
//! to the follower), the follower is killed, and a new `watch` and a new dashboard start
//! while the server still reports the request: neither prompts for it.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;

use support::taskrail::{DemoProcess, Taskrail, task_id};
use support::tmux::Tmux;

const LIMIT: Duration = Duration::from_secs(90);

/// The dashboard's first line (`taskrail N tasks  ✎ N waiting for input …`).
fn header(screen: &str) -> &str {
    screen.lines().next().unwrap_or_default()
}

#[test]
fn an_answered_prompt_is_not_shown_again_after_a_restart() {
    // Long enough for the new watch and the dashboard to see the stale request.
    let demo = DemoProcess::start(&["--ack-delay", "20000"]);
    let tr = Taskrail::new();
    let id = task_id(&tr.run(
        &[
            "call",
            "--server",
            &demo.url,
            "wait_for_input",
            "--args",
            r#"{"prompt":"Name the release"}"#,
            "--detach",
        ],
        LIMIT,
    ));
    let mut first = tr.spawn(&["watch", "--server", &demo.url, &id]);
    let key = first.wait_stderr("key: ", LIMIT);
    let key = key.trim().trim_start_matches("key: ").to_string();
    let ack = tr.run(
        &[
            "answer",
            "--server",
            &demo.url,
            &id,
            &key,
            "--json",
            r#"{"value":"v2.0"}"#,
        ],
        LIMIT,
    );
    assert_eq!(ack.code, Some(0), "{ack:#?}");
    first.kill9();

    let mut second = tr.spawn(&["watch", "--server", &demo.url, &id, "--json"]);
    // The server still reports the answered request…
    let line = second.wait_stdout("input_required", LIMIT);
    let snapshot: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert!(
        snapshot["inputRequests"].get(&key).is_some(),
        "the server still reports the answered key: {line}"
    );
    // …and the dashboard, started meanwhile, shows the task without asking for input.
    let tmux = Tmux::start("answered");
    tmux.start_dashboard(&tr, &format!("--server {}", demo.url));
    // The server's status, not a prompt: `✎ input_required`, not `✎ input needed`.
    let screen = tmux.wait("the task's row with the server's input_required", |s| {
        let row = s.lines().find(|l| l.contains(&id[..8]));
        assert!(
            !row.is_some_and(|l| l.contains("input needed")),
            "the dashboard asks for the answered key again:\n{s}"
        );
        row.is_some_and(|l| l.contains("input_required"))
    });
    let row = screen.lines().find(|l| l.contains(&id[..8])).unwrap();
    assert!(!row.contains("input needed"), "{screen}");
    assert!(!header(&screen).contains("waiting for input"), "{screen}");
    assert!(screen.contains("inbox 0"), "{screen}");

    let done = second.finish(LIMIT);
    assert_eq!(done.code, Some(0), "{done:#?}");
    assert!(
        !done.stderr.contains("input requested"),
        "no prompt for the answered key after the restart: {}",
        done.stderr
    );
    let last = done.json_lines().pop().unwrap();
    assert_eq!(last["status"], "completed", "{last}");
    let screen = tmux.wait("the task completed on the board", |s| {
        s.lines()
            .any(|l| l.contains(&id[..8]) && l.contains("completed"))
    });
    assert!(!header(&screen).contains("waiting for input"), "{screen}");
    assert_eq!(
        demo.stats()["methods"]["tasks/update"],
        1,
        "answered once, before the restart"
    );
    tmux.quit();
}
