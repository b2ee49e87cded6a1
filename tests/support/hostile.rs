//! A hostile MCP tasks server for hardening tests (axum on 127.0.0.1, its own runtime on a
//! background thread, so sync and async tests can both use it). Each [`Plan`] field is one
//! hostile behaviour: ids and keys holding escapes and NUL, thousands of input requests,
//! absurd `pollIntervalMs`, a listen stream that ends with a result or answers an id never
//! sent, keep-alive comments only, newline-free and many-`data:`-line floods on the POST
//! reply and on the legacy session GET stream, a hung `tools/call`, and 307 redirects to
//! another origin. [`Seen`] counts what the client did.
//!
//! Independent of the embedded demo server on purpose: the demo stays a reference peer.
#![allow(dead_code)]

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures::StreamExt;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What `subscriptions/listen` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listen {
    /// `-32601`: no push.
    Refuse,
    /// Acknowledge and stay open (with keep-alive comments if `keepalive_ms` is set).
    Hold,
    /// Acknowledge, then end the subscription with its `SubscriptionsListenResult`.
    EndWithResult,
    /// Acknowledge, then send a response to an id the client never used.
    UnknownResponse,
}

/// A flood of bytes on an event stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flood {
    /// One `data:` line that never ends.
    NoNewline,
    /// Endless short `data:` lines with no blank line to end the event.
    ManyDataLines,
}

/// What `tools/call` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// A `CreateTaskResult` for `task_id`.
    Task,
    /// Nothing, ever (the reply is held open).
    Hang,
    /// An SSE reply that floods.
    Flood(Flood),
}

#[derive(Debug, Clone)]
pub struct Plan {
    /// Speak `2025-11-25` (initialize, session, GET stream) instead of `2026-07-28`.
    pub legacy: bool,
    pub task_id: String,
    /// The status `tasks/get` reports (`input_required` when there are input requests).
    pub status: &'static str,
    pub status_message: String,
    /// Input request keys: `keys` as given, then `generated` more (`k00000`, `k00001`, …).
    pub keys: Vec<String>,
    pub generated: usize,
    pub poll_interval: Value,
    pub listen: Listen,
    pub keepalive_ms: Option<u64>,
    pub call: Call,
    /// The legacy GET stream floods instead of staying quiet.
    pub get_flood: Option<Flood>,
    /// Most bytes one flood sends before it just stays open.
    pub flood_limit: usize,
    /// Answer every POST with `307 Temporary Redirect` to this URL.
    pub redirect_to: Option<String>,
    /// Answer every GET (the legacy session stream) with `307` to this URL.
    pub redirect_get_to: Option<String>,
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            legacy: false,
            task_id: "task-0001-abcdef".into(),
            status: "working",
            status_message: "hostile".into(),
            keys: Vec::new(),
            generated: 0,
            poll_interval: json!(1000),
            listen: Listen::Refuse,
            keepalive_ms: None,
            call: Call::Task,
            get_flood: None,
            flood_limit: 64 << 20,
            redirect_to: None,
            redirect_get_to: None,
        }
    }
}

/// What the client did, as the server saw it.
#[derive(Debug, Default)]
pub struct Seen {
    pub posts: AtomicUsize,
    pub listens: AtomicUsize,
    pub gets: AtomicUsize,
    pub calls: AtomicUsize,
    pub get_streams: AtomicUsize,
    /// Bytes handed to the connection by floods, in total.
    pub flood_sent: AtomicUsize,
    /// A flood stream the client hung up on, and how far it had got.
    pub flood_dropped: AtomicBool,
    pub flood_dropped_at: AtomicUsize,
    /// When each `subscriptions/listen` arrived.
    pub listen_times: Mutex<Vec<Instant>>,
    /// The headers of every POST and GET.
    pub headers: Mutex<Vec<HeaderMap>>,
}

impl Seen {
    pub fn count(c: &AtomicUsize) -> usize {
        c.load(Ordering::SeqCst)
    }

    /// Listens that arrived within `window` after the first one.
    pub fn listens_within(&self, window: Duration) -> usize {
        let times = self.listen_times.lock().unwrap();
        let Some(first) = times.first() else { return 0 };
        times.iter().filter(|t| **t - *first <= window).count()
    }

    /// Whether any POST carried header `name`.
    pub fn saw_header(&self, name: &str) -> bool {
        self.headers
            .lock()
            .unwrap()
            .iter()
            .any(|h| h.contains_key(name))
    }
}

pub struct Hostile {
    pub url: String,
    pub seen: Arc<Seen>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Hostile {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct App {
    plan: Plan,
    seen: Arc<Seen>,
    /// The task as `tasks/get` answers it, serialised once (50,000 input requests take a
    /// while to build and to print).
    task: std::sync::OnceLock<String>,
}

/// Start the server; it stops when the returned value is dropped.
pub fn start(plan: Plan) -> Hostile {
    let seen = Arc::new(Seen::default());
    let app = Arc::new(App {
        plan,
        seen: seen.clone(),
        task: std::sync::OnceLock::new(),
    });
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.set_nonblocking(true).expect("nonblocking");
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            let router = Router::new()
                .route("/mcp", post(on_post).get(on_get).delete(on_delete))
                .with_state(app);
            // Stop at once, open connections and all (a graceful stop would wait for a
            // client still reading a flood).
            tokio::select! {
                _ = axum::serve(listener, router) => {}
                _ = stopped => {}
            }
        });
        rt.shutdown_timeout(Duration::from_millis(200));
    });
    Hostile {
        url,
        seen,
        stop: Some(stop),
        thread: Some(thread),
    }
}

fn json_reply(v: &Value) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}

fn result(id: &Value, r: Value) -> Response {
    json_reply(&json!({ "jsonrpc": "2.0", "id": id, "result": r }))
}

fn error(id: &Value, code: i64, message: &str) -> Response {
    json_reply(
        &json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } }),
    )
}

fn sse_response(body: Body) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(body)
        .unwrap()
}

fn event(msg: &Value) -> Bytes {
    Bytes::from(format!("event: message\ndata: {msg}\n\n"))
}

impl App {
    fn input_requests(&self) -> Value {
        let mut map = serde_json::Map::new();
        let names = self
            .plan
            .keys
            .iter()
            .cloned()
            .chain((0..self.plan.generated).map(|i| format!("k{i:05}")));
        for key in names {
            map.insert(
                key.clone(),
                json!({ "method": "elicitation/create", "params": {
                    "mode": "form",
                    "message": format!("approve {key}?"),
                    "requestedSchema": { "type": "object", "properties": {
                        "ok": { "type": "boolean", "title": "OK" }
                    } }
                } }),
            );
        }
        Value::Object(map)
    }

    fn task(&self) -> Value {
        self.build_task()
    }

    /// `tasks/get`'s answer, from the cached text.
    fn task_reply(&self, id: &Value) -> Response {
        let task = self.task.get_or_init(|| self.build_task().to_string());
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{task}}}"#);
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response()
    }

    fn build_task(&self) -> Value {
        let inputs = self.input_requests();
        let has_inputs = inputs.as_object().is_some_and(|m| !m.is_empty());
        let status = if has_inputs {
            "input_required"
        } else {
            self.plan.status
        };
        let mut t = json!({
            "taskId": self.plan.task_id,
            "status": status,
            "statusMessage": self.plan.status_message,
            "createdAt": "2026-07-28T10:00:00Z",
            "lastUpdatedAt": "2026-07-28T10:00:01Z",
            "ttlMs": 3_600_000,
        });
        if self.plan.legacy {
            t["pollInterval"] = self.plan.poll_interval.clone();
            t["ttl"] = json!(3_600_000);
        } else {
            t["pollIntervalMs"] = self.plan.poll_interval.clone();
            if has_inputs {
                t["inputRequests"] = inputs;
            }
        }
        if status == "completed" {
            t["result"] = json!({ "content": [{ "type": "text", "text": "done" }] });
        }
        t
    }

    /// A body that sends `flood` until `flood_limit`, then stays open; records a hang-up.
    fn flood_body(&self, flood: Flood, head: Option<Bytes>) -> Body {
        struct Guard {
            seen: Arc<Seen>,
            sent: Arc<AtomicUsize>,
            done: Arc<AtomicBool>,
        }
        impl Drop for Guard {
            fn drop(&mut self) {
                if !self.done.load(Ordering::SeqCst) {
                    self.seen
                        .flood_dropped_at
                        .store(self.sent.load(Ordering::SeqCst), Ordering::SeqCst);
                    self.seen.flood_dropped.store(true, Ordering::SeqCst);
                }
            }
        }
        let sent = Arc::new(AtomicUsize::new(0));
        let guard = Guard {
            seen: self.seen.clone(),
            sent: sent.clone(),
            done: Arc::new(AtomicBool::new(false)),
        };
        let limit = self.plan.flood_limit;
        let chunk: Bytes = match flood {
            Flood::NoNewline => Bytes::from(vec![b'x'; 64 * 1024]),
            Flood::ManyDataLines => Bytes::from("data: x\n".repeat(8 * 1024)),
        };
        let start = match flood {
            Flood::NoNewline => Bytes::from_static(b"data: "),
            Flood::ManyDataLines => Bytes::new(),
        };
        let seen = self.seen.clone();
        let prefix = futures::stream::iter(head.into_iter().chain([start]));
        let body = prefix
            .chain(futures::stream::unfold(0usize, move |total| {
                let chunk = chunk.clone();
                async move {
                    if total >= limit {
                        return None;
                    }
                    Some((chunk.clone(), total + chunk.len()))
                }
            }))
            .map(move |b| {
                sent.fetch_add(b.len(), Ordering::SeqCst);
                seen.flood_sent.fetch_add(b.len(), Ordering::SeqCst);
                b
            })
            .chain(futures::stream::once(async move {
                // Sent everything without being hung up on: stay open.
                guard.done.store(true, Ordering::SeqCst);
                std::future::pending::<Bytes>().await
            }))
            .map(Ok::<Bytes, std::io::Error>);
        Body::from_stream(body)
    }

    fn listen_reply(&self, id: &Value) -> Response {
        self.seen.listens.fetch_add(1, Ordering::SeqCst);
        self.seen.listen_times.lock().unwrap().push(Instant::now());
        if self.plan.listen == Listen::Refuse {
            return error(id, -32601, "Method not found: subscriptions/listen");
        }
        let ack = json!({ "jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
            "params": { "_meta": { "io.modelcontextprotocol/subscriptionId": id },
                        "notifications": { "taskIds": [self.plan.task_id] } } });
        let mut head = vec![event(&ack)];
        match self.plan.listen {
            Listen::EndWithResult => {
                head.push(event(&json!({ "jsonrpc": "2.0", "id": id, "result": {} })));
                return sse_response(Body::from_stream(
                    futures::stream::iter(head).map(Ok::<Bytes, std::io::Error>),
                ));
            }
            Listen::UnknownResponse => {
                head.push(event(
                    &json!({ "jsonrpc": "2.0", "id": 987_654_321, "result": {} }),
                ));
            }
            _ => {}
        }
        let keepalive = self.plan.keepalive_ms.map(Duration::from_millis);
        let tail = futures::stream::unfold((), move |()| async move {
            match keepalive {
                Some(every) => {
                    tokio::time::sleep(every).await;
                    Some((Bytes::from_static(b": keepalive\n\n"), ()))
                }
                None => std::future::pending().await,
            }
        });
        sse_response(Body::from_stream(
            futures::stream::iter(head)
                .chain(tail)
                .map(Ok::<Bytes, std::io::Error>),
        ))
    }

    fn call_reply(&self, id: &Value) -> Response {
        self.seen.calls.fetch_add(1, Ordering::SeqCst);
        match self.plan.call {
            Call::Task if self.plan.legacy => result(id, json!({ "task": self.task() })),
            Call::Task => {
                let mut t = self.task();
                t["resultType"] = json!("task");
                result(id, t)
            }
            Call::Hang => sse_response(Body::from_stream(futures::stream::pending::<
                Result<Bytes, std::io::Error>,
            >())),
            Call::Flood(f) => sse_response(self.flood_body(f, None)),
        }
    }
}

fn redirect(to: &str) -> Response {
    Response::builder()
        .status(StatusCode::TEMPORARY_REDIRECT)
        .header(header::LOCATION, to)
        .body(Body::empty())
        .unwrap()
}

async fn on_post(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    app.seen.posts.fetch_add(1, Ordering::SeqCst);
    app.seen.headers.lock().unwrap().push(headers);
    if let Some(to) = &app.plan.redirect_to {
        return redirect(to);
    }
    let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let Some(id) = msg.get("id").cloned() else {
        return StatusCode::ACCEPTED.into_response();
    };
    let method = msg["method"].as_str().unwrap_or_default();
    match (method, app.plan.legacy) {
        ("server/discover", false) => result(
            &id,
            json!({
                "supportedVersions": ["2026-07-28"],
                "capabilities": { "tools": {}, "extensions": { "io.modelcontextprotocol/tasks": {} } },
                "serverInfo": { "name": "hostile", "version": "1" }
            }),
        ),
        ("initialize", true) => {
            let mut r = result(
                &id,
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": { "tools": {}, "tasks": { "list": {}, "cancel": {},
                        "requests": { "tools": { "call": {} } } } },
                    "serverInfo": { "name": "hostile-legacy", "version": "1" }
                }),
            );
            r.headers_mut()
                .insert("mcp-session-id", "hostile-session".parse().unwrap());
            r
        }
        ("tools/list", _) => result(
            &id,
            json!({ "tools": [{ "name": "work", "inputSchema": { "type": "object" },
                                "execution": { "taskSupport": "optional" } }] }),
        ),
        ("tools/call", _) => app.call_reply(&id),
        ("tasks/get", _) => {
            app.seen.gets.fetch_add(1, Ordering::SeqCst);
            app.task_reply(&id)
        }
        ("tasks/result", true) => sse_response(Body::from_stream(futures::stream::pending::<
            Result<Bytes, std::io::Error>,
        >())),
        ("tasks/update" | "tasks/cancel", _) => result(&id, json!({})),
        ("subscriptions/listen", false) => app.listen_reply(&id),
        (other, _) => error(&id, -32601, &format!("Method not found: {other}")),
    }
}

async fn on_get(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    app.seen.headers.lock().unwrap().push(headers);
    if let Some(to) = &app.plan.redirect_get_to {
        return redirect(to);
    }
    if !app.plan.legacy {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    app.seen.get_streams.fetch_add(1, Ordering::SeqCst);
    match app.plan.get_flood {
        Some(f) => sse_response(app.flood_body(f, Some(Bytes::from_static(b"id: e1\n")))),
        None => sse_response(Body::from_stream(futures::stream::pending::<
            Result<Bytes, std::io::Error>,
        >())),
    }
}

async fn on_delete() -> Response {
    StatusCode::OK.into_response()
}

/// Peak resident set size of a running process so far (`VmHWM`, kB), if readable.
pub fn peak_rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}
