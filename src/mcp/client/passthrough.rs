//! Passthrough for a proxy: requests and notifications another client wrote (an agent host),
//! sent in the connected era with only what that era needs added; answers to the server's
//! requests; and a tap of everything the server sends unasked, as raw messages.
//!
//! Owns: the era's envelope rules for foreign messages (modern `_meta` completed, legacy
//! envelope keys removed), their routing headers, and which unasked messages the tap gets.
//! Must not change a result or an error the server sent, and must not retry a `tools/call`.

use super::*;

/// The modern envelope keys of a request's `_meta` (a legacy server has no use for them).
const ENVELOPE_KEYS: [&str; 4] = [
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientInfo",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/logLevel",
];

/// The params field a method's `Mcp-Name` header mirrors.
fn name_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" | "tasks/result" => Some("taskId"),
        _ => None,
    }
}

impl McpClient {
    /// A fresh request id, for [`McpClient::forward`] and [`McpClient::cancel_request`].
    pub fn request_id(&self) -> RequestId {
        self.id()
    }

    /// Params as the connected era wants them: modern `_meta` gains the protocol version,
    /// and client info and capabilities unless given (the caller's are kept); legacy loses
    /// the modern envelope keys (an empty `_meta` goes).
    fn foreign_params(&self, params: Value) -> Value {
        let mut params = match params {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        match self.era() {
            Era::Modern => {
                let meta = params.entry("_meta").or_insert_with(|| json!({}));
                if let Some(meta) = meta.as_object_mut() {
                    meta.insert(ENVELOPE_KEYS[0].into(), json!(MODERN_VERSION));
                    meta.entry(ENVELOPE_KEYS[1]).or_insert_with(|| {
                        json!({ "name": self.opts.client_name, "version": self.opts.client_version })
                    });
                    meta.entry(ENVELOPE_KEYS[2]).or_insert_with(|| json!({}));
                }
            }
            Era::Legacy => {
                let empty = match params.get_mut("_meta").and_then(Value::as_object_mut) {
                    Some(meta) => {
                        for k in ENVELOPE_KEYS {
                            meta.remove(k);
                        }
                        meta.is_empty()
                    }
                    None => false,
                };
                if empty {
                    params.remove("_meta");
                }
            }
        }
        Value::Object(params)
    }

    /// Send a request another client wrote, in the connected era, and return the server's
    /// result or JSON-RPC error object unchanged. A modern `tools/call` refused for its
    /// headers is sent once more after a fresh `tools/list`; a legacy session the server
    /// dropped is [`McpError::SessionLost`] (the request was not processed).
    pub async fn forward(
        &self,
        id: &RequestId,
        method: &str,
        params: Value,
        timeout: Option<Duration>,
    ) -> Result<Result<Value, ErrorObject>, McpError> {
        let params = self.foreign_params(params);
        let mut reply = self.forward_once(id, method, &params, timeout).await?;
        if method == "tools/call"
            && self.era() == Era::Modern
            && matches!(&reply, Err(e) if matches!(e.code, -32020 | -32001))
        {
            self.list_tools().await?;
            let retry = self.id();
            reply = self.forward_once(&retry, method, &params, timeout).await?;
        }
        if method == "tools/list"
            && let Ok(result) = &reply
        {
            self.remember_tools(result);
        }
        Ok(reply)
    }

    async fn forward_once(
        &self,
        id: &RequestId,
        method: &str,
        params: &Value,
        timeout: Option<Duration>,
    ) -> Result<Result<Value, ErrorObject>, McpError> {
        let name = name_field(method)
            .and_then(|f| params.get(f))
            .and_then(Value::as_str);
        let headers = match (method, name) {
            ("tools/call", Some(tool)) if self.era() == Era::Modern => {
                let args = params.get("arguments").cloned().unwrap_or(Value::Null);
                self.param_headers(tool, &args)
            }
            _ => Vec::new(),
        };
        let routing = Routing {
            method: Some(method),
            name: name.filter(|_| self.era() == Era::Modern),
            params: &headers,
        };
        let mut params = params.clone();
        let span = self.trace_begin(self.era(), method, &mut params);
        let msg = jsonrpc::request(id, method, params);
        let fut = self.transport.request(id, &msg, routing);
        let reply = match timeout {
            Some(t) => match tokio::time::timeout(t, fut).await {
                Ok(r) => r,
                Err(_) => Err(McpError::Transport(format!(
                    "{method} timed out after {} s",
                    t.as_secs()
                ))),
            },
            None => fut.await,
        };
        super::super::trace_hook::end(span, &reply);
        let lost = match &reply {
            Err(e) => is_unknown_session(e),
            Ok(Err(rpc)) => is_unknown_session(&McpError::from_rpc(rpc, false)),
            Ok(Ok(_)) => false,
        };
        if lost && self.era() == Era::Legacy && self.transport.has_session() {
            self.transport.reset_session();
            return Err(McpError::SessionLost);
        }
        reply
    }

    /// Keep the tools of a `tools/list` result another client asked for (their schemas
    /// decide the `Mcp-Param-*` headers and legacy task support of later calls).
    fn remember_tools(&self, result: &Value) {
        let tools = result
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(ToolInfo::from_wire);
        let mut cache = self.tools.lock().unwrap_or_else(|e| e.into_inner());
        for t in tools {
            cache.insert(t.name.clone(), t);
        }
    }

    /// Params that declare the tasks extension (and form elicitation) in a modern `_meta`,
    /// for requests whose answer depends on it (`tools/list`: a server may hide tools that
    /// only run as tasks). Legacy params are left as given.
    pub fn tasks_declared(&self, params: Value) -> Value {
        let mut params = match params {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        if self.era() == Era::Modern {
            let meta = params.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                let caps = meta
                    .entry("io.modelcontextprotocol/clientCapabilities")
                    .or_insert_with(|| json!({}));
                if let Some(caps) = caps.as_object_mut() {
                    let ext = caps.entry("extensions").or_insert_with(|| json!({}));
                    if let Some(ext) = ext.as_object_mut() {
                        ext.entry(TASKS_EXTENSION).or_insert_with(|| json!({}));
                    }
                    let elicit = caps.entry("elicitation").or_insert_with(|| json!({}));
                    if let Some(elicit) = elicit.as_object_mut() {
                        elicit.entry("form").or_insert_with(|| json!({}));
                    }
                }
            }
        }
        Value::Object(params)
    }

    /// `tools/call` params made to ask for a task: modern declares the tasks extension (see
    /// [`McpClient::tasks_declared`]); legacy adds `task: {}` when the server and the tool
    /// allow it and the params have none. Everything else is left as given.
    pub async fn task_call_params(&self, params: Value) -> Value {
        let mut params = match self.tasks_declared(params) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        if self.era() == Era::Legacy && !params.contains_key("task") {
            let server_allows = self
                .info()
                .capabilities
                .pointer("/tasks/requests/tools/call")
                .is_some();
            let tool = params.get("name").and_then(Value::as_str).unwrap_or("");
            let support = if server_allows {
                self.legacy_task_support(tool).await
            } else {
                None
            };
            if matches!(support.as_deref(), Some("optional" | "required")) {
                params.insert("task".into(), json!({}));
            }
        }
        Value::Object(params)
    }

    /// Send a notification another client wrote (e.g. `notifications/roots/list_changed`).
    pub async fn forward_notification(&self, method: &str, params: Value) -> Result<(), McpError> {
        let params = self.foreign_params(params);
        self.transport
            .send_message(&jsonrpc::notification(method, params), Some(method))
            .await
    }

    /// Tell the server a request of ours is abandoned: `notifications/cancelled` on stdio
    /// and legacy HTTP. A modern HTTP request is cancelled by closing its reply, which
    /// dropping its future does.
    pub async fn cancel_request(&self, id: &RequestId, reason: &str) {
        let stdio = matches!(self.endpoint, Endpoint::Stdio { .. });
        if !stdio && self.era() == Era::Modern {
            return;
        }
        let note = jsonrpc::notification(
            "notifications/cancelled",
            json!({ "requestId": id.to_value(), "reason": reason }),
        );
        if let Err(e) = self
            .transport
            .send_message(&note, Some("notifications/cancelled"))
            .await
        {
            tracing::debug!("could not cancel a forwarded request: {e}");
        }
    }

    /// Answer a server-to-client request the tap handed out.
    pub async fn respond(
        &self,
        id: &RequestId,
        outcome: Result<Value, ErrorObject>,
    ) -> Result<(), McpError> {
        let msg = match outcome {
            Ok(result) => jsonrpc::response(id, result),
            Err(e) => {
                let mut msg = jsonrpc::error_response(id, e.code, &e.message);
                if let Some(data) = e.data {
                    msg["error"]["data"] = data;
                }
                msg
            }
        };
        self.transport.send_message(&msg, None).await
    }

    /// Hand every message the server sends unasked to `tap`, raw, with the request whose
    /// reply stream carried it when the transport knows: notifications (but task
    /// status, which the client turns into pushes itself) and server-to-client requests the
    /// client does not answer itself (a task's elicitation stays with the task; `ping` is
    /// answered here). Whoever holds the tap answers those requests with
    /// [`McpClient::respond`].
    pub fn tap(&self, tap: mpsc::Sender<Tapped>) {
        *self.tap.lock().unwrap_or_else(|e| e.into_inner()) = Some(tap);
    }

    pub(super) fn tapped(&self) -> Option<mpsc::Sender<Tapped>> {
        self.tap.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_bearing_methods() {
        assert_eq!(name_field("tools/call"), Some("name"));
        assert_eq!(name_field("resources/read"), Some("uri"));
        assert_eq!(name_field("tasks/cancel"), Some("taskId"));
        assert_eq!(name_field("tools/list"), None);
    }
}
