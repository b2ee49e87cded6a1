//! The status tabs (All, Active, Input, Done, Failed, Cancelled): which rows each shows and
//! the order they cycle in.

use crate::mcp::TaskStatus;
use crate::state::task::TaskRow;

/// Status tabs narrowing the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tab {
    All,
    Active,
    Input,
    Done,
    Failed,
    Cancelled,
}

impl Tab {
    pub const ALL: [Tab; 6] = [
        Tab::All,
        Tab::Active,
        Tab::Input,
        Tab::Done,
        Tab::Failed,
        Tab::Cancelled,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Tab::All => "All",
            Tab::Active => "Active",
            Tab::Input => "Input",
            Tab::Done => "Done",
            Tab::Failed => "Failed",
            Tab::Cancelled => "Cancelled",
        }
    }

    pub fn matches(self, row: &TaskRow) -> bool {
        match self {
            Tab::All => true,
            Tab::Active => !row.is_over(),
            Tab::Input => row.needs_input(),
            Tab::Done => row.status() == Some(&TaskStatus::Completed) && !row.tool_error(),
            Tab::Failed => row.status() == Some(&TaskStatus::Failed) || row.tool_error(),
            Tab::Cancelled => row.status() == Some(&TaskStatus::Cancelled),
        }
    }

    pub(super) fn index(self) -> usize {
        Tab::ALL.iter().position(|t| *t == self).unwrap_or(0)
    }

    pub fn cycle(self, forward: bool) -> Tab {
        let n = Tab::ALL.len();
        let i = self.index();
        Tab::ALL[if forward {
            (i + 1) % n
        } else {
            (i + n - 1) % n
        }]
    }
}
