//! One followed task as the dashboard knows it (`TaskRow`): last snapshot, tool, progress,
//! pending input keys, and the "answer sent" / "cancel requested" marks, with the
//! invariants first-terminal-wins and input-key dedup. Must not do I/O.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::TaskKey;
use super::progress;
use super::time::{Now, plus_millis};
use crate::engine::Tombstone;
use crate::engine::UpdateSource;
use crate::mcp::{InputRequest, Task, TaskId, TaskStatus, Verdict};
use crate::state::widths;

/// "Answer sent" until the server moves on.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerMark {
    /// The answered requests, restored to pending if the engine reports failure.
    pub requests: BTreeMap<String, InputRequest>,
    /// Acknowledged by the server (`AnswerSent`).
    pub acked: bool,
    /// Status and input keys when the answer left; a snapshot differing from this clears it.
    pub baseline_status: Option<TaskStatus>,
    pub baseline_keys: BTreeSet<String>,
}

/// "Cancel requested" until the task is terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CancelMark {
    pub acked: bool,
}

/// What the row says about the task's state, beyond its raw status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// No snapshot yet.
    Unknown,
    Live(TaskStatus),
    /// Cancel sent (`acked` once the server acknowledged it), task not terminal yet.
    CancelRequested {
        acked: bool,
    },
    Done(TaskStatus),
    /// Completed, but the result says `isError: true`: the tool failed.
    ToolError,
    /// A cancel was requested but the task ended otherwise.
    EndedAnyway(TaskStatus),
    /// A tombstone: the server no longer knows the task, or dropped its session.
    Gone(Tombstone),
}

/// A row's text from the server, made display-safe once, when the facts it comes from
/// arrive (`TaskRow::refresh_text`): the table draws it every frame.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RowText {
    /// The task id's first characters.
    pub id: String,
    /// The tool's name (`?` while unknown).
    pub tool: String,
    /// Why the task failed (`failure_reason`).
    pub reason: Option<String>,
    /// Its status message, else the first line of its text result.
    pub message: Option<String>,
}

/// One task row.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRow {
    pub key: TaskKey,
    /// The tool as the server named it (what a re-run calls); shown as `text.tool`.
    pub tool: Option<String>,
    /// Boxed, as the answer mark: the table holds every task, and these are large and
    /// absent from most rows (a resumed finished task's stay in the ledger).
    pub arguments: Option<Box<Value>>,
    pub recorded_at: Option<Now>,
    pub parent_task: Option<TaskId>,
    pub task: Option<Task>,
    /// `createdAt` parsed (or when we first recorded it).
    pub created: Option<Now>,
    /// When we last received a snapshot.
    pub seen_at: Option<Now>,
    pub last_source: Option<UpdateSource>,
    pub latency_ms: Option<u64>,
    /// Numeric progress reported by the engine.
    pub reported: Option<(f64, Option<f64>)>,
    /// Fraction stated by the status message.
    pub message_fraction: Option<f64>,
    /// Input requests waiting for the user, by key.
    pub pending: BTreeMap<String, InputRequest>,
    /// Keys the user has answered (never prompted again).
    pub answered: BTreeSet<String>,
    /// Keys the server reused for a different request.
    pub reused: BTreeSet<String>,
    pub answer: Option<Box<AnswerMark>>,
    pub cancel: Option<CancelMark>,
    pub expired: bool,
    /// Why the tombstone ended (with `expired`).
    pub end: Option<Tombstone>,
    /// The client that started the task, when it was not taskrail (a proxied agent host).
    pub started_by: Option<String>,
    /// Who asked to cancel it, a host that stopped waiting (from the ledger).
    pub note: Option<Box<crate::engine::TaskNote>>,
    /// Resumed finished: its arguments, result (unless a tool error) and error data are in
    /// the ledger only, until loaded (`payload`).
    pub payload_in_ledger: bool,
    /// The ledger no longer has it (pruned by another process): shown nowhere.
    pub removed: bool,
    /// The text the table shows, display-safe.
    pub text: RowText,
}

impl TaskRow {
    pub fn new(key: TaskKey) -> TaskRow {
        TaskRow {
            key,
            tool: None,
            arguments: None,
            recorded_at: None,
            parent_task: None,
            task: None,
            created: None,
            seen_at: None,
            last_source: None,
            latency_ms: None,
            reported: None,
            message_fraction: None,
            pending: BTreeMap::new(),
            answered: BTreeSet::new(),
            reused: BTreeSet::new(),
            answer: None,
            cancel: None,
            expired: false,
            end: None,
            started_by: None,
            note: None,
            payload_in_ledger: false,
            removed: false,
            text: RowText::default(),
        }
        .with_text()
    }

    fn with_text(mut self) -> TaskRow {
        self.refresh_text();
        self
    }

    /// Make the row's text display-safe again after its tool or its snapshot changed.
    pub fn refresh_text(&mut self) {
        let tool = self.tool.as_deref().unwrap_or("?");
        let message = self
            .task
            .as_ref()
            .and_then(|t| t.status_message.as_deref())
            .map(|m| crate::sanitize::sanitize_line(m, widths::STATUS_MESSAGE))
            .or_else(|| self.result_line());
        self.text = RowText {
            id: crate::sanitize::sanitize_line(&self.short_id(), widths::SHORT_ID),
            tool: crate::sanitize::sanitize_line(tool, widths::TOOL_NAME),
            reason: self.failure_reason(),
            message,
        };
    }

    pub fn status(&self) -> Option<&TaskStatus> {
        self.task.as_ref().map(|t| &t.status)
    }

    pub fn is_terminal(&self) -> bool {
        self.status().is_some_and(TaskStatus::is_terminal)
    }

    /// Finished, or a tombstone: nothing more will happen to it.
    pub fn is_over(&self) -> bool {
        crate::mcp::is_finished(self.task.as_ref(), self.expired)
    }

    /// How it ended (`None` while it runs).
    pub fn outcome(&self) -> Option<crate::mcp::Outcome> {
        crate::mcp::outcome(self.task.as_ref(), self.expired)
    }

    /// Ended with a result that has `isError: true` ([`crate::mcp::outcome`]).
    pub fn tool_error(&self) -> bool {
        self.outcome() == Some(crate::mcp::Outcome::ToolError)
    }

    /// Why the task failed, in one sanitized line: the JSON-RPC error (message and
    /// code), else the text of an `isError` result, else the status message. `None` for a
    /// task that did not fail.
    pub fn failure_reason(&self) -> Option<String> {
        let t = self.task.as_ref()?;
        let errored = t.result_is_error();
        if t.status != TaskStatus::Failed && !self.tool_error() {
            return None;
        }
        if let Some(e) = &t.error {
            let msg = if e.message.trim().is_empty() {
                "no message"
            } else {
                e.message.as_str()
            };
            return Some(crate::sanitize::sanitize_line(
                &format!("{msg} (error {})", e.code),
                widths::REASON,
            ));
        }
        let text = errored
            .then_some(t.result.as_ref())
            .flatten()
            .and_then(|r| r.get("content"))
            .and_then(Value::as_array)
            .and_then(|blocks| {
                blocks
                    .iter()
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .find(|s| !s.trim().is_empty())
            });
        text.or(t.status_message.as_deref())
            .map(|s| crate::sanitize::sanitize_line(s.trim(), widths::REASON))
            .or_else(|| Some("the server gave no reason".to_string()))
    }

    /// The first non-empty line of a completed task's text result (its first text
    /// block with any), sanitized; `None` for other tasks, or a result with no text (or
    /// one held in the ledger only).
    pub fn result_line(&self) -> Option<String> {
        let t = self.task.as_ref()?;
        if t.status != TaskStatus::Completed || self.tool_error() {
            return None;
        }
        t.result
            .as_ref()?
            .get("content")?
            .as_array()?
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .flat_map(str::lines)
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(|l| crate::sanitize::sanitize_line(l, widths::REASON))
    }

    /// What people and hosts did about the task, in one line: who asked for its cancel, or
    /// a host that stopped waiting while it runs on.
    pub fn note_line(&self) -> Option<String> {
        let note = self.note.as_deref()?;
        if let Some(by) = note.cancel_by.as_deref().filter(|_| self.cancel.is_some()) {
            return Some(format!("cancel asked by {by}"));
        }
        let host = note.host.as_deref()?;
        Some(if self.is_over() {
            host.to_string()
        } else {
            format!("{host}; still running")
        })
    }

    /// Whether the user has something to answer.
    pub fn needs_input(&self) -> bool {
        // An `input_required` snapshot listing no request at all still wants the user (a
        // legacy request not fetched yet); one whose requests are all answered does not.
        let unlisted = self
            .task
            .as_ref()
            .is_some_and(|t| t.input_requests.is_empty());
        !self.is_over()
            && (!self.pending.is_empty()
                || (self.status() == Some(&TaskStatus::InputRequired)
                    && self.answer.is_none()
                    && unlisted))
    }

    pub fn phase(&self) -> Phase {
        if self.expired && !self.is_terminal() {
            return Phase::Gone(self.end.unwrap_or(Tombstone::Expired));
        }
        match (&self.task, self.cancel) {
            (None, Some(c)) => Phase::CancelRequested { acked: c.acked },
            (None, None) => Phase::Unknown,
            (Some(_), _) if self.tool_error() => Phase::ToolError,
            (Some(t), Some(_)) if t.status.is_terminal() && t.status != TaskStatus::Cancelled => {
                Phase::EndedAnyway(t.status.clone())
            }
            (Some(t), _) if t.status.is_terminal() => Phase::Done(t.status.clone()),
            (Some(_), Some(c)) => Phase::CancelRequested { acked: c.acked },
            (Some(t), _) => Phase::Live(t.status.clone()),
        }
    }

    /// Fold in a snapshot under `mcp::judge` (the first terminal snapshot wins; a terminal
    /// snapshot may still gain its payload). Returns false when it changed nothing.
    pub fn apply_snapshot(
        &mut self,
        task: Task,
        pending: &[String],
        source: Option<UpdateSource>,
        latency_ms: Option<u64>,
        now: Now,
    ) -> bool {
        match crate::mcp::judge(self.task.as_ref(), self.expired, &task) {
            Verdict::Accept => {}
            Verdict::Payload => {
                if let Some(known) = self.task.as_mut() {
                    known.result = task.result;
                    known.error = task.error;
                }
                self.refresh_text();
                return true;
            }
            Verdict::AfterTerminal | Verdict::Stale => return false,
        }
        self.seen_at = Some(now);
        if source.is_some() {
            self.last_source = source;
        }
        if latency_ms.is_some() {
            self.latency_ms = latency_ms;
        }
        if let Some(c) = task.created_at.as_deref().and_then(crate::mcp::parse_time) {
            self.created = Some(c);
        }
        // A completed task is done whatever its message says (see `fraction`).
        self.message_fraction = match task.status {
            TaskStatus::Completed => None,
            _ => task
                .status_message
                .as_deref()
                .and_then(progress::fraction_from_message),
        };
        if let Some(mark) = &self.answer {
            let keys: BTreeSet<String> = task.input_requests.keys().cloned().collect();
            if mark.baseline_status.as_ref() != Some(&task.status) || mark.baseline_keys != keys {
                self.answer = None;
            }
        }
        self.task = Some(task);
        self.set_pending(pending);
        self.refresh_text();
        true
    }

    /// Mirror the engine's list of keys still waiting for an answer (keys answered here
    /// and not yet acknowledged stay hidden).
    pub fn set_pending(&mut self, pending: &[String]) {
        self.pending.clear();
        if self.is_over() {
            return;
        }
        let Some(task) = &self.task else { return };
        for k in pending {
            if self.answered.contains(k) || self.reused.contains(k) {
                continue;
            }
            if let Some(req) = task.input_requests.get(k) {
                self.pending.insert(k.clone(), req.clone());
            }
        }
    }

    /// Record an input request once per key; answered and reused keys are never re-offered.
    /// Returns whether it was new.
    pub fn offer_input(&mut self, key: &str, request: InputRequest) -> bool {
        if self.is_terminal() || self.answered.contains(key) || self.reused.contains(key) {
            return false;
        }
        match self.pending.get(key) {
            Some(existing) if existing.fingerprint() != request.fingerprint() => {
                self.pending.remove(key);
                self.reused.insert(key.to_string());
                false
            }
            Some(_) => false,
            // A server rotating through thousands of keys cannot grow the row.
            None if self.pending.len() >= crate::mcp::MAX_INPUT_REQUESTS => false,
            None => {
                self.pending.insert(key.to_string(), request);
                true
            }
        }
    }

    /// The best known completion fraction.
    pub fn fraction(&self) -> Option<f64> {
        if self.status() == Some(&TaskStatus::Completed) {
            return Some(1.0);
        }
        self.reported
            .and_then(|(p, t)| progress::fraction(p, t))
            .or(self.message_fraction)
    }

    /// `createdAt + ttlMs`, when both are known.
    pub fn expires_at(&self) -> Option<Now> {
        let ttl = self.task.as_ref()?.ttl_ms?;
        plus_millis(self.created?, ttl)
    }

    /// First eight characters of the id: ids are bearer secrets.
    pub fn short_id(&self) -> String {
        self.key.task_id.prefix()
    }
}
