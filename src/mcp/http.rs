//! Streamable HTTP transport: one POST per message with every header the spec asks for,
//! replies read as JSON or as an SSE stream (our bounded decoder, `sse`), and the legacy
//! session GET stream (`get_stream`).
//!
//! Owns: headers, session id, status-code mapping, bounded bodies, the redirect rule
//! (configured headers never go to another origin), the byte-level idle bound of listen
//! streams. Must not interpret MCP semantics beyond routing messages of a reply to the
//! caller or the inbound channel.

use futures::{Stream, StreamExt, TryStreamExt};
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use std::sync::RwLock;
use std::time::Duration;
use tokio::sync::mpsc;

use super::endpoint::{ConnectOptions, encode_header_value};
use super::error::McpError;
use super::http_reply::{MessageStream, content_type, describe_reqwest_error};
use super::jsonrpc::{Inbound, Incoming, RequestId};
use super::sse::{ResumeCell, sse_decode_tracked};
use super::types::ErrorObject;
use super::wire::{Carrier, WireTap};

const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// How many times one request's cut reply stream is resumed before giving up.
const MAX_RESUMES: usize = 3;

/// Authorization rounds (renewal, sign-in, step-up) one request may go through.
const MAX_AUTH_ROUNDS: usize = 3;

/// The routing headers of one POST: `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*`.
#[derive(Debug, Default, Clone, Copy)]
pub struct Routing<'a> {
    pub method: Option<&'a str>,
    pub name: Option<&'a str>,
    pub params: &'a [(String, String)],
}

impl<'a> Routing<'a> {
    pub fn method(method: &'a str) -> Self {
        Self {
            method: Some(method),
            ..Default::default()
        }
    }
}

/// Streamable HTTP connection to one endpoint.
pub struct HttpTransport {
    client: reqwest::Client,
    url: reqwest::Url,
    extra: HeaderMap,
    session: RwLock<Option<String>>,
    protocol_version: RwLock<Option<String>>,
    inbound: mpsc::Sender<Inbound>,
    max_bytes: usize,
    /// A listen stream that sends no byte at all (not even a comment) for this long is dead.
    stream_idle: Duration,
    auth: Option<std::sync::Arc<super::auth::Authorizer>>,
    wire: Option<WireTap>,
}

/// Install the process-wide rustls crypto provider (idempotent).
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

fn is_loopback(url: &reqwest::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

impl HttpTransport {
    pub fn new(
        url: &str,
        opts: &ConnectOptions,
        inbound: mpsc::Sender<Inbound>,
    ) -> Result<Self, McpError> {
        install_crypto_provider();
        let url = reqwest::Url::parse(url)
            .map_err(|e| McpError::Unsupported(format!("invalid URL: {e}")))?;
        let mut builder = reqwest::Client::builder()
            .connect_timeout(opts.connect_timeout)
            .redirect(redirect_policy(!opts.headers.is_empty()))
            .user_agent(format!("{}/{}", opts.client_name, opts.client_version));
        if is_loopback(&url) {
            builder = builder.no_proxy();
        }
        let client = builder.build().map_err(McpError::transport)?;
        let mut extra = HeaderMap::new();
        // A static Authorization header (`--header`) replaces OAuth sign-in.
        let auth = opts.auth.clone().filter(|_| {
            !opts
                .headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("authorization"))
        });
        for (name, value) in &opts.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| McpError::Unsupported(format!("invalid header name {name:?}")))?;
            let mut value = HeaderValue::from_str(value).map_err(|_| {
                McpError::Unsupported(format!(
                    "header {name} has a value that is not visible ASCII"
                ))
            })?;
            value.set_sensitive(true);
            extra.insert(name, value);
        }
        Ok(Self {
            client,
            url,
            extra,
            session: RwLock::new(None),
            protocol_version: RwLock::new(None),
            inbound,
            max_bytes: opts.max_message_bytes,
            stream_idle: opts.stream_idle_timeout,
            auth,
            wire: opts.wire.clone(),
        })
    }

    /// The bearer header for the next request, when signed in.
    async fn bearer(&self) -> Result<Option<String>, McpError> {
        match &self.auth {
            Some(a) => a.bearer().await,
            None => Ok(None),
        }
    }

    fn authorization(token: &str) -> Option<HeaderValue> {
        let mut v = HeaderValue::from_str(&format!("Bearer {token}")).ok()?;
        v.set_sensitive(true);
        Some(v)
    }

    /// Send a request built by `build` (called again for each retry), with the bearer
    /// token; a 401, or a 403 for `insufficient_scope`, goes to the authorizer, and the
    /// request is sent again when it cured it.
    async fn send_authorized(
        &self,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, McpError> {
        let mut rounds = 0;
        loop {
            let token = self.bearer().await?;
            let mut rb = build();
            if let Some(v) = token.as_deref().and_then(Self::authorization) {
                rb = rb.header(header::AUTHORIZATION, v);
            }
            let resp = rb.send().await.map_err(describe_reqwest_error)?;
            let Some(auth) = &self.auth else {
                return Ok(resp);
            };
            let status = resp.status().as_u16();
            if rounds >= MAX_AUTH_ROUNDS || !(status == 401 || status == 403) {
                return Ok(resp);
            }
            let challenge = super::auth::Challenge::parse(
                resp.headers()
                    .get_all(header::WWW_AUTHENTICATE)
                    .iter()
                    .filter_map(|v| v.to_str().ok()),
            );
            match (status, challenge) {
                (401, c) => {
                    tracing::debug!("401: asking the authorizer");
                    rounds += 1;
                    auth.unauthorized(token.as_deref(), c).await?;
                }
                (_, Some(c)) if c.is_insufficient_scope() => {
                    tracing::debug!("403 insufficient_scope: stepping up");
                    rounds += 1;
                    auth.forbidden(c).await?;
                }
                _ => return Ok(resp),
            }
        }
    }

    pub fn set_session(&self, id: Option<String>) {
        *self.session.write().unwrap_or_else(|e| e.into_inner()) = id;
    }

    pub fn session(&self) -> Option<String> {
        self.session
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub fn set_protocol_version(&self, v: Option<String>) {
        *self
            .protocol_version
            .write()
            .unwrap_or_else(|e| e.into_inner()) = v;
    }

    fn common_headers(&self) -> HeaderMap {
        let mut h = self.extra.clone();
        if let Some(v) = self
            .protocol_version
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_deref()
            && let Ok(v) = HeaderValue::from_str(v)
        {
            h.insert("mcp-protocol-version", v);
        }
        if let Some(s) = self.session()
            && let Ok(v) = HeaderValue::from_str(&s)
        {
            h.insert("mcp-session-id", v);
        }
        h
    }

    async fn post(
        &self,
        body: &Value,
        routing: Routing<'_>,
    ) -> Result<reqwest::Response, McpError> {
        let mut h = self.common_headers();
        h.insert(header::ACCEPT, HeaderValue::from_static(ACCEPT_BOTH));
        h.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(m) = routing.method
            && let Ok(v) = HeaderValue::from_str(&encode_header_value(m))
        {
            h.insert("mcp-method", v);
        }
        if let Some(n) = routing.name
            && let Ok(v) = HeaderValue::from_str(&encode_header_value(n))
        {
            h.insert("mcp-name", v);
        }
        for (name, value) in routing.params {
            if let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) {
                h.insert(n, v);
            }
        }
        let bytes = bytes::Bytes::from(
            serde_json::to_vec(body).map_err(|e| McpError::decode(e.to_string()))?,
        );
        if let Some(tap) = &self.wire {
            tap.sent(Carrier::Http, body);
        }
        let resp = self
            .send_authorized(|| {
                self.client
                    .post(self.url.clone())
                    .headers(h.clone())
                    .body(bytes.clone())
            })
            .await?;
        if self.session().is_none()
            && let Some(sid) = resp
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
        {
            self.set_session(Some(sid.to_string()));
        }
        Ok(resp)
    }

    /// Send one request and wait for its response; messages that arrive first on an SSE
    /// reply (progress, task status, server requests) go to the inbound channel.
    pub async fn request(
        &self,
        id: &RequestId,
        msg: &Value,
        routing: Routing<'_>,
    ) -> Result<Result<Value, ErrorObject>, McpError> {
        let method = routing.method.unwrap_or("request");
        let resume = ResumeCell::default();
        let resp = self.post(msg, routing).await?;
        let (single, mut stream) = self.reply(resp, Some(resume.clone())).await?;
        let mut resumed = 0;
        loop {
            let mut cut = None;
            while let Some(item) = stream.next().await {
                match item {
                    Ok(Incoming::Response { id: rid, outcome }) if single || id.matches(&rid) => {
                        return Ok(outcome);
                    }
                    Ok(Incoming::Response { id: rid, .. }) => {
                        tracing::debug!(%rid, "ignoring a response for another request");
                    }
                    Ok(other) => {
                        let inbound = Inbound {
                            msg: other,
                            via: Some(id.clone()),
                        };
                        if self.inbound.send(inbound).await.is_err() {
                            tracing::debug!("inbound channel closed; dropping a server message");
                        }
                    }
                    Err(McpError::Decode(e)) => tracing::warn!("skipping a malformed message: {e}"),
                    Err(e @ McpError::Transport(_)) => {
                        cut = Some(e);
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            // SEP-1699: a reply stream that ends early is resumed with a GET carrying
            // `Last-Event-ID`, after the server's `retry` delay.
            let Some((last_id, delay)) = resume.resumable() else {
                return Err(cut.unwrap_or_else(|| {
                    McpError::Transport(format!("the reply to {method} ended without a response"))
                }));
            };
            if single || resumed >= MAX_RESUMES {
                return Err(cut.unwrap_or_else(|| {
                    McpError::Transport(format!("the reply to {method} ended without a response"))
                }));
            }
            resumed += 1;
            tracing::debug!(attempt = resumed, ?delay, "resuming a cut reply stream");
            tokio::time::sleep(delay).await;
            let resp = self.resume_get(&last_id).await?;
            stream = self.reply(resp, Some(resume.clone())).await?.1;
        }
    }

    /// GET the endpoint with `Last-Event-ID` to resume a cut event stream.
    async fn resume_get(&self, last_event_id: &str) -> Result<reqwest::Response, McpError> {
        let mut h = self.common_headers();
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        if let Ok(v) = HeaderValue::from_str(last_event_id) {
            h.insert("last-event-id", v);
        }
        self.send_authorized(|| self.client.get(self.url.clone()).headers(h.clone()))
            .await
    }

    /// POST a notification or a response to a server request (answered `202 Accepted`).
    pub async fn send_message(&self, msg: &Value, method: Option<&str>) -> Result<(), McpError> {
        let resp = self
            .post(
                msg,
                Routing {
                    method,
                    ..Default::default()
                },
            )
            .await?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        let retry_after = retry_after(resp.headers());
        let body = read_bounded(resp, 64 * 1024).await.unwrap_or_default();
        Err(McpError::Http {
            status: status.as_u16(),
            retry_after,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    }

    /// POST a request whose reply stays open (`subscriptions/listen`); every message of
    /// the reply is yielded, including a final response or a JSON error. A stream that
    /// sends no byte for `stream_idle` ends with an error; any byte counts, keep-alive
    /// comments included.
    pub async fn open_stream(&self, msg: &Value, method: &str) -> Result<MessageStream, McpError> {
        let resp = self.post(msg, Routing::method(method)).await?;
        if resp.status().is_success() && content_type(&resp).starts_with("text/event-stream") {
            let bytes = idle_bounded(resp.bytes_stream(), self.stream_idle);
            let stream = sse_decode_tracked(bytes, self.max_bytes, None);
            return Ok(tap_stream(stream, self.wire.clone(), Carrier::Sse));
        }
        Ok(self.reply(resp, None).await?.1)
    }

    /// Interpret a reply: `(true, one message)` for JSON bodies, `(false, events)` for SSE.
    async fn reply(
        &self,
        resp: reqwest::Response,
        resume: Option<ResumeCell>,
    ) -> Result<(bool, MessageStream), McpError> {
        let status = resp.status();
        let ctype = content_type(&resp);
        if status.is_success() && ctype.starts_with("text/event-stream") {
            let stream = sse_messages(resp, self.max_bytes, resume);
            return Ok((false, tap_stream(stream, self.wire.clone(), Carrier::Sse)));
        }
        let retry_after = retry_after(resp.headers());
        let body = read_bounded(resp, self.max_bytes).await?;
        let parsed = Incoming::parse_bytes(&body)
            .ok()
            .filter(|m| matches!(m, Incoming::Response { .. }));
        if let (Some(tap), Some(m)) = (&self.wire, &parsed) {
            tap.received_incoming(Carrier::Http, m);
        }
        match parsed {
            Some(
                m @ Incoming::Response {
                    outcome: Err(_), ..
                },
            ) => Ok((true, Box::pin(futures::stream::iter([Ok(m)])))),
            Some(m) if status.is_success() => Ok((true, Box::pin(futures::stream::iter([Ok(m)])))),
            _ if status.is_success() && body.iter().all(u8::is_ascii_whitespace) => {
                Ok((true, Box::pin(futures::stream::empty())))
            }
            _ if status.is_success() => Err(McpError::decode(format!(
                "expected JSON or an event stream, got {:?}: {}",
                ctype,
                preview(&body)
            ))),
            _ => Err(McpError::Http {
                status: status.as_u16(),
                retry_after,
                body: preview(&body),
            }),
        }
    }

    /// Legacy: open the session's GET stream (server-initiated notifications and requests).
    /// Reconnects with backoff and `Last-Event-ID`; ends on 401/403/404/405. `ready` says
    /// whether the server has answered the GET (`Some(true)`), or will not (`None`).
    pub async fn open_get_stream(
        &self,
        ready: tokio::sync::watch::Sender<Option<bool>>,
    ) -> Result<MessageStream, McpError> {
        let mut headers = self.common_headers();
        if let Some(v) = self
            .bearer()
            .await?
            .as_deref()
            .and_then(Self::authorization)
        {
            headers.insert(header::AUTHORIZATION, v);
        }
        let stream = super::get_stream::open(
            self.client.clone(),
            self.url.clone(),
            headers,
            self.max_bytes,
            ready,
        );
        Ok(tap_stream(stream, self.wire.clone(), Carrier::Sse))
    }

    /// Legacy: end the session (DELETE; a 405 answer is fine).
    pub async fn delete_session(&self) {
        if self.session().is_none() {
            return;
        }
        let mut headers = self.common_headers();
        if let Ok(Some(v)) = self
            .bearer()
            .await
            .map(|t| t.as_deref().and_then(Self::authorization))
        {
            headers.insert(header::AUTHORIZATION, v);
        }
        let _ = self
            .client
            .delete(self.url.clone())
            .headers(headers)
            .timeout(Duration::from_secs(2))
            .send()
            .await;
    }
}

/// Decode an SSE reply into messages; a per-event byte bound guards memory.
fn sse_messages(resp: reqwest::Response, max: usize, resume: Option<ResumeCell>) -> MessageStream {
    sse_decode_tracked(
        resp.bytes_stream()
            .map_err(|e| std::io::Error::other(e.without_url())),
        max,
        resume,
    )
}

async fn read_bounded(resp: reqwest::Response, max: usize) -> Result<Vec<u8>, McpError> {
    if let Some(len) = resp.content_length()
        && len as usize > max
    {
        return Err(McpError::TooLarge {
            size: len as usize,
            limit: max,
        });
    }
    let mut out = Vec::new();
    let mut body = resp.bytes_stream();
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(describe_reqwest_error)?;
        if out.len() + chunk.len() > max {
            return Err(McpError::TooLarge {
                size: out.len() + chunk.len(),
                limit: max,
            });
        }
        out.extend_from_slice(&chunk);
    }
    Ok(out)
}

fn retry_after(h: &HeaderMap) -> Option<Duration> {
    let v = h.get(header::RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let when = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let delta = when.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

fn preview(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(body);
    let s: String = s.chars().take(300).collect();
    s.trim().to_string()
}

/// The origin of a URL: scheme, host and port (the scheme's default when not given).
fn origin(u: &reqwest::Url) -> (String, Option<String>, Option<u16>) {
    (
        u.scheme().to_string(),
        u.host_str().map(str::to_ascii_lowercase),
        u.port_or_known_default(),
    )
}

/// Redirects: at most 10; with configured headers, never to another origin (they would
/// go with the request: reqwest strips only its own sensitive headers). Applies to every
/// request of the client, POSTs and the legacy GET stream alike.
fn redirect_policy(has_headers: bool) -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(move |attempt| {
        if attempt.previous().len() > 10 {
            return attempt.error("too many redirects");
        }
        let from = attempt.previous().first().map(origin);
        if has_headers && from.is_some_and(|o| o != origin(attempt.url())) {
            let to = super::endpoint::redact_url(attempt.url().as_str());
            return attempt.error(format!(
                "refusing a redirect to another origin ({to}): the configured headers would go with it"
            ));
        }
        attempt.follow()
    })
}

/// End a byte stream with an error when it stays silent for `idle`.
fn idle_bounded<S>(
    bytes: S,
    idle: Duration,
) -> impl Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send + 'static
where
    S: Stream<Item = reqwest::Result<bytes::Bytes>> + Send + 'static,
{
    let bytes = Box::pin(bytes);
    futures::stream::unfold(Some(bytes), move |state| async move {
        let mut bytes = state?;
        match tokio::time::timeout(idle, bytes.next()).await {
            Ok(Some(Ok(b))) => Some((Ok(b), Some(bytes))),
            Ok(Some(Err(e))) => Some((Err(std::io::Error::other(e.without_url())), None)),
            Ok(None) => None,
            Err(_) => Some((
                Err(std::io::Error::other(format!(
                    "listen stream silent for {} s",
                    idle.as_secs()
                ))),
                None,
            )),
        }
    })
}

/// Tap every message of a stream as received over `transport`.
fn tap_stream(stream: MessageStream, tap: Option<WireTap>, transport: Carrier) -> MessageStream {
    match tap {
        None => stream,
        Some(tap) => Box::pin(stream.inspect(move |item| {
            if let Ok(msg) = item {
                tap.received_incoming(transport, msg);
            }
        })),
    }
}
