//! Legacy (2025-11-25) tasks survive the process that started them, against a real legacy
//! server: @modelcontextprotocol/server-everything (`simulate-research-query`). A task lives
//! in the session that created it; taskrail keeps the session id (a secret) in the ledger and
//! rejoins it from `watch`, after a `kill -9` of a first watcher, to answer an input request
//! received before the kill, and from the dashboard, whose detail view shows the
//! `tasks/result`. A restarted server no longer knows the session: "session lost".
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;

use serde_json::Value;
use support::taskrail::{Taskrail, task_id};
use support::tmux::Tmux;

const LIMIT: Duration = Duration::from_secs(90);
const TOOL: &str = "simulate-research-query";

fn detach(tr: &Taskrail, url: &str, args: &str) -> String {
    task_id(&tr.run(
        &["call", "--server", url, TOOL, "--args", args, "--detach"],
        LIMIT,
    ))
}

/// The report text in a JSON line's `result`.
fn report(line: &Value) -> String {
    line["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no result text in {line}"))
        .to_string()
}

#[test]
fn a_detached_task_is_watched_to_its_result_also_after_a_killed_watcher() {
    let peer = support::everything_http();
    let tr = Taskrail::new();

    let id = detach(&tr, &peer.url, r#"{"topic":"tide pools"}"#);
    let watch = tr.run(&["watch", "--server", &peer.url, &id, "--json"], LIMIT);
    assert_eq!(watch.code, Some(0), "{watch:#?}");
    let last = watch.json_lines().pop().expect("JSON lines");
    assert_eq!(last["status"], "completed", "{last}");
    assert!(report(&last).contains("tide pools"), "{last}");

    // A first watcher killed mid-task; the next one rejoins the session and finishes.
    let id = detach(&tr, &peer.url, r#"{"topic":"kelp forests"}"#);
    let mut first = tr.spawn(&["watch", "--server", &peer.url, &id, "--json"]);
    first.wait_stdout("working", LIMIT);
    first.kill9();
    let watch = tr.run(&["watch", "--server", &peer.url, &id, "--json"], LIMIT);
    assert_eq!(watch.code, Some(0), "{watch:#?}");
    let last = watch.json_lines().pop().expect("JSON lines");
    assert_eq!(last["status"], "completed", "{last}");
    assert!(report(&last).contains("kelp forests"), "{last}");
    assert!(
        !watch.stderr.contains("expired") && !watch.stderr.contains("session lost"),
        "{watch:#?}"
    );
}

#[test]
fn input_requested_before_a_kill_is_answered_after_it_through_the_new_follower() {
    let peer = support::everything_http();
    let tr = Taskrail::new();
    let id = detach(&tr, &peer.url, r#"{"topic":"tides","ambiguous":true}"#);

    let mut first = tr.spawn(&["watch", "--server", &peer.url, &id]);
    first.wait_stderr("input requested", LIMIT);
    let key = first.wait_stderr("key: ", LIMIT);
    let key = key.trim().trim_start_matches("key: ").to_string();
    first.kill9();

    // The new follower rejoins the session and shows the request still waiting.
    let mut second = tr.spawn(&["watch", "--server", &peer.url, &id, "--json"]);
    second.wait_stderr("input requested", LIMIT);
    // Answered from another shell: through the ledger's outbox, by the follower.
    let ack = tr.run(
        &[
            "answer",
            "--server",
            &peer.url,
            &id,
            &key,
            "--json",
            r#"{"action":"accept","content":{"interpretation":"historical"}}"#,
        ],
        LIMIT,
    );
    assert_eq!(ack.code, Some(0), "{ack:#?}");
    let done = second.finish(LIMIT);
    assert_eq!(done.code, Some(0), "{done:#?}");
    let last = done.json_lines().pop().expect("JSON lines");
    assert_eq!(last["status"], "completed", "{last}");
    let text = report(&last);
    assert!(
        text.contains("tides") && text.contains("historical"),
        "the answer reached the task: {text}"
    );
    let rec = tr.record(&id).unwrap();
    assert_eq!(rec["answeredKeys"], serde_json::json!([key]), "{rec}");
}

#[test]
fn a_restarted_server_has_lost_the_session() {
    let peer = support::everything_http();
    let port = peer.port();
    let url = peer.url.clone();
    let tr = Taskrail::new();
    let id = detach(&tr, &url, r#"{"topic":"tides","ambiguous":true}"#);
    drop(peer);
    let _restarted = support::everything_http_on(port);

    let watch = tr.run(&["watch", "--server", &url, &id], LIMIT);
    assert_eq!(watch.code, Some(5), "{watch:#?}");
    assert!(watch.stderr.contains("session lost"), "{watch:#?}");
    let ls = tr.run(&["ls", "--all"], LIMIT);
    let line = ls
        .stdout
        .lines()
        .find(|l| l.contains(&id[..8]))
        .unwrap_or_else(|| panic!("{ls:#?}"));
    assert!(line.contains("session lost"), "{line}");
    assert_eq!(tr.record(&id).unwrap()["end"], "session_lost");
}

#[test]
fn the_dashboard_detail_shows_a_legacy_tasks_result() {
    let peer = support::everything_http();
    let tr = Taskrail::new();
    let tmux = Tmux::start("legacy");
    tmux.start_dashboard(&tr, &format!("--server {}", peer.url));
    let id = detach(&tr, &peer.url, r#"{"topic":"coral reefs"}"#);
    tmux.wait("the task completed on the board", |s| {
        s.lines()
            .any(|l| l.contains(&id[..8]) && l.contains("completed"))
    });
    tmux.keys(&["Enter"]);
    // Only `tasks/result` carries the report; `tasks/get` has none.
    tmux.wait("the report from tasks/result in the detail", |s| {
        s.contains("Research Report: coral reefs")
    });
    tmux.keys(&["Escape"]);
    tmux.wait("the board again", |s| {
        s.contains(" server ") && s.contains(" status ")
    });
    tmux.quit();
}
