//! JSON-RPC and HTTP building blocks of the demo server: error values with their HTTP
//! status, JSON and SSE replies, header decoding. Knows nothing about tasks or tools.

use std::convert::Infallible;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use futures::Stream;
use serde_json::{Value, json};

/// Spec constants used on the wire (the server does not import the client's types).
pub const MODERN_VERSION: &str = "2026-07-28";
pub const LEGACY_VERSION: &str = "2025-11-25";
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
pub const META_RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
pub const HEADER_MISMATCH: i64 = -32020;
pub const MISSING_CAPABILITY: i64 = -32021;
pub const UNSUPPORTED_VERSION: i64 = -32022;

/// Keep-alive period of every long-lived SSE stream (`: ping` comments).
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// A JSON-RPC error together with the HTTP status it travels with.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub status: StatusCode,
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(status: StatusCode, code: i64, message: impl Into<String>) -> Self {
        RpcError {
            status,
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// `-32602` that is about the request's content (unknown task, bad argument): HTTP 200.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(StatusCode::OK, INVALID_PARAMS, message)
    }

    /// `-32602` for a malformed envelope (missing `_meta`): HTTP 400.
    pub fn malformed(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, INVALID_PARAMS, message)
    }

    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }

    pub fn header_mismatch(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, HEADER_MISMATCH, message)
    }

    /// `-32021` naming the tasks extension as the missing capability.
    pub fn missing_tasks_capability() -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            MISSING_CAPABILITY,
            "Missing required client capability",
        )
        .with_data(json!({ "requiredCapabilities": { "extensions": { TASKS_EXTENSION: {} } } }))
    }

    /// The JSON-RPC `error` object.
    pub fn to_json(&self) -> Value {
        let mut obj = json!({ "code": self.code, "message": self.message });
        if let Some(data) = &self.data {
            obj["data"] = data.clone();
        }
        obj
    }

    /// A complete HTTP reply carrying this error for request `id`.
    pub fn into_response(self, id: &Value) -> Response {
        json_reply(self.status, &error_message(id, &self.to_json()))
    }
}

/// `{"jsonrpc":"2.0","id":…,"result":…}`
pub fn result_message(id: &Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

/// `{"jsonrpc":"2.0","id":…,"error":…}`
pub fn error_message(id: &Value, error: &Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": error })
}

/// `{"jsonrpc":"2.0","method":…,"params":…}`
pub fn notification(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

/// One JSON-RPC message as an `application/json` reply.
pub fn json_reply(status: StatusCode, body: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// A plain HTTP error whose body is a JSON-RPC error with a null id (transport-level refusals).
pub fn http_error(status: StatusCode, code: i64, message: &str) -> Response {
    json_reply(
        status,
        &error_message(&Value::Null, &json!({ "code": code, "message": message })),
    )
}

/// `202 Accepted`, no body (notifications and client responses).
pub fn accepted() -> Response {
    StatusCode::ACCEPTED.into_response()
}

/// The SSE event that carries one JSON-RPC message.
pub fn sse_event(message: &Value) -> Event {
    Event::default().event("message").data(message.to_string())
}

/// An SSE reply from a stream of messages, with `: ping` keep-alives and proxy hints.
pub fn sse_reply<S>(messages: S) -> Response
where
    S: Stream<Item = Value> + Send + 'static,
{
    use futures::StreamExt as _;
    let events = messages.map(|m| Ok::<Event, Infallible>(sse_event(&m)));
    let sse = Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE).text("ping"));
    let mut response = sse.into_response();
    response
        .headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// A stream of messages fed by an unbounded channel; ends when every sender is gone.
pub fn channel_stream(
    rx: tokio::sync::mpsc::UnboundedReceiver<Value>,
) -> impl Stream<Item = Value> + Send + 'static {
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|m| (m, rx)) })
}

/// A header as text; `None` if absent or not visible ASCII.
pub fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Decode an `Mcp-Name`-style value: `=?base64?…?=` carries UTF-8 in base64, anything
/// else is taken literally. `None` if the sentinel form does not decode.
pub fn decode_header_value(raw: &str) -> Option<String> {
    match raw
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok()),
        None => Some(raw.to_string()),
    }
}

/// Whether an `Accept` header admits a media type (`*/*` and `type/*` count).
pub fn accepts(headers: &HeaderMap, media: &str) -> bool {
    let Some(accept) = header_str(headers, "accept") else {
        return false;
    };
    let major = media.split('/').next().unwrap_or(media);
    accept.split(',').any(|part| {
        let t = part.split(';').next().unwrap_or("").trim();
        t == media || t == "*/*" || t == format!("{major}/*")
    })
}

/// RFC 3339 UTC timestamp with milliseconds, as used for `createdAt`/`lastUpdatedAt`.
pub fn timestamp(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_base64_sentinel_and_plain_values() {
        assert_eq!(decode_header_value("abc").as_deref(), Some("abc"));
        assert_eq!(
            decode_header_value("=?base64?IGjDqWxsbw==?=").as_deref(),
            Some(" héllo")
        );
        assert_eq!(decode_header_value("=?base64?***?="), None);
    }

    #[test]
    fn accept_matching() {
        let mut h = HeaderMap::new();
        h.insert(
            "accept",
            HeaderValue::from_static("application/json, text/event-stream;q=0.9"),
        );
        assert!(accepts(&h, "application/json"));
        assert!(accepts(&h, "text/event-stream"));
        h.insert("accept", HeaderValue::from_static("*/*"));
        assert!(accepts(&h, "text/event-stream"));
        h.insert("accept", HeaderValue::from_static("text/html"));
        assert!(!accepts(&h, "application/json"));
    }
}
