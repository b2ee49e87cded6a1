//! stdio transport: spawn the server command, newline-delimited JSON-RPC on its stdin and
//! stdout, its stderr to the log; the child is killed when the transport is dropped.
//!
//! Owns: the child process, request/response correlation by id, routing of listen-stream
//! messages by subscription id, and bounded reading of both pipes (`lines`): a message
//! over the bound is skipped (the request it answered, when its id can be read, fails
//! with `TooLarge`) and reading goes on; stderr is read to the end whatever it holds, so
//! the child never blocks or dies on a full or closed pipe. Must not interpret MCP
//! semantics beyond that routing.

use futures::StreamExt;
use serde_json::Value;
use std::collections::HashMap;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};

use super::endpoint::ConnectOptions;
use super::error::McpError;
use super::http_reply::MessageStream;
use super::jsonrpc::{self, Inbound, Incoming, RequestId};
use super::lines::{Line, leading_id, read_lines};
use super::types::ErrorObject;
use super::wire::Carrier;

type Reply = Result<Value, ErrorObject>;

/// Longest stderr line kept for the log (the rest of it is skipped).
const STDERR_LINE: usize = 8 * 1024;

#[derive(Default)]
struct Routes {
    pending: HashMap<String, oneshot::Sender<Result<Reply, McpError>>>,
    streams: HashMap<String, mpsc::Sender<Result<Incoming, McpError>>>,
    closed: Option<String>,
}

/// A server running as a child process.
pub struct StdioTransport {
    writer: mpsc::Sender<String>,
    routes: Arc<Mutex<Routes>>,
    child: Mutex<Option<Child>>,
}

fn id_key(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl StdioTransport {
    pub fn spawn(
        argv: &[String],
        opts: &ConnectOptions,
        inbound: mpsc::Sender<Inbound>,
    ) -> Result<Self, McpError> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| McpError::Unsupported("empty stdio command".into()))?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| McpError::Transport(format!("cannot start {program:?}: {e}")))?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| McpError::transport("no stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| McpError::transport("no stdout"))?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| McpError::transport("no stderr"))?;
        let routes = Arc::new(Mutex::new(Routes::default()));

        let (writer, mut lines) = mpsc::channel::<String>(256);
        let sent_tap = opts.wire.clone();
        tokio::spawn(async move {
            let mut stdin = stdin;
            while let Some(line) = lines.recv().await {
                if let Some(tap) = &sent_tap {
                    tap.sent_text(Carrier::Stdio, &line);
                }
                if stdin.write_all(line.as_bytes()).await.is_err()
                    || stdin.write_all(b"\n").await.is_err()
                {
                    break;
                }
                let _ = stdin.flush().await;
            }
        });

        let name = program.clone();
        tokio::spawn(async move {
            let read = read_lines(stderr, STDERR_LINE, |line| {
                let (text, cut) = match &line {
                    Line::Full(bytes) => (String::from_utf8_lossy(bytes), None),
                    Line::TooLong { head, len } => (String::from_utf8_lossy(head), Some(*len)),
                };
                let text: String = text.chars().filter(|c| !c.is_control()).take(2000).collect();
                match cut {
                    None => tracing::debug!(target: "taskrail::stdio", server = %name, "{text}"),
                    Some(len) => tracing::debug!(target: "taskrail::stdio", server = %name, "{text}… ({len} bytes, cut)"),
                }
                async {}
            })
            .await;
            if let Err(e) = read {
                tracing::debug!(server = %name, "reading the server's stderr failed: {e}");
            }
        });

        let reader_routes = routes.clone();
        let max = opts.max_message_bytes;
        let recv_tap = opts.wire.clone();
        tokio::spawn(async move {
            let end = read_lines(stdout, max, |line| {
                let (routes, inbound, tap) = (&reader_routes, &inbound, &recv_tap);
                async move {
                    match line {
                        Line::TooLong { head, len } => too_long(routes, &head, len, max),
                        Line::Full(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => {}
                        Line::Full(bytes) => match Incoming::parse_bytes(&bytes) {
                            Ok(msg) => {
                                if let Some(tap) = tap {
                                    tap.received_incoming(Carrier::Stdio, &msg);
                                }
                                route(routes, inbound, msg).await
                            }
                            Err(e) => tracing::warn!("skipping a malformed stdio message: {e}"),
                        },
                    }
                }
            })
            .await;
            let end = match end {
                Ok(()) => "the server process closed its output".to_string(),
                Err(e) => format!("reading from the server failed: {e}"),
            };
            let mut r = reader_routes.lock().unwrap_or_else(|e| e.into_inner());
            r.closed = Some(end);
            r.pending.clear();
            r.streams.clear();
        });

        Ok(Self {
            writer,
            routes,
            child: Mutex::new(Some(child)),
        })
    }

    fn closed_error(&self) -> McpError {
        let r = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        McpError::Transport(
            r.closed
                .clone()
                .unwrap_or_else(|| "the server process is gone".into()),
        )
    }

    async fn write(&self, msg: &Value) -> Result<(), McpError> {
        let line = serde_json::to_string(msg).map_err(|e| McpError::decode(e.to_string()))?;
        self.writer
            .send(line)
            .await
            .map_err(|_| self.closed_error())
    }

    pub async fn request(&self, id: &RequestId, msg: &Value) -> Result<Reply, McpError> {
        let (tx, rx) = oneshot::channel();
        {
            let mut r = self.routes.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(why) = &r.closed {
                return Err(McpError::Transport(why.clone()));
            }
            r.pending.insert(id.to_string(), tx);
        }
        let guard = PendingGuard {
            routes: &self.routes,
            key: id.to_string(),
        };
        self.write(msg).await?;
        let reply = rx.await.map_err(|_| self.closed_error());
        drop(guard);
        reply?
    }

    pub async fn send_message(&self, msg: &Value) -> Result<(), McpError> {
        self.write(msg).await
    }

    /// Send a request whose messages keep coming (a listen stream). Dropping the stream
    /// sends `notifications/cancelled` for it.
    pub async fn open_stream(
        &self,
        id: &RequestId,
        msg: &Value,
    ) -> Result<MessageStream, McpError> {
        let (tx, rx) = mpsc::channel(256);
        {
            let mut r = self.routes.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(why) = &r.closed {
                return Err(McpError::Transport(why.clone()));
            }
            r.streams.insert(id.to_string(), tx);
        }
        self.write(msg).await?;
        let guard = StreamGuard {
            routes: self.routes.clone(),
            writer: self.writer.clone(),
            id: id.clone(),
        };
        let stream = tokio_stream_from(rx).map(move |m| {
            let _keep = &guard;
            m
        });
        Ok(Box::pin(stream))
    }

    /// Close stdin, give the child a moment, then kill it.
    pub async fn shutdown(&self) {
        let child = self.child.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(mut child) = child {
            drop(child.stdin.take());
            if tokio::time::timeout(std::time::Duration::from_millis(500), child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
            }
        }
    }
}

/// A message over the bound: logged and skipped; the request it answers fails now.
fn too_long(routes: &Mutex<Routes>, head: &[u8], len: usize, max: usize) {
    let id = leading_id(head);
    tracing::warn!(
        "skipping a stdio message of {len} bytes, longer than the {max}-byte bound{}",
        if id.is_some() {
            " (the request it answers fails)"
        } else {
            ""
        }
    );
    let Some(id) = id else { return };
    let waiting = routes
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .pending
        .remove(&id_key(&id));
    if let Some(tx) = waiting {
        let _ = tx.send(Err(McpError::TooLarge {
            size: len,
            limit: max,
        }));
    }
}

fn tokio_stream_from(
    mut rx: mpsc::Receiver<Result<Incoming, McpError>>,
) -> impl futures::Stream<Item = Result<Incoming, McpError>> + Send {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

async fn route(routes: &Mutex<Routes>, inbound: &mpsc::Sender<Inbound>, msg: Incoming) {
    enum To {
        Pending(oneshot::Sender<Result<Reply, McpError>>, Reply),
        Stream(mpsc::Sender<Result<Incoming, McpError>>, Incoming),
        Inbound(Incoming),
    }
    let to = {
        let mut r = routes.lock().unwrap_or_else(|e| e.into_inner());
        match msg {
            Incoming::Response { id, outcome } => {
                let key = id_key(&id);
                if let Some(tx) = r.pending.remove(&key) {
                    To::Pending(tx, outcome)
                } else if let Some(tx) = r.streams.remove(&key) {
                    To::Stream(tx, Incoming::Response { id, outcome })
                } else {
                    tracing::debug!("response for an unknown request id {key}");
                    return;
                }
            }
            Incoming::Notification {
                ref method,
                ref params,
            } => {
                let sub = Incoming::subscription_id(params).map(id_key);
                let cancelled = (method == "notifications/cancelled")
                    .then(|| params.get("requestId").map(id_key))
                    .flatten();
                if let Some(key) = cancelled {
                    r.streams.remove(&key);
                    return;
                }
                match sub.and_then(|k| r.streams.get(&k).cloned()) {
                    Some(tx) => To::Stream(tx, msg),
                    None => To::Inbound(msg),
                }
            }
            other => To::Inbound(other),
        }
    };
    match to {
        To::Pending(tx, reply) => {
            let _ = tx.send(Ok(reply));
        }
        To::Stream(tx, m) => {
            let _ = tx.send(Ok(m)).await;
        }
        To::Inbound(m) => {
            let _ = inbound.send(Inbound { msg: m, via: None }).await;
        }
    }
}

struct PendingGuard<'a> {
    routes: &'a Mutex<Routes>,
    key: String,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pending
            .remove(&self.key);
    }
}

struct StreamGuard {
    routes: Arc<Mutex<Routes>>,
    writer: mpsc::Sender<String>,
    id: RequestId,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let was_open = self
            .routes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .streams
            .remove(&self.id.to_string())
            .is_some();
        if was_open {
            let note = jsonrpc::notification(
                "notifications/cancelled",
                serde_json::json!({ "requestId": self.id.to_value(), "reason": "subscription closed" }),
            );
            let _ = self.writer.try_send(note.to_string());
        }
    }
}
