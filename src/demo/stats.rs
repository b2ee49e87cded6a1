//! Request counters of the demo server, served as JSON on `GET /stats` so tests in other
//! processes can check what a client did (methods, poll times, pushes, injected faults).

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use serde_json::{Value, json};

#[derive(Default)]
struct Counters {
    methods: BTreeMap<String, u64>,
    tasks_get: BTreeMap<String, Vec<u64>>,
    notifications_sent: u64,
    listens_opened: u64,
    http503: u64,
    tasks_created: u64,
    pushes: Vec<PushRecord>,
    /// The last `params._meta.traceparent` seen per method (W3C trace context a client
    /// sent), so tests can match it against the exported trace.
    traceparents: BTreeMap<String, String>,
}

/// One task notification handed to a stream (for the push-latency benchmark).
#[derive(Debug, Clone, PartialEq)]
pub struct PushRecord {
    pub task_id: String,
    pub status: String,
    pub status_message: Option<String>,
    /// Microseconds since the server started.
    pub at_us: u64,
}

/// The push log keeps at most this many entries (the oldest are kept).
const PUSH_LOG_MAX: usize = 200_000;

/// Thread-safe counters; times are milliseconds since the server started.
pub struct Stats {
    started: Instant,
    counters: Mutex<Counters>,
}

impl Stats {
    pub fn new() -> Self {
        Stats {
            started: Instant::now(),
            counters: Mutex::new(Counters::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Counters> {
        self.counters.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A request (or notification) that was handled, counted by method.
    pub fn method(&self, method: &str) {
        *self.lock().methods.entry(method.to_string()).or_default() += 1;
    }

    /// A request's `_meta.traceparent` (bounded, kept per method).
    pub fn traceparent(&self, method: &str, traceparent: &str) {
        let tp: String = traceparent.chars().take(64).collect();
        let mut c = self.lock();
        if c.traceparents.len() < 64 || c.traceparents.contains_key(method) {
            c.traceparents.insert(method.to_string(), tp);
        }
    }

    /// A `tasks/get` for `task_id`, stamped with the time since start.
    pub fn tasks_get(&self, task_id: &str) {
        let ms = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.lock()
            .tasks_get
            .entry(task_id.to_string())
            .or_default()
            .push(ms);
    }

    /// A task notification carrying `snapshot` was handed to a stream.
    pub fn notification_sent(&self, snapshot: &Value) {
        let at_us = u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX);
        let text = |k: &str| snapshot.get(k).and_then(Value::as_str).map(str::to_string);
        let mut c = self.lock();
        c.notifications_sent += 1;
        if c.pushes.len() < PUSH_LOG_MAX {
            c.pushes.push(PushRecord {
                task_id: text("taskId").unwrap_or_default(),
                status: text("status").unwrap_or_default(),
                status_message: text("statusMessage"),
                at_us,
            });
        }
    }

    /// When the counters started (push times are relative to it).
    pub fn started(&self) -> Instant {
        self.started
    }

    /// Every task notification sent so far, in order.
    pub fn pushes(&self) -> Vec<PushRecord> {
        self.lock().pushes.clone()
    }

    pub fn listen_opened(&self) {
        self.lock().listens_opened += 1;
    }

    pub fn http503(&self) {
        self.lock().http503 += 1;
    }

    pub fn task_created(&self) {
        self.lock().tasks_created += 1;
    }

    pub fn to_json(&self) -> Value {
        let c = self.lock();
        json!({
            "methods": c.methods,
            "tasksGet": c.tasks_get,
            "notificationsSent": c.notifications_sent,
            "listensOpened": c.listens_opened,
            "http503": c.http503,
            "tasksCreated": c.tasks_created,
            "traceparents": c.traceparents,
        })
    }
}

impl Default for Stats {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_show_up_in_json() {
        let s = Stats::new();
        s.method("tasks/get");
        s.method("tasks/get");
        s.tasks_get("t1");
        s.http503();
        let j = s.to_json();
        assert_eq!(j["methods"]["tasks/get"], 2);
        assert_eq!(j["tasksGet"]["t1"].as_array().unwrap().len(), 1);
        assert_eq!(j["http503"], 1);
        assert_eq!(j["listensOpened"], 0);
    }
}
