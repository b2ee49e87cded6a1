//! The sortable columns and how each orders two rows (ties broken by task id, then
//! server, so the order is total).

use std::cmp::Ordering;

use crate::mcp::TaskStatus;
use crate::state::task::TaskRow;

/// Sortable columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortColumn {
    Created,
    Server,
    Id,
    Tool,
    Status,
    Seen,
    Ttl,
}

impl SortColumn {
    pub const ALL: [SortColumn; 7] = [
        SortColumn::Created,
        SortColumn::Server,
        SortColumn::Id,
        SortColumn::Tool,
        SortColumn::Status,
        SortColumn::Seen,
        SortColumn::Ttl,
    ];

    pub fn title(self) -> &'static str {
        match self {
            SortColumn::Created => "age",
            SortColumn::Server => "server",
            SortColumn::Id => "id",
            SortColumn::Tool => "tool",
            SortColumn::Status => "status",
            SortColumn::Seen => "seen",
            SortColumn::Ttl => "ttl",
        }
    }

    pub fn next(self) -> SortColumn {
        let i = SortColumn::ALL.iter().position(|c| *c == self).unwrap_or(0);
        SortColumn::ALL[(i + 1) % SortColumn::ALL.len()]
    }

    pub(super) fn compare(self, a: &TaskRow, b: &TaskRow) -> Ordering {
        let created = |r: &TaskRow| r.created.or(r.recorded_at);
        match self {
            SortColumn::Created => created(a).cmp(&created(b)),
            SortColumn::Server => a.key.server.cmp(&b.key.server),
            SortColumn::Id => Ordering::Equal,
            SortColumn::Tool => a.tool.cmp(&b.tool),
            SortColumn::Status => status_rank(a).cmp(&status_rank(b)),
            SortColumn::Seen => a.seen_at.cmp(&b.seen_at),
            SortColumn::Ttl => a.expires_at().cmp(&b.expires_at()),
        }
        .then_with(|| a.key.task_id.cmp(&b.key.task_id))
        .then_with(|| a.key.server.cmp(&b.key.server))
    }
}

fn status_rank(r: &TaskRow) -> u8 {
    match r.status() {
        _ if r.needs_input() => 0,
        _ if r.tool_error() => 4,
        Some(TaskStatus::Working) => 1,
        Some(TaskStatus::Other(_)) | None => 2,
        Some(TaskStatus::InputRequired) => 3,
        Some(TaskStatus::Failed) => 4,
        Some(TaskStatus::Cancelled) => 5,
        Some(TaskStatus::Completed) => 6,
    }
}
