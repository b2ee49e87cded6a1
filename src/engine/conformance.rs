//! Conformance watch for one server: turns what the actor observes into `Hint`s for the
//! server's authors (non-durable creation, reused input keys, terminal states that change,
//! missing `pollIntervalMs`, tasks without the declared extension, undelivered pushes).
//!
//! Pure: no I/O, no clock reads (callers pass `now`). Each (hint, task) is reported once,
//! and at most `MAX_PER_HINT` times per hint, so a misbehaving server cannot flood the UI.

use std::collections::{HashMap, HashSet};

use super::api::{Hint, UpdateSource};
use crate::ids::TaskId;
use crate::mcp::parse_time;
use crate::mcp::{Era, Task, TaskStatus};

/// Reports per hint kind, at most.
pub const MAX_PER_HINT: usize = 20;

/// A change seen only by a poll counts as undelivered once it is this old.
pub const PUSH_GRACE_SECS: i64 = 5;

/// One finding: the hint and its evidence.
pub type Finding = (Hint, String);

#[derive(Debug, Default)]
pub struct Conformance {
    /// Created by our `tools/call` and not yet confirmed by a successful `tasks/get`.
    fresh: HashSet<TaskId>,
    reported: HashSet<(Hint, String)>,
    counts: HashMap<Hint, usize>,
}

impl Conformance {
    fn report(&mut self, hint: Hint, task_id: &str, detail: String) -> Option<Finding> {
        let count = self.counts.entry(hint).or_default();
        if *count >= MAX_PER_HINT || !self.reported.insert((hint, task_id.to_string())) {
            return None;
        }
        *count += 1;
        Some((hint, detail))
    }

    /// A `CreateTaskResult` arrived. `declared`: the server declared the tasks extension.
    pub fn created(&mut self, task_id: &TaskId, era: Era, declared: bool) -> Option<Finding> {
        self.fresh.insert(task_id.clone());
        if era == Era::Modern && !declared {
            let detail = format!(
                "task {} was created, but server/discover did not declare io.modelcontextprotocol/tasks",
                task_id
            );
            return self.report(Hint::DiscoverWithoutExtension, "", detail);
        }
        None
    }

    /// A `tasks/get` found the task: its creation is confirmed.
    pub fn found(&mut self, task_id: &TaskId) {
        self.fresh.remove(task_id);
    }

    /// A `tasks/get` answered "unknown task".
    pub fn not_found(&mut self, task_id: &TaskId) -> Option<Finding> {
        if !self.fresh.remove(task_id) {
            return None;
        }
        let detail = format!(
            "task {}: tasks/get right after CreateTaskResult answered \"not found\"",
            task_id
        );
        self.report(Hint::NonDurableCreate, task_id.as_str(), detail)
    }

    /// A snapshot arrived for a task whose first terminal state was `first`.
    pub fn after_terminal(
        &mut self,
        first: &TaskStatus,
        later: &Task,
        source: UpdateSource,
    ) -> Option<Finding> {
        if &later.status == first {
            return None;
        }
        let detail = format!(
            "task {} was {} and later reported {} (by {})",
            later.task_id,
            first.as_str(),
            later.status.as_str(),
            source.as_str()
        );
        self.report(Hint::TerminalChanged, later.task_id.as_str(), detail)
    }

    /// An input key came back with a different request.
    pub fn key_reused(&mut self, task_id: &TaskId, key: &str) -> Option<Finding> {
        let detail = format!(
            "task {}: input key {key:?} carried a different request",
            task_id
        );
        self.report(Hint::InputKeyReused, task_id.as_str(), detail)
    }

    /// An accepted snapshot. `pushed`: the task is in an acknowledged subscription;
    /// `changed`: the snapshot differs from the last known state.
    pub fn snapshot(
        &mut self,
        task: &Task,
        source: UpdateSource,
        pushed: bool,
        changed: bool,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Vec<Finding> {
        let mut out = Vec::new();
        if !task.status.is_terminal() && task.poll_interval_ms.is_none() {
            let detail = format!(
                "task {} ({}) has no pollIntervalMs",
                task.task_id,
                task.status.as_str()
            );
            out.extend(self.report(Hint::PollIntervalMissing, "", detail));
        }
        let stale_change = task
            .last_updated_at
            .as_deref()
            .and_then(parse_time)
            .is_some_and(|t| (now - t).num_seconds() >= PUSH_GRACE_SECS);
        if source == UpdateSource::Poll && pushed && changed && stale_change {
            let detail = format!(
                "task {} became {} without a notification; a poll found it",
                task.task_id,
                task.status.as_str()
            );
            out.extend(self.report(Hint::PushNotDelivered, task.task_id.as_str(), detail));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task(v: serde_json::Value) -> Task {
        Task::from_wire(&v).unwrap()
    }

    fn now() -> chrono::DateTime<chrono::Utc> {
        "2026-01-01T00:01:00Z".parse().unwrap()
    }

    #[test]
    fn not_found_right_after_create_is_non_durable_creation() {
        let mut c = Conformance::default();
        assert!(c.created(&TaskId::new("t1"), Era::Modern, true).is_none());
        let (hint, detail) = c.not_found(&TaskId::new("t1")).expect("flagged");
        assert_eq!(hint, Hint::NonDurableCreate);
        assert!(detail.contains("not found"), "{detail}");
        // once confirmed, a later not-found is an ordinary expiry
        c.created(&TaskId::new("t2"), Era::Modern, true);
        c.found(&TaskId::new("t2"));
        assert!(c.not_found(&TaskId::new("t2")).is_none());
        // tasks followed from the ledger were never fresh
        assert!(c.not_found(&TaskId::new("old")).is_none());
    }

    #[test]
    fn modern_tasks_without_the_declared_extension_are_flagged_once() {
        let mut c = Conformance::default();
        assert_eq!(
            c.created(&TaskId::new("a"), Era::Modern, false)
                .map(|f| f.0),
            Some(Hint::DiscoverWithoutExtension)
        );
        assert!(
            c.created(&TaskId::new("b"), Era::Modern, false).is_none(),
            "once per server"
        );
        let mut legacy = Conformance::default();
        assert!(
            legacy
                .created(&TaskId::new("a"), Era::Legacy, false)
                .is_none()
        );
    }

    #[test]
    fn a_terminal_state_that_changes_is_flagged_once_per_task() {
        let mut c = Conformance::default();
        let same = task(json!({"taskId":"t","status":"completed"}));
        assert!(
            c.after_terminal(&TaskStatus::Completed, &same, UpdateSource::Poll)
                .is_none()
        );
        let other = task(json!({"taskId":"t","status":"failed"}));
        let f = c.after_terminal(&TaskStatus::Completed, &other, UpdateSource::Push);
        assert_eq!(f.as_ref().map(|f| f.0), Some(Hint::TerminalChanged));
        assert!(f.unwrap().1.contains("completed and later reported failed"));
        assert!(
            c.after_terminal(&TaskStatus::Completed, &other, UpdateSource::Poll)
                .is_none()
        );
    }

    #[test]
    fn missing_poll_interval_is_flagged_for_live_tasks_only() {
        let mut c = Conformance::default();
        let done = task(json!({"taskId":"t","status":"completed"}));
        assert!(
            c.snapshot(&done, UpdateSource::Poll, false, true, now())
                .is_empty()
        );
        let with = task(json!({"taskId":"t","status":"working","pollIntervalMs":500}));
        assert!(
            c.snapshot(&with, UpdateSource::Poll, false, true, now())
                .is_empty()
        );
        let without = task(json!({"taskId":"t","status":"working"}));
        let f = c.snapshot(&without, UpdateSource::Create, false, true, now());
        assert_eq!(f[0].0, Hint::PollIntervalMissing);
    }

    #[test]
    fn a_change_only_polling_saw_on_a_subscribed_task_is_an_undelivered_push() {
        let mut c = Conformance::default();
        let old = task(
            json!({"taskId":"t","status":"input_required","pollIntervalMs":1000,
            "lastUpdatedAt":"2026-01-01T00:00:10Z"}),
        );
        let fresh = task(
            json!({"taskId":"t","status":"input_required","pollIntervalMs":1000,
            "lastUpdatedAt":"2026-01-01T00:00:58Z"}),
        );
        // a just-made change may still be on its way: not flagged
        assert!(
            c.snapshot(&fresh, UpdateSource::Poll, true, true, now())
                .is_empty()
        );
        // unchanged, unsubscribed, or seen by push: not flagged
        assert!(
            c.snapshot(&old, UpdateSource::Poll, true, false, now())
                .is_empty()
        );
        assert!(
            c.snapshot(&old, UpdateSource::Poll, false, true, now())
                .is_empty()
        );
        assert!(
            c.snapshot(&old, UpdateSource::Push, true, true, now())
                .is_empty()
        );
        let f = c.snapshot(&old, UpdateSource::Poll, true, true, now());
        assert_eq!(f[0].0, Hint::PushNotDelivered);
    }

    #[test]
    fn reports_per_hint_are_capped() {
        let mut c = Conformance::default();
        let n = (0..MAX_PER_HINT + 5)
            .filter(|i| c.key_reused(&TaskId::new(&format!("t{i}")), "k").is_some())
            .count();
        assert_eq!(n, MAX_PER_HINT);
    }
}
