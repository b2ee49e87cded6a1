//! The legacy era's task shapes the demo sends in replies and on a session's GET stream
//! alike: the flat tasks-v1 `Task` and the progress notification.

use serde_json::{Map, Value, json};

use super::store::Progress;
use super::wire;

/// The flat tasks-v1 `Task` from a DetailedTask snapshot.
pub(super) fn flat_task(snapshot: &Value) -> Value {
    let mut t = Map::new();
    for (from, to) in [
        ("taskId", "taskId"),
        ("status", "status"),
        ("statusMessage", "statusMessage"),
        ("createdAt", "createdAt"),
        ("lastUpdatedAt", "lastUpdatedAt"),
        ("ttlMs", "ttl"),
        ("pollIntervalMs", "pollInterval"),
    ] {
        if let Some(v) = snapshot.get(from) {
            t.insert(to.into(), v.clone());
        }
    }
    Value::Object(t)
}

/// A `notifications/progress` for `token`.
pub(super) fn progress_notification(token: &Value, p: &Progress, message: &str) -> Value {
    let mut params = json!({ "progressToken": token, "progress": p.progress, "message": message });
    if let Some(total) = p.total {
        params["total"] = json!(total);
    }
    wire::notification("notifications/progress", params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flat_task_renames_fields_and_drops_payloads() {
        let detailed = json!({
            "taskId": "t", "status": "completed", "createdAt": "a", "lastUpdatedAt": "b",
            "ttlMs": 5, "pollIntervalMs": 6, "result": {"content": []}
        });
        let flat = flat_task(&detailed);
        assert_eq!(flat["ttl"], 5);
        assert_eq!(flat["pollInterval"], 6);
        assert!(flat.get("result").is_none());
        assert!(flat.get("ttlMs").is_none());
    }
}
