//! Test peer for taskrail: a tower-mcp 0.25 server (MCP `2026-07-28`, tasks extension)
//! that pushes `notifications/tasks` on `subscriptions/listen`.
//!
//! Binds 127.0.0.1 on an ephemeral port (or `--port N`) and prints exactly one line to
//! stdout once it accepts connections: `READY http://127.0.0.1:PORT/mcp`.
//!
//! Tools (all live task handlers, so tasks are required):
//! - `work {steps=3, delay_ms=700}`: a statusMessage `step i/n` per step, then completes.
//! - `confirm {}`: goes `input_required` (form elicitation, key `confirm`, boolean field
//!   `ok`), then completes with the answer.
//! - `fail_soon {delay_ms=300}`: fails with a JSON-RPC error (task `failed`).
//!
//! With `TASKRAIL_PEER_PUSH_LOG=<path>`, every push a handler makes is appended to that
//! file as one line, stamped just before the notification is handed to the router:
//! `<unix time in microseconds> <task_id> <status> <status message>`
//! (`taskrail bench push-latency --push-log` reads it). With `TASKRAIL_PEER_NODELAY=1`
//! its sockets set `TCP_NODELAY` (axum's default leaves Nagle's algorithm on).

use std::io::Write as _;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use axum::serve::ListenerExt as _;
use serde::Deserialize;
use tower_mcp::async_task::MemoryTaskStore;
use tower_mcp::protocol::{
    ElicitFormParams, ElicitFormSchema, ElicitRequestParams, InputRequest, InputRequests,
    InputResponse,
};
use tower_mcp::schemars::JsonSchema;
use tower_mcp::{
    CallToolResult, HttpTransport, JsonRpcError, McpRouter, TaskContext, TaskOutcome, ToolBuilder,
};

/// The router, reachable from tool handlers so they can push their own status changes.
static ROUTER: OnceLock<McpRouter> = OnceLock::new();

/// The push log (`TASKRAIL_PEER_PUSH_LOG`), opened once at start; `None` when unset.
static PUSH_LOG: OnceLock<Option<Mutex<std::fs::File>>> = OnceLock::new();

const PUSH_LOG_ENV: &str = "TASKRAIL_PEER_PUSH_LOG";

fn open_push_log() -> Option<Mutex<std::fs::File>> {
    let path = std::env::var_os(PUSH_LOG_ENV).filter(|p| !p.is_empty())?;
    match std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
    {
        Ok(file) => Some(Mutex::new(file)),
        Err(e) => {
            eprintln!("cannot open {PUSH_LOG_ENV}={}: {e}", path.to_string_lossy());
            std::process::exit(1)
        }
    }
}

/// One line of the push log; the file is unbuffered, so each line is one write.
fn log_push(task_id: &str, status: &str, message: &str) {
    let Some(Some(log)) = PUSH_LOG.get() else {
        return;
    };
    let us = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    let message = message.replace(['\n', '\r'], " ");
    let line = format!("{us} {task_id} {status} {message}\n");
    let mut file = log.lock().unwrap_or_else(|e| e.into_inner());
    if let Err(e) = file.write_all(line.as_bytes()) {
        eprintln!("writing the push log: {e}");
    }
}

/// Pushes the task's current state; `status`/`message` are what the handler just set.
async fn push(task_id: &str, status: &str, message: &str) {
    if let Some(router) = ROUTER.get() {
        log_push(task_id, status, message);
        router.notify_task_status_changed(task_id).await;
    }
}

/// Sleeps `delay`, or returns `false` early if the task is cancelled.
async fn sleep_unless_cancelled(task: &TaskContext, delay: Duration) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(delay) => true,
        _ = task.cancelled() => false,
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "tower_mcp::schemars")]
struct WorkArgs {
    /// Number of steps (default 3, at most 100).
    #[serde(default)]
    steps: Option<u32>,
    /// Milliseconds per step (default 700, at most 60000).
    #[serde(default)]
    delay_ms: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "tower_mcp::schemars")]
struct NoArgs {}

#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(crate = "tower_mcp::schemars")]
struct FailArgs {
    /// Milliseconds before failing (default 300, at most 60000).
    #[serde(default)]
    delay_ms: Option<u64>,
}

fn cancelled() -> tower_mcp::Result<TaskOutcome> {
    Ok(TaskOutcome::Cancelled {
        message: Some("cancelled by client".to_string()),
    })
}

async fn work(task: TaskContext, args: WorkArgs) -> tower_mcp::Result<TaskOutcome> {
    let steps = args.steps.unwrap_or(3).min(100);
    let delay = Duration::from_millis(args.delay_ms.unwrap_or(700).min(60_000));
    for i in 1..=steps {
        if !sleep_unless_cancelled(&task, delay).await {
            return cancelled();
        }
        let message = format!("step {i}/{steps}");
        task.working(message.clone()).await?;
        push(task.task_id(), "working", &message).await;
    }
    Ok(TaskOutcome::Completed(CallToolResult::text(format!(
        "worked {steps} steps"
    ))))
}

async fn confirm(task: TaskContext, _args: NoArgs) -> tower_mcp::Result<TaskOutcome> {
    if !sleep_unless_cancelled(&task, Duration::from_millis(300)).await {
        return cancelled();
    }
    let schema = ElicitFormSchema::new().boolean_field("ok", Some("Proceed?"), true);
    let mut requests: InputRequests = Default::default();
    requests.insert(
        "confirm".to_string(),
        InputRequest::Elicit(ElicitRequestParams::Form(ElicitFormParams {
            mode: None,
            message: "Proceed with the operation?".to_string(),
            requested_schema: schema,
            meta: None,
        })),
    );
    const WAITING: &str = "waiting for confirmation";
    let pending = task.park_input_with_message(requests, WAITING).await?;
    push(task.task_id(), "input_required", WAITING).await;
    let answers = match pending.wait().await {
        Ok(answers) => answers,
        Err(tower_mcp::Error::TaskCancelled) => return cancelled(),
        Err(e) => return Err(e),
    };
    let text = match answers.get("confirm") {
        Some(InputResponse::Elicit(result)) => format!(
            "confirm answered: action={:?} content={}",
            result.action,
            result
                .content
                .as_ref()
                .map(|c| serde_json::to_string(c).unwrap_or_default())
                .unwrap_or_else(|| "null".to_string())
        ),
        Some(_) => "confirm answered with a non-elicitation response".to_string(),
        None => "confirm not answered".to_string(),
    };
    Ok(TaskOutcome::Completed(CallToolResult::text(text)))
}

async fn fail_soon(task: TaskContext, args: FailArgs) -> tower_mcp::Result<TaskOutcome> {
    let delay = Duration::from_millis(args.delay_ms.unwrap_or(300).min(60_000));
    if !sleep_unless_cancelled(&task, delay).await {
        return cancelled();
    }
    Ok(TaskOutcome::Failed(JsonRpcError::internal_error(
        "fail_soon: deliberate failure",
    )))
}

fn router() -> McpRouter {
    let work = ToolBuilder::new("work")
        .description("Works for a few seconds, reporting `step i/n`, then completes")
        .live_task_handler(work)
        .build();
    let confirm = ToolBuilder::new("confirm")
        .description("Asks for confirmation (input_required), then completes with the answer")
        .live_task_handler(confirm)
        .build();
    let fail_soon = ToolBuilder::new("fail_soon")
        .description("Fails with a JSON-RPC error after a short delay")
        .live_task_handler(fail_soon)
        .build();
    McpRouter::new()
        .server_info("taskrail-tower-peer", env!("CARGO_PKG_VERSION"))
        .task_store(Arc::new(MemoryTaskStore::new()))
        .tool(work)
        .tool(confirm)
        .tool(fail_soon)
        .with_tasks()
}

fn parse_port() -> u16 {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == "--port") {
        Some(i) => args
            .get(i + 1)
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| {
                eprintln!("usage: taskrail-tower-peer [--port N]");
                std::process::exit(2)
            }),
        None => 0,
    }
}

#[tokio::main]
async fn main() {
    let _ = PUSH_LOG.set(open_push_log());
    let router = router();
    let _ = ROUTER.set(router.clone());
    let app = HttpTransport::new(router).into_router_at("/mcp");

    let listener = tokio::net::TcpListener::bind(("127.0.0.1", parse_port()))
        .await
        .unwrap_or_else(|e| {
            eprintln!("cannot bind 127.0.0.1: {e}");
            std::process::exit(1)
        });
    let port = listener.local_addr().expect("local addr").port();
    // axum's default sockets (Nagle on) unless TASKRAIL_PEER_NODELAY=1, to compare.
    let nodelay = std::env::var_os("TASKRAIL_PEER_NODELAY").is_some_and(|v| v == "1");
    let listener = listener.tap_io(move |tcp| {
        if nodelay {
            let _ = tcp.set_nodelay(true);
        }
    });
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    // The listener is bound, so connections queue; check one is served before READY.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            break;
        }
        if tokio::time::Instant::now() > deadline {
            eprintln!("server on port {port} does not accept connections");
            std::process::exit(1);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("READY http://127.0.0.1:{port}/mcp");

    // Exit when the parent (the test) goes away, so no orphaned server stays behind.
    let parent = std::os::unix::process::parent_id();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if std::os::unix::process::parent_id() != parent {
                std::process::exit(0);
            }
        }
    });

    match server.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            eprintln!("server error: {e}");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("server task failed: {e}");
            std::process::exit(1);
        }
    }
}
