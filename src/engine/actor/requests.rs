//! The follower's `tasks/get` requests in flight, each a task of one `JoinSet`: the number in
//! flight is the set's length, so a request that panics or is aborted frees its own slot and
//! names its task, which is then polled again. Must not decide anything about the task: the
//! actor acts on what comes back.

use std::collections::HashMap;
use std::future::Future;

use tokio::task::{Id, JoinSet};

use crate::engine::api::UpdateSource;
use crate::ids::TaskId;
use crate::mcp::{McpError, Task};

/// What one `tasks/get` brought back.
pub(super) struct Polled {
    pub task_id: TaskId,
    /// The actor's sequence number when the request went out.
    pub observed: u64,
    pub result: Result<Task, McpError>,
    pub latency_ms: u64,
    pub source: UpdateSource,
}

/// A request that ended: with its reply, or without one (it panicked or was aborted).
pub(super) enum Joined {
    Replied(Polled),
    Lost { task_id: TaskId, why: &'static str },
}

/// The requests in flight.
#[derive(Default)]
pub(super) struct Requests {
    set: JoinSet<Polled>,
    tasks: HashMap<Id, TaskId>,
}

impl Requests {
    /// How many are in flight.
    pub fn len(&self) -> usize {
        self.set.len()
    }

    /// Start `request` for `task_id`.
    pub fn spawn(
        &mut self,
        task_id: TaskId,
        request: impl Future<Output = Polled> + Send + 'static,
    ) {
        let handle = self.set.spawn(request);
        self.tasks.insert(handle.id(), task_id);
    }

    /// The next request to end; `None` at once when none is in flight.
    pub async fn next(&mut self) -> Option<Joined> {
        let joined = self.set.join_next_with_id().await?;
        Some(match joined {
            Ok((id, polled)) => {
                self.tasks.remove(&id);
                Joined::Replied(polled)
            }
            Err(e) => {
                let why = if e.is_panic() {
                    "panicked"
                } else {
                    "was stopped"
                };
                let task_id = self.tasks.remove(&e.id())?;
                Joined::Lost { task_id, why }
            }
        })
    }

    /// Stop every request in flight (the actor is shutting down).
    pub fn abort_all(&mut self) {
        self.set.abort_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn polled(id: &TaskId) -> Polled {
        Polled {
            task_id: id.clone(),
            observed: 1,
            result: Err(McpError::SessionLost),
            latency_ms: 3,
            source: UpdateSource::Poll,
        }
    }

    #[tokio::test]
    async fn a_request_that_panics_frees_its_slot_and_names_its_task() {
        let mut requests = Requests::default();
        let ok = TaskId::new("task-ok");
        let bad = TaskId::new("task-bad");
        let id = ok.clone();
        requests.spawn(ok.clone(), async move { polled(&id) });
        requests.spawn(bad.clone(), async move { panic!("a transport bug") });
        assert_eq!(requests.len(), 2);
        let mut replied = Vec::new();
        let mut lost = Vec::new();
        while let Some(joined) = requests.next().await {
            match joined {
                Joined::Replied(p) => replied.push(p.task_id),
                Joined::Lost { task_id, why } => lost.push((task_id, why)),
            }
        }
        assert_eq!(replied, vec![ok]);
        assert_eq!(lost, vec![(bad, "panicked")]);
        assert_eq!(requests.len(), 0);
        assert!(requests.next().await.is_none());
    }

    #[tokio::test]
    async fn an_aborted_request_is_reported_as_stopped() {
        let mut requests = Requests::default();
        let id = TaskId::new("task-slow");
        requests.spawn(id.clone(), std::future::pending());
        requests.abort_all();
        match requests.next().await {
            Some(Joined::Lost { task_id, why }) => {
                assert_eq!(task_id, id);
                assert_eq!(why, "was stopped");
            }
            _ => panic!("expected the aborted request"),
        }
        assert_eq!(requests.len(), 0);
    }
}
