//! The Streamable HTTP host transport (`--listen`), on loopback only: one POST per message,
//! answered as JSON when the reply is all there is, or as an event stream when progress or
//! a request to the host comes first; 2025-era hosts get a session (`Mcp-Session-Id`), its
//! GET stream, and DELETE; 2026-07-28 hosts are served without one.
//!
//! Owns: HTTP framing and sessions. Must not interpret MCP beyond telling requests from
//! notifications and spotting the reply that ends a stream.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::serve::ListenerExt as _;
use futures::{Stream, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::Proxy;
use super::host::Host;

/// Largest accepted request body.
const MAX_BODY: usize = 16 * 1024 * 1024;

struct Server {
    proxy: Arc<Proxy>,
    sessions: Mutex<HashMap<String, Arc<Host>>>,
    /// 2026-07-28 hosts have no session: they share this one.
    stateless: Arc<Host>,
}

/// Serve hosts on `listener` until `shutdown` resolves.
pub async fn serve_http(
    proxy: Arc<Proxy>,
    listener: tokio::net::TcpListener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let stateless = proxy.host(None);
    let server = Arc::new(Server {
        proxy,
        sessions: Mutex::new(HashMap::new()),
        stateless,
    });
    let app = Router::new()
        .route("/mcp", post(on_post).get(on_get).delete(on_delete))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(server);
    // Streamed replies are small writes in bursts: without TCP_NODELAY each one after the
    // first waits for the host's delayed ACK (40 ms on Linux).
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}

fn rpc_reply(status: StatusCode, id: Value, code: i64, message: &str) -> Response {
    let body = json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } });
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Browsers may only come from loopback origins (no DNS rebinding onto the proxy).
fn foreign_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let host = origin
        .split("://")
        .nth(1)
        .unwrap_or(origin)
        .split('/')
        .next()
        .unwrap_or("");
    let host = host.rsplit_once(':').map_or(host, |(h, port)| {
        if port.bytes().all(|b| b.is_ascii_digit()) {
            h
        } else {
            host
        }
    });
    !matches!(host, "localhost" | "127.0.0.1" | "[::1]")
}

fn session_header(headers: &HeaderMap) -> Option<&str> {
    headers.get("mcp-session-id").and_then(|v| v.to_str().ok())
}

fn is_reply_to(msg: &Value, id: &Value) -> bool {
    msg.get("method").is_none()
        && msg.get("id") == Some(id)
        && (msg.get("result").is_some() || msg.get("error").is_some())
}

fn event(msg: &Value) -> Result<Event, Infallible> {
    Ok(Event::default().event("message").data(msg.to_string()))
}

fn sse(stream: impl Stream<Item = Value> + Send + 'static) -> Response {
    let events = stream.map(|m| event(&m));
    let mut response = Sse::new(events)
        .keep_alive(
            KeepAlive::new()
                .interval(Duration::from_secs(15))
                .text("ping"),
        )
        .into_response();
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

async fn on_post(State(server): State<Arc<Server>>, headers: HeaderMap, body: Bytes) -> Response {
    if foreign_origin(&headers) {
        return rpc_reply(
            StatusCode::FORBIDDEN,
            Value::Null,
            -32600,
            "origin not allowed",
        );
    }
    let msg: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(_) => return rpc_reply(StatusCode::BAD_REQUEST, Value::Null, -32700, "Parse error"),
    };
    if !msg.is_object() {
        return rpc_reply(
            StatusCode::BAD_REQUEST,
            Value::Null,
            -32600,
            "Invalid Request: one JSON-RPC message per POST (no batches)",
        );
    }
    let method = msg
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_string);
    let id = msg.get("id").filter(|i| !i.is_null()).cloned();
    let mut new_session = None;
    let host = if method.as_deref() == Some("initialize") {
        let sid = uuid::Uuid::new_v4().simple().to_string();
        let host = server.proxy.host(None);
        server
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(sid.clone(), host.clone());
        new_session = Some(sid);
        host
    } else if let Some(sid) = session_header(&headers) {
        let known = server
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(sid)
            .cloned();
        match known {
            Some(h) => h,
            None => {
                return rpc_reply(
                    StatusCode::NOT_FOUND,
                    id.unwrap_or(Value::Null),
                    -32001,
                    "Session not found",
                );
            }
        }
    } else {
        server.stateless.clone()
    };
    let (tx, mut rx) = mpsc::channel::<Value>(64);
    host.handle(&server.proxy, msg, tx);
    let Some(id) = id.filter(|_| method.is_some()) else {
        // A notification or the answer to one of our requests.
        return StatusCode::ACCEPTED.into_response();
    };
    let mut response = match rx.recv().await {
        None => StatusCode::ACCEPTED.into_response(),
        Some(first) if is_reply_to(&first, &id) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            first.to_string(),
        )
            .into_response(),
        Some(first) => {
            // Progress or a request to the host came first: stream until the reply.
            let rest = futures::stream::unfold((rx, false), move |(mut rx, done)| {
                let id = id.clone();
                async move {
                    if done {
                        return None;
                    }
                    let msg = rx.recv().await?;
                    let done = is_reply_to(&msg, &id);
                    Some((msg, (rx, done)))
                }
            });
            sse(futures::stream::once(async move { first }).chain(rest))
        }
    };
    if let Some(sid) = new_session
        && let Ok(v) = HeaderValue::from_str(&sid)
    {
        response.headers_mut().insert("mcp-session-id", v);
    }
    response
}

/// A 2025-era session's stream of messages that belong to no request.
async fn on_get(State(server): State<Arc<Server>>, headers: HeaderMap) -> Response {
    if foreign_origin(&headers) {
        return rpc_reply(
            StatusCode::FORBIDDEN,
            Value::Null,
            -32600,
            "origin not allowed",
        );
    }
    let Some(sid) = session_header(&headers) else {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    };
    let host = server
        .sessions
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(sid)
        .cloned();
    let Some(host) = host else {
        return rpc_reply(
            StatusCode::NOT_FOUND,
            Value::Null,
            -32001,
            "Session not found",
        );
    };
    let (tx, rx) = mpsc::channel::<Value>(256);
    host.set_link(Some(tx));
    sse(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|m| (m, rx))
    }))
}

async fn on_delete(State(server): State<Arc<Server>>, headers: HeaderMap) -> Response {
    let Some(sid) = session_header(&headers) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let removed = server
        .sessions
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(sid);
    match removed {
        Some(host) => {
            host.set_link(None);
            StatusCode::OK.into_response()
        }
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_origins() {
        let mut h = HeaderMap::new();
        assert!(!foreign_origin(&h));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://localhost:3000"),
        );
        assert!(!foreign_origin(&h));
        h.insert(header::ORIGIN, HeaderValue::from_static("http://127.0.0.1"));
        assert!(!foreign_origin(&h));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("https://evil.example"),
        );
        assert!(foreign_origin(&h));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://localhost.evil.example"),
        );
        assert!(foreign_origin(&h));
    }

    #[test]
    fn the_reply_ends_a_stream() {
        let id = json!(3);
        assert!(is_reply_to(
            &json!({"jsonrpc": "2.0", "id": 3, "result": {}}),
            &id
        ));
        assert!(!is_reply_to(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "x"}),
            &id
        ));
        assert!(!is_reply_to(
            &json!({"jsonrpc": "2.0", "id": 4, "error": {}}),
            &id
        ));
    }
}
