//! The Streamable HTTP host transport (`--listen`), on loopback only: one POST per message,
//! answered as JSON when the reply is all there is, or as an event stream when progress or
//! a request to the host comes first; 2025-era hosts get a session (`Mcp-Session-Id`), its
//! GET stream, and DELETE; 2026-07-28 hosts are served without one.
//!
//! Only the user's own hosts get in: every request carries `Authorization: Bearer TOKEN`
//! (see `tokens.rs`; the token names the host), names the listener itself in `Host`, comes
//! from no foreign `Origin`, and a POST is `application/json`. Each token is its own
//! principal: session-less requests of one token share one host, sessions belong to the
//! token that opened them, expire when idle and are capped in number.
//!
//! Owns: HTTP framing, admission and sessions. Must not interpret MCP beyond telling
//! requests from notifications and spotting the reply that ends a stream.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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
use super::host::{Host, Principal};
use super::tokens::Tokens;
use crate::mcp::wire::{Carrier, WireTap};

/// How the listener admits hosts and bounds what they keep.
#[derive(Debug, Clone)]
pub struct Listener {
    pub tokens: Tokens,
    /// Largest accepted request body.
    pub max_body: usize,
    /// A session with no request and no open stream for this long ends.
    pub session_idle: Duration,
    /// Sessions kept at once (the least recently used one ends for a new one).
    pub max_sessions: usize,
}

impl Listener {
    /// The defaults, with the tokens in `tokens`.
    pub fn new(tokens: Tokens) -> Listener {
        Listener {
            tokens,
            max_body: 4 * 1024 * 1024,
            session_idle: Duration::from_secs(30 * 60),
            max_sessions: 64,
        }
    }
}

struct Session {
    host: Arc<Host>,
    /// The host name of the token that opened it.
    owner: String,
    last: Instant,
}

struct Server {
    proxy: Arc<Proxy>,
    opts: Listener,
    /// The address the listener is bound to (what `Host` must name).
    bound: SocketAddr,
    sessions: Mutex<HashMap<String, Session>>,
    /// 2026-07-28 hosts have no session: each token's requests share one host.
    stateless: Mutex<HashMap<String, Arc<Host>>>,
}

/// Serve hosts on `listener` until `shutdown` resolves.
pub async fn serve_http(
    proxy: Arc<Proxy>,
    listener: tokio::net::TcpListener,
    opts: Listener,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let bound = listener.local_addr()?;
    let max_body = opts.max_body;
    let server = Arc::new(Server {
        proxy,
        opts,
        bound,
        sessions: Mutex::new(HashMap::new()),
        stateless: Mutex::new(HashMap::new()),
    });
    let reaper = tokio::spawn(reap(Arc::downgrade(&server)));
    let app = Router::new()
        .route("/mcp", post(on_post).get(on_get).delete(on_delete))
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(server);
    // Streamed replies are small writes in bursts: without TCP_NODELAY each one after the
    // first waits for the host's delayed ACK (40 ms on Linux).
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let served = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await;
    reaper.abort();
    served?;
    Ok(())
}

/// End idle sessions until the server goes.
async fn reap(server: std::sync::Weak<Server>) {
    loop {
        let every = match server.upgrade() {
            Some(s) => {
                (s.opts.session_idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30))
            }
            None => return,
        };
        tokio::time::sleep(every).await;
        let Some(server) = server.upgrade() else {
            return;
        };
        let idle = server.opts.session_idle;
        let mut sessions = server.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.retain(|_, s| {
            let live = s.host.has_open_link() || s.last.elapsed() < idle;
            if !live {
                tracing::info!("a client session ended after {} s idle", idle.as_secs());
                s.host.set_link(None);
            }
            live
        });
    }
}

impl Server {
    /// Who may send this request: the token's host name, or the refusal.
    fn admit(&self, headers: &HeaderMap) -> Result<String, Box<Response>> {
        if foreign_origin(headers) {
            return Err(Box::new(refuse(
                StatusCode::FORBIDDEN,
                "origin not allowed",
            )));
        }
        if !self.own_host(headers) {
            return Err(Box::new(refuse(
                StatusCode::FORBIDDEN,
                "the Host header does not name this listener",
            )));
        }
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, token) = v.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            });
        let Some(presented) = presented else {
            return Err(Box::new(unauthorized(
                "Bearer realm=\"taskrail proxy\"",
                "this proxy needs Authorization: Bearer TOKEN (taskrail proxy token --host NAME)",
            )));
        };
        match self.opts.tokens.host_of(presented) {
            Some(name) => Ok(name),
            None => Err(Box::new(unauthorized(
                "Bearer realm=\"taskrail proxy\", error=\"invalid_token\"",
                "the token is not one of this proxy's (taskrail proxy token --host NAME)",
            ))),
        }
    }

    /// Whether `Host` names the listener: its own address, or `localhost` on its port.
    fn own_host(&self, headers: &HeaderMap) -> bool {
        let Some(host) = headers.get(header::HOST).and_then(|v| v.to_str().ok()) else {
            return false;
        };
        let port = self.bound.port();
        host == self.bound.to_string() || host == format!("localhost:{port}")
    }

    /// The session `sid` of token `owner` (another token's is as unknown), touched.
    fn session(&self, sid: &str, owner: &str) -> Option<Arc<Host>> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let s = sessions.get_mut(sid).filter(|s| s.owner == owner)?;
        s.last = Instant::now();
        Some(s.host.clone())
    }

    /// A new session for `owner`; past the cap the least recently used one ends.
    fn open_session(&self, owner: &str) -> (String, Arc<Host>) {
        let sid = uuid::Uuid::new_v4().simple().to_string();
        let host = self.proxy.host(
            None,
            Principal {
                token: Some(owner.to_string()),
            },
        );
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        while sessions.len() >= self.opts.max_sessions.max(1) {
            let oldest = sessions
                .iter()
                .min_by_key(|(_, s)| s.last)
                .map(|(k, _)| k.clone());
            let Some(oldest) = oldest else { break };
            tracing::warn!(
                "{} client sessions open: ending the least recently used",
                sessions.len()
            );
            if let Some(s) = sessions.remove(&oldest) {
                s.host.set_link(None);
            }
        }
        sessions.insert(
            sid.clone(),
            Session {
                host: host.clone(),
                owner: owner.to_string(),
                last: Instant::now(),
            },
        );
        (sid, host)
    }

    /// The host that serves `owner`'s session-less requests.
    fn stateless(&self, owner: &str) -> Arc<Host> {
        let mut hosts = self.stateless.lock().unwrap_or_else(|e| e.into_inner());
        hosts
            .entry(owner.to_string())
            .or_insert_with(|| {
                self.proxy.host(
                    None,
                    Principal {
                        token: Some(owner.to_string()),
                    },
                )
            })
            .clone()
    }
}

fn refuse(status: StatusCode, why: &str) -> Response {
    rpc_reply(status, Value::Null, -32600, why)
}

fn unauthorized(challenge: &'static str, why: &str) -> Response {
    let mut r = rpc_reply(StatusCode::UNAUTHORIZED, Value::Null, -32600, why);
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    r
}

/// Whether a POST says its body is JSON.
fn json_body(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
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

/// An event stream to a host; every message is reported to `tap` as it goes.
fn sse(stream: impl Stream<Item = Value> + Send + 'static, tap: Option<WireTap>) -> Response {
    let events = stream.map(move |m| {
        if let Some(tap) = &tap {
            tap.sent(Carrier::HostHttp, &m);
        }
        event(&m)
    });
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
    let owner = match server.admit(&headers) {
        Ok(o) => o,
        Err(refused) => return *refused,
    };
    if !json_body(&headers) {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "a message is sent as Content-Type: application/json",
        );
    }
    let msg: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(_) => return rpc_reply(StatusCode::BAD_REQUEST, Value::Null, -32700, "Parse error"),
    };
    if let Some(tap) = &server.proxy.wire {
        tap.received(Carrier::HostHttp, &msg);
    }
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
        let (sid, host) = server.open_session(&owner);
        new_session = Some(sid);
        host
    } else if let Some(sid) = session_header(&headers) {
        match server.session(sid, &owner) {
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
        server.stateless(&owner)
    };
    let (tx, mut rx) = mpsc::channel::<Value>(64);
    super::dispatch::handle(&host, &server.proxy, msg, tx);
    let Some(id) = id.filter(|_| method.is_some()) else {
        // A notification or the answer to one of our requests.
        return StatusCode::ACCEPTED.into_response();
    };
    let mut response = match rx.recv().await {
        None => StatusCode::ACCEPTED.into_response(),
        Some(first) if is_reply_to(&first, &id) => {
            if let Some(tap) = &server.proxy.wire {
                tap.sent(Carrier::HostHttp, &first);
            }
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                first.to_string(),
            )
                .into_response()
        }
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
            let tap = server.proxy.wire.clone();
            sse(futures::stream::once(async move { first }).chain(rest), tap)
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
    let owner = match server.admit(&headers) {
        Ok(o) => o,
        Err(refused) => return *refused,
    };
    let Some(sid) = session_header(&headers) else {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    };
    let Some(host) = server.session(sid, &owner) else {
        return rpc_reply(
            StatusCode::NOT_FOUND,
            Value::Null,
            -32001,
            "Session not found",
        );
    };
    let (tx, rx) = mpsc::channel::<Value>(256);
    host.set_link(Some(tx));
    let tap = server.proxy.wire.clone();
    sse(
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|m| (m, rx)) }),
        tap,
    )
}

async fn on_delete(State(server): State<Arc<Server>>, headers: HeaderMap) -> Response {
    let owner = match server.admit(&headers) {
        Ok(o) => o,
        Err(refused) => return *refused,
    };
    let Some(sid) = session_header(&headers) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let removed = {
        let mut sessions = server.sessions.lock().unwrap_or_else(|e| e.into_inner());
        match sessions.get(sid) {
            Some(s) if s.owner == owner => sessions.remove(sid),
            _ => None,
        }
    };
    match removed {
        Some(s) => {
            s.host.set_link(None);
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
