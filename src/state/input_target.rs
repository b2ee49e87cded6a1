//! Whose input requests an answering view answers: a task's, or one request outside any
//! task. Below every view and transition that answers input, so each can name its target
//! without importing another.

use super::TaskKey;
use crate::engine::ServerId;

/// Whose requests an answering view answers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum InputTarget {
    /// A task's input requests.
    Task(TaskKey),
    /// A request outside any task, by the engine's key.
    Foreground { server: ServerId, key: String },
}

impl InputTarget {
    pub fn server(&self) -> &ServerId {
        match self {
            InputTarget::Task(k) => &k.server,
            InputTarget::Foreground { server, .. } => server,
        }
    }
}
