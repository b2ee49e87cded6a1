//! Tasks hosted on this client (`2025-11-25`): a server may ask for an elicitation or a
//! sampling with `params.task`, and then polls `tasks/get`, fetches `tasks/result` and may
//! `tasks/cancel` — on us. Each hosted task waits for the person's answer.
//!
//! Owns: the hosted task table and its tasks-v1 shapes. Must not do I/O.

use std::collections::HashMap;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::types::ErrorObject;

/// How a hosted task ended (the result, or the error `tasks/result` returns).
pub type Outcome = Result<Value, ErrorObject>;

/// Suggested poll interval of a hosted task.
const POLL_MS: u64 = 1000;
/// At most this many hosted tasks exist at once.
pub const MAX_HOSTED: usize = 256;
/// TTL when the server asks for none, and the longest one granted.
pub const MAX_TTL_MS: u64 = 30 * 60 * 1000;

struct Hosted {
    status: &'static str,
    message: Option<String>,
    created: DateTime<Utc>,
    updated: DateTime<Utc>,
    ttl_ms: u64,
    done: watch::Sender<Option<Outcome>>,
}

impl Hosted {
    fn flat(&self, id: &str) -> Value {
        let mut t = json!({
            "taskId": id,
            "status": self.status,
            "createdAt": self.created.to_rfc3339(),
            "lastUpdatedAt": self.updated.to_rfc3339(),
            "ttl": self.ttl_ms,
            "pollInterval": POLL_MS,
        });
        if let Some(m) = &self.message {
            t["statusMessage"] = json!(m);
        }
        t
    }

    fn expired(&self, now: DateTime<Utc>) -> bool {
        (now - self.created).num_milliseconds() > self.ttl_ms as i64
    }
}

#[derive(Default)]
pub struct HostedTasks {
    tasks: Mutex<HashMap<String, Hosted>>,
}

/// Why a hosted-task request was refused (answered `-32602`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostedError {
    NotFound,
    Terminal,
    TooMany,
}

impl HostedTasks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Hosted>> {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new task waiting for the person; returns its id and the `CreateTaskResult`.
    pub fn create(
        &self,
        ttl_ms: Option<u64>,
        now: DateTime<Utc>,
    ) -> Result<(String, Value), HostedError> {
        let mut tasks = self.lock();
        tasks.retain(|_, t| !t.expired(now));
        if tasks.len() >= MAX_HOSTED {
            return Err(HostedError::TooMany);
        }
        let id = uuid::Uuid::new_v4().to_string();
        let task = Hosted {
            status: "input_required",
            message: Some("waiting for the person at taskrail".into()),
            created: now,
            updated: now,
            ttl_ms: ttl_ms.unwrap_or(MAX_TTL_MS).clamp(1, MAX_TTL_MS),
            done: watch::channel(None).0,
        };
        let created = json!({ "task": task.flat(&id) });
        tasks.insert(id.clone(), task);
        Ok((id, created))
    }

    /// `tasks/get`: the flat task.
    pub fn get(&self, id: &str, now: DateTime<Utc>) -> Result<Value, HostedError> {
        let tasks = self.lock();
        match tasks.get(id) {
            Some(t) if !t.expired(now) => Ok(t.flat(id)),
            _ => Err(HostedError::NotFound),
        }
    }

    /// `tasks/list`: every live hosted task.
    pub fn list(&self, now: DateTime<Utc>) -> Value {
        let tasks = self.lock();
        let list: Vec<Value> = tasks
            .iter()
            .filter(|(_, t)| !t.expired(now))
            .map(|(id, t)| t.flat(id))
            .collect();
        json!({ "tasks": list })
    }

    /// The person answered: the task ends `completed` (or `failed` with the error).
    pub fn finish(&self, id: &str, outcome: Outcome, now: DateTime<Utc>) -> bool {
        let mut tasks = self.lock();
        let Some(t) = tasks.get_mut(id) else {
            return false;
        };
        if t.done.borrow().is_some() {
            return false;
        }
        t.status = if outcome.is_ok() {
            "completed"
        } else {
            "failed"
        };
        t.message = outcome.as_ref().err().map(|e| e.message.clone());
        t.updated = now;
        t.done.send_replace(Some(outcome));
        true
    }

    /// `tasks/cancel` from the server: the task ends `cancelled` (a v1 terminal task is
    /// refused). Returns the flat task.
    pub fn cancel(&self, id: &str, now: DateTime<Utc>) -> Result<Value, HostedError> {
        let mut tasks = self.lock();
        let t = tasks.get_mut(id).ok_or(HostedError::NotFound)?;
        if t.done.borrow().is_some() {
            return Err(HostedError::Terminal);
        }
        t.status = "cancelled";
        t.message = Some("cancelled by the server".into());
        t.updated = now;
        t.done.send_replace(Some(Err(ErrorObject {
            code: -32603,
            message: "the task was cancelled".into(),
            data: None,
        })));
        Ok(t.flat(id))
    }

    /// Waits for the outcome `tasks/result` returns.
    pub fn watch(&self, id: &str) -> Option<watch::Receiver<Option<Outcome>>> {
        self.lock().get(id).map(|t| t.done.subscribe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hosted_task_waits_for_its_answer() {
        let h = HostedTasks::default();
        let now = Utc::now();
        let (id, created) = h.create(Some(60_000), now).unwrap();
        assert_eq!(created["task"]["status"], "input_required");
        assert_eq!(created["task"]["ttl"], 60_000);
        assert_eq!(h.get(&id, now).unwrap()["status"], "input_required");
        let mut rx = h.watch(&id).unwrap();
        assert!(rx.borrow().is_none());
        assert!(h.finish(&id, Ok(json!({"action": "accept"})), now));
        assert!(!h.finish(&id, Ok(json!({})), now), "first answer wins");
        rx.changed().await.unwrap();
        assert_eq!(rx.borrow().clone(), Some(Ok(json!({"action": "accept"}))));
        assert_eq!(h.get(&id, now).unwrap()["status"], "completed");
        assert_eq!(h.cancel(&id, now), Err(HostedError::Terminal));
        assert_eq!(h.list(now)["tasks"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn cancel_and_expiry() {
        let h = HostedTasks::default();
        let now = Utc::now();
        let (id, _) = h.create(Some(10), now).unwrap();
        assert_eq!(h.cancel(&id, now).unwrap()["status"], "cancelled");
        let later = now + chrono::Duration::seconds(1);
        assert_eq!(h.get(&id, later), Err(HostedError::NotFound));
        assert_eq!(h.get("nope", now), Err(HostedError::NotFound));
    }
}
