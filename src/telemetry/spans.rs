//! The spans: one per request (the `mcp::trace_hook` observer), one per task (a task's
//! `tools/call` span stays open until the task ends), the W3C context written into each
//! request's `_meta`, and the registry of open task spans the engine reports into.
//!
//! Owns: span names, kinds and attributes (the MCP semantic conventions, and ours under
//! [`super::PREFIX`]). Must not put a task id or session id into anything it exports: the
//! registry keys by task id in memory only.

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{Span as _, SpanKind, Status, TraceContextExt as _, Tracer as _};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Span, Tracer};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use crate::mcp::trace_hook::{self, Ended, RequestInfo, RequestSpan, RequestTracer};
use crate::mcp::{CallOutcome, Endpoint, Task, TaskId, TaskStatus, decode_call_result};
use crate::sanitize::sanitize_line;

/// The detail key under which a task's trace context is kept in its ledger timeline.
pub const TRACE_EVENT: &str = "traceparent";

pub(super) static TRACER: OnceLock<Tracer> = OnceLock::new();
static OPEN: Mutex<Option<HashMap<String, OpenTask>>> = Mutex::new(None);

/// A task's span while the task runs.
struct OpenTask {
    span: Span,
    /// Its server's address, for the tasks gauge.
    server: String,
    status: Option<String>,
    polls: u64,
    pushes: u64,
    inputs: u64,
}

pub(super) fn install(tracer: Tracer) {
    if TRACER.set(tracer).is_ok() {
        trace_hook::install(Box::new(Hook));
    }
}

fn key(k: &str) -> String {
    format!("{}{k}", super::PREFIX)
}

fn with_open<R>(task: &str, f: impl FnOnce(&mut OpenTask) -> R) -> Option<R> {
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    open.get_or_insert_with(HashMap::new).get_mut(task).map(f)
}

fn take_open(task: &str) -> Option<OpenTask> {
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    open.as_mut()?.remove(task)
}

fn put_open(task: String, t: OpenTask) {
    super::metrics::task_status(&task, &t.server, t.status.as_deref().or(Some("unknown")));
    let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(mut old) = open.get_or_insert_with(HashMap::new).insert(task, t) {
        old.span.end();
    }
}

/// What the metrics call a server: its host and port, or `stdio`.
pub fn server_address(endpoint: &Endpoint) -> String {
    match endpoint {
        Endpoint::Http { url } => url::Url::parse(url)
            .ok()
            .and_then(|u| {
                let host = u.host_str()?.to_string();
                Some(match u.port_or_known_default() {
                    Some(p) => format!("{host}:{p}"),
                    None => host,
                })
            })
            .unwrap_or_default(),
        Endpoint::Stdio { .. } => "stdio".to_string(),
    }
}

/// The conventions' attributes of a request to `endpoint`.
fn request_attributes(req: &RequestInfo<'_>) -> Vec<KeyValue> {
    let mut attrs = vec![
        KeyValue::new("mcp.method.name", req.method.to_string()),
        KeyValue::new(
            "mcp.protocol.version",
            sanitize_line(req.protocol_version, 32),
        ),
    ];
    match req.endpoint {
        Endpoint::Http { url } => {
            attrs.push(KeyValue::new("network.transport", "tcp"));
            if let Ok(u) = url::Url::parse(url) {
                if let Some(host) = u.host_str() {
                    attrs.push(KeyValue::new("server.address", host.to_string()));
                }
                if let Some(port) = u.port_or_known_default() {
                    attrs.push(KeyValue::new("server.port", i64::from(port)));
                }
            }
        }
        Endpoint::Stdio { .. } => attrs.push(KeyValue::new("network.transport", "pipe")),
    }
    attrs
}

fn tool_attributes(tool: &str) -> [KeyValue; 2] {
    [
        KeyValue::new("gen_ai.tool.name", sanitize_line(tool, 64)),
        KeyValue::new("gen_ai.operation.name", "execute_tool"),
    ]
}

/// The W3C trace context of `cx` as `_meta` entries.
fn inject(cx: &Context, meta: &mut Map<String, Value>) {
    let mut carrier: HashMap<String, String> = HashMap::new();
    TraceContextPropagator::new().inject_context(cx, &mut carrier);
    meta.remove("tracestate");
    for (k, v) in carrier {
        meta.insert(k, Value::String(v));
    }
}

/// A context from a `_meta` (or stored) `traceparent`/`tracestate`, if valid.
fn extract(meta: &Map<String, Value>) -> Option<Context> {
    let mut carrier: HashMap<String, String> = HashMap::new();
    for k in ["traceparent", "tracestate"] {
        if let Some(v) = meta.get(k).and_then(Value::as_str) {
            carrier.insert(k.to_string(), v.chars().take(512).collect());
        }
    }
    carrier.get("traceparent")?;
    let cx = TraceContextPropagator::new().extract(&carrier);
    cx.span().span_context().is_valid().then_some(cx)
}

fn parent_of(task: &str) -> Option<Context> {
    with_open(task, |t| {
        Context::new().with_remote_span_context(t.span.span_context().clone())
    })
}

struct Hook;

impl RequestTracer for Hook {
    fn begin(
        &self,
        req: &RequestInfo<'_>,
        params: &mut Map<String, Value>,
    ) -> Option<Box<dyn RequestSpan>> {
        let tracer = TRACER.get()?;
        if req.method == "subscriptions/listen" {
            return None;
        }
        let task = params
            .get("taskId")
            .and_then(Value::as_str)
            .filter(|_| req.method.starts_with("tasks/"))
            .map(str::to_string);
        let tool = (req.method == "tools/call").then(|| {
            params
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        });
        let meta = params.entry("_meta").or_insert_with(|| json!({}));
        if !meta.is_object() {
            *meta = json!({});
        }
        let meta = meta.as_object_mut()?;
        // A task's requests belong to its span; anything else continues the trace the
        // caller (a proxied host) sent, if it sent one.
        let parent = task
            .as_deref()
            .and_then(parent_of)
            .or_else(|| extract(meta))
            .unwrap_or_default();
        let mut attrs = request_attributes(req);
        let name = match &tool {
            Some(t) => {
                attrs.extend(tool_attributes(t));
                format!("tools/call {}", sanitize_line(t, 64))
            }
            None => req.method.to_string(),
        };
        let span = tracer
            .span_builder(name)
            .with_kind(SpanKind::Client)
            .with_attributes(attrs)
            .start_with_context(tracer, &parent);
        let cx = Context::new().with_remote_span_context(span.span_context().clone());
        inject(&cx, meta);
        let mut measure = vec![KeyValue::new("mcp.method.name", req.method.to_string())];
        if let Some(t) = &tool {
            measure.push(KeyValue::new("gen_ai.tool.name", sanitize_line(t, 64)));
        }
        measure.push(KeyValue::new(
            "server.address",
            server_address(req.endpoint),
        ));
        Some(Box::new(Request {
            span,
            method: req.method.to_string(),
            task,
            started: std::time::Instant::now(),
            measure,
        }))
    }
}

/// One request's span.
struct Request {
    span: Span,
    method: String,
    task: Option<String>,
    started: std::time::Instant,
    /// The duration histogram's attributes.
    measure: Vec<KeyValue>,
}

impl RequestSpan for Request {
    fn end(self: Box<Self>, ended: Ended<'_>) {
        let Request {
            mut span,
            method,
            task,
            started,
            mut measure,
        } = *self;
        if let (Some(task), "tasks/get") = (&task, method.as_str()) {
            with_open(task, |t| t.polls += 1);
        }
        let mut created = None;
        let error_type = match ended {
            Ended::Result(v) if method == "tools/call" => match decode_call_result(v) {
                Ok(CallOutcome::Task(task)) => {
                    created = Some(task);
                    None
                }
                Ok(CallOutcome::Complete(result)) => {
                    (result.get("isError").and_then(Value::as_bool) == Some(true))
                        .then(|| "tool_error".to_string())
                }
                Ok(CallOutcome::InputRequired { .. }) => {
                    span.add_event("input_requested", vec![]);
                    None
                }
                Err(_) => Some("invalid_result".to_string()),
            },
            Ended::Result(_) => None,
            Ended::Error(code) => Some(code.to_string()),
            Ended::Failed => Some("transport_error".to_string()),
        };
        if let Some(e) = &error_type {
            measure.push(KeyValue::new("error.type", e.clone()));
        }
        super::metrics::request(started.elapsed().as_secs_f64(), &measure);
        // The call made a task: its span lives on until the task ends.
        if let Some(created) = created {
            set_task_attributes(&mut span, &created);
            let status = created.status.as_str().to_string();
            span.add_event("status", vec![KeyValue::new(key("status"), status.clone())]);
            let server = measure
                .iter()
                .find(|kv| kv.key.as_str() == "server.address")
                .map(|kv| kv.value.to_string())
                .unwrap_or_default();
            let open = OpenTask {
                span,
                server,
                status: Some(status),
                polls: 0,
                pushes: 0,
                inputs: 0,
            };
            return put_open(created.task_id.as_str().to_string(), open);
        }
        if let Some(e) = error_type {
            fail(&mut span, e);
        }
        span.end();
    }
}

fn fail(span: &mut Span, error_type: String) {
    span.set_attribute(KeyValue::new("error.type", error_type.clone()));
    span.set_status(Status::error(error_type));
}

fn set_task_attributes(span: &mut Span, task: &Task) {
    if let Some(ttl) = task.ttl_ms {
        span.set_attribute(KeyValue::new(
            key("ttl_ms"),
            ttl.min(i64::MAX as u64) as i64,
        ));
    }
    if let Some(p) = task.poll_interval_ms {
        span.set_attribute(KeyValue::new(
            key("poll_interval_ms"),
            p.min(i64::MAX as u64) as i64,
        ));
    }
}

/// The engine follows a task. `true`: no span of this process covers it, so the caller
/// should look up its stored context and call [`task_resumed`].
pub fn task_known(task: &TaskId, started_by: Option<&str>) -> bool {
    if TRACER.get().is_none() {
        return false;
    }
    let found = with_open(task.as_str(), |t| {
        if let Some(by) = started_by {
            t.span
                .set_attribute(KeyValue::new(key("started_by"), sanitize_line(by, 64)));
        }
    });
    found.is_none()
}

/// Continue a task another process started: a span under the task's stored context
/// (`stored`: the detail of its trace event), or a new trace if it has none.
pub fn task_resumed(
    task: &TaskId,
    server: &Endpoint,
    tool: Option<&str>,
    started_by: Option<&str>,
    stored: Option<&Value>,
) {
    let Some(tracer) = TRACER.get() else {
        return;
    };
    let parent = stored
        .and_then(Value::as_object)
        .and_then(extract)
        .unwrap_or_default();
    let tool = tool.unwrap_or("");
    let mut attrs = vec![KeyValue::new(key("resumed"), true)];
    attrs.extend(tool_attributes(tool));
    attrs.push(KeyValue::new("mcp.method.name", "tools/call"));
    if let Some(by) = started_by {
        attrs.push(KeyValue::new(key("started_by"), sanitize_line(by, 64)));
    }
    let span = tracer
        .span_builder(format!("tools/call {}", sanitize_line(tool, 64)))
        .with_kind(SpanKind::Client)
        .with_attributes(attrs)
        .start_with_context(tracer, &parent);
    let open = OpenTask {
        span,
        server: server_address(server),
        status: None,
        polls: 0,
        pushes: 0,
        inputs: 0,
    };
    put_open(task.as_str().to_string(), open);
}

/// The trace context of a task's span, to keep in the ledger (`None`: not traced).
pub fn task_context(task: &TaskId) -> Option<Value> {
    let cx = parent_of(task.as_str())?;
    let mut meta = Map::new();
    inject(&cx, &mut meta);
    Some(Value::Object(meta))
}

/// A new snapshot of a task (`pushed`: it came by push).
pub fn task_updated(task: &Task, pushed: bool) {
    let id = task.task_id.as_str();
    let terminal = with_open(id, |t| {
        if pushed {
            t.pushes += 1;
        }
        let status = task.status.as_str();
        if t.status.as_deref() != Some(status) {
            t.status = Some(status.to_string());
            super::metrics::task_status(id, &t.server, Some(status));
            t.span.add_event(
                "status",
                vec![KeyValue::new(key("status"), status.to_string())],
            );
        }
        set_task_attributes(&mut t.span, task);
        task.status.is_terminal()
    });
    if terminal != Some(true) {
        return;
    }
    let error_type = match &task.status {
        TaskStatus::Completed if task.result_is_error() => Some("tool_error".to_string()),
        TaskStatus::Failed if task.result_is_error() => Some("tool_error".to_string()),
        TaskStatus::Failed => Some(
            task.error
                .as_ref()
                .map(|e| e.code.to_string())
                .unwrap_or_else(|| "failed".to_string()),
        ),
        TaskStatus::Cancelled => Some("cancelled".to_string()),
        _ => None,
    };
    finish(id, error_type);
}

/// Something happened to a task: `input_requested`, `input_answered`,
/// `cancel_requested`, `cancel_acknowledged`.
pub fn task_event(task: &TaskId, name: &'static str) {
    with_open(task.as_str(), |t| {
        if name == "input_requested" {
            t.inputs += 1;
        }
        t.span.add_event(name, vec![]);
    });
}

/// The task ended without a terminal state (`why`: `expired`, `session_lost`).
pub fn task_ended(task: &TaskId, why: &str) {
    finish(task.as_str(), Some(why.to_string()));
}

fn finish(task: &str, error_type: Option<String>) {
    super::metrics::task_status(task, "", None);
    let Some(mut t) = take_open(task) else {
        return;
    };
    close(&mut t);
    if let Some(e) = error_type {
        fail(&mut t.span, e);
    }
    t.span.end();
}

/// The counters and final status onto the span.
fn close(t: &mut OpenTask) {
    let n = |v: u64| v.min(i64::MAX as u64) as i64;
    let attrs = [
        KeyValue::new(key("polls"), n(t.polls)),
        KeyValue::new(key("pushes"), n(t.pushes)),
        KeyValue::new(key("input_rounds"), n(t.inputs)),
        KeyValue::new(
            key("status"),
            t.status.clone().unwrap_or_else(|| "unknown".to_string()),
        ),
    ];
    t.span.set_attributes(attrs);
}

/// End every open task span (the process exits; the tasks run on).
pub(super) fn close_all() {
    let open = OPEN.lock().unwrap_or_else(|e| e.into_inner()).take();
    for (_, mut t) in open.into_iter().flatten() {
        close(&mut t);
        t.span.set_attribute(KeyValue::new(key("unfinished"), true));
        t.span.end();
    }
}
