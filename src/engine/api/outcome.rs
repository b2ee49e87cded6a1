//! What a call or an intent came to: a `CallTool`'s result, and why an answer or a cancel
//! did not happen.

use serde_json::Value;

use super::TaskId;

/// What a `CallTool` came to.
#[derive(Debug, Clone, PartialEq)]
pub enum CallResult {
    /// A task was created (its snapshots follow as `TaskUpdated`). `stored` is false when
    /// the ledger write failed: the task runs on the server but will not survive a restart.
    Task { task_id: TaskId, stored: bool },
    /// The server answered with a plain `CallToolResult`.
    Plain { result: Value },
    /// The call failed; `code` is the JSON-RPC error code when the server refused it with
    /// one (`-32602`: invalid arguments or an unknown tool).
    Error { message: String, code: Option<i64> },
    /// Refused before anything was sent (e.g. a read-only server).
    Refused { reason: String },
}

/// Why an answer or a cancel did not happen.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// Refused here before anything was sent (read-only server, finished task, key already
    /// answered): the reason in words.
    Refused(String),
    /// Sent (or handed to the process that follows the task) and it failed.
    Failed(String),
    /// The server no longer knows the task (or its session).
    Gone(String),
}

impl Failure {
    pub fn text(&self) -> &str {
        match self {
            Failure::Refused(s) | Failure::Failed(s) | Failure::Gone(s) => s,
        }
    }

    /// The failure of a request that reached the server.
    pub fn of(e: &crate::mcp::McpError, task_id: &TaskId) -> Failure {
        let text = task_id.mask(&e.to_string());
        match e {
            crate::mcp::McpError::TaskNotFound { .. } | crate::mcp::McpError::SessionLost => {
                Failure::Gone(text)
            }
            _ => Failure::Failed(text),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.text())
    }
}
