//! Era detection: the modern `server/discover` probe and the legacy `initialize`
//! handshake it falls back to.
//!
//! Must not send anything but the probe and the handshake.

use super::*;

impl McpClient {
    pub(super) async fn detect(&self) -> Result<ServerInfo, McpError> {
        let stdio = matches!(self.endpoint, Endpoint::Stdio { .. });
        let probe_timeout = if stdio {
            self.opts.probe_timeout
        } else {
            self.opts.request_timeout
        };
        match self.detect_within(probe_timeout).await {
            // A modern stdio server that started slower than the probe waits (a busy
            // machine) answers the probe late, then refuses the legacy handshake: ask it
            // again, as long as any request may take.
            Err(McpError::UnsupportedVersion { supported, .. })
                if stdio && supported.iter().any(|v| v == MODERN_VERSION) =>
            {
                tracing::debug!("a modern server refused the legacy handshake; discovering again");
                self.detect_within(self.opts.request_timeout).await
            }
            other => other,
        }
    }

    /// The probe (waiting at most `probe_timeout`), and the legacy handshake when the
    /// server does not speak the modern protocol.
    async fn detect_within(&self, probe_timeout: Duration) -> Result<ServerInfo, McpError> {
        self.transport
            .set_protocol_version(Some(MODERN_VERSION.into()));
        match self
            .raw_request(
                Era::Modern,
                "server/discover",
                json!({}),
                Routing::method("server/discover"),
                Some(probe_timeout),
                None,
            )
            .await
        {
            Ok(result) if result.get("supportedVersions").is_none() => {
                // A lenient legacy server answers unknown methods with an empty result;
                // only a discover result that lists versions means modern.
                tracing::debug!("server/discover result without supportedVersions; legacy");
                self.initialize().await
            }
            Ok(result) => {
                let versions: Vec<&str> = result
                    .get("supportedVersions")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if !versions.is_empty() && !versions.contains(&MODERN_VERSION) {
                    if versions.contains(&LEGACY_VERSION) {
                        return self.initialize().await;
                    }
                    return Err(McpError::UnsupportedVersion {
                        message: "no protocol version in common".into(),
                        supported: versions.iter().map(|s| s.to_string()).collect(),
                    });
                }
                let caps = result.get("capabilities").cloned().unwrap_or(Value::Null);
                let server_info = result
                    .pointer("/_meta/io.modelcontextprotocol~1serverInfo")
                    .or_else(|| result.get("serverInfo"))
                    .cloned()
                    .unwrap_or(Value::Null);
                Ok(ServerInfo {
                    era: Era::Modern,
                    protocol_version: MODERN_VERSION.into(),
                    tasks: caps
                        .pointer("/extensions")
                        .and_then(|e| e.get(TASKS_EXTENSION))
                        .is_some_and(Value::is_object),
                    capabilities: caps,
                    name: server_info
                        .get("name")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    version: server_info
                        .get("version")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    instructions: instructions(&result),
                })
            }
            Err(McpError::UnsupportedVersion { supported, .. })
                if supported.iter().any(|v| v == LEGACY_VERSION) =>
            {
                self.initialize().await
            }
            Err(e) if e.is_modern_signal() => Err(e),
            Err(e @ (McpError::SignInRequired(_) | McpError::Auth(_))) => Err(e),
            Err(
                e @ McpError::Http {
                    status: 401 | 403, ..
                },
            ) => Err(e),
            Err(e @ McpError::Transport(_)) if matches!(self.endpoint, Endpoint::Http { .. }) => {
                Err(e)
            }
            Err(e) => {
                tracing::debug!("server/discover probe failed ({e}); trying the legacy handshake");
                self.initialize().await
            }
        }
    }

    pub(super) async fn initialize(&self) -> Result<ServerInfo, McpError> {
        self.transport.set_protocol_version(None);
        let capabilities = self
            .opts
            .capabilities
            .clone()
            .unwrap_or_else(|| self.opts.input.legacy());
        let params = json!({
            "protocolVersion": LEGACY_VERSION,
            "capabilities": capabilities,
            "clientInfo": { "name": self.opts.client_name, "version": self.opts.client_version }
        });
        let result = self
            .raw_request(
                Era::Legacy,
                "initialize",
                params,
                Routing::method("initialize"),
                Some(self.opts.request_timeout),
                None,
            )
            .await?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or(LEGACY_VERSION)
            .to_string();
        self.transport.set_protocol_version(Some(version.clone()));
        self.transport
            .send_message(
                &jsonrpc::notification("notifications/initialized", json!({})),
                Some("notifications/initialized"),
            )
            .await?;
        let caps = result.get("capabilities").cloned().unwrap_or(Value::Null);
        let si = result.get("serverInfo").cloned().unwrap_or(Value::Null);
        Ok(ServerInfo {
            era: Era::Legacy,
            protocol_version: version,
            tasks: caps.get("tasks").is_some_and(Value::is_object),
            capabilities: caps,
            name: si.get("name").and_then(Value::as_str).map(str::to_string),
            version: si
                .get("version")
                .and_then(Value::as_str)
                .map(str::to_string),
            instructions: instructions(&result),
        })
    }
}

fn instructions(result: &Value) -> Option<String> {
    result
        .get("instructions")
        .and_then(Value::as_str)
        .map(str::to_string)
}
