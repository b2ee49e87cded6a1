//! The proxy's mirror of its engine: the last state of every task that passed through it
//! (one watch channel per task, which host-side waiters follow), the outcome of each
//! record request, and the outcomes of answers and cancels.
//!
//! Owns nothing about a task: the engine decides every fact, the board only keeps what it
//! last reported. Must not send requests.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::{broadcast, oneshot, watch};

use crate::engine::{CallResult, EngineEvent, Failure, NoticeLevel, TaskId};
use crate::ledger::Tombstone;
use crate::mcp::Task;

/// What the engine last said about one task.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskView {
    pub task: Option<Task>,
    /// Input keys still waiting for an answer.
    pub pending: Vec<String>,
    /// The task ended without a terminal state.
    pub end: Option<Tombstone>,
    /// A cancel was requested (`Some(false)`) or acknowledged (`Some(true)`), by anyone.
    pub cancel: Option<bool>,
}

impl TaskView {
    /// Finished: terminal or a tombstone.
    pub fn finished(&self) -> bool {
        crate::mcp::is_finished(self.task.as_ref(), self.end.is_some())
    }
}

/// How an answer or a cancel of a task ended.
#[derive(Debug, Clone)]
pub enum Ack {
    Answer {
        task_id: TaskId,
        keys: Vec<String>,
        result: Result<(), Failure>,
    },
    Cancel {
        task_id: TaskId,
        result: Result<(), Failure>,
    },
}

/// Views kept before finished ones nobody watches are dropped.
const MAX_VIEWS: usize = 4096;

pub struct Board {
    views: Mutex<HashMap<TaskId, watch::Sender<TaskView>>>,
    calls: Mutex<HashMap<u64, oneshot::Sender<CallResult>>>,
    acks: broadcast::Sender<Ack>,
    /// Why the upstream is unreachable, while it is.
    trouble: watch::Sender<Option<String>>,
    /// Set while the upstream wants a signed-in user: what to tell a host (no wait helps).
    sign_in: watch::Sender<Option<String>>,
}

impl Default for Board {
    fn default() -> Self {
        Self {
            views: Mutex::new(HashMap::new()),
            calls: Mutex::new(HashMap::new()),
            acks: broadcast::channel(256).0,
            trouble: watch::channel(None).0,
            sign_in: watch::channel(None).0,
        }
    }
}

impl Board {
    /// Follow a task's view (`None`: the task never passed through this proxy).
    pub fn watch(&self, task_id: &TaskId) -> Option<watch::Receiver<TaskView>> {
        let views = self.views.lock().unwrap_or_else(|e| e.into_inner());
        views.get(task_id).map(watch::Sender::subscribe)
    }

    /// [`Board::watch`], waiting up to `limit` for a task the engine was just asked to
    /// follow to show up.
    pub async fn watch_soon(
        &self,
        task_id: &TaskId,
        limit: std::time::Duration,
    ) -> Option<watch::Receiver<TaskView>> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            if let Some(rx) = self.watch(task_id) {
                return Some(rx);
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
    }

    pub fn view(&self, task_id: &TaskId) -> Option<TaskView> {
        let views = self.views.lock().unwrap_or_else(|e| e.into_inner());
        views.get(task_id).map(|v| v.borrow().clone())
    }

    /// Every task not finished yet.
    pub fn live(&self) -> Vec<TaskId> {
        let views = self.views.lock().unwrap_or_else(|e| e.into_inner());
        views
            .iter()
            .filter(|(_, v)| !v.borrow().finished())
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// The `CallFinished` of `call_id`, when it comes (ask before sending the command).
    pub fn expect_call(&self, call_id: u64) -> oneshot::Receiver<CallResult> {
        let (tx, rx) = oneshot::channel();
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(call_id, tx);
        rx
    }

    pub fn forget_call(&self, call_id: u64) {
        self.calls
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&call_id);
    }

    /// Answer and cancel outcomes from now on (subscribe before sending the command).
    pub fn acks(&self) -> broadcast::Receiver<Ack> {
        self.acks.subscribe()
    }

    /// Why the upstream cannot be reached, if it cannot.
    pub fn trouble(&self) -> Option<String> {
        self.trouble.borrow().clone()
    }

    /// Whether (and why) the upstream wants a sign-in, from now on.
    pub fn sign_in(&self) -> watch::Receiver<Option<String>> {
        self.sign_in.subscribe()
    }

    fn update(&self, task_id: &TaskId, f: impl FnOnce(&mut TaskView)) {
        let mut views = self.views.lock().unwrap_or_else(|e| e.into_inner());
        if !views.contains_key(task_id) && views.len() >= MAX_VIEWS {
            views.retain(|_, v| v.receiver_count() > 0 || !v.borrow().finished());
        }
        let view = views
            .entry(task_id.clone())
            .or_insert_with(|| watch::channel(TaskView::default()).0);
        view.send_modify(f);
    }

    /// Fold one engine event in.
    pub fn apply(&self, ev: EngineEvent) {
        match ev {
            EngineEvent::TasksResumed { server, tasks, .. } => {
                for task in tasks {
                    self.apply(EngineEvent::TaskKnown {
                        server: server.clone(),
                        task,
                    });
                }
            }
            EngineEvent::TaskKnown { task, .. } => self.update(&task.task_id, |v| {
                if v.task.is_none() {
                    v.task = task.last;
                    v.pending = task.pending;
                }
                v.end = v.end.or(task.end);
                v.cancel = v.cancel.or(task.cancel);
            }),
            EngineEvent::TaskUpdated { task, pending, .. } => {
                let id = task.task_id.clone();
                self.update(&id, |v| {
                    v.task = Some(task);
                    v.pending = pending;
                });
            }
            EngineEvent::TaskExpired { task_id, why, .. } => {
                self.update(&task_id, |v| v.end = Some(why))
            }
            EngineEvent::CancelSent { task_id, acked, .. } => {
                self.update(&task_id, |v| {
                    v.cancel = Some(acked || v.cancel == Some(true));
                });
                if acked {
                    let _ = self.acks.send(Ack::Cancel {
                        task_id,
                        result: Ok(()),
                    });
                }
            }
            EngineEvent::CancelFailed { task_id, error, .. } => {
                let _ = self.acks.send(Ack::Cancel {
                    task_id,
                    result: Err(error),
                });
            }
            EngineEvent::AnswerSent { task_id, keys, .. } => {
                // Answered keys are pending no more (the next snapshot may lag behind).
                self.update(&task_id, |v| v.pending.retain(|k| !keys.contains(k)));
                let _ = self.acks.send(Ack::Answer {
                    task_id,
                    keys,
                    result: Ok(()),
                });
            }
            EngineEvent::AnswerFailed {
                task_id,
                keys,
                error,
                ..
            } => {
                let _ = self.acks.send(Ack::Answer {
                    task_id,
                    keys,
                    result: Err(error),
                });
            }
            EngineEvent::CallFinished {
                call_id, result, ..
            } => {
                let waiter = self
                    .calls
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&call_id);
                if let Some(w) = waiter {
                    let _ = w.send(result);
                }
            }
            EngineEvent::ServerConnected { .. } => {
                self.trouble.send_replace(None);
                self.sign_in.send_replace(None);
            }
            // A lapsed sign-in renewed on a connection that stayed up.
            EngineEvent::SignedIn { .. } => {
                self.sign_in.send_replace(None);
            }
            EngineEvent::SignInRequired { server, reason } => {
                let why = sign_in_text(server.as_str(), &reason);
                tracing::warn!("{why}");
                self.trouble.send_replace(Some(why.clone()));
                self.sign_in.send_replace(Some(why));
            }
            EngineEvent::ServerDegraded { reason, .. } => {
                self.trouble
                    .send_replace(Some(crate::sanitize::sanitize_line(&reason, 300)));
            }
            EngineEvent::Notice { level, text, .. } => match level {
                NoticeLevel::Error => tracing::warn!("{text}"),
                _ => tracing::info!("{text}"),
            },
            _ => {}
        }
    }
}

/// What a host is told while the upstream `server` wants a signed-in user: why, and the
/// exact command that signs in (the server as it was given, shown safely and quoted for a
/// shell).
pub fn sign_in_text(server: &str, reason: &str) -> String {
    let shown = crate::sanitize::sanitize_line(server, 400);
    let command = format!(
        "taskrail auth login {}",
        shlex::try_quote(&shown).unwrap_or_default()
    );
    format!(
        "the upstream server {shown} wants a signed-in user ({}); sign in with: {command} \
         (in a shell; this proxy connects by itself once the sign-in is stored)",
        crate::sanitize::sanitize_line(reason, 300),
    )
}

/// The first acknowledgement `pick` recognises, within `limit`.
pub async fn wait_ack(
    acks: &mut broadcast::Receiver<Ack>,
    limit: std::time::Duration,
    pick: impl Fn(&Ack) -> Option<Result<(), Failure>>,
) -> Result<(), Failure> {
    let wait = async {
        loop {
            match acks.recv().await {
                Ok(a) => {
                    if let Some(r) = pick(&a) {
                        return r;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(_) => return Err(Failure::Failed("the proxy is stopping".into())),
            }
        }
    };
    tokio::time::timeout(limit, wait)
        .await
        .unwrap_or_else(|_| Err(Failure::Failed("not acknowledged in time".into())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{ServerId, UpdateSource};
    use serde_json::json;

    fn snap(status: &str) -> Task {
        Task::from_wire(&json!({"taskId": "t1", "status": status})).unwrap()
    }

    #[test]
    fn views_follow_the_engine() {
        let board = Board::default();
        let id = TaskId::new("t1");
        assert!(board.watch(&id).is_none());
        board.apply(EngineEvent::snapshot(
            ServerId::named("s"),
            snap("working"),
            UpdateSource::Create,
            None,
        ));
        let mut rx = board.watch(&id).unwrap();
        assert!(!rx.borrow_and_update().finished());
        board.apply(EngineEvent::CancelSent {
            server: ServerId::named("s"),
            task_id: id.clone(),
            acked: false,
        });
        assert_eq!(board.view(&id).unwrap().cancel, Some(false));
        board.apply(EngineEvent::snapshot(
            ServerId::named("s"),
            snap("cancelled"),
            UpdateSource::Poll,
            None,
        ));
        assert!(rx.has_changed().unwrap());
        assert!(board.view(&id).unwrap().finished());
    }

    #[test]
    fn the_sign_in_text_names_a_command_a_shell_runs() {
        let plain = sign_in_text("https://mcp.example.com/mcp", "no token");
        assert!(
            plain.contains("sign in with: taskrail auth login https://mcp.example.com/mcp "),
            "{plain}"
        );
        let odd = sign_in_text("http://h/mcp?a=1&b=$(rm -rf ~)\u{1b}[2J", "x\u{7}");
        assert!(
            odd.contains("taskrail auth login 'http://h/mcp?a=1&b=$(rm -rf ~)"),
            "{odd}"
        );
        assert!(!odd.chars().any(|c| c.is_control()), "{odd:?}");
    }

    #[tokio::test]
    async fn call_waiters_and_acks() {
        let board = Board::default();
        let rx = board.expect_call(7);
        let mut acks = board.acks();
        board.apply(EngineEvent::CallFinished {
            server: ServerId::named("s"),
            call_id: 7,
            tool: "x".into(),
            result: CallResult::Task {
                task_id: TaskId::new("t1"),
                stored: true,
            },
        });
        assert!(matches!(
            rx.await.unwrap(),
            CallResult::Task { stored: true, .. }
        ));
        board.apply(EngineEvent::AnswerFailed {
            server: ServerId::named("s"),
            task_id: TaskId::new("t1"),
            keys: vec!["k".into()],
            error: Failure::Gone("gone".into()),
        });
        assert!(matches!(
            acks.recv().await.unwrap(),
            Ack::Answer { result: Err(_), .. }
        ));
    }
}
