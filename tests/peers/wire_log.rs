//! `--wire FILE` against servers nobody on this project wrote: FastMCP over stdio (every
//! poll on the child's pipes) and over HTTP with an input round (its input keys embed the
//! task id), and server-everything's legacy session (input on an event stream). Each
//! record has the documented fields; no task id is in any file in full.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::path::Path;
use std::time::Duration;
use support::taskrail::{Taskrail, task_id};
use support::wire_log::{has, masked, records};

const LIMIT: Duration = Duration::from_secs(90);

/// No task id of the ledger appears in full in `path`; with `named`, each appears masked.
fn no_full_ids(tr: &Taskrail, path: &Path, named: bool) {
    let text = std::fs::read_to_string(path).unwrap();
    let ids: Vec<String> = tr
        .records()
        .iter()
        .map(|r| r["taskId"].as_str().unwrap().to_string())
        .collect();
    assert!(!ids.is_empty(), "the ledger has the task");
    for id in ids {
        assert!(!text.contains(&id), "task id {id} in {}", path.display());
        assert!(
            !named || text.contains(&masked(&id)),
            "{} names the task masked",
            path.display()
        );
    }
    let lower = text.to_ascii_lowercase();
    assert!(!lower.contains("mcp-session-id") && !lower.contains("authorization"));
}

#[test]
fn fastmcp_over_stdio_every_poll_is_on_the_pipes() {
    let tr = Taskrail::new();
    let file = tr.dir().join("wire.ndjson");
    let server = format!(
        "stdio:{}",
        shlex::try_join(support::fastmcp_stdio_command().iter().map(String::as_str)).unwrap()
    );
    let run = tr.run(
        &[
            "--wire",
            file.to_str().unwrap(),
            "call",
            "-s",
            &server,
            "slow_count",
            "--args",
            r#"{"steps":3,"delay":0.3}"#,
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    let recs = records(&file);
    assert!(recs.iter().all(|r| r["transport"] == "stdio"), "{recs:#?}");
    assert!(has(&recs, "send", "stdio", "tools/call"), "{recs:#?}");
    assert!(
        has(&recs, "send", "stdio", "tasks/get"),
        "polled: {recs:#?}"
    );
    let last = recs
        .iter()
        .rev()
        .find(|r| r["direction"] == "recv" && r["message"]["result"]["status"] == "completed")
        .expect("the completed snapshot was received");
    assert!(
        last["message"]["result"]["taskId"]
            .as_str()
            .unwrap()
            .ends_with('…')
    );
    no_full_ids(&tr, &file, true);
}

#[test]
fn fastmcp_input_keys_that_embed_the_task_id_are_masked() {
    let peer = support::fastmcp_http();
    let tr = Taskrail::new();
    let files: Vec<_> = ["call", "watch", "answer"]
        .iter()
        .map(|n| tr.dir().join(format!("{n}.ndjson")))
        .collect();
    let wire = |i: usize| files[i].to_str().unwrap().to_string();
    let id = task_id(&tr.run(
        &[
            "--wire",
            &wire(0),
            "call",
            "-s",
            &peer.url,
            "ask_name",
            "--detach",
        ],
        LIMIT,
    ));
    let mut watch = tr.spawn(&["--wire", &wire(1), "watch", "-s", &peer.url, &id, "--json"]);
    let line = watch.wait_stdout("input_required", LIMIT);
    let snapshot: serde_json::Value = serde_json::from_str(&line).unwrap();
    let key = snapshot["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    assert!(key.starts_with(&id), "{key}");
    let ack = tr.run(
        &[
            "--wire",
            &wire(2),
            "answer",
            "-s",
            &peer.url,
            &id,
            &key,
            "--json",
            r#"{"name":"Ada Lovelace"}"#,
        ],
        LIMIT,
    );
    assert_eq!(ack.code, Some(0), "{ack:#?}");
    let done = watch.finish(LIMIT);
    assert_eq!(done.code, Some(0), "{done:#?}");

    // The answer goes through the ledger's outbox to the follower, which sends it.
    let sent: Vec<_> = files[1..].iter().flat_map(|f| records(f)).collect();
    let update = sent
        .iter()
        .find(|r| r["direction"] == "send" && r["message"]["method"] == "tasks/update")
        .expect("the answer went as tasks/update");
    let text = update["message"].to_string();
    assert!(text.contains("Ada Lovelace"), "{text}");
    assert!(
        text.contains(&format!("{}…:", &id[..4])),
        "the key is masked: {text}"
    );
    let watched = records(&files[1]);
    assert!(has(&watched, "send", "http", "tasks/get"), "{watched:#?}");
    for (i, f) in files.iter().enumerate() {
        // the answer itself travels through the ledger: that process may name no task
        no_full_ids(&tr, f, i < 2);
    }
}

#[test]
fn server_everything_legacy_session_and_its_input_stream() {
    let peer = support::everything_http();
    let tr = Taskrail::new();
    let file = tr.dir().join("wire.ndjson");
    let mut call = tr.spawn(&[
        "--wire",
        file.to_str().unwrap(),
        "call",
        "-s",
        &peer.url,
        "simulate-research-query",
        "--args",
        r#"{"topic":"tide pools","ambiguous":true}"#,
    ]);
    let key_line = call.wait_stderr("key: ", LIMIT);
    let key = key_line.trim().trim_start_matches("key: ").to_string();
    call.write_line(&format!(
        r#"{key} {{"action":"accept","content":{{"interpretation":"historical"}}}}"#
    ));
    let run = call.finish(LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    let recs = records(&file);
    assert!(has(&recs, "send", "http", "initialize"), "{recs:#?}");
    assert!(
        has(&recs, "recv", "sse", "elicitation/create"),
        "the input request came on an event stream: {recs:#?}"
    );
    assert!(
        recs.iter()
            .any(|r| r["direction"] == "send" && r["message"]["result"]["action"] == "accept"),
        "the answer was sent: {recs:#?}"
    );
    no_full_ids(&tr, &file, true);
}
