//! Wire types for MCP Tasks in both eras, normalised into one model.
//!
//! Owns: `Task` (one snapshot of a task), `TaskStatus`, `InputRequest`, `Era`, `ToolInfo`
//! and the tolerant decoders that turn either era's JSON into them. Must not do I/O.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

pub use super::bounded_json::MAX_INPUT_REQUESTS;
pub use super::error::ErrorObject;
use super::error::McpError;
pub use crate::ids::TaskId;

/// The modern protocol version (stateless, tasks extension).
pub const MODERN_VERSION: &str = "2026-07-28";
/// The legacy protocol version (initialize + session, experimental core tasks).
pub const LEGACY_VERSION: &str = "2025-11-25";
/// The tasks extension identifier.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Which protocol era a server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Era {
    /// `2026-07-28`, tasks through the SEP-2663 extension.
    Modern,
    /// `2025-11-25`, experimental core tasks.
    Legacy,
}

impl Era {
    pub fn as_str(self) -> &'static str {
        match self {
            Era::Modern => "modern",
            Era::Legacy => "legacy",
        }
    }
}

/// A task's status. Unknown values are kept (and treated as non-terminal).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TaskStatus {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
    Other(String),
}

impl TaskStatus {
    pub fn parse(s: &str) -> Self {
        match s {
            "working" => Self::Working,
            "input_required" => Self::InputRequired,
            "completed" => Self::Completed,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            other => Self::Other(crate::sanitize::sanitize_line(other, 32)),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Other(s) => s,
        }
    }

    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

impl Serialize for TaskStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TaskStatus {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(Self::parse(&s))
    }
}

/// One pending server request for input (`elicitation/create`, `sampling/createMessage`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    pub method: String,
    #[serde(default)]
    pub params: Value,
    /// Legacy: the JSON-RPC id of the server's request, which the answer must carry (kept
    /// in the ledger so an answer can still be sent after a restart).
    #[serde(default, rename = "_replyTo", skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<Value>,
}

impl InputRequest {
    /// Canonical JSON of the request, used to notice a key reused for a different request.
    pub fn fingerprint(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// `message` of an elicitation, if any.
    pub fn message(&self) -> Option<&str> {
        self.params.get("message").and_then(Value::as_str)
    }
}

/// One snapshot of a task, whatever era it came from.
pub type Task = TaskOf<Box<Value>>;

/// A snapshot with its tool result read as `R`: [`Task`] keeps the whole result; a reader
/// that needs only part of it (a resume, which shows whether a finished task's tool failed)
/// reads that part and skips the rest without building it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskOf<R> {
    pub task_id: TaskId,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Raw ISO 8601 string as the server sent it (parsed leniently where needed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated_at: Option<String>,
    /// Milliseconds from `createdAt`; `None` = unlimited or not given.
    #[serde(default)]
    pub ttl_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
    /// Every outstanding input request, keyed by the server's key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub input_requests: BTreeMap<String, InputRequest>,
    /// The tool result (`CallToolResult`) of a completed task. Boxed, as the error: most
    /// snapshots have neither, and tables hold many snapshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<R>,
    /// The JSON-RPC error of a failed task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Box<ErrorObject>>,
    /// Input requests the server listed beyond the first [`MAX_INPUT_REQUESTS`], which
    /// are not kept (they show once the kept ones are answered).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub more_input_requests: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl<R> TaskOf<R> {
    /// The same snapshot with its result turned into `S` by `f`.
    pub fn map_result<S>(self, f: impl FnOnce(R) -> Option<S>) -> TaskOf<S> {
        TaskOf {
            task_id: self.task_id,
            status: self.status,
            status_message: self.status_message,
            created_at: self.created_at,
            last_updated_at: self.last_updated_at,
            ttl_ms: self.ttl_ms,
            poll_interval_ms: self.poll_interval_ms,
            input_requests: self.input_requests,
            result: self.result.and_then(f),
            error: self.error,
            more_input_requests: self.more_input_requests,
        }
    }
}

/// A tool result (`CallToolResult`) that says `isError: true` (a JSON `true`; `"true"`
/// or a nested flag does not count).
pub fn is_error_result(result: &Value) -> bool {
    result.get("isError").and_then(Value::as_bool) == Some(true)
}

impl Task {
    /// Its result says `isError: true`. Whether that makes the task a tool error is
    /// [`crate::mcp::outcome`]'s to say.
    pub fn result_is_error(&self) -> bool {
        self.result.as_deref().is_some_and(is_error_result)
    }

    /// Decode a task from any of its wire shapes: v2 flat (`ttlMs`), v1 flat (`ttl`),
    /// or a v1 `CreateTaskResult` nesting it under `task`. Unknown fields are ignored.
    pub fn from_wire(v: &Value) -> Result<Task, McpError> {
        let obj = v
            .as_object()
            .ok_or_else(|| McpError::decode("task is not a JSON object"))?;
        if let Some(inner) = obj.get("task").filter(|t| t.is_object())
            && !obj.contains_key("taskId")
        {
            return Task::from_wire(inner);
        }
        let task_id = obj
            .get("taskId")
            .and_then(Value::as_str)
            .map(TaskId::new)
            .ok_or_else(|| McpError::decode("task has no string taskId"))?;
        let status = obj
            .get("status")
            .and_then(Value::as_str)
            .map(TaskStatus::parse)
            .ok_or_else(|| McpError::decode("task has no string status"))?;
        let text = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
        let millis = |keys: &[&str]| {
            keys.iter()
                .find_map(|k| obj.get(*k))
                .and_then(|v| v.as_u64().or_else(|| v.as_f64().map(|f| f.max(0.0) as u64)))
        };
        let (input_requests, beyond) = obj
            .get("inputRequests")
            .and_then(Value::as_object)
            .map(decode_input_requests)
            .unwrap_or_default();
        // Requests already skipped while the message was parsed (`bounded_json`).
        let skipped = obj
            .get(super::bounded_json::MORE_KEY)
            .and_then(Value::as_u64)
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0);
        let more_input_requests = beyond.saturating_add(skipped);
        let error = obj
            .get("error")
            .and_then(|e| serde_json::from_value::<Box<ErrorObject>>(e.clone()).ok());
        Ok(Task {
            task_id,
            status,
            status_message: text("statusMessage"),
            created_at: text("createdAt"),
            last_updated_at: text("lastUpdatedAt"),
            ttl_ms: millis(&["ttlMs", "ttl"]),
            poll_interval_ms: millis(&["pollIntervalMs", "pollInterval"]),
            input_requests,
            result: obj
                .get("result")
                .filter(|r| !r.is_null())
                .map(|r| Box::new(r.clone())),
            error,
            more_input_requests,
        })
    }

    /// Snapshot equality ignoring `lastUpdatedAt` (some servers bump it on every read).
    pub fn same_state(&self, other: &Task) -> bool {
        self.status == other.status
            && self.status_message == other.status_message
            && self.ttl_ms == other.ttl_ms
            && self.poll_interval_ms == other.poll_interval_ms
            && self.input_requests == other.input_requests
            && self.more_input_requests == other.more_input_requests
            && self.result == other.result
            && self.error == other.error
    }
}

/// The first [`MAX_INPUT_REQUESTS`] well-formed requests, in the server's order, and how
/// many more there were.
fn decode_input_requests(map: &Map<String, Value>) -> (BTreeMap<String, InputRequest>, usize) {
    let mut kept = BTreeMap::new();
    let mut more = 0;
    for (k, v) in map {
        let Some(method) = v.get("method").and_then(Value::as_str) else {
            continue;
        };
        if kept.len() == MAX_INPUT_REQUESTS {
            more += 1;
            continue;
        }
        let params = v.get("params").cloned().unwrap_or(Value::Null);
        let request = InputRequest {
            method: method.to_string(),
            params,
            reply_to: None,
        };
        kept.insert(k.clone(), request);
    }
    (kept, more)
}

/// What a `tools/call` produced.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// A plain `CallToolResult` (no task was created).
    Complete(Value),
    /// A task handle; `Task` may already be terminal (fetch its payload with `tasks/get`).
    Task(Task),
    /// Modern multi-round-trip: input needed before a task exists.
    InputRequired {
        input_requests: BTreeMap<String, InputRequest>,
        request_state: Option<Value>,
    },
}

/// Decode a `tools/call` result in either era.
pub fn decode_call_result(result: &Value) -> Result<CallOutcome, McpError> {
    let obj = result
        .as_object()
        .ok_or_else(|| McpError::decode("tools/call result is not an object"))?;
    match obj.get("resultType").and_then(Value::as_str) {
        Some("task") => Ok(CallOutcome::Task(Task::from_wire(result)?)),
        Some("input_required") => Ok(CallOutcome::InputRequired {
            input_requests: obj
                .get("inputRequests")
                .and_then(Value::as_object)
                .map(|m| decode_input_requests(m).0)
                .unwrap_or_default(),
            request_state: obj.get("requestState").cloned(),
        }),
        Some("complete") => Ok(CallOutcome::Complete(result.clone())),
        None if obj.get("task").is_some_and(Value::is_object) => {
            Ok(CallOutcome::Task(Task::from_wire(result)?))
        }
        None => Ok(CallOutcome::Complete(result.clone())),
        Some(other) => Err(McpError::decode(format!(
            "unknown resultType {other:?} in tools/call result"
        ))),
    }
}

/// A tool as listed by `tools/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolInfo {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default)]
    pub input_schema: Value,
    /// Legacy `execution.taskSupport`: `forbidden` (default), `optional` or `required`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<String>,
}

impl ToolInfo {
    pub fn from_wire(v: &Value) -> Option<ToolInfo> {
        let name = v.get("name")?.as_str()?.to_string();
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        Some(ToolInfo {
            name,
            title: text("title"),
            description: text("description"),
            input_schema: v.get("inputSchema").cloned().unwrap_or(Value::Null),
            task_support: v
                .pointer("/execution/taskSupport")
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }
}

/// What we learnt about a server when connecting.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerInfo {
    pub era: Era,
    pub protocol_version: String,
    /// Whether the server offers tasks at all (v2 extension or v1 `capabilities.tasks`).
    pub tasks: bool,
    pub capabilities: Value,
    pub name: Option<String>,
    pub version: Option<String>,
    /// The server's `instructions`, if it gave any (raw: a proxy hands them on).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

impl ServerInfo {
    /// Legacy: whether `tasks/cancel` is offered (`capabilities.tasks.cancel`).
    pub fn can_cancel(&self) -> bool {
        match self.era {
            Era::Modern => self.tasks,
            Era::Legacy => self.capabilities.pointer("/tasks/cancel").is_some(),
        }
    }
}
