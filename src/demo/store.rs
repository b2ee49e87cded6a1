//! The demo server's task table and state machine: creation, snapshots, input requests
//! and answers, cancellation, first-terminal-wins, TTL purge, and the change feed that
//! push streams read. No HTTP and no JSON-RPC envelopes here.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;

use super::wire::timestamp;

/// A task's lifecycle state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

/// Who may see a task: the modern surface, or one legacy session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    Modern,
    Legacy(String),
}

/// How a tool run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A `CallToolResult` (possibly with `isError: true`).
    Result(Value),
    /// A JSON-RPC error object.
    Error(Value),
    /// The work stopped on request; the text becomes the status message.
    Cancelled(String),
}

/// Numeric progress, forwarded as legacy `notifications/progress`.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
}

/// One change of one task, as the feed publishes it.
#[derive(Debug, Clone)]
pub struct TaskChange {
    pub task_id: String,
    pub scope: Scope,
    /// The full DetailedTask, without `resultType`.
    pub snapshot: Value,
    pub progress: Option<Progress>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// Unknown, expired or out-of-scope task id.
    NotFound,
    /// The task is already terminal.
    Terminal,
    /// An input key was issued twice (a bug in a tool).
    DuplicateKey(String),
}

/// What `tasks/result` needs once a task is terminal.
#[derive(Debug, Clone, PartialEq)]
pub struct Terminal {
    pub status: Status,
    pub result: Option<Value>,
    pub error: Option<Value>,
}

struct Record {
    seq: u64,
    scope: Scope,
    status: Status,
    status_message: Option<String>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    ttl_ms: u64,
    poll_ms: u64,
    input_requests: Map<String, Value>,
    issued_keys: HashSet<String>,
    waiters: HashMap<String, oneshot::Sender<Value>>,
    result: Option<Value>,
    error: Option<Value>,
    cancel: CancellationToken,
    snapshot: Value,
    previous: Option<Value>,
    served_terminal: bool,
    stale_after_terminal: bool,
}

impl Record {
    /// When its TTL runs out (`None`: beyond what a timestamp holds).
    fn deadline(&self) -> Option<DateTime<Utc>> {
        let ttl = chrono::Duration::milliseconds(i64::try_from(self.ttl_ms).unwrap_or(i64::MAX));
        self.created_at.checked_add_signed(ttl)
    }

    fn expired(&self, now: DateTime<Utc>) -> bool {
        self.deadline().is_some_and(|deadline| now >= deadline)
    }

    fn build_snapshot(&self, id: &str) -> Value {
        let mut s = Map::new();
        s.insert("taskId".into(), json!(id));
        s.insert("status".into(), json!(self.status.as_str()));
        if let Some(msg) = &self.status_message {
            s.insert("statusMessage".into(), json!(msg));
        }
        s.insert("createdAt".into(), json!(timestamp(self.created_at)));
        s.insert("lastUpdatedAt".into(), json!(timestamp(self.updated_at)));
        s.insert("ttlMs".into(), json!(self.ttl_ms));
        s.insert("pollIntervalMs".into(), json!(self.poll_ms));
        if self.status == Status::InputRequired {
            s.insert(
                "inputRequests".into(),
                Value::Object(self.input_requests.clone()),
            );
        }
        if let Some(result) = &self.result {
            s.insert("result".into(), result.clone());
        }
        if let Some(error) = &self.error {
            s.insert("error".into(), error.clone());
        }
        Value::Object(s)
    }
}

/// The task table. Cheap to share (`Arc<Store>`); the lock is never held across an await.
pub struct Store {
    tasks: Mutex<HashMap<String, Record>>,
    /// No task's TTL runs out before this (ms since the epoch; written under the `tasks`
    /// lock), so a sweep before it looks at nothing.
    soonest: AtomicI64,
    changes: broadcast::Sender<Arc<TaskChange>>,
    next_seq: Mutex<u64>,
}

impl Default for Store {
    fn default() -> Self {
        Self::new()
    }
}

impl Store {
    pub fn new() -> Self {
        let (changes, _) = broadcast::channel(4096);
        Store {
            tasks: Mutex::new(HashMap::new()),
            soonest: AtomicI64::new(i64::MAX),
            changes,
            next_seq: Mutex::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Record>> {
        self.tasks.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every change made after this call (nothing from before).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<TaskChange>> {
        self.changes.subscribe()
    }

    /// Rebuild the snapshot after a mutation and publish it.
    fn publish(&self, id: &str, rec: &mut Record, progress: Option<Progress>) {
        rec.updated_at = Utc::now().max(rec.updated_at);
        let fresh = rec.build_snapshot(id);
        rec.previous = Some(std::mem::replace(&mut rec.snapshot, fresh));
        let change = TaskChange {
            task_id: id.to_string(),
            scope: rec.scope.clone(),
            snapshot: rec.snapshot.clone(),
            progress,
        };
        // No receiver is fine: nobody is listening.
        let _ = self.changes.send(Arc::new(change));
    }

    /// Look a task up for a caller in `scope`, purging it first if its TTL has run out.
    fn find<'a>(
        tasks: &'a mut HashMap<String, Record>,
        id: &str,
        scope: &Scope,
        now: DateTime<Utc>,
    ) -> Result<&'a mut Record, StoreError> {
        if tasks.get(id).is_some_and(|r| r.expired(now)) {
            if let Some(rec) = tasks.remove(id) {
                rec.cancel.cancel();
            }
            return Err(StoreError::NotFound);
        }
        match tasks.get_mut(id) {
            Some(rec) if &rec.scope == scope => Ok(rec),
            _ => Err(StoreError::NotFound),
        }
    }

    /// Register a new `working` task. It is readable before this returns (durable creation).
    pub fn create(
        &self,
        scope: Scope,
        ttl_ms: u64,
        poll_ms: u64,
        message: &str,
    ) -> (String, Value, CancellationToken) {
        let id = uuid::Uuid::new_v4().to_string();
        let now = Utc::now();
        let seq = {
            let mut next = self.next_seq.lock().unwrap_or_else(|e| e.into_inner());
            *next += 1;
            *next
        };
        let mut rec = Record {
            seq,
            scope,
            status: Status::Working,
            status_message: Some(message.to_string()),
            created_at: now,
            updated_at: now,
            ttl_ms,
            poll_ms,
            input_requests: Map::new(),
            issued_keys: HashSet::new(),
            waiters: HashMap::new(),
            result: None,
            error: None,
            cancel: CancellationToken::new(),
            snapshot: Value::Null,
            previous: None,
            served_terminal: false,
            stale_after_terminal: false,
        };
        rec.snapshot = rec.build_snapshot(&id);
        let out = (id.clone(), rec.snapshot.clone(), rec.cancel.clone());
        let deadline = rec.deadline().map_or(i64::MAX, |d| d.timestamp_millis());
        let mut tasks = self.lock();
        tasks.insert(id, rec);
        self.soonest.fetch_min(deadline, Ordering::Relaxed);
        drop(tasks);
        out
    }

    /// The current snapshot (`tasks/get`). With `stale` set, now and then an older one:
    /// always once right after the terminal snapshot was first served, otherwise when
    /// `coin` is true.
    pub fn read(
        &self,
        id: &str,
        scope: &Scope,
        stale: bool,
        coin: bool,
    ) -> Result<Value, StoreError> {
        let mut tasks = self.lock();
        let rec = Self::find(&mut tasks, id, scope, Utc::now())?;
        if stale && let Some(prev) = rec.previous.clone() {
            if rec.served_terminal && !rec.stale_after_terminal {
                rec.stale_after_terminal = true;
                return Ok(prev);
            }
            if coin {
                return Ok(prev);
            }
        }
        if rec.status.is_terminal() {
            rec.served_terminal = true;
        }
        Ok(rec.snapshot.clone())
    }

    /// Who a task belongs to (modern, or one legacy session).
    pub fn scope_of(&self, id: &str) -> Option<Scope> {
        self.lock().get(id).map(|r| r.scope.clone())
    }

    /// The status of a task, if it is visible in `scope`.
    pub fn status(&self, id: &str, scope: &Scope) -> Result<Status, StoreError> {
        let mut tasks = self.lock();
        Self::find(&mut tasks, id, scope, Utc::now()).map(|r| r.status)
    }

    /// The terminal payload, or `None` while the task is still running.
    pub fn terminal(&self, id: &str, scope: &Scope) -> Result<Option<Terminal>, StoreError> {
        let mut tasks = self.lock();
        let rec = Self::find(&mut tasks, id, scope, Utc::now())?;
        Ok(rec.status.is_terminal().then(|| Terminal {
            status: rec.status,
            result: rec.result.clone(),
            error: rec.error.clone(),
        }))
    }

    /// Snapshots of every live task in `scope`, oldest first.
    pub fn list(&self, scope: &Scope) -> Vec<Value> {
        let now = Utc::now();
        let mut tasks = self.lock();
        Self::purge(&mut tasks, now);
        let mut recs: Vec<&Record> = tasks.values().filter(|r| &r.scope == scope).collect();
        recs.sort_by_key(|r| r.seq);
        recs.iter().map(|r| r.snapshot.clone()).collect()
    }

    /// Update the status message (and optional numeric progress) of a running task.
    pub fn set_progress(&self, id: &str, message: &str, progress: Option<Progress>) {
        let mut tasks = self.lock();
        if let Some(rec) = tasks.get_mut(id)
            && !rec.status.is_terminal()
        {
            rec.status_message = Some(message.to_string());
            self.publish(id, rec, progress);
        }
    }

    /// Put an input request on the task under a key never used before on this task.
    /// The receiver yields the client's answer (an elicitation result).
    pub fn request_input(
        &self,
        id: &str,
        key: &str,
        request: Value,
        message: &str,
    ) -> Result<oneshot::Receiver<Value>, StoreError> {
        let mut tasks = self.lock();
        let rec = tasks.get_mut(id).ok_or(StoreError::NotFound)?;
        if rec.status.is_terminal() {
            return Err(StoreError::Terminal);
        }
        if !rec.issued_keys.insert(key.to_string()) {
            return Err(StoreError::DuplicateKey(key.to_string()));
        }
        let (tx, rx) = oneshot::channel();
        rec.input_requests.insert(key.to_string(), request);
        rec.waiters.insert(key.to_string(), tx);
        rec.status = Status::InputRequired;
        rec.status_message = Some(message.to_string());
        self.publish(id, rec, None);
        Ok(rx)
    }

    /// Apply `inputResponses`. Keys never issued or already answered are ignored; a
    /// terminal task ignores everything. Returns how many answers were taken.
    pub fn answer(
        &self,
        id: &str,
        scope: &Scope,
        responses: &Map<String, Value>,
    ) -> Result<usize, StoreError> {
        let mut tasks = self.lock();
        let rec = Self::find(&mut tasks, id, scope, Utc::now())?;
        if rec.status.is_terminal() {
            return Ok(0);
        }
        let mut taken = 0;
        for (key, response) in responses {
            if rec.input_requests.remove(key).is_some() {
                taken += 1;
                if let Some(waiter) = rec.waiters.remove(key) {
                    // The worker may have stopped meanwhile; then the answer is moot.
                    let _ = waiter.send(response.clone());
                }
            }
        }
        if taken > 0 {
            if rec.input_requests.is_empty() {
                rec.status = Status::Working;
                rec.status_message = Some("Input received, resuming".into());
            }
            self.publish(id, rec, None);
        }
        Ok(taken)
    }

    /// Modern cancel: record the intent (the worker decides how it ends). Returns whether
    /// the task was still running.
    pub fn request_cancel(&self, id: &str, scope: &Scope) -> Result<bool, StoreError> {
        let mut tasks = self.lock();
        let rec = Self::find(&mut tasks, id, scope, Utc::now())?;
        if rec.status.is_terminal() {
            return Ok(false);
        }
        rec.cancel.cancel();
        Ok(true)
    }

    /// Legacy cancel: the task becomes `cancelled` at once and stays so. A terminal task
    /// is refused.
    pub fn cancel_now(&self, id: &str, scope: &Scope) -> Result<Value, StoreError> {
        let mut tasks = self.lock();
        let rec = Self::find(&mut tasks, id, scope, Utc::now())?;
        if rec.status.is_terminal() {
            return Err(StoreError::Terminal);
        }
        rec.cancel.cancel();
        rec.status = Status::Cancelled;
        rec.status_message = Some("Cancelled by request".into());
        rec.input_requests.clear();
        rec.waiters.clear();
        self.publish(id, rec, None);
        Ok(rec.snapshot.clone())
    }

    /// End a task. The first terminal state wins: later calls change nothing. In a
    /// legacy scope a tool result with `isError: true` makes the task `failed` (tasks v1).
    pub fn finish(&self, id: &str, outcome: Outcome) -> bool {
        let mut tasks = self.lock();
        let Some(rec) = tasks.get_mut(id) else {
            return false;
        };
        if rec.status.is_terminal() {
            return false;
        }
        match outcome {
            Outcome::Result(result) => {
                let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
                let legacy = matches!(rec.scope, Scope::Legacy(_));
                rec.status = if is_error && legacy {
                    Status::Failed
                } else {
                    Status::Completed
                };
                rec.status_message = Some(
                    if is_error {
                        "Completed with a tool error"
                    } else {
                        "Completed"
                    }
                    .into(),
                );
                rec.result = Some(result);
            }
            Outcome::Error(error) => {
                let msg = error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error");
                rec.status_message = Some(format!("Tool execution failed: {msg}"));
                rec.status = Status::Failed;
                rec.error = Some(error);
            }
            Outcome::Cancelled(message) => {
                rec.status = Status::Cancelled;
                rec.status_message = Some(message);
            }
        }
        rec.input_requests.clear();
        rec.waiters.clear();
        self.publish(id, rec, None);
        true
    }

    fn purge(tasks: &mut HashMap<String, Record>, now: DateTime<Utc>) -> usize {
        let expired: Vec<String> = tasks
            .iter()
            .filter(|(_, r)| r.expired(now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            if let Some(rec) = tasks.remove(id) {
                rec.cancel.cancel();
            }
        }
        expired.len()
    }

    /// Purge every task whose `createdAt + ttlMs` has passed; stops their work. Before the
    /// soonest deadline it costs one atomic read.
    pub fn sweep(&self, now: DateTime<Utc>) -> usize {
        if now.timestamp_millis() < self.soonest.load(Ordering::Relaxed) {
            return 0;
        }
        let mut tasks = self.lock();
        let purged = Self::purge(&mut tasks, now);
        let soonest = tasks
            .values()
            .filter_map(|r| r.deadline())
            .map(|d| d.timestamp_millis())
            .min()
            .unwrap_or(i64::MAX);
        self.soonest.store(soonest, Ordering::Relaxed);
        purged
    }

    /// Stop every task's work (server shutdown).
    pub fn shutdown(&self) {
        for rec in self.lock().values() {
            rec.cancel.cancel();
        }
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
