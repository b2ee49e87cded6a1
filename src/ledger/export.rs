//! The timeline export for bug reports: one task's record and its events as JSONL. Task
//! ids are bearer secrets, so the export carries the short form only; arguments stay out
//! (they may hold secrets too); every line is terminal-safe JSON (C1, bidi and line
//! separators escaped). Pure: callers read the ledger and write the file.

use serde_json::json;

use super::{EventRecord, TaskRecord};
use crate::ids::TaskId;

/// A header line (`"type":"task"`) followed by one `"type":"event"` line per event, in order.
pub fn timeline_jsonl(rec: &TaskRecord, events: &[EventRecord]) -> String {
    let mut out = String::new();
    let head = json!({
        "type": "task",
        "server": rec.server,
        "taskId": rec.task_id.short(),
        "era": rec.era,
        "tool": rec.tool,
        "status": rec.status,
        "recordedAt": rec.recorded_at,
        "serverCreatedAt": rec.server_created_at,
        "pollIntervalMs": rec.poll_interval_ms,
        "ttlMs": rec.ttl_ms,
        "parentTask": rec.parent_task.as_ref().map(TaskId::short),
    });
    out.push_str(&crate::sanitize::json_line(&head));
    out.push('\n');
    for e in events {
        let line = json!({
            "type": "event",
            "at": e.at,
            "kind": e.kind,
            "latencyMs": e.latency_ms,
            "detail": rec.task_id.mask_json(&e.detail),
        });
        out.push_str(&crate::sanitize::json_line(&line));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::EventKind;

    #[test]
    fn export_is_one_json_value_per_line_without_full_ids() {
        let rec = TaskRecord {
            server: crate::ids::ServerId::named("demo"),
            task_id: TaskId::new("0123456789abcdef-secret"),
            era: None,
            tool: Some("deploy".into()),
            arguments: Some(json!({"token": "hunter2"})),
            recorded_at: "2026-07-28T10:00:00Z".parse().unwrap(),
            server_created_at: None,
            snapshot: None,
            status: "completed".into(),
            terminal: true,
            terminal_at: None,
            expired: false,
            last_seen: None,
            poll_interval_ms: Some(1000),
            ttl_ms: None,
            parent_task: Some(TaskId::new("fedcba9876543210")),
            answered_keys: vec![],
            end: None,
            cancel: None,
            started_by: None,
            cancel_by: None,
            host_note: None,
            origin: Default::default(),
            session: None,
            lean: false,
        };
        let events = vec![
            EventRecord {
                at: "2026-07-28T10:00:00Z".parse().unwrap(),
                kind: EventKind::Created,
                latency_ms: None,
                detail: json!({"status": "working"}),
            },
            EventRecord {
                at: "2026-07-28T10:00:02Z".parse().unwrap(),
                kind: EventKind::Poll,
                latency_ms: Some(12),
                detail: json!({"status": "completed"}),
            },
        ];
        let text = timeline_jsonl(&rec, &events);
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["type"], "task");
        assert_eq!(lines[0]["tool"], "deploy");
        assert_eq!(lines[0]["parentTask"], "fedcba98…");
        assert_eq!(lines[2]["kind"], "poll");
        assert_eq!(lines[2]["latencyMs"], 12);
        assert!(
            !text.contains("secret") && !text.contains("hunter2"),
            "{text}"
        );
    }
}
