//! One interface over both transports (HTTP and stdio), chosen by the endpoint.
//!
//! Owns: dispatch to the concrete transport. Must not interpret MCP semantics.

use serde_json::Value;
use tokio::sync::mpsc;

use super::endpoint::{ConnectOptions, Endpoint};
use super::error::McpError;
use super::http::{HttpTransport, Routing};
use super::http_reply::MessageStream;
use super::jsonrpc::{Inbound, RequestId};
use super::stdio::StdioTransport;
use super::types::ErrorObject;

pub enum Transport {
    Http(HttpTransport),
    Stdio(StdioTransport),
}

impl Transport {
    pub fn open(
        endpoint: &Endpoint,
        opts: &ConnectOptions,
        inbound: mpsc::Sender<Inbound>,
    ) -> Result<Self, McpError> {
        match endpoint {
            Endpoint::Http { url } => Ok(Transport::Http(HttpTransport::new(url, opts, inbound)?)),
            Endpoint::Stdio { argv } => Ok(Transport::Stdio(StdioTransport::spawn(
                argv, opts, inbound,
            )?)),
        }
    }

    pub async fn request(
        &self,
        id: &RequestId,
        msg: &Value,
        routing: Routing<'_>,
    ) -> Result<Result<Value, ErrorObject>, McpError> {
        match self {
            Transport::Http(h) => h.request(id, msg, routing).await,
            Transport::Stdio(s) => s.request(id, msg).await,
        }
    }

    pub async fn send_message(&self, msg: &Value, method: Option<&str>) -> Result<(), McpError> {
        match self {
            Transport::Http(h) => h.send_message(msg, method).await,
            Transport::Stdio(s) => s.send_message(msg).await,
        }
    }

    pub async fn open_stream(
        &self,
        id: &RequestId,
        msg: &Value,
        method: &str,
    ) -> Result<MessageStream, McpError> {
        match self {
            Transport::Http(h) => h.open_stream(msg, method).await,
            Transport::Stdio(s) => s.open_stream(id, msg).await,
        }
    }

    pub fn set_protocol_version(&self, v: Option<String>) {
        if let Transport::Http(h) = self {
            h.set_protocol_version(v);
        }
    }

    pub fn has_session(&self) -> bool {
        matches!(self, Transport::Http(h) if h.session().is_some())
    }

    pub fn reset_session(&self) {
        if let Transport::Http(h) = self {
            h.set_session(None);
        }
    }

    /// The HTTP session id, if any (a secret).
    pub fn session_id(&self) -> Option<String> {
        match self {
            Transport::Http(h) => h.session(),
            Transport::Stdio(_) => None,
        }
    }

    /// Use an existing HTTP session (rejoining it after a restart).
    pub fn set_session_id(&self, id: String) {
        if let Transport::Http(h) = self {
            h.set_session(Some(id));
        }
    }

    pub async fn close(&self) {
        match self {
            Transport::Http(h) => h.delete_session().await,
            Transport::Stdio(s) => s.shutdown().await,
        }
    }
}
