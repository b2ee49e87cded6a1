//! What an HTTP reply says before its messages are read, for the POST transport and the GET
//! stream alike: its content type, the stream of messages it carries, and reqwest's errors
//! in words a user can act on (URLs redacted).

use futures::Stream;
use reqwest::header;

use super::error::McpError;
use super::jsonrpc::Incoming;

/// A stream of messages from one reply (or a long-lived stream).
pub type MessageStream = std::pin::Pin<Box<dyn Stream<Item = Result<Incoming, McpError>> + Send>>;

/// A response's `Content-Type`, lower-cased (`""` when missing).
pub(super) fn content_type(resp: &reqwest::Response) -> String {
    resp.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// Every message of an error's source chain, outermost first.
fn error_chain(e: &reqwest::Error) -> Vec<String> {
    use std::error::Error as _;
    let mut out = Vec::new();
    let mut src = e.source();
    while let Some(s) = src {
        out.push(s.to_string());
        src = s.source();
    }
    out
}

/// Whether a rustls error (bad certificate, not TLS at all, …) is in the chain.
fn is_tls_failure(e: &reqwest::Error) -> bool {
    use std::error::Error as _;
    let mut src = e.source();
    while let Some(s) = src {
        if s.downcast_ref::<rustls::Error>().is_some() {
            return true;
        }
        if let Some(io) = s.downcast_ref::<std::io::Error>()
            && io
                .get_ref()
                .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some())
        {
            return true;
        }
        src = s.source();
    }
    false
}

/// Turn reqwest's error into a message a user can act on (the URL redacted).
pub(super) fn describe_reqwest_error(e: reqwest::Error) -> McpError {
    McpError::Transport(describe_error(&e))
}

/// reqwest's error in words, what happened first (connection refused, host not found, …),
/// then its innermost cause and the redacted URL.
pub(crate) fn describe_error(e: &reqwest::Error) -> String {
    use std::error::Error as _;
    let chain = error_chain(e);
    let url = e
        .url()
        .map(|u| format!(" ({})", super::endpoint::redact_url(u.as_str())))
        .unwrap_or_default();
    let refused = chain
        .iter()
        .any(|s| s.to_ascii_lowercase().contains("connection refused"));
    if e.is_connect() && refused {
        return format!(
            "connection refused: cannot connect{url}; is the server running, on this port?"
        );
    }
    let mut msg = if chain.iter().any(|s| s.starts_with("dns error")) {
        "host not found: cannot resolve the host name".to_string()
    } else if is_tls_failure(e)
        || chain.iter().any(|s| {
            let s = s.to_ascii_lowercase();
            s.contains("tls") || s.contains("certificate")
        })
    {
        "TLS handshake failed".to_string()
    } else if e.is_connect() {
        "cannot connect".to_string()
    } else if e.is_timeout() {
        "timed out".to_string()
    } else {
        "request failed".to_string()
    };
    let mut src = e.source();
    let mut last = String::new();
    while let Some(s) = src {
        last = s.to_string();
        src = s.source();
    }
    if !last.is_empty() {
        msg.push_str(": ");
        msg.push_str(&last);
    }
    msg.push_str(&url);
    msg
}
