//! OpenTelemetry export of `taskrail call` and `watch` into a real OTLP receiver (decoded
//! with the official protobuf definitions): a task is one CLIENT span with the MCP
//! conventions' attributes and its status events, each `tasks/*` request a child span, the
//! server sees the same trace in `_meta`, a task resumed by a later process continues its
//! trace, no task id is ever in the exported bytes, and a dead collector costs nothing.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;
use support::otlp::{Receiver, attr, hex};
use support::taskrail::{DemoProcess, Taskrail, stats, task_id};

const LIMIT: Duration = Duration::from_secs(60);
const CLIENT: i32 = 3;

fn demo() -> DemoProcess {
    DemoProcess::start(&["--time-scale", "0.05", "--poll-interval", "200"])
}

fn traced(rx: &Receiver) -> Taskrail {
    Taskrail::new()
        .with_env("OTEL_EXPORTER_OTLP_ENDPOINT", rx.endpoint.clone())
        .with_env("OTEL_SERVICE_NAME", "otel-test")
}

/// The task ids the ledger holds, each with its 8-character short form.
fn ids_of(tr: &Taskrail) -> Vec<String> {
    let ids: Vec<String> = tr
        .records()
        .iter()
        .filter_map(|r| r["taskId"].as_str().map(str::to_string))
        .collect();
    assert!(!ids.is_empty(), "the ledger holds the task");
    ids.iter()
        .flat_map(|id| [id.clone(), id.chars().take(8).collect()])
        .collect()
}

fn assert_no_task_id(rx: &Receiver, tr: &Taskrail) {
    for needle in ids_of(tr) {
        assert!(
            !rx.bytes_contain(&needle),
            "the task id ({needle}) must never be exported"
        );
    }
}

#[test]
fn a_task_is_one_client_span_with_its_requests_as_children() {
    let server = demo();
    let rx = Receiver::start();
    let tr = traced(&rx);
    let run = tr.run(
        &[
            "call",
            "-s",
            &server.url,
            "render_report",
            "--args",
            r#"{"pages":3}"#,
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{run:#?}");

    let task = rx.wait_span("tools/call render_report", LIMIT, |s| {
        s.name == "tools/call render_report"
    });
    assert_eq!(task.kind, CLIENT);
    let a = &task.attributes;
    assert_eq!(attr(a, "mcp.method.name").as_deref(), Some("tools/call"));
    assert_eq!(
        attr(a, "mcp.protocol.version").as_deref(),
        Some("2026-07-28")
    );
    assert_eq!(
        attr(a, "gen_ai.tool.name").as_deref(),
        Some("render_report")
    );
    assert_eq!(
        attr(a, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(attr(a, "network.transport").as_deref(), Some("tcp"));
    assert_eq!(attr(a, "server.address").as_deref(), Some("127.0.0.1"));
    let port = server
        .url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches("/mcp");
    assert_eq!(attr(a, "server.port").as_deref(), Some(port));
    assert_eq!(
        attr(a, "taskrail.task.status").as_deref(),
        Some("completed")
    );
    assert!(attr(a, "taskrail.task.polls").is_some(), "{a:?}");
    assert!(attr(a, "taskrail.task.pushes").is_some(), "{a:?}");
    assert!(attr(a, "error.type").is_none(), "a completed task: {a:?}");
    assert!(
        a.iter().all(|kv| !kv.key.starts_with("mcp.session")),
        "no session id: {a:?}"
    );
    assert!(
        task.end_time_unix_nano > task.start_time_unix_nano,
        "the span lasts while the task runs"
    );
    let statuses: Vec<String> = task
        .events
        .iter()
        .filter(|e| e.name == "status")
        .filter_map(|e| attr(&e.attributes, "taskrail.task.status"))
        .collect();
    assert_eq!(statuses.first().map(String::as_str), Some("working"));
    assert_eq!(statuses.last().map(String::as_str), Some("completed"));

    // Every request about the task is a child named by its method only.
    let children: Vec<_> = rx
        .spans()
        .into_iter()
        .filter(|s| s.parent_span_id == task.span_id)
        .collect();
    assert!(!children.is_empty(), "tasks/get spans under the task");
    for c in &children {
        assert!(c.name.starts_with("tasks/"), "{}", c.name);
        assert_eq!(c.trace_id, task.trace_id);
        assert_eq!(c.kind, CLIENT);
    }

    // The server saw the same trace in `_meta`.
    let seen = stats(&server.url);
    let tp = seen["traceparents"]["tools/call"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        tp,
        format!("00-{}-{}-01", hex(&task.trace_id), hex(&task.span_id)),
        "tools/call carries the task span's context"
    );
    let get = seen["traceparents"]["tasks/get"].as_str().unwrap();
    assert!(get.contains(&hex(&task.trace_id)), "{get}");

    assert_eq!(
        attr(&rx.resource(), "service.name").as_deref(),
        Some("otel-test")
    );
    // Metrics through the same collector: the conventions' request duration histogram.
    let metrics = rx.metrics();
    let duration = metrics
        .iter()
        .find(|(name, _)| name == "mcp.client.operation.duration")
        .unwrap_or_else(|| panic!("the duration histogram: {metrics:?}"));
    assert!(
        duration.1.iter().any(|p| {
            attr(p, "mcp.method.name").as_deref() == Some("tools/call")
                && attr(p, "gen_ai.tool.name").as_deref() == Some("render_report")
        }),
        "{duration:?}"
    );
    assert_no_task_id(&rx, &tr);
}

#[test]
fn a_failed_task_says_its_error_type() {
    let server = demo();
    let rx = Receiver::start();
    let tr = traced(&rx);
    let run = tr.run(&["call", "-s", &server.url, "flaky_job"], LIMIT);
    assert_eq!(run.code, Some(3), "{run:#?}");
    let task = rx.wait_span("tools/call flaky_job", LIMIT, |s| {
        s.name == "tools/call flaky_job"
    });
    let code = run.json()["code"].as_i64().unwrap().to_string();
    assert_eq!(attr(&task.attributes, "error.type"), Some(code));
    assert_eq!(
        attr(&task.attributes, "taskrail.task.status").as_deref(),
        Some("failed")
    );
    assert_eq!(
        task.status.as_ref().map(|s| s.code),
        Some(2),
        "status ERROR"
    );
    assert_no_task_id(&rx, &tr);
}

#[test]
fn a_task_resumed_by_a_later_process_continues_its_trace() {
    let server = demo();
    let rx = Receiver::start();
    let tr = traced(&rx);
    let detached = tr.run(
        &[
            "call",
            "-s",
            &server.url,
            "render_report",
            "--detach",
            "--args",
            r#"{"pages":6}"#,
        ],
        LIMIT,
    );
    assert_eq!(detached.code, Some(0), "{detached:#?}");
    let id = task_id(&detached);
    let first = rx.wait_span("the first process's task span", LIMIT, |s| {
        s.name == "tools/call render_report"
    });
    assert_eq!(
        attr(&first.attributes, "taskrail.task.unfinished").as_deref(),
        Some("true"),
        "the first process ends its span without a verdict"
    );
    // At its exit the first process still followed the task: the gauge counted it.
    let gauge: Vec<_> = rx
        .metrics()
        .into_iter()
        .filter(|(name, _)| name == "taskrail.tasks")
        .flat_map(|(_, points)| points)
        .collect();
    assert!(
        gauge
            .iter()
            .any(|p| attr(p, "taskrail.task.status").as_deref() == Some("working")),
        "tasks by status: {gauge:?}"
    );
    let watch = tr.run(&["watch", "-s", &server.url, &id], LIMIT);
    assert_eq!(watch.code, Some(0), "{watch:#?}");
    let resumed = rx.wait_span("the resumed task span", LIMIT, |s| {
        attr(&s.attributes, "taskrail.task.resumed").as_deref() == Some("true")
    });
    assert_eq!(resumed.name, "tools/call render_report");
    assert_eq!(resumed.trace_id, first.trace_id, "the same trace");
    assert_eq!(
        resumed.parent_span_id, first.span_id,
        "under the first span"
    );
    assert_eq!(
        attr(&resumed.attributes, "taskrail.task.status").as_deref(),
        Some("completed")
    );
    let polls = rx
        .spans()
        .into_iter()
        .filter(|s| s.parent_span_id == resumed.span_id && s.name == "tasks/get")
        .count();
    assert!(polls > 0, "the later process's polls belong to the task");
    assert_no_task_id(&rx, &tr);
}

#[test]
fn a_dead_collector_changes_nothing_the_user_sees() {
    let server = demo();
    // A port that was just free: nothing listens there.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let tr = Taskrail::new().with_env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint);
    let run = tr.run(
        &[
            "call",
            "-s",
            &server.url,
            "render_report",
            "--args",
            r#"{"pages":2}"#,
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        run.json()["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("2 pages")
    );
    assert!(
        !run.stderr.to_lowercase().contains("otlp"),
        "{}",
        run.stderr
    );
    let log = std::fs::read_to_string(tr.log()).unwrap();
    assert!(
        log.contains("spans dropped"),
        "the loss is counted in the log"
    );
}

#[test]
fn nothing_is_exported_without_an_endpoint_and_the_config_table_is_read() {
    let server = demo();
    let rx = Receiver::start();
    let tr = Taskrail::new();
    let run = tr.run(&["call", "-s", &server.url, "render_report"], LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        stats(&server.url)["traceparents"]
            .as_object()
            .unwrap()
            .is_empty(),
        "no trace context without export"
    );
    let config = tr.dir().join("otel.toml");
    std::fs::write(
        &config,
        format!(
            "[telemetry]\nOTEL_EXPORTER_OTLP_ENDPOINT = \"{}\"\notel_service_name = \"from-config\"\n",
            rx.endpoint
        ),
    )
    .unwrap();
    let run = tr.run(
        &[
            "--config",
            config.to_str().unwrap(),
            "call",
            "-s",
            &server.url,
            "render_report",
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    rx.wait_span("a span", LIMIT, |s| s.name == "tools/call render_report");
    assert_eq!(
        attr(&rx.resource(), "service.name").as_deref(),
        Some("from-config")
    );
}
