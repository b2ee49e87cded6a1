//! The client's side of the tracing seam: what it tells the process's request observer
//! (`mcp::trace_hook`) about each request before it goes out.
//!
//! Must not know any tracing library.

use serde_json::Value;

use super::super::trace_hook::{self, RequestInfo, RequestSpan};
use super::McpClient;
use crate::mcp::types::{Era, MODERN_VERSION};

impl McpClient {
    /// Tell the request observer (tracing) that `params` are about to go out.
    pub(super) fn trace_begin(
        &self,
        era: Era,
        method: &str,
        params: &mut Value,
    ) -> Option<Box<dyn RequestSpan>> {
        let version = self
            .info
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|i| i.protocol_version.clone())
            .unwrap_or_else(|| match era {
                Era::Modern => MODERN_VERSION.to_string(),
                Era::Legacy => String::new(),
            });
        let req = RequestInfo {
            method,
            protocol_version: &version,
            endpoint: &self.endpoint,
        };
        trace_hook::begin(&req, params)
    }
}
