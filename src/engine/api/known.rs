//! What the engine knows of a task when it starts reporting it (`KnownTask`), and a task's
//! notes in words from its ledger row (`TaskNote`).

use serde_json::Value;

use super::{TaskId, Tombstone};
use crate::mcp::Task;

/// A task's notes in words (sanitized, bounded), from its ledger row.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaskNote {
    /// `host agentx (user cancelled)`: who asked for the cancel, and why.
    pub cancel_by: Option<String>,
    /// `agentx stopped waiting after 4.0 s`: a proxied host stopped waiting.
    pub host: Option<String>,
    /// Why it did (`McpError: … Request timed out`), when it said.
    pub host_reason: Option<String>,
}

impl TaskNote {
    /// The notes of a ledger row, if it has any.
    pub fn of(rec: &crate::ledger::TaskRecord) -> Option<TaskNote> {
        let line = |s: &str, n: usize| crate::sanitize::sanitize_line(s, n);
        let cancel_by = rec.cancel_by.as_ref().and_then(|c| {
            let by = line(c.get("by")?.as_str()?, 80);
            Some(match c.get("reason").and_then(Value::as_str) {
                Some(r) if !r.is_empty() => format!("{by} ({})", line(r, 120)),
                _ => by,
            })
        });
        let host = rec.host_note.as_ref().map(|n| {
            let who = n.get("host").and_then(Value::as_str).map(|h| line(h, 60));
            let mut text = match who {
                Some(w) => format!("{w} stopped waiting"),
                None => "its client stopped waiting".to_string(),
            };
            if let Some(a) = n.get("afterS").and_then(Value::as_f64) {
                text.push_str(&format!(" after {a:.1} s"));
            }
            text
        });
        let host_reason = rec
            .host_note
            .as_ref()
            .and_then(|n| n.get("reason")?.as_str().map(|r| line(r, 160)));
        (cancel_by.is_some() || host.is_some()).then_some(TaskNote {
            cancel_by,
            host,
            host_reason,
        })
    }
}

/// What the engine knows of a task when it starts reporting it.
#[derive(Debug, Clone, PartialEq)]
pub struct KnownTask {
    pub task_id: TaskId,
    pub tool: Option<String>,
    pub arguments: Option<Value>,
    /// When taskrail first recorded the task.
    pub recorded_at: chrono::DateTime<chrono::Utc>,
    pub last: Option<Task>,
    /// Set for a tombstone.
    pub end: Option<Tombstone>,
    pub parent_task: Option<TaskId>,
    /// Input keys of `last` still waiting for an answer (answered ones, here or by another
    /// process, are left out: never prompt for them again).
    pub pending: Vec<String>,
    /// A cancel was requested (`Some(false)`) or acknowledged (`Some(true)`).
    pub cancel: Option<bool>,
    /// The client that started the task, when it was not taskrail (a proxied agent host).
    pub started_by: Option<String>,
    /// A finished task read without its payload: its arguments, result (unless a tool
    /// error) and error data are only in the ledger.
    pub lean: bool,
}

impl KnownTask {
    /// A task known by its id only, first recorded at `recorded_at`.
    pub fn new(task_id: TaskId, recorded_at: chrono::DateTime<chrono::Utc>) -> KnownTask {
        KnownTask {
            task_id,
            tool: None,
            arguments: None,
            recorded_at,
            last: None,
            end: None,
            parent_task: None,
            pending: Vec::new(),
            cancel: None,
            started_by: None,
            lean: false,
        }
    }
}
