//! `--wire` (here `TASKRAIL_WIRE`, as a host's configuration would set it) on a proxy: the
//! host's side (`host-stdio`, `host-http`) and the upstream's in one file under the
//! upstream's name; the host's bearer token and the task ids never in it.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::hosts::{Host, Sdk, Via, event, ledger_task, listen_as, user_with_server};
use support::shared::fastmcp;
use support::taskrail::Taskrail;
use support::wire_log::{has, records};

const LIMIT: Duration = Duration::from_secs(90);

/// The file's records once `done` holds for them (the proxy writes on its own thread).
fn wait_records(path: &Path, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let recs = if path.exists() {
            records(path)
        } else {
            Vec::new()
        };
        if done(&recs) || Instant::now() > deadline {
            return recs;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn no_secrets(tr: &Taskrail, path: &Path, tool: &str, secret: Option<&str>) {
    let row = ledger_task(tr, tool, |t| {
        t["tool"] == tool && t["status"] == "completed"
    });
    let id = row["taskId"].as_str().unwrap();
    let text = std::fs::read_to_string(path).unwrap();
    assert!(!text.contains(id), "the task id is in the wire file");
    if let Some(s) = secret {
        assert!(!text.contains(s), "the host's token is in the wire file");
    }
    assert!(!text.to_ascii_lowercase().contains("authorization"));
}

#[test]
fn a_stdio_host_and_the_upstream_in_one_file() {
    let base = user_with_server(fastmcp());
    let file = base.dir().join("wire.ndjson");
    let tr = base.with_env("TASKRAIL_WIRE", file.display().to_string());
    let host = Host::start(
        &tr,
        Sdk::Python,
        Via::Stdio("up"),
        &[
            "--name",
            "wire-host",
            "--call",
            "slow_count",
            "--args",
            r#"{"steps":2,"delay":0.3}"#,
        ],
    );
    let events = host.finish(LIMIT);
    assert_eq!(
        event(&events, "result")["text"],
        "counted to 2",
        "{events:?}"
    );
    let recs = wait_records(&file, |r| has(r, "send", "host-stdio", "result"));
    assert!(has(&recs, "recv", "host-stdio", "initialize"), "{recs:#?}");
    assert!(has(&recs, "recv", "host-stdio", "tools/call"), "{recs:#?}");
    assert!(has(&recs, "send", "host-stdio", "result"), "{recs:#?}");
    assert!(
        has(&recs, "send", "http", "tools/call"),
        "upstream: {recs:#?}"
    );
    assert!(recs.iter().all(|r| r["server"] == "up"), "{recs:#?}");
    no_secrets(&tr, &file, "slow_count", None);
}

#[test]
fn an_http_host_of_the_listener_without_its_token() {
    let base = user_with_server(fastmcp());
    let file = base.dir().join("wire.ndjson");
    let tr = base.with_env("TASKRAIL_WIRE", file.display().to_string());
    let listener = listen_as(&tr, "up", &["wire-http"]);
    let host = Host::start(
        &tr,
        Sdk::Python,
        Via::Url(&listener.url),
        &[
            "--header",
            &listener.header(0),
            "--call",
            "slow_count",
            "--args",
            r#"{"steps":2,"delay":0.3}"#,
        ],
    );
    let events = host.finish(LIMIT);
    assert_eq!(
        event(&events, "result")["text"],
        "counted to 2",
        "{events:?}"
    );
    let recs = wait_records(&file, |r| {
        r.iter()
            .any(|x| x["transport"] == "host-http" && x["message"]["result"]["content"].is_array())
    });
    assert!(has(&recs, "recv", "host-http", "tools/call"), "{recs:#?}");
    assert!(
        recs.iter()
            .any(|x| x["transport"] == "host-http" && x["direction"] == "send"),
        "{recs:#?}"
    );
    assert!(
        has(&recs, "send", "http", "tools/call"),
        "upstream: {recs:#?}"
    );
    no_secrets(&tr, &file, "slow_count", Some(&listener.tokens[0]));
}
