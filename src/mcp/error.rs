//! Typed errors of the MCP client: JSON-RPC errors by meaning, HTTP statuses, transport faults.
//!
//! Owns: `McpError` and the mapping from JSON-RPC error codes to it. Must not do I/O.

use serde_json::Value;
use std::time::Duration;

use super::types::ErrorObject;

/// Every failure the client can report, classified so callers can act on it.
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
    /// A non-success HTTP status without a usable JSON-RPC error body.
    #[error("HTTP {status}{}{}", status_hint(*status), retry_after.map(|d| format!(" (retry after {} s)", d.as_secs())).unwrap_or_default())]
    Http {
        status: u16,
        retry_after: Option<Duration>,
        body: String,
    },
    /// Connection refused, DNS, TLS, timeout, broken stream, dead child process.
    #[error("transport: {0}")]
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

/// What a user should do about an HTTP status that retrying will not cure.
fn status_hint(status: u16) -> &'static str {
    match status {
        401 => {
            " unauthorized: the server wants credentials (sign in with `taskrail auth login`, or pass --header)"
        }
        403 => " forbidden: these credentials may not use this server",
        _ => "",
    }
}
