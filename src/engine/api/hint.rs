//! The conformance problems a server can show (`Hint`), each reported with its evidence.

/// A conformance problem a server showed; each is reported with the evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hint {
    /// A `CreateTaskResult` whose immediate `tasks/get` said "unknown task".
    NonDurableCreate,
    /// An input key reappeared with a different request.
    InputKeyReused,
    /// A terminal task later reported another state.
    TerminalChanged,
    /// A live task snapshot without `pollIntervalMs`.
    PollIntervalMissing,
    /// Tasks were created although `server/discover` did not declare the extension.
    DiscoverWithoutExtension,
    /// A subscribed task changed, and only polling saw it.
    PushNotDelivered,
}

impl Hint {
    pub const ALL: [Hint; 6] = [
        Hint::NonDurableCreate,
        Hint::InputKeyReused,
        Hint::TerminalChanged,
        Hint::PollIntervalMissing,
        Hint::DiscoverWithoutExtension,
        Hint::PushNotDelivered,
    ];

    /// A short name for lists and logs.
    pub fn title(self) -> &'static str {
        match self {
            Hint::NonDurableCreate => "non-durable task creation",
            Hint::InputKeyReused => "input key reused",
            Hint::TerminalChanged => "terminal state changed",
            Hint::PollIntervalMissing => "pollIntervalMs missing",
            Hint::DiscoverWithoutExtension => "tasks extension missing in server/discover",
            Hint::PushNotDelivered => "push acknowledged but not delivered",
        }
    }

    /// What the server's authors should change.
    pub fn advice(self) -> &'static str {
        match self {
            Hint::NonDurableCreate => {
                "Task creation is strongly consistent: store the task before returning \
                 CreateTaskResult, so the next tasks/get finds it."
            }
            Hint::InputKeyReused => {
                "Input request keys are unique for the life of a task: mint a new key \
                 for every new request."
            }
            Hint::TerminalChanged => {
                "Terminal is forever: once completed, failed or cancelled, every later \
                 tasks/get and notification must report that same state."
            }
            Hint::PollIntervalMissing => {
                "Put pollIntervalMs on every live task so clients poll at the pace you \
                 can serve (clients fall back to their own default)."
            }
            Hint::DiscoverWithoutExtension => {
                "Declare io.modelcontextprotocol/tasks under capabilities.extensions in \
                 the server/discover reply when you create tasks."
            }
            Hint::PushNotDelivered => {
                "A task acknowledged in subscriptions/listen must get a \
                 notifications/tasks message for each change of its state."
            }
        }
    }
}
