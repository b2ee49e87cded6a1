//! What the CLI prints: JSON lines for `watch --json`, sanitized human status lines, and
//! response normalisation for answers.
//!
//! Pure formatting. Everything a server sent goes through `sanitize` unless printed as JSON.

use serde_json::{Value, json};

use crate::engine::UpdateSource;
use crate::mcp::Task;
use crate::sanitize::sanitize_line;

/// One `watch --json` line.
pub fn task_line(server: &str, task: &Task, source: UpdateSource) -> Value {
    let source = match source {
        UpdateSource::Create => "create",
        UpdateSource::Push => "push",
        UpdateSource::Poll | UpdateSource::Resync => "poll",
        UpdateSource::Ledger => "ledger",
    };
    let mut v = json!({
        "server": server,
        "taskId": task.task_id,
        "status": task.status.as_str(),
        "statusMessage": task.status_message,
        "createdAt": task.created_at,
        "lastUpdatedAt": task.last_updated_at,
        "ttlMs": task.ttl_ms,
        "pollIntervalMs": task.poll_interval_ms,
        "source": source,
    });
    if !task.input_requests.is_empty() {
        v["inputRequests"] = serde_json::to_value(&task.input_requests).unwrap_or(Value::Null);
    }
    if let Some(r) = &task.result {
        v["result"] = r.clone();
    }
    if let Some(e) = &task.error {
        v["error"] = serde_json::to_value(e).unwrap_or(Value::Null);
    }
    v
}

/// A one-line human summary of a snapshot.
pub fn status_line(task: &Task) -> String {
    let mut s = format!("{} {}", task.task_id, task.status.as_str());
    if let Some(m) = &task.status_message {
        s.push_str(": ");
        s.push_str(&sanitize_line(m, 200));
    }
    if task.is_tool_error() {
        s.push_str(" (tool reported an error)");
    }
    s
}

/// `{"action":…}` as given, anything else as the `content` of an accept.
pub fn normalize_response(v: Value) -> Value {
    match v.get("action").and_then(Value::as_str) {
        Some("accept" | "decline" | "cancel") => v,
        _ => json!({ "action": "accept", "content": v }),
    }
}

/// Quote an argument for a shell command the user may copy.
pub fn shell_quote(s: &str) -> String {
    shlex::try_quote(s)
        .map(|c| c.into_owned())
        .unwrap_or_else(|_| format!("'{s}'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_normalised() {
        assert_eq!(
            normalize_response(json!({"action":"decline"})),
            json!({"action":"decline"})
        );
        assert_eq!(
            normalize_response(json!({"name":"Ada"})),
            json!({"action":"accept","content":{"name":"Ada"}})
        );
    }

    #[test]
    fn status_lines_are_sanitized() {
        let t = Task::from_wire(&json!({"taskId":"abcdefghijkl","status":"working","statusMessage":"\u{1b}[2Jpage 1/3\u{7}"})).unwrap();
        let line = status_line(&t);
        assert!(
            !line.contains('\u{1b}') && !line.contains('\u{7}'),
            "{line:?}"
        );
        assert!(line.contains("page 1/3"));
    }

    #[test]
    fn json_lines_carry_the_documented_fields() {
        let t = Task::from_wire(
            &json!({"taskId":"t","status":"completed","ttlMs":5,"result":{"content":[]}}),
        )
        .unwrap();
        let v = task_line("srv", &t, UpdateSource::Resync);
        assert_eq!(v["source"], "poll");
        assert_eq!(v["result"], json!({"content":[]}));
        for k in [
            "server",
            "taskId",
            "status",
            "statusMessage",
            "createdAt",
            "lastUpdatedAt",
            "ttlMs",
            "pollIntervalMs",
        ] {
            assert!(v.get(k).is_some(), "missing {k}");
        }
    }
}
