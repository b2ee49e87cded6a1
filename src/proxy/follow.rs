//! A task followed to its end for a host that waits for it (a blocking `tools/call`, or a
//! v1 `tasks/result`): the engine's view of the task is watched, its status message goes
//! to the host as `notifications/progress` (when the host gave a progress token) at least
//! every few seconds, its input requests go to the host when it can answer them, and the
//! first terminal state — or a cancel acknowledged, from the host or the dashboard — ends
//! the wait.
//!
//! Must not decide anything about the task: the engine's view is the only source.

use std::time::Duration;

use serde_json::{Value, json};

use super::board::TaskView;
use super::era::{self, Outcome};
use super::host::Ctx;
use super::input::Asks;
use super::rpc_error;
use crate::engine::{CancelBy, EngineCommand};
use crate::mcp::{TaskId, TaskStatus};

/// A waiting host hears of its task at least this often (hosts whose timeouts reset on
/// progress ask for one at least every 10 s).
const HEARTBEAT: Duration = Duration::from_secs(5);

/// How long a terminal task's payload may take to arrive before the host is answered
/// without it.
const PAYLOAD_WAIT: Duration = Duration::from_secs(30);

/// `notifications/progress` for the host's token, counting up from where forwarded
/// progress left off.
struct Progress {
    token: Option<Value>,
    value: f64,
    said: Option<String>,
}

impl Progress {
    async fn send(&mut self, ctx: &Ctx, message: String) {
        let Some(token) = &self.token else { return };
        self.value = self.value.floor() + 1.0;
        let note = json!({
            "jsonrpc": "2.0",
            "method": "notifications/progress",
            "params": { "progressToken": token, "progress": self.value, "message": message },
        });
        let _ = ctx.out.send(note).await;
        self.said = Some(message);
    }

    /// Tell the host when the status says something new.
    async fn status(&mut self, ctx: &Ctx, view: &TaskView) {
        let Some(task) = &view.task else { return };
        let message = match (&task.status_message, &task.status) {
            (Some(m), _) => crate::sanitize::sanitize_line(m, 500),
            (None, TaskStatus::InputRequired) => "waiting for input".into(),
            (None, s) => s.as_str().to_string(),
        };
        if self.said.as_ref() != Some(&message) {
            self.send(ctx, message).await;
        }
    }

    async fn beat(&mut self, ctx: &Ctx) {
        let message = self.said.clone().unwrap_or_else(|| "working".into());
        self.send(ctx, message).await;
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// How a wait ended (`None` from [`to_end`]: the host cancelled it).
pub enum Waited {
    /// The task ended: what the host gets.
    Ended(Outcome),
    /// A 2026-07-28 host is asked for the task's input (an `input_required` result).
    Asked(Value),
    /// The task still runs at the deadline given.
    Running(TaskView),
}

/// How long a task the proxy starts following may take to show up.
const VIEW_WAIT: Duration = Duration::from_secs(10);

/// Wait for the task's end. `related`: a v1 host's `tasks/result` (input requests sent to
/// the host name the task). `progress_from`: the last progress value the host was already
/// sent. `answer_by`: when to stop waiting for a task still running. `None`: the host
/// cancelled — the task was sent `tasks/cancel` unless the host only gave up waiting (its
/// timeout) or this is a `tasks/result` (whose cancel abandons its wait only).
pub async fn to_end(
    ctx: &Ctx,
    task_id: &TaskId,
    related: bool,
    progress_from: f64,
    answer_by: Option<tokio::time::Instant>,
) -> Option<Waited> {
    let Some(mut rx) = ctx.proxy.board.watch_soon(task_id, VIEW_WAIT).await else {
        return Some(Waited::Ended(Outcome::Error(rpc_error(
            -32603,
            "the task is not followed here",
        ))));
    };
    let mut progress = Progress {
        token: ctx.progress_token(),
        value: progress_from,
        said: None,
    };
    let mut asks = Asks::new(related.then(|| task_id.clone()));
    let mut beat = tokio::time::interval_at(tokio::time::Instant::now() + HEARTBEAT, HEARTBEAT);
    let mut payload_due = None;
    loop {
        let view = rx.borrow_and_update().clone();
        let ended = match (&view.end, &view.task) {
            (Some(why), _) => Some(era::tombstone(*why)),
            (None, Some(task)) => era::outcome(task),
            (None, None) => None,
        }
        .or_else(|| {
            (view.cancel == Some(true))
                .then(|| Outcome::Result(era::unfinished("The task was cancelled.")))
        });
        if let Some(outcome) = ended {
            asks.withdraw_all(ctx, "the task has ended").await;
            return Some(Waited::Ended(outcome));
        }
        if view.task.as_ref().is_some_and(|t| t.status.is_terminal()) && payload_due.is_none() {
            payload_due = Some(tokio::time::Instant::now() + PAYLOAD_WAIT);
        }
        if !related
            && ctx.era == super::era::HostEra::Modern
            && let Some(ask) = super::input::ask_modern(ctx, &view, task_id)
        {
            return Some(Waited::Asked(ask));
        }
        asks.sync(ctx, &view).await;
        progress.status(ctx, &view).await;
        tokio::select! {
            changed = rx.changed() => {
                if changed.is_err() {
                    return Some(Waited::Ended(Outcome::Error(rpc_error(-32603, "the proxy is stopping"))));
                }
            }
            _ = beat.tick() => progress.beat(ctx).await,
            Some((key, answer)) = asks.next(), if !asks.is_empty() => {
                if let Ok(response) = answer {
                    let responses = [(key, response)].into_iter().collect();
                    ctx.proxy.command(EngineCommand::Answer {
                        server: ctx.proxy.server.clone(),
                        task_id: task_id.clone(),
                        responses,
                    }).await;
                }
            }
            _ = ctx.cancel.cancelled() => {
                asks.withdraw_all(ctx, "the call was cancelled").await;
                if !related && !ctx.why.gave_up() {
                    let host = super::attach::host_name(ctx);
                    ctx.proxy.command(EngineCommand::Cancel {
                        server: ctx.proxy.server.clone(),
                        task_id: task_id.clone(),
                        by: CancelBy::host(Some(&host), ctx.why.reason()),
                    }).await;
                }
                return None;
            }
            _ = sleep_until(answer_by) => {
                asks.withdraw_all(ctx, "the call was answered: still running").await;
                return Some(Waited::Running(view));
            }
            _ = sleep_until(payload_due) => {
                asks.withdraw_all(ctx, "the task has ended").await;
                let task = view.task.as_ref()?;
                return Some(Waited::Ended(era::payload_missing(task)));
            }
        }
    }
}
