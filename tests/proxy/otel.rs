//! `taskrail proxy` exporting OpenTelemetry: the host's `traceparent` in `_meta` is
//! continued (the task span is its child, the upstream sees the same trace), the span says
//! which host started the task, and no task id reaches the collector.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;

use serde_json::Value;
use support::otlp::{Receiver, attr, hex};
use support::taskrail::{DemoProcess, Taskrail, stats};

const LIMIT: Duration = Duration::from_secs(60);
const HOST_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const HOST_SPAN: &str = "00f067aa0ba902b7";

#[test]
fn the_proxy_continues_the_hosts_trace_and_names_the_host() {
    let server = DemoProcess::start(&["--time-scale", "0.05", "--poll-interval", "200"]);
    let rx = Receiver::start();
    let tr = Taskrail::new().with_env("OTEL_EXPORTER_OTLP_ENDPOINT", rx.endpoint.clone());
    let mut proxy = tr.spawn(&["proxy", &server.url]);
    proxy.write_line(
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"otel-host","version":"1"}}}"#,
    );
    proxy.wait_stdout(r#""id":1"#, LIMIT);
    proxy.write_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    proxy.write_line(&format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"render_report","arguments":{{"pages":2}},"_meta":{{"traceparent":"00-{HOST_TRACE}-{HOST_SPAN}-01","tracestate":"host=1"}}}}}}"#
    ));
    let done: Value = serde_json::from_str(&proxy.wait_stdout(r#""id":2"#, LIMIT)).unwrap();
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("2 pages"),
        "{done}"
    );
    let run = proxy.finish(LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");

    let task = rx.wait_span("the proxied task span", LIMIT, |s| {
        s.name == "tools/call render_report"
    });
    assert_eq!(hex(&task.trace_id), HOST_TRACE, "the host's trace goes on");
    assert_eq!(
        hex(&task.parent_span_id),
        HOST_SPAN,
        "under the host's span"
    );
    assert_eq!(task.kind, 3, "CLIENT");
    assert_eq!(task.trace_state, "host=1");
    let a = &task.attributes;
    assert_eq!(
        attr(a, "taskrail.task.started_by").as_deref(),
        Some("otel-host")
    );
    assert_eq!(
        attr(a, "taskrail.task.status").as_deref(),
        Some("completed")
    );
    assert_eq!(
        attr(a, "gen_ai.tool.name").as_deref(),
        Some("render_report")
    );

    // The upstream saw the task span's context, not the host's.
    let tp = stats(&server.url)["traceparents"]["tools/call"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(tp, format!("00-{HOST_TRACE}-{}-01", hex(&task.span_id)));

    for r in tr.records() {
        let id = r["taskId"].as_str().unwrap();
        assert!(!rx.bytes_contain(id), "no task id exported");
        assert!(!rx.bytes_contain(&id[..8]), "no short task id exported");
    }
}
