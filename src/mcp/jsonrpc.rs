//! The JSON-RPC 2.0 envelope: request ids, outgoing requests, and classification of what
//! a server sends (response, notification, or server-to-client request).
//!
//! Owns: message framing-independent encode/decode. Must not do I/O.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::error::McpError;
use super::types::ErrorObject;

/// A JSON-RPC id: number or string, never null.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    Num(i64),
    Str(String),
}

impl RequestId {
    pub fn from_value(v: &Value) -> Option<RequestId> {
        match v {
            Value::Number(n) => n.as_i64().map(RequestId::Num),
            Value::String(s) => Some(RequestId::Str(s.clone())),
            _ => None,
        }
    }

    pub fn to_value(&self) -> Value {
        match self {
            RequestId::Num(n) => json!(n),
            RequestId::Str(s) => json!(s),
        }
    }

    /// Lenient comparison: `12` matches `"12"` (an early draft echoed ids as strings).
    pub fn matches(&self, v: &Value) -> bool {
        match (self, v) {
            (RequestId::Num(n), Value::Number(m)) => m.as_i64() == Some(*n),
            (RequestId::Num(n), Value::String(s)) => s.parse::<i64>().ok() == Some(*n),
            (RequestId::Str(s), Value::String(t)) => s == t,
            (RequestId::Str(s), Value::Number(m)) => m.to_string() == *s,
            _ => false,
        }
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RequestId::Num(n) => write!(f, "{n}"),
            RequestId::Str(s) => write!(f, "{s}"),
        }
    }
}

/// Build a request message.
pub fn request(id: &RequestId, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id.to_value(), "method": method, "params": params })
}

/// Build a notification message.
pub fn notification(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

/// Build a success response to a server-to-client request.
pub fn response(id: &RequestId, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id.to_value(), "result": result })
}

/// Build an error response to a server-to-client request.
pub fn error_response(id: &RequestId, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id.to_value(), "error": { "code": code, "message": message } })
}

/// A server message that arrived unasked, with the request whose reply stream carried it
/// (`None`: the session stream, or a transport that cannot tell).
#[derive(Debug, Clone, PartialEq)]
pub struct Inbound {
    pub msg: Incoming,
    pub via: Option<RequestId>,
}

/// What one inbound message is.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A reply to one of our requests.
    Response {
        id: Value,
        outcome: Result<Value, ErrorObject>,
    },
    /// A notification from the server.
    Notification { method: String, params: Value },
    /// A server-to-client request (legacy era only: elicitation, sampling, roots).
    Request {
        id: RequestId,
        method: String,
        params: Value,
    },
}

impl Incoming {
    /// Classify a decoded JSON value.
    pub fn classify(msg: Value) -> Result<Incoming, McpError> {
        let Value::Object(mut obj) = msg else {
            return Err(McpError::decode("JSON-RPC message is not an object"));
        };
        let method = obj
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_string);
        let id = obj.remove("id").filter(|v| !v.is_null());
        let params = obj.remove("params").unwrap_or(Value::Null);
        match (method, id) {
            (Some(method), Some(id)) => {
                let id = RequestId::from_value(&id)
                    .ok_or_else(|| McpError::decode("request id is neither number nor string"))?;
                Ok(Incoming::Request { id, method, params })
            }
            (Some(method), None) => Ok(Incoming::Notification { method, params }),
            (None, id) => {
                let id = id.unwrap_or(Value::Null);
                if let Some(err) = obj.remove("error") {
                    let err: ErrorObject = serde_json::from_value(err)
                        .map_err(|e| McpError::decode(format!("malformed error object: {e}")))?;
                    Ok(Incoming::Response {
                        id,
                        outcome: Err(err),
                    })
                } else if let Some(result) = obj.remove("result") {
                    Ok(Incoming::Response {
                        id,
                        outcome: Ok(result),
                    })
                } else {
                    Err(McpError::decode(
                        "message has neither method, result nor error",
                    ))
                }
            }
        }
    }

    /// Parse and classify one message (input requests bounded while parsing, see
    /// `bounded_json`).
    pub fn parse(text: &str) -> Result<Incoming, McpError> {
        Incoming::parse_bytes(text.as_bytes())
    }

    /// The message as JSON again (for the wire log; members it does not model are gone).
    pub fn to_value(&self) -> Value {
        match self {
            Incoming::Response {
                id,
                outcome: Ok(result),
            } => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            Incoming::Response {
                id,
                outcome: Err(error),
            } => json!({ "jsonrpc": "2.0", "id": id, "error": error }),
            Incoming::Notification { method, params } => {
                let mut v = json!({ "jsonrpc": "2.0", "method": method });
                if !params.is_null() {
                    v["params"] = params.clone();
                }
                v
            }
            Incoming::Request { id, method, params } => {
                let mut v = json!({ "jsonrpc": "2.0", "id": id.to_value(), "method": method });
                if !params.is_null() {
                    v["params"] = params.clone();
                }
                v
            }
        }
    }

    /// [`Incoming::parse`] from bytes.
    pub fn parse_bytes(bytes: &[u8]) -> Result<Incoming, McpError> {
        let v = super::bounded_json::parse(bytes)
            .map_err(|e| McpError::decode(format!("invalid JSON: {e}")))?;
        Incoming::classify(v)
    }

    /// The subscription id a notification is tagged with, if any.
    pub fn subscription_id(params: &Value) -> Option<&Value> {
        params.pointer("/_meta/io.modelcontextprotocol~1subscriptionId")
    }
}
