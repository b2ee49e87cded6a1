//! Per-task bookkeeping and the invariants every snapshot passes through: the first
//! terminal state wins, an older observation never overwrites a newer one, and input
//! requests are reported once per key (an answered key never again).
//!
//! Pure: no I/O, no clock reads (callers pass observation sequence numbers).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::TaskNote;
use crate::mcp::{ErrorObject, InputRequest, Task, Verdict, judge};

/// What the engine knows about one followed task.
#[derive(Debug, Clone, Default)]
pub struct TrackedTask {
    /// A task of a proxy's own (origin `proxy`): never polled; only its owner updates it.
    pub local: bool,
    /// The notes last reported (who asked to cancel, a host that stopped waiting).
    pub note: Option<Box<TaskNote>>,
    /// Boxed, as the early payload: a finished task has neither, and the table holds
    /// every task this engine knows.
    pub last: Option<Box<Task>>,
    /// Observation number of `last` (requests are numbered when sent, pushes on arrival).
    pub observed: u64,
    pub terminal: bool,
    pub expired: bool,
    /// Keys reported to the user, with the fingerprint of the request. (Ordered sets, not
    /// hashed: an empty one is half the size, and most tasks, every finished one, have
    /// none.)
    pub reported: BTreeMap<String, String>,
    /// Keys we answered (persisted in the ledger): never prompted again.
    pub answered: BTreeSet<String>,
    /// Keys flagged as reused for a different request (flagged once).
    pub reused: BTreeSet<String>,
    pub cancel_requested: bool,
    pub cancel_in_flight: bool,
    pub poll_in_flight: bool,
    /// When the last `tasks/get` for this task was sent (paces follow-up polls).
    pub last_get: Option<tokio::time::Instant>,
    /// Legacy: a `tasks/result` call is open for this task.
    pub result_in_flight: bool,
    /// Pushed by an acknowledged subscription (then only safety-polled).
    pub pushed: bool,
    pub consecutive_errors: u32,
    /// Result or error received before the terminal snapshot (legacy `tasks/result`).
    pub early_payload: Option<Box<(Option<Value>, Option<ErrorObject>)>>,
    /// This engine holds the task's lease and polls it; otherwise another process does and
    /// this one mirrors what it records in the ledger.
    pub owned: bool,
    /// Not confirmed by the server yet (an id given to follow): nothing is recorded or
    /// reported until the first snapshot.
    pub provisional: bool,
    /// The legacy session the task lives in (a ledger `sessions` row).
    pub session: Option<i64>,
    /// Polls since the last write that changed nothing (written as one `polls` event).
    pub quiet_polls: u32,
}

/// What one snapshot changed.
#[derive(Debug, Default, PartialEq)]
pub struct Ingest {
    /// The snapshot was accepted (newer, not after a terminal state).
    pub applied: bool,
    /// It differs from the previous state (ignoring `lastUpdatedAt`).
    pub changed: bool,
    pub became_terminal: bool,
    pub new_inputs: Vec<(String, InputRequest)>,
    pub reused_keys: Vec<String>,
    /// The terminal snapshot gained its payload (result or error).
    pub payload: bool,
    /// A snapshot after the terminal one: the status first seen terminal, and the
    /// snapshot (not kept).
    pub after_terminal: Option<(crate::mcp::TaskStatus, Box<Task>)>,
}

impl TrackedTask {
    /// Apply a snapshot observed as number `observed` (requests are numbered when sent,
    /// pushes on arrival), under [`crate::mcp::judge`].
    pub fn ingest(&mut self, task: Task, observed: u64) -> Ingest {
        let mut out = Ingest::default();
        match judge(self.last.as_deref(), self.terminal || self.expired, &task) {
            Verdict::Accept if observed >= self.observed => {}
            Verdict::Payload => {
                if let Some(last) = self.last.as_mut() {
                    last.result = task.result;
                    last.error = task.error;
                    out.payload = true;
                }
                return out;
            }
            Verdict::AfterTerminal => {
                out.after_terminal = self
                    .last
                    .as_ref()
                    .map(|l| (l.status.clone(), Box::new(task)));
                return out;
            }
            Verdict::Accept | Verdict::Stale => return out,
        }
        out.applied = true;
        out.changed = self.last.as_ref().is_none_or(|p| !p.same_state(&task));
        self.observed = observed;
        let mut task = task;
        if task.status.is_terminal() {
            self.terminal = true;
            out.became_terminal = true;
            // A payload that arrived before the terminal snapshot (legacy `tasks/result`).
            if let Some((result, error)) = self.early_payload.take().map(|p| *p)
                && task.result.is_none()
                && task.error.is_none()
            {
                task.result = result.map(Box::new);
                task.error = error.map(Box::new);
            }
        } else {
            for (key, req) in &task.input_requests {
                if self.answered.contains(key) {
                    continue;
                }
                let fp = req.fingerprint();
                match self.reported.get(key) {
                    None => {
                        self.reported.insert(key.clone(), fp);
                        out.new_inputs.push((key.clone(), req.clone()));
                    }
                    Some(old) if *old != fp && self.reused.insert(key.clone()) => {
                        out.reused_keys.push(key.clone());
                    }
                    Some(_) => {}
                }
            }
        }
        self.last = Some(Box::new(task));
        out
    }

    /// Keep a payload that arrived before the task is known to be terminal.
    pub fn keep_early_payload(&mut self, result: Option<Value>, error: Option<ErrorObject>) {
        if result.is_some() || error.is_some() {
            self.early_payload = Some(Box::new((result, error)));
        }
    }

    /// Keys of the last snapshot still waiting for an answer (answered ones, here or by
    /// another process, and keys reused for a different request are left out).
    pub fn pending_keys(&self) -> Vec<String> {
        self.pending_in(self.last.as_deref())
    }

    /// The input keys of `snapshot` still waiting for an answer, as this task stands.
    pub fn pending_in(&self, snapshot: Option<&Task>) -> Vec<String> {
        match snapshot {
            Some(t) if !t.status.is_terminal() && !self.expired => t
                .input_requests
                .keys()
                .filter(|k| !self.answered.contains(*k) && !self.reused.contains(*k))
                .cloned()
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Followed at all: not finished and not a tombstone.
    pub fn live(&self) -> bool {
        !crate::mcp::is_finished(self.last.as_deref(), self.terminal || self.expired)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task(v: serde_json::Value) -> Task {
        Task::from_wire(&v).unwrap()
    }

    fn input(key: &str, msg: &str) -> serde_json::Value {
        json!({ key: { "method": "elicitation/create", "params": { "message": msg } } })
    }

    #[test]
    fn first_terminal_state_wins() {
        let mut t = TrackedTask::default();
        assert!(
            t.ingest(task(json!({"taskId":"a","status":"working"})), 1)
                .applied
        );
        let r = t.ingest(
            task(json!({"taskId":"a","status":"completed","result":{"content":[]}})),
            2,
        );
        assert!(r.became_terminal && r.changed);
        assert!(
            !t.ingest(task(json!({"taskId":"a","status":"working"})), 3)
                .applied
        );
        assert!(
            !t.ingest(task(json!({"taskId":"a","status":"failed"})), 4)
                .applied
        );
        assert_eq!(t.last.as_ref().unwrap().status.as_str(), "completed");
    }

    #[test]
    fn older_observations_are_ignored() {
        let mut t = TrackedTask::default();
        t.ingest(task(json!({"taskId":"a","status":"input_required"})), 5);
        assert!(
            !t.ingest(task(json!({"taskId":"a","status":"working"})), 4)
                .applied
        );
        let newer = json!({"taskId":"a","status":"working","lastUpdatedAt":"2026-01-01T00:00:10Z"});
        assert!(t.ingest(task(newer), 6).applied);
        let stale =
            json!({"taskId":"a","status":"input_required","lastUpdatedAt":"2026-01-01T00:00:05Z"});
        assert!(
            !t.ingest(task(stale), 7).applied,
            "a snapshot older by lastUpdatedAt is stale"
        );
    }

    #[test]
    fn bumped_last_updated_at_is_not_a_change() {
        let mut t = TrackedTask::default();
        t.ingest(
            task(json!({"taskId":"a","status":"working","lastUpdatedAt":"2026-01-01T00:00:01Z"})),
            1,
        );
        let r = t.ingest(
            task(json!({"taskId":"a","status":"working","lastUpdatedAt":"2026-01-01T00:00:02Z"})),
            2,
        );
        assert!(r.applied && !r.changed);
    }

    #[test]
    fn input_keys_are_reported_once_and_answered_keys_never() {
        let mut t = TrackedTask::default();
        let snap =
            json!({"taskId":"a","status":"input_required","inputRequests": input("k1","name?")});
        assert_eq!(t.ingest(task(snap.clone()), 1).new_inputs.len(), 1);
        assert!(t.ingest(task(snap.clone()), 2).new_inputs.is_empty());
        t.answered.insert("k1".into());
        assert!(t.ingest(task(snap), 3).new_inputs.is_empty());
        assert!(t.pending_keys().is_empty());
        let mut fresh = TrackedTask {
            answered: ["k1".to_string()].into(),
            ..Default::default()
        };
        let snap =
            json!({"taskId":"a","status":"input_required","inputRequests": input("k1","name?")});
        assert!(
            fresh.ingest(task(snap), 1).new_inputs.is_empty(),
            "answered in an earlier run"
        );
    }

    #[test]
    fn a_key_reused_for_another_request_is_flagged_once() {
        let mut t = TrackedTask::default();
        t.ingest(
            task(json!({"taskId":"a","status":"input_required","inputRequests": input("k","one")})),
            1,
        );
        let other =
            json!({"taskId":"a","status":"input_required","inputRequests": input("k","two")});
        let r = t.ingest(task(other.clone()), 2);
        assert_eq!(r.reused_keys, vec!["k".to_string()]);
        assert!(r.new_inputs.is_empty());
        assert!(t.ingest(task(other), 3).reused_keys.is_empty());
    }
}
