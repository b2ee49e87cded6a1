//! What `taskrail answer` checks before it sends, judged from the ledger's record of the
//! task: whether the key is still pending (the server acknowledges an answer to a key
//! already answered, or one it never asked, and ignores it), and whether the response fits
//! the request's `requestedSchema` (the input form's own validation). Pure: the command
//! decides what to do with the verdict (`--force` sends anyway).

use serde_json::Value;

use crate::ledger::TaskRecord;
use crate::mcp::InputRequest;
use crate::sanitize::sanitize_line;
use crate::state::form::{ContentProblem, check_content};

/// Where the key stands, as the ledger knows the task.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyState<'a> {
    /// Asked in the last snapshot and not answered yet.
    Pending(&'a InputRequest),
    /// Answered before (by this or another taskrail): the server ignores a second answer.
    Answered,
    /// The last snapshot does not ask for it: the server ignores an answer to it.
    NotAsked { pending: Vec<String> },
    /// The ledger has no snapshot to judge by.
    Unknown,
}

/// Where `key` stands in `record`.
pub fn key_state<'a>(record: Option<&'a TaskRecord>, key: &str) -> KeyState<'a> {
    let Some(rec) = record else {
        return KeyState::Unknown;
    };
    if rec.answered_keys.iter().any(|k| k == key) {
        return KeyState::Answered;
    }
    let Some(task) = &rec.snapshot else {
        return KeyState::Unknown;
    };
    match task.input_requests.get(key) {
        Some(req) => KeyState::Pending(req),
        None => KeyState::NotAsked {
            pending: task
                .input_requests
                .keys()
                .filter(|k| !rec.answered_keys.contains(k))
                .cloned()
                .collect(),
        },
    }
}

impl KeyState<'_> {
    /// Why the server will ignore an answer to this key, if it will.
    pub fn ignored_because(&self) -> Option<String> {
        match self {
            KeyState::Answered => Some("the key was already answered".into()),
            KeyState::NotAsked { pending } if pending.is_empty() => {
                Some("the task is not waiting for input".into())
            }
            KeyState::NotAsked { pending } => Some(format!(
                "the task does not ask for this key (it asks for: {})",
                sanitize_line(&pending.join(", "), 300)
            )),
            KeyState::Pending(_) | KeyState::Unknown => None,
        }
    }
}

/// Does `response` (normalised: `{"action":…, "content":…}`) fit what `request` asked?
/// Only an accepted form elicitation carries content to check.
pub fn check_response(request: &InputRequest, response: &Value) -> Result<(), ContentProblem> {
    if request.method != "elicitation/create"
        || response.get("action").and_then(Value::as_str) != Some("accept")
    {
        return Ok(());
    }
    let Some(schema) = request.params.get("requestedSchema") else {
        return Ok(());
    };
    match response.get("content") {
        Some(Value::Object(content)) => check_content(schema, content),
        None | Some(Value::Null) => check_content(schema, &serde_json::Map::new()),
        Some(_) => Err(ContentProblem {
            field: "content".into(),
            why: "must be a JSON object".into(),
        }),
    }
}

/// Why `answer` must not send `response` for a key in `state`, if it must not: a key
/// answered before (never sent twice), one the task does not ask for, a response that does
/// not fit the request — the last two unless `force`.
pub fn refusal(state: &KeyState<'_>, response: &Value, force: bool) -> Option<String> {
    let ignored = state.ignored_because();
    match (state, ignored) {
        (KeyState::Answered, Some(why)) => {
            Some(format!("{why}; the server would ignore another answer"))
        }
        (_, Some(why)) if !force => Some(format!(
            "{why}, so the server would ignore the answer (--force sends it anyway)"
        )),
        (KeyState::Pending(request), _) if !force => {
            check_response(request, response).err().map(|p| {
                format!(
                    "field {}: {} (from the request's requestedSchema; --force sends it anyway)",
                    p.field, p.why
                )
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::Task;
    use serde_json::json;

    fn ask() -> InputRequest {
        InputRequest {
            method: "elicitation/create".into(),
            reply_to: None,
            params: json!({
                "message": "Who?",
                "requestedSchema": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "minLength": 2},
                        "age": {"type": "integer", "minimum": 18},
                        "env": {"type": "string", "enum": ["staging", "prod"]}
                    },
                    "required": ["name"]
                }
            }),
        }
    }

    fn record(answered: &[&str]) -> TaskRecord {
        let mut task =
            Task::from_wire(&json!({"taskId": "t1", "status": "input_required"})).expect("a task");
        task.input_requests.insert("k1".into(), ask());
        task.input_requests.insert("k2".into(), ask());
        let mut rec = crate::cli::task_ref::record_fixture("s", "t1");
        rec.snapshot = Some(task);
        rec.status = "input_required".into();
        rec.answered_keys = answered.iter().map(|s| s.to_string()).collect();
        rec
    }

    #[test]
    fn the_ledger_says_whether_a_key_is_still_asked() {
        let rec = record(&["k1"]);
        assert_eq!(key_state(Some(&rec), "k1"), KeyState::Answered);
        assert!(matches!(key_state(Some(&rec), "k2"), KeyState::Pending(_)));
        let other = key_state(Some(&rec), "zz");
        assert_eq!(
            other,
            KeyState::NotAsked {
                pending: vec!["k2".into()]
            }
        );
        assert!(other.ignored_because().unwrap().contains("it asks for: k2"));
        assert_eq!(key_state(None, "k1"), KeyState::Unknown);
        assert_eq!(key_state(Some(&rec), "k2").ignored_because(), None);
    }

    #[test]
    fn a_response_is_checked_like_the_form_checks_a_person() {
        let req = ask();
        let accept = |content: Value| json!({"action": "accept", "content": content});
        assert_eq!(
            check_response(&req, &accept(json!({"name": "Ada"}))),
            Ok(())
        );
        let err = |content: Value| check_response(&req, &accept(content)).unwrap_err();
        assert_eq!(err(json!({})).field, "name");
        assert_eq!(err(json!({})).why, "required");
        assert_eq!(err(json!({"name": "A"})).why, "at least 2 characters");
        assert_eq!(err(json!({"name": "Ada", "age": 12})).field, "age");
        assert_eq!(
            err(json!({"name": "Ada", "age": "x"})).why,
            "must be a whole number"
        );
        assert!(
            err(json!({"name": "Ada", "env": "dev"}))
                .why
                .contains("staging, prod")
        );
        assert_eq!(err(json!({"name": "Ada", "nmae": 1})).field, "nmae");
        // nothing to check in a decline, or in a request that is not a form
        assert_eq!(check_response(&req, &json!({"action": "decline"})), Ok(()));
        let sampling = InputRequest {
            method: "sampling/createMessage".into(),
            reply_to: None,
            params: json!({}),
        };
        assert_eq!(check_response(&sampling, &accept(json!({"x": 1}))), Ok(()));
    }
}

#[cfg(test)]
mod refusal_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn force_sends_what_the_checks_refuse_but_never_a_second_answer() {
        let req = InputRequest {
            method: "elicitation/create".into(),
            reply_to: None,
            params: json!({"requestedSchema": {"type": "object",
                "properties": {"n": {"type": "integer"}}, "required": ["n"]}}),
        };
        let bad = json!({"action": "accept", "content": {"n": "x"}});
        let good = json!({"action": "accept", "content": {"n": 3}});
        let pending = KeyState::Pending(&req);
        let why = refusal(&pending, &bad, false).expect("refused");
        assert!(why.starts_with("field n: must be a whole number"), "{why}");
        assert_eq!(refusal(&pending, &bad, true), None);
        assert_eq!(refusal(&pending, &good, false), None);
        let not_asked = KeyState::NotAsked { pending: vec![] };
        assert!(
            refusal(&not_asked, &good, false)
                .unwrap()
                .contains("not waiting")
        );
        assert_eq!(refusal(&not_asked, &good, true), None);
        assert!(refusal(&KeyState::Answered, &good, true).is_some());
        assert_eq!(
            refusal(&KeyState::Unknown, &bad, false),
            None,
            "nothing to judge by"
        );
    }
}
