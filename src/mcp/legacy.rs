//! Legacy input requests: `elicitation/create` requests a `2025-11-25` server sends for a
//! task, kept until answered and shown as the task's `inputRequests` like a modern server's.
//!
//! Owns: the pending-request table. Must not do I/O.

use std::collections::HashMap;
use std::sync::Mutex;

use super::jsonrpc::RequestId;
use super::types::{InputRequest, Task, TaskId};

/// (input key, server request id, the request) for one task.
type Pending = Vec<(String, RequestId, InputRequest)>;

#[derive(Default)]
pub struct PendingInputs {
    by_task: Mutex<HashMap<TaskId, Pending>>,
}

impl PendingInputs {
    pub fn insert(&self, task_id: &TaskId, key: &str, id: RequestId, request: InputRequest) {
        let mut map = self.by_task.lock().unwrap_or_else(|e| e.into_inner());
        let entry = map.entry(task_id.clone()).or_default();
        if !entry.iter().any(|(k, _, _)| k == key) {
            entry.push((key.to_string(), id, request));
        }
    }

    /// Remove a pending request and return the id to answer and the request.
    pub fn take(&self, task_id: &TaskId, key: &str) -> Option<(RequestId, InputRequest)> {
        let mut map = self.by_task.lock().unwrap_or_else(|e| e.into_inner());
        let entry = map.get_mut(task_id)?;
        let pos = entry.iter().position(|(k, _, _)| k == key)?;
        let (_, id, request) = entry.remove(pos);
        if entry.is_empty() {
            map.remove(task_id);
        }
        Some((id, request))
    }

    /// Add the task's pending requests to its snapshot; drop them once it is terminal.
    pub fn merge_into(&self, task: &mut Task) {
        let mut map = self.by_task.lock().unwrap_or_else(|e| e.into_inner());
        if task.status.is_terminal() {
            map.remove(&task.task_id);
            return;
        }
        if let Some(pending) = map.get(&task.task_id) {
            for (key, _, req) in pending {
                task.input_requests
                    .entry(key.clone())
                    .or_insert_with(|| req.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::TaskStatus;
    use serde_json::json;

    fn task(status: TaskStatus) -> Task {
        Task::from_wire(&json!({"taskId": "t1", "status": status.as_str()})).unwrap()
    }

    #[test]
    fn pending_requests_show_on_the_task_until_answered() {
        let p = PendingInputs::default();
        let req = InputRequest {
            method: "elicitation/create".into(),
            params: json!({"message": "ok?"}),
            reply_to: None,
        };
        p.insert(
            &TaskId::new("t1"),
            "elicitation-7",
            RequestId::Num(7),
            req.clone(),
        );
        p.insert(&TaskId::new("t1"), "elicitation-7", RequestId::Num(7), req);
        let mut t = task(TaskStatus::InputRequired);
        p.merge_into(&mut t);
        assert_eq!(t.input_requests.len(), 1);
        assert_eq!(
            p.take(&TaskId::new("t1"), "elicitation-7")
                .map(|(id, _)| id),
            Some(RequestId::Num(7))
        );
        assert_eq!(p.take(&TaskId::new("t1"), "elicitation-7"), None);
        let mut t = task(TaskStatus::Working);
        p.merge_into(&mut t);
        assert!(t.input_requests.is_empty());
    }

    #[test]
    fn terminal_tasks_drop_their_pending_requests() {
        let p = PendingInputs::default();
        let req = InputRequest {
            method: "elicitation/create".into(),
            params: json!({}),
            reply_to: None,
        };
        p.insert(&TaskId::new("t1"), "k", RequestId::Num(1), req);
        p.merge_into(&mut task(TaskStatus::Completed));
        assert_eq!(p.take(&TaskId::new("t1"), "k"), None);
    }
}
