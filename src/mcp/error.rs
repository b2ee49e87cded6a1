//! Typed errors of the MCP client: JSON-RPC errors by meaning, HTTP statuses, transport faults.
//!
//! Owns: `McpError`, the JSON-RPC `ErrorObject`, and the mapping from error codes to
//! `McpError`. Must not do I/O.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// A JSON-RPC error object as carried in a failed task or an error reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    pub code: i64,
    #[serde(default)]
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// Every failure the client can report, classified so callers can act on it.
/// JSON-RPC "invalid params": on `tools/call`, the arguments do not fit the tool (or the
/// tool is unknown).
pub const INVALID_PARAMS: i64 = -32602;

#[derive(Debug, Clone, thiserror::Error)]
pub enum McpError {
    /// `-32021` (older `-32003`): the server needs a capability we did not declare.
    #[error("server requires a client capability we did not declare: {message}")]
    MissingCapability {
        message: String,
        required: Option<Value>,
    },
    /// `-32020` (older `-32001`): HTTP headers missing or disagreeing with the body.
    #[error("server rejected the request headers: {message}")]
    HeaderMismatch { message: String },
    /// `-32022` (older `-32004`): protocol version not supported.
    #[error("server does not support protocol version (supported: {supported:?}): {message}")]
    UnsupportedVersion {
        message: String,
        supported: Vec<String>,
    },
    /// `-32602` on a `tasks/*` call: the task is unknown, expired or purged.
    #[error("task not found or expired: {message}")]
    TaskNotFound { message: String },
    /// `-32601`: the server has no such method.
    #[error("method not found: {message}")]
    MethodNotFound { message: String },
    /// Any other JSON-RPC error.
    #[error("server error {code}: {message}")]
    Rpc {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    /// A non-success HTTP status without a usable JSON-RPC error body. The message says
    /// first, in words, what the status means for the user (not an MCP endpoint,
    /// unauthorized, forbidden) and what to do about it.
    #[error("{}{}", status_text(*status), retry_after.map(|d| format!(" (retry after {} s)", d.as_secs())).unwrap_or_default())]
    Http {
        status: u16,
        retry_after: Option<Duration>,
        body: String,
    },
    /// Connection refused, DNS, TLS, timeout, broken stream, dead child process (the
    /// message says which, in words, first).
    #[error("{0}")]
    Transport(String),
    /// A reply we could not make sense of.
    #[error("malformed reply: {0}")]
    Decode(String),
    /// A message bigger than the configured bound.
    #[error("message too large ({size} bytes, limit {limit})")]
    TooLarge { size: usize, limit: usize },
    /// The operation is not possible on this server or era.
    #[error("{0}")]
    Unsupported(String),
    /// The server wants a signed-in user and none is (or the sign-in lapsed).
    #[error("sign in required: {0}")]
    SignInRequired(String),
    /// Signing in failed for good (a refused check, a declined authorization, …).
    #[error("sign-in failed: {0}")]
    Auth(String),
    /// A legacy server no longer knows our session (HTTP 404 with `Mcp-Session-Id`): the
    /// session's tasks are gone with it.
    #[error("the server dropped the session")]
    SessionLost,
}

impl McpError {
    pub fn decode(msg: impl Into<String>) -> Self {
        Self::Decode(msg.into())
    }

    pub fn transport(msg: impl std::fmt::Display) -> Self {
        Self::Transport(msg.to_string())
    }

    /// Classify a JSON-RPC error object. `task_call` marks `tasks/*` requests, where
    /// `-32602` means the task is unknown or expired.
    pub fn from_rpc(err: &ErrorObject, task_call: bool) -> Self {
        let message = err.message.clone();
        match err.code {
            -32021 | -32003 => Self::MissingCapability {
                message,
                required: err
                    .data
                    .as_ref()
                    .and_then(|d| d.get("requiredCapabilities"))
                    .cloned(),
            },
            -32020 | -32001 => Self::HeaderMismatch { message },
            -32022 | -32004 => Self::UnsupportedVersion {
                message,
                supported: err
                    .data
                    .as_ref()
                    .and_then(|d| d.get("supported"))
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|v| v.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default(),
            },
            -32602 if task_call => Self::TaskNotFound { message },
            -32601 => Self::MethodNotFound { message },
            code => Self::Rpc {
                code,
                message,
                data: err.data.clone(),
            },
        }
    }

    /// True for errors that a later retry may cure (transport faults, 429/5xx).
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Transport(_) => true,
            Self::Http { status, .. } => *status == 429 || *status >= 500,
            _ => false,
        }
    }

    /// A server-requested delay (`Retry-After`).
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// True when the error says "this was a modern server" during era detection.
    pub fn is_modern_signal(&self) -> bool {
        matches!(
            self,
            Self::MissingCapability { .. }
                | Self::HeaderMismatch { .. }
                | Self::UnsupportedVersion { .. }
        )
    }
}

/// What an HTTP status means for the user, and what to do about one retrying will not cure.
fn status_text(status: u16) -> String {
    match status {
        401 => {
            "unauthorized (HTTP 401): the server wants credentials (sign in with `taskrail auth \
             login`, or pass --header)"
                .into()
        }
        403 => "forbidden (HTTP 403): these credentials may not use this server".into(),
        404 | 405 | 501 => format!(
            "not an MCP endpoint (HTTP {status}): the URL answers HTTP, but not MCP; check its \
             path (MCP servers usually serve /mcp)"
        ),
        _ => format!("HTTP {status}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16) -> String {
        McpError::Http {
            status,
            retry_after: None,
            body: "<html>nope</html>".into(),
        }
        .to_string()
    }

    #[test]
    fn a_failure_says_first_in_words_what_it_means_and_what_to_do() {
        for status in [404, 405, 501] {
            let text = http(status);
            assert!(
                text.starts_with(&format!("not an MCP endpoint (HTTP {status})")),
                "{text}"
            );
            assert!(text.contains("check its path"), "{text}");
        }
        assert!(http(401).starts_with("unauthorized (HTTP 401)"));
        assert!(http(401).contains("--header"));
        assert!(http(403).starts_with("forbidden (HTTP 403)"));
        assert_eq!(http(500), "HTTP 500");
        let busy = McpError::Http {
            status: 503,
            retry_after: Some(Duration::from_secs(7)),
            body: String::new(),
        };
        assert_eq!(busy.to_string(), "HTTP 503 (retry after 7 s)");
        assert_eq!(
            McpError::transport("connection refused: cannot connect").to_string(),
            "connection refused: cannot connect",
            "no `transport:` prefix before the words"
        );
    }
}
