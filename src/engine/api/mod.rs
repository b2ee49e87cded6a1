//! The engine's vocabulary: `EngineCommand`s flow down from the UI and CLI (`command`),
//! owned `EngineEvent`s (facts, past tense) flow up (`event`), with what they carry: what is
//! known of a task (`known`), what a call or an intent came to (`outcome`) and the
//! conformance hints (`hint`). Plain data, no behaviour.
//!
//! Must not import ratatui or crossterm.

mod command;
mod event;
mod hint;
mod known;
mod outcome;

use serde_json::Value;

pub use crate::ids::{ServerId, TaskId};
pub use command::{CancelBy, EngineCommand, LocalAsk};
pub use event::{EngineEvent, InputOrigin, NoticeLevel};
pub use hint::Hint;
pub use known::{KnownTask, TaskNote};
pub use outcome::{CallResult, Failure};

/// How a task snapshot reached us.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UpdateSource {
    /// The `CreateTaskResult` of our own `tools/call`.
    Create,
    /// A `notifications/tasks` (or legacy `notifications/tasks/status`) push.
    Push,
    /// A paced `tasks/get`.
    Poll,
    /// The one `tasks/get` after a (re)subscribe or a restart.
    Resync,
    /// Another taskrail process recorded it in the shared ledger.
    Ledger,
}

impl UpdateSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Push => "push",
            Self::Poll => "poll",
            Self::Resync => "resync",
            Self::Ledger => "ledger",
        }
    }
}

/// The answer to one input request, as placed under its key in `inputResponses`
/// (`{"action":"accept","content":{…}}`, `{"action":"decline"}`, `{"action":"cancel"}`).
pub type InputResponse = Value;

/// Why a followed task stopped being followed without a terminal state.
pub use crate::ledger::Tombstone;
