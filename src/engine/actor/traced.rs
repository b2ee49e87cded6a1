//! What the actor reports, told to `telemetry` too: a task's span hears of its status
//! changes, input rounds, answers, cancels and end; a task this process did not start
//! continues the trace kept in its ledger timeline.
//!
//! Must not block: with export off every call returns at once; the one ledger read (a
//! resumed task's timeline) happens only when export is on.

use super::*;
use crate::telemetry;

impl ServerActor {
    /// Tell the task spans about `ev`.
    pub(super) async fn trace(&self, ev: &EngineEvent) {
        if !telemetry::enabled() {
            return;
        }
        match ev {
            EngineEvent::TaskKnown { task, .. } => self.trace_known(task).await,
            EngineEvent::TaskUpdated { task, source, .. } => {
                telemetry::task_updated(task, *source == UpdateSource::Push)
            }
            EngineEvent::InputRequested { task_id, .. } => {
                telemetry::task_event(task_id, "input_requested")
            }
            EngineEvent::AnswerSent { task_id, .. } => {
                telemetry::task_event(task_id, "input_answered")
            }
            EngineEvent::CancelSent { task_id, acked, .. } => telemetry::task_event(
                task_id,
                if *acked {
                    "cancel_acknowledged"
                } else {
                    "cancel_requested"
                },
            ),
            EngineEvent::TaskExpired { task_id, why, .. } => {
                let why = match why {
                    crate::ledger::Tombstone::Expired => "expired",
                    crate::ledger::Tombstone::SessionLost => "session_lost",
                    crate::ledger::Tombstone::ProxyLost => "proxy_lost",
                };
                telemetry::task_ended(task_id, why)
            }
            _ => {}
        }
    }

    /// A task followed here: its span if this process made it, else the stored trace
    /// continued (unfinished tasks only: a finished one has nothing more to say).
    async fn trace_known(&self, task: &KnownTask) {
        let id = &task.task_id;
        if !telemetry::task_known(id, task.started_by.as_deref()) {
            return;
        }
        let finished =
            task.end.is_some() || task.last.as_ref().is_some_and(|t| t.status.is_terminal());
        if finished {
            return;
        }
        // Read directly (a failure only means a new trace): `ledger()` reports failures
        // through `emit`, which comes back here.
        let read = self
            .ledger
            .as_deref()
            .map(|l| l.timeline(&self.spec.id, id));
        let timeline = match read {
            Some(op) => op.await.unwrap_or_default(),
            None => Vec::new(),
        };
        let stored = timeline
            .into_iter()
            .rev()
            .find(|e| e.kind == EventKind::Trace)
            .map(|e| e.detail);
        telemetry::task_resumed(
            id,
            &self.spec.endpoint,
            task.tool.as_deref(),
            task.started_by.as_deref(),
            stored.as_ref(),
        );
    }

    /// Keep the trace context of a task this process created in its ledger timeline.
    pub(super) fn keep_trace_context(&self, task_id: &TaskId) {
        let Some(cx) = telemetry::task_context(task_id) else {
            return;
        };
        let (server, id) = (self.id(), task_id.clone());
        self.ledger_queue(move |l| l.record_event(&server, &id, EventKind::Trace, None, &cx));
    }
}
