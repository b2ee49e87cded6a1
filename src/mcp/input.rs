//! The kinds of input a server asks for (form or URL elicitation, sampling, roots), and
//! how an answer becomes the reply a legacy server expects: a refused sampling request is
//! a JSON-RPC error, not a result.
//!
//! Owns: `InputKind` and the answer-to-reply mapping. Must not do I/O.

use serde_json::{Value, json};

use super::jsonrpc::{self, RequestId};
use super::types::{ErrorObject, InputRequest};

/// The JSON-RPC error code a client answers a refused sampling request with (the MCP
/// sampling spec's "User rejected sampling request").
pub const USER_REJECTED: i64 = -1;

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputKind {
    /// Form-mode `elicitation/create` (a missing `mode` means form).
    Form,
    /// URL-mode `elicitation/create`: consent to open `url` (2025-11-25 adds an id that
    /// `notifications/elicitation/complete` refers to).
    Url {
        url: String,
        elicitation_id: Option<String>,
    },
    /// `sampling/createMessage`.
    Sampling,
    /// `roots/list`.
    Roots,
    /// Anything else (shown, never answered).
    Other(String),
}

/// What a client must offer to answer a request, told by its method alone (cheap: no
/// params read, nothing allocated; for the board, which asks for every row each frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// An elicitation (form or URL): always answerable here.
    Nothing,
    Sampling,
    Roots,
    /// A method taskrail does not know.
    Unknown,
}

impl Needs {
    pub fn of(request: &InputRequest) -> Needs {
        match request.method.as_str() {
            "elicitation/create" => Needs::Nothing,
            "sampling/createMessage" => Needs::Sampling,
            "roots/list" => Needs::Roots,
            _ => Needs::Unknown,
        }
    }
}

impl InputKind {
    pub fn of(request: &InputRequest) -> InputKind {
        let p = &request.params;
        match request.method.as_str() {
            "elicitation/create" => match p.get("mode").and_then(Value::as_str) {
                Some("url") => InputKind::Url {
                    url: p
                        .get("url")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    elicitation_id: p
                        .get("elicitationId")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                },
                _ => InputKind::Form,
            },
            "sampling/createMessage" => InputKind::Sampling,
            "roots/list" => InputKind::Roots,
            other => InputKind::Other(other.to_string()),
        }
    }

    pub fn is_elicitation(&self) -> bool {
        matches!(self, InputKind::Form | InputKind::Url { .. })
    }
}

/// An elicitation-style refusal (`{"action":"decline"}` or `{"action":"cancel"}`).
pub fn is_refusal(response: &Value) -> bool {
    matches!(
        response.get("action").and_then(Value::as_str),
        Some("decline" | "cancel")
    )
}

/// The outcome a server sees for `response` to `request`: elicitation answers pass as
/// they are; a refused sampling or roots request becomes an error.
pub fn outcome(request: &InputRequest, response: &Value) -> Result<Value, ErrorObject> {
    let kind = InputKind::of(request);
    if !kind.is_elicitation() && is_refusal(response) {
        let message = match kind {
            InputKind::Sampling => "User rejected sampling request",
            _ => "User rejected the request",
        };
        return Err(ErrorObject {
            code: USER_REJECTED,
            message: message.to_string(),
            data: None,
        });
    }
    Ok(response.clone())
}

/// The JSON-RPC message answering server request `id` with `response`.
pub fn legacy_reply(id: &RequestId, request: &InputRequest, response: &Value) -> Value {
    match outcome(request, response) {
        Ok(result) => jsonrpc::response(id, result),
        Err(e) => jsonrpc::error_response(id, e.code, &e.message),
    }
}

/// What is sent on the person's behalf when nobody answered in time (or the request
/// became moot): `cancel` for an elicitation, a refusal otherwise.
pub fn unanswered() -> Value {
    json!({ "action": "cancel" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(method: &str, params: Value) -> InputRequest {
        InputRequest {
            method: method.into(),
            params,
            reply_to: None,
        }
    }

    #[test]
    fn kinds() {
        assert_eq!(
            InputKind::of(&req("elicitation/create", json!({}))),
            InputKind::Form
        );
        assert_eq!(
            InputKind::of(&req(
                "elicitation/create",
                json!({"mode": "url", "url": "https://x", "elicitationId": "e1"})
            )),
            InputKind::Url {
                url: "https://x".into(),
                elicitation_id: Some("e1".into())
            }
        );
        assert_eq!(
            InputKind::of(&req("sampling/createMessage", json!({}))),
            InputKind::Sampling
        );
        assert_eq!(
            InputKind::of(&req("roots/list", Value::Null)),
            InputKind::Roots
        );
        assert_eq!(
            InputKind::of(&req("x/y", Value::Null)),
            InputKind::Other("x/y".into())
        );
    }

    #[test]
    fn a_refused_sampling_request_is_an_error() {
        let id = RequestId::Num(4);
        let sampling = req("sampling/createMessage", json!({}));
        let msg = legacy_reply(&id, &sampling, &json!({"action": "decline"}));
        assert_eq!(msg["error"]["code"], USER_REJECTED);
        assert!(msg.get("result").is_none());
        let reply = json!({"role": "assistant", "content": {"type": "text", "text": "hi"}});
        assert_eq!(legacy_reply(&id, &sampling, &reply)["result"], reply);
        let form = req("elicitation/create", json!({}));
        assert_eq!(
            legacy_reply(&id, &form, &unanswered())["result"]["action"],
            "cancel"
        );
    }
}
