//! The opening problem: a host's timeout never kills the work. The TypeScript SDK client
//! plays the host the way most hosts run it (a fixed request timeout, no progress, then the
//! same call again); FastMCP is the upstream. A timed-out call leaves its upstream task
//! running, the retry is attached to it (in the same proxy, in a restarted stdio proxy, and
//! over `--listen`), so the host gets the real result from exactly one upstream task (one
//! ledger row); a user's cancel still cancels; a delivered result is never handed out twice;
//! `--answer-within` answers "still running" instead of letting the host time out.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::{Duration, Instant};

use serde_json::Value;
use support::hosts::{
    Host, Sdk, Via, cancel_by, event, ledger_task, ledger_tasks, listen_as, timeline,
    user_with_server,
};
use support::shared::fastmcp;
use support::taskrail::Taskrail;

const LIMIT: Duration = Duration::from_secs(120);

/// The ledger rows of `tool`.
fn rows(tr: &Taskrail, tool: &str) -> Vec<Value> {
    ledger_tasks(tr)
        .into_iter()
        .filter(|t| t["tool"] == tool)
        .collect()
}

/// The row of `tool` once it is `status`.
fn row_once(tr: &Taskrail, tool: &str, status: &str) -> Value {
    ledger_task(tr, &format!("{tool} {status}"), |t| {
        t["tool"] == tool && t["status"] == status
    })
}

/// The kinds of the timeline events of task `id`.
fn kinds(tr: &Taskrail, id: &str) -> Vec<String> {
    timeline(tr, id)
        .iter()
        .filter_map(|e| e["kind"].as_str().map(str::to_string))
        .collect()
}

/// The timeline events of `id` of kind `kind`, waiting (bounded) for at least one.
fn events_of(tr: &Taskrail, id: &str, kind: &str) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let all = timeline(tr, id);
        let found: Vec<Value> = all.iter().filter(|e| e["kind"] == kind).cloned().collect();
        if !found.is_empty() {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "no {kind:?} event in the timeline of {id}: {all:#?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A value as text, for "mentions" checks on details that may be strings or objects.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn attempts(events: &[Value]) -> Vec<&Value> {
    events.iter().filter(|e| e["event"] == "attempt").collect()
}

/// Checks shared by the timeout-then-retry tests: the first attempt timed out (-32001), a
/// later one got the real `result_text`; one ledger row for `tool`, completed, whose
/// timeline says the host gave up (who and why) and that a retry was attached.
fn one_task_despite_the_timeout(tr: &Taskrail, events: &[Value], tool: &str, result_text: &str) {
    let tries = attempts(events);
    assert!(tries.len() >= 2, "the host retried: {events:?}");
    assert_eq!(tries[0]["ok"], false, "{events:?}");
    assert_eq!(
        tries[0]["code"], -32001,
        "the first call timed out: {events:?}"
    );
    let last = tries.last().unwrap();
    assert_eq!(last["ok"], true, "a retry succeeded: {events:?}");
    let r = event(events, "result");
    assert_eq!(r["isError"], false, "{events:?}");
    assert_eq!(
        r["text"], result_text,
        "the retry got the real result: {events:?}"
    );
    let row = row_once(tr, tool, "completed");
    let all = rows(tr, tool);
    assert_eq!(
        all.len(),
        1,
        "one upstream task for all the attempts: {all:#?}"
    );
    assert_ne!(
        row["cancel"], true,
        "the timeout did not cancel the task: {row}"
    );
    let id = row["taskId"].as_str().unwrap();
    let gave_up = events_of(tr, id, "host_gave_up");
    let detail = text(&gave_up[0]["detail"]).to_lowercase();
    assert!(
        detail.contains("timed out") || detail.contains("-32001") || detail.contains("timeout"),
        "the reason is in the event: {gave_up:?}"
    );
    events_of(tr, id, "attached");
    let k = kinds(tr, id);
    assert!(
        !k.iter().any(|k| k == "cancel_requested"),
        "no cancel was asked for: {k:?}"
    );
}

/// (a) A stdio host whose 3 s timeout is shorter than the ~8 s tool calls again and again:
/// the upstream task keeps running through the timeouts and a retry gets its result.
#[test]
fn a_host_that_times_out_and_retries_gets_the_one_tasks_result() {
    let tr = user_with_server(fastmcp());
    let events = Host::start(
        &tr,
        Sdk::Ts,
        Via::Stdio("up"),
        &[
            "--name",
            "impatient",
            "--call",
            "slow_count",
            "--args",
            r#"{"steps":16,"delay":0.5}"#,
            "--timeout-ms",
            "3000",
            "--attempts",
            "5",
        ],
    )
    .finish(LIMIT);
    one_task_despite_the_timeout(&tr, &events, "slow_count", "counted to 16");
    let row = row_once(&tr, "slow_count", "completed");
    let gave_up = events_of(&tr, row["taskId"].as_str().unwrap(), "host_gave_up");
    assert!(
        text(&gave_up[0]["detail"]).contains("impatient"),
        "the host that gave up is named: {gave_up:?}"
    );
}

/// (b) A user's cancel (an abort, reason "cancelled by the test host") still cancels the
/// upstream task, and the ledger says who asked and why.
#[test]
fn a_users_cancel_still_cancels_upstream() {
    let tr = user_with_server(fastmcp());
    let events = Host::start(
        &tr,
        Sdk::Ts,
        Via::Stdio("up"),
        &[
            "--call",
            "long_sleep",
            "--args",
            r#"{"seconds":60}"#,
            "--cancel-after",
            "2",
        ],
    )
    .finish(LIMIT);
    assert!(
        events.iter().any(|e| e["event"] == "cancelled"),
        "{events:?}"
    );
    let row = row_once(&tr, "long_sleep", "cancelled");
    let by = cancel_by(&row);
    assert!(by.is_object(), "the row says who cancelled: {row}");
    assert!(
        text(&by["reason"]).contains("test host"),
        "the host's reason is kept: {row}"
    );
    assert!(!text(&by["by"]).is_empty(), "{row}");
    let asked = events_of(&tr, row["taskId"].as_str().unwrap(), "cancel_requested");
    let detail = text(&asked[0]["detail"]);
    assert!(
        detail.contains("test host"),
        "the cancel's reason is in the timeline: {asked:?}"
    );
    assert!(
        detail.contains("by"),
        "the timeline says who asked: {asked:?}"
    );
    assert_eq!(rows(&tr, "long_sleep").len(), 1);
}

/// (c) The host gives up and its stdio proxy exits with it; a new host process (a new
/// proxy on the same ledger) calling the same tool with the same arguments is attached to
/// the task still running and gets its result.
#[test]
fn a_retry_after_the_proxy_restarted_is_attached() {
    let tr = user_with_server(fastmcp());
    let args = r#"{"steps":14,"delay":0.5}"#;
    let first = Host::start(
        &tr,
        Sdk::Ts,
        Via::Stdio("up"),
        &[
            "--call",
            "slow_count",
            "--args",
            args,
            "--timeout-ms",
            "2000",
            "--attempts",
            "1",
        ],
    )
    .finish(LIMIT);
    let e = event(&first, "error");
    assert_eq!(e["code"], -32001, "the first host timed out: {first:?}");
    let running = rows(&tr, "slow_count");
    assert_eq!(running.len(), 1, "{running:#?}");
    assert_ne!(
        running[0]["status"], "cancelled",
        "the timeout left the task running: {running:#?}"
    );
    // Same arguments, other key order: canonical JSON equality.
    let second = Host::start(
        &tr,
        Sdk::Ts,
        Via::Stdio("up"),
        &[
            "--call",
            "slow_count",
            "--args",
            r#"{"delay":0.5,"steps":14}"#,
        ],
    )
    .finish(LIMIT);
    let r = event(&second, "result");
    assert_eq!(r["text"], "counted to 14", "{second:?}");
    let row = row_once(&tr, "slow_count", "completed");
    assert_eq!(
        rows(&tr, "slow_count").len(),
        1,
        "the second process started no new task"
    );
    let id = row["taskId"].as_str().unwrap();
    events_of(&tr, id, "host_gave_up");
    events_of(&tr, id, "attached");
}

/// (d) A result the host received is not handed out again: the same call made twice, each
/// time successfully, is two upstream tasks.
#[test]
fn a_delivered_result_is_not_reused() {
    let tr = user_with_server(fastmcp());
    for _ in 0..2 {
        let events = Host::start(
            &tr,
            Sdk::Ts,
            Via::Stdio("up"),
            &[
                "--call",
                "slow_count",
                "--args",
                r#"{"steps":2,"delay":0.2}"#,
            ],
        )
        .finish(LIMIT);
        assert_eq!(
            event(&events, "result")["text"],
            "counted to 2",
            "{events:?}"
        );
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let all = rows(&tr, "slow_count");
        let done = all.iter().filter(|t| t["status"] == "completed").count();
        if done == 2 && all.len() == 2 {
            break;
        }
        assert!(
            Instant::now() < deadline && all.len() <= 2,
            "two calls, two tasks, both completed: {all:#?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    for row in rows(&tr, "slow_count") {
        let k = kinds(&tr, row["taskId"].as_str().unwrap());
        assert!(
            !k.iter().any(|k| k == "attached"),
            "nothing was attached: {k:?}"
        );
    }
}

/// (e) `--answer-within 2s`: the host gets a normal result saying the task is still
/// running (with its short id) instead of waiting past its own timeout; calling again
/// later returns the real result, from the same single task.
#[test]
fn answer_within_says_still_running_then_the_retry_gets_the_result() {
    let tr = user_with_server(fastmcp());
    let args = r#"{"steps":12,"delay":0.5}"#;
    let proxy_args = ["--answer-within", "2s"];
    let first = Host::start(
        &tr,
        Sdk::Ts,
        Via::StdioWith("up", &proxy_args),
        &["--call", "slow_count", "--args", args],
    )
    .finish(LIMIT);
    let r = event(&first, "result");
    assert_eq!(
        r["isError"], false,
        "a normal result, not an error: {first:?}"
    );
    let said = r["text"].as_str().unwrap().to_string();
    assert!(said.contains("still running"), "{said}");
    let row = rows(&tr, "slow_count");
    assert_eq!(row.len(), 1, "{row:#?}");
    let id = row[0]["taskId"].as_str().unwrap().to_string();
    let short: String = id.chars().take(8).collect();
    assert!(
        said.contains(&short),
        "the short task id {short} is named: {said}"
    );
    let lower = said.to_lowercase();
    assert!(
        lower.contains("again") && lower.contains("same"),
        "it says calling again with the same arguments returns the result: {said}"
    );
    // Later (the task needs ~6 s; its stdio proxy is gone, so nothing records its end
    // before the next call): call again.
    std::thread::sleep(Duration::from_secs(5));
    let second = Host::start(
        &tr,
        Sdk::Ts,
        Via::StdioWith("up", &proxy_args),
        &["--call", "slow_count", "--args", args],
    )
    .finish(LIMIT);
    let r = event(&second, "result");
    assert_eq!(r["text"], "counted to 12", "{second:?}");
    assert_eq!(
        rows(&tr, "slow_count").len(),
        1,
        "one upstream task for both calls"
    );
    events_of(&tr, &id, "attached");
}

/// (f) The same over `--listen`: the TypeScript SDK's Streamable HTTP client with its
/// token times out, calls again, and gets the result of the one task; the task is the
/// token's host's.
#[test]
fn a_listener_host_that_times_out_and_retries_gets_the_one_tasks_result() {
    let tr = user_with_server(fastmcp());
    let listener = listen_as(&tr, "up", &["agent-http"]);
    let events = Host::start(
        &tr,
        Sdk::Ts,
        Via::Url(&listener.url),
        &[
            "--header",
            &listener.header(0),
            "--call",
            "slow_count",
            "--args",
            r#"{"steps":16,"delay":0.5}"#,
            "--timeout-ms",
            "3000",
            "--attempts",
            "5",
        ],
    )
    .finish(LIMIT);
    one_task_despite_the_timeout(&tr, &events, "slow_count", "counted to 16");
    let row = row_once(&tr, "slow_count", "completed");
    assert_eq!(row["startedBy"], "agent-http", "{row}");
}

/// A host that disconnects mid-call (killed) from a listener leaves its task running: the
/// proxy follows it to its end and the result lands in the ledger.
#[test]
fn a_host_that_disconnects_from_a_listener_leaves_the_task_running() {
    let tr = user_with_server(fastmcp());
    let listener = listen_as(&tr, "up", &["gone-host"]);
    let mut host = Host::start(
        &tr,
        Sdk::Ts,
        Via::Url(&listener.url),
        &[
            "--header",
            &listener.header(0),
            "--call",
            "slow_count",
            "--args",
            r#"{"steps":8,"delay":0.5}"#,
        ],
    );
    host.wait("calling", LIMIT);
    ledger_task(&tr, "created", |t| t["tool"] == "slow_count");
    host.kill9();
    let row = row_once(&tr, "slow_count", "completed");
    assert_ne!(row["cancel"], true, "{row}");
    assert_eq!(rows(&tr, "slow_count").len(), 1);
}

/// `--no-reattach` turns attaching off: every retry starts new work.
#[test]
fn no_reattach_starts_new_work_for_each_retry() {
    let tr = user_with_server(fastmcp());
    let events = Host::start(
        &tr,
        Sdk::Ts,
        Via::StdioWith("up", &["--no-reattach"]),
        &[
            "--call",
            "slow_count",
            "--args",
            r#"{"steps":4,"delay":0.5}"#,
            "--timeout-ms",
            "1000",
            "--attempts",
            "2",
        ],
    )
    .finish(LIMIT);
    let tries = attempts(&events);
    assert_eq!(tries.len(), 2, "{events:?}");
    assert!(
        tries.iter().all(|t| t["code"] == -32001),
        "both attempts timed out: {events:?}"
    );
    // The stdio proxy is gone with its host, so the rows may still say `working`: what
    // counts is two upstream tasks, neither cancelled by the timeouts.
    let all = rows(&tr, "slow_count");
    assert_eq!(all.len(), 2, "two calls, two upstream tasks: {all:#?}");
    assert!(
        all.iter()
            .all(|t| t["status"] != "cancelled" && t["cancel"] != true),
        "{all:#?}"
    );
}
