//! A finished task's stored snapshot read lean, as a resume reads it: everything the board
//! shows, without the payload. The tool result is scanned but not built (it can be any
//! size), unless its `isError` says the tool failed (then its text is the failure the row
//! shows);
//! an error keeps its code and message, not its `data`. The payload stays in the ledger
//! until a task's detail asks for it.

use std::fmt;

use serde::de::{
    self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};

use crate::mcp::types::{Task, TaskOf};

/// Parse a stored snapshot lean; `None` when it does not parse (as a full read would).
pub(super) fn lean_snapshot(stored: &str) -> Option<Task> {
    let head: TaskOf<ToolFailed> = serde_json::from_str(stored).ok()?;
    let mut task = if head.result.as_ref().is_some_and(|f| f.0) {
        serde_json::from_str::<Task>(stored).ok()?
    } else {
        head.map_result(|_| None)
    };
    if let Some(e) = task.error.as_mut() {
        e.data = None;
    }
    Some(task)
}

/// What a lean read keeps of a tool result: whether it says `isError: true` (what
/// [`Task::result_is_error`] asks of a whole one). Any JSON reads as one, skipped without
/// building it.
#[derive(Default)] // serde's derive asks it of `TaskOf<R>`'s defaulted `result`
struct ToolFailed(bool);

impl<'de> Deserialize<'de> for ToolFailed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Skim { result: true }).map(ToolFailed)
    }
}

/// A key of a tool result: `isError`, or any other (skipped).
#[derive(serde::Deserialize)]
#[serde(field_identifier)]
enum ResultKey {
    #[serde(rename = "isError")]
    IsError,
    #[serde(other)]
    Other,
}

/// Reads a value without keeping it, and says: of a tool result (`result`), whether it is
/// an object whose `isError` is `true`; of any other value, whether it is `true`.
#[derive(Clone, Copy)]
struct Skim {
    result: bool,
}

impl<'de> DeserializeSeed<'de> for Skim {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skim {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut failed = false;
        while let Some(key) = map.next_key::<ResultKey>()? {
            match key {
                ResultKey::IsError if self.result => {
                    failed = map.next_value_seed(Skim { result: false })?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(failed)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<bool, E> {
        Ok(b && !self.result)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }

    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn full(v: &serde_json::Value) -> Task {
        serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{e}: {v}"))
    }

    #[test]
    fn a_lean_read_is_the_whole_snapshot_but_its_payload() {
        let stored = json!({
            "taskId": "t-1", "status": "failed", "statusMessage": "step 3/4",
            "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:01:00Z",
            "ttlMs": 60000, "pollIntervalMs": 500,
            "inputRequests": {"k": {"method": "elicitation/create", "params": {"message": "m"}}},
            "result": {"content": [{"type": "text", "text": "x".repeat(10_000)}]},
            "error": {"code": -32000, "message": "boom", "data": {"trace": ["a", "b"]}},
            "moreInputRequests": 2,
        });
        let lean = lean_snapshot(&stored.to_string()).unwrap();
        let mut want = full(&stored);
        want.result = None;
        want.error.as_mut().unwrap().data = None;
        assert_eq!(lean, want);
    }

    #[test]
    fn a_tool_errors_result_is_kept_whatever_its_shape_otherwise() {
        let with = |result: serde_json::Value| {
            let stored = json!({"taskId": "t", "status": "completed", "result": result});
            lean_snapshot(&stored.to_string()).unwrap()
        };
        let failed = json!({"isError": true, "content": [{"type": "text", "text": "no"}]});
        let kept = with(failed.clone());
        assert_eq!(kept.result.as_deref(), Some(&failed));
        assert!(kept.result_is_error());
        // What a whole read does not count as a tool error is dropped, not refused.
        for not_an_error in [
            json!({"isError": false}),
            json!({"isError": "true"}),
            json!({"content": [], "nested": {"isError": true}}),
            json!([{"isError": true}]),
            json!("text"),
            json!(3.5),
            json!(null),
            json!(true),
        ] {
            let whole =
                full(&json!({"taskId": "t", "status": "completed", "result": not_an_error}));
            assert!(!whole.result_is_error(), "{not_an_error}");
            let lean = with(not_an_error.clone());
            assert_eq!(lean.result, None, "{not_an_error}");
            assert_eq!(lean.task_id.as_str(), "t");
        }
    }

    #[test]
    fn what_does_not_parse_whole_does_not_parse_lean() {
        for bad in [
            "{",
            "[]",
            r#"{"status": "completed"}"#,
            r#"{"taskId": "t", "status": "completed", "result": {"isError": tru}}"#,
        ] {
            assert!(serde_json::from_str::<Task>(bad).is_err(), "{bad}");
            assert_eq!(lean_snapshot(bad), None, "{bad}");
        }
    }
}
