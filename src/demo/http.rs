//! The demo server's HTTP surface: routes, transport checks (Origin, Content-Type, Accept,
//! envelope), injected 503s, and the choice between the modern and legacy handlers.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::Value;

use super::wire::{
    self, INVALID_REQUEST, META_PROTOCOL_VERSION, PARSE_ERROR, accepts, header_str, http_error,
};
use super::{App, legacy, modern, session};

pub(super) fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/mcp", post(on_post).get(on_get).delete(on_delete))
        .route("/stats", get(on_stats))
        .route("/sign-in/{token}", get(on_sign_in))
        .with_state(app)
}

/// A browser opened a `sign_in` page: the sign-in completes (2025-11-25 sessions also
/// get `notifications/elicitation/complete`).
async fn on_sign_in(
    State(app): State<Arc<App>>,
    axum::extract::Path(token): axum::extract::Path<String>,
) -> Response {
    let done = app.sign_ins.visit(&token);
    if let Some(task_id) = &done {
        session::elicitation_complete(&app, task_id, &token);
    }
    let status = if done.is_some() {
        StatusCode::OK
    } else {
        StatusCode::NOT_FOUND
    };
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        super::sign_in::page(done.is_some()),
    )
        .into_response()
}

async fn on_stats(State(app): State<Arc<App>>) -> Response {
    wire::json_reply(StatusCode::OK, &app.stats.to_json())
}

/// Browsers may only come from loopback origins.
fn origin_refused(headers: &HeaderMap) -> Option<Response> {
    let origin = header_str(headers, "origin")?;
    let host = origin
        .split("://")
        .nth(1)
        .unwrap_or(origin)
        .split(['/', ':'])
        .next()
        .unwrap_or("");
    let local = matches!(host, "localhost" | "127.0.0.1") || origin.contains("://[::1]");
    (!local).then(|| {
        http_error(
            StatusCode::FORBIDDEN,
            INVALID_REQUEST,
            "Forbidden: origin not allowed",
        )
    })
}

fn has_session(headers: &HeaderMap) -> bool {
    headers.contains_key("mcp-session-id")
}

async fn on_post(State(app): State<Arc<App>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(refusal) = origin_refused(&headers) {
        return refusal;
    }
    let json_body = header_str(&headers, "content-type")
        .is_some_and(|ct| ct.trim_start().starts_with("application/json"));
    if !json_body {
        return http_error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            INVALID_REQUEST,
            "Unsupported Media Type: Content-Type must be application/json",
        );
    }
    let msg: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(_) => return http_error(StatusCode::BAD_REQUEST, PARSE_ERROR, "Parse error"),
    };
    if msg.is_array() {
        return http_error(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            "Batches are not supported",
        );
    }
    let Some(obj) = msg.as_object() else {
        return http_error(StatusCode::BAD_REQUEST, INVALID_REQUEST, "Invalid Request");
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return http_error(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            "Invalid Request: jsonrpc must be \"2.0\"",
        );
    }
    let id_ok = match obj.get("id") {
        None => true,
        Some(id) => id.is_string() || id.is_i64() || id.is_u64(),
    };
    if !id_ok {
        return http_error(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            "Invalid Request: id must be a string or an integer",
        );
    }
    let method = obj
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_string);
    let is_request = method.is_some() && obj.contains_key("id");

    let exempt = matches!(method.as_deref(), Some("initialize" | "server/discover"));
    if !exempt && app.coin(app.opts.http_503_rate) {
        app.stats.http503();
        tracing::debug!(
            method = method.as_deref().unwrap_or("(response)"),
            "injected 503"
        );
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "1")],
            "Service Unavailable",
        )
            .into_response();
    }

    if is_request
        && !(accepts(&headers, "application/json") && accepts(&headers, "text/event-stream"))
    {
        return http_error(
            StatusCode::NOT_ACCEPTABLE,
            INVALID_REQUEST,
            "Not Acceptable: Accept must list application/json and text/event-stream",
        );
    }

    let Some(method) = method else {
        // A JSON-RPC response from the client: only legacy sessions ask things.
        if obj.contains_key("id") && (obj.contains_key("result") || obj.contains_key("error")) {
            return session::client_response(&app, &headers, &msg);
        }
        return http_error(StatusCode::BAD_REQUEST, INVALID_REQUEST, "Invalid Request");
    };
    app.stats.method(&method);
    if let Some(tp) = msg
        .pointer("/params/_meta/traceparent")
        .and_then(Value::as_str)
    {
        app.stats.traceparent(&method, tp);
    }

    let modern_meta = msg
        .get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .is_some();
    if method == "initialize" {
        session::initialize(&app, &headers, &msg)
    } else if app.opts.legacy || (has_session(&headers) && !modern_meta) {
        legacy::dispatch(&app, &headers, &msg).await
    } else {
        modern::dispatch(&app, &headers, &msg).await
    }
}

async fn on_get(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Some(refusal) = origin_refused(&headers) {
        return refusal;
    }
    if app.opts.legacy || has_session(&headers) {
        return session::open_get_stream(&app, &headers);
    }
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::ALLOW, "POST")],
        "Method Not Allowed",
    )
        .into_response()
}

async fn on_delete(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Some(refusal) = origin_refused(&headers) {
        return refusal;
    }
    if app.opts.legacy || has_session(&headers) {
        return session::end_session(&app, &headers);
    }
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::ALLOW, "POST")],
        "Method Not Allowed",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn origins() {
        let mut h = HeaderMap::new();
        assert!(origin_refused(&h).is_none());
        h.insert("origin", HeaderValue::from_static("http://localhost:3000"));
        assert!(origin_refused(&h).is_none());
        h.insert("origin", HeaderValue::from_static("http://127.0.0.1"));
        assert!(origin_refused(&h).is_none());
        h.insert("origin", HeaderValue::from_static("http://[::1]:8080"));
        assert!(origin_refused(&h).is_none());
        h.insert("origin", HeaderValue::from_static("https://evil.example"));
        assert!(origin_refused(&h).is_some());
    }
}
