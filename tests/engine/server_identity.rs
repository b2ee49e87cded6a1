//! One server, two names: a server the config names (`[[server]] name = "peer"`) and its
//! URL given with `--server` are one server in the ledger, for every command; a ledger
//! written without that config (rows under the URL) moves to the name on the next run with
//! it, a task stored under both names merging into one. Peer: FastMCP over HTTP.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;

use serde_json::Value;
use support::taskrail::{Taskrail, task_id};

const LIMIT: Duration = Duration::from_secs(90);

/// `taskrail --config FILE ARGS…`
fn with(tr: &Taskrail, config: &str, args: &[&str]) -> support::taskrail::Run {
    let mut all = vec!["--config", config];
    all.extend_from_slice(args);
    tr.run(&all, LIMIT)
}

fn servers_of(records: &[Value], id: &str) -> Vec<String> {
    records
        .iter()
        .filter(|r| r["taskId"] == id)
        .map(|r| r["server"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_configured_name_and_its_url_are_one_server() {
    let peer = support::fastmcp_http();
    let tr = Taskrail::new();
    let named = tr.dir().join("named.toml");
    std::fs::write(
        &named,
        format!("[[server]]\nname = \"peer\"\nurl = \"{}\"\n", peer.url),
    )
    .unwrap();
    let bare = tr.dir().join("bare.toml");
    std::fs::write(&bare, "# no servers\n").unwrap();
    let (named, bare) = (named.to_str().unwrap(), bare.to_str().unwrap());
    let slow = r#"{"steps":8,"delay":0.5}"#;

    // With the config, the URL given with --server is the configured server.
    let both = task_id(&with(
        &tr,
        named,
        &[
            "call",
            "--server",
            &peer.url,
            "slow_count",
            "--args",
            slow,
            "--detach",
        ],
    ));
    // Runs without it know the server by its URL: a new task, and the same task fetched
    // by URL (now stored under both ids).
    let before = task_id(&with(
        &tr,
        bare,
        &[
            "call",
            "--server",
            &peer.url,
            "slow_count",
            "--args",
            slow,
            "--detach",
        ],
    ));
    let got = with(&tr, bare, &["get", "--server", &peer.url, &both]);
    assert_eq!(got.code, Some(0), "{got:#?}");
    let conn = rusqlite::Connection::open(tr.db()).unwrap();
    let mut stmt = conn
        .prepare("SELECT server, task_id FROM tasks ORDER BY id")
        .unwrap();
    let stored: Vec<(String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    drop(stmt);
    drop(conn);
    let at_url = |id: &str| {
        stored
            .iter()
            .filter(|(s, t)| t == id && s.starts_with("http://"))
            .count()
    };
    assert_eq!(at_url(&before), 1, "{stored:?}");
    assert_eq!(at_url(&both), 1, "{stored:?}");
    assert!(
        stored.iter().any(|(s, t)| *t == both && s == "peer"),
        "call --server URL with the config records under the name: {stored:?}"
    );

    // The next run with the config moves the URL's rows to the name, merging the task
    // stored twice (its timeline keeps both rows' events).
    let records = with(&tr, named, &["ls", "--all", "--json"]).json_lines();
    assert_eq!(servers_of(&records, &before), ["peer"], "{records:#?}");
    assert_eq!(servers_of(&records, &both), ["peer"], "{records:#?}");
    assert_eq!(records.len(), 2, "{records:#?}");
    let timeline = with(&tr, named, &["timeline", &both, "--json"]);
    assert_eq!(timeline.code, Some(0), "{timeline:#?}");
    let kinds: Vec<String> = timeline
        .json_lines()
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        kinds.iter().any(|k| k == "created"),
        "the named row's events: {kinds:?}"
    );
    assert!(
        timeline.stdout.contains("tracked"),
        "the URL row's events: {}",
        timeline.stdout
    );

    // `get -s NAME` records under the name.
    let got = with(&tr, named, &["get", "--server", "peer", &before]);
    assert_eq!(got.code, Some(0), "{got:#?}");
    let records = with(&tr, named, &["ls", "--all", "--json"]).json_lines();
    assert!(
        records.iter().all(|r| r["server"] == "peer"),
        "{records:#?}"
    );

    // `watch -s NAME` with no ids resumes the server's unfinished tasks.
    let watch = with(&tr, named, &["watch", "--server", "peer", "--json"]);
    assert_eq!(watch.code, Some(0), "{watch:#?}");
    let lines = watch.json_lines();
    for id in [&before, &both] {
        let last = lines
            .iter()
            .rev()
            .find(|l| l["taskId"] == **id)
            .unwrap_or_else(|| panic!("{id} was resumed: {watch:#?}"));
        assert_eq!(last["server"], "peer");
        assert_eq!(last["status"], "completed", "{last}");
    }
    let records = with(&tr, named, &["ls", "--all", "--json"]).json_lines();
    assert_eq!(records.len(), 2, "{records:#?}");
    assert!(
        records
            .iter()
            .all(|r| r["server"] == "peer" && r["status"] == "completed"),
        "{records:#?}"
    );
}
