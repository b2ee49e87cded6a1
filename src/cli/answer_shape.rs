//! Each input kind's own answer shape, as the CLI takes it (`answer --json`, a line typed
//! on `call`'s input) and shows it (the `answer with:` hint, `answer --help`): an
//! elicitation (form or URL) is `{"action":…,"content":…}` (a bare object is the content
//! of an accept); a sampling request is a `CreateMessageResult` (`role`, `content`,
//! `model`, checked here before anything is sent); a roots request is
//! `{"roots":[{"uri":"file:///…"}]}`. Sampling and roots may be refused with
//! `{"action":"decline"}` (the engine turns that into the error the server expects).
//!
//! Pure: no I/O.

use serde_json::{Value, json};

use crate::mcp::InputKind;

/// One example response per kind, as `answer with:` and `answer --help` show them.
pub const FORM_EXAMPLE: &str = r#"{"action":"accept","content":{…}}"#;
pub const URL_EXAMPLE: &str = r#"{"action":"accept"}"#;
pub const SAMPLING_EXAMPLE: &str =
    r#"{"role":"assistant","content":{"type":"text","text":"…"},"model":"person"}"#;
pub const ROOTS_EXAMPLE: &str = r#"{"roots":[{"uri":"file:///…"}]}"#;

/// The example response for `kind` (`None`: not known, the form's).
pub fn example(kind: Option<&InputKind>) -> &'static str {
    match kind {
        Some(InputKind::Url { .. }) => URL_EXAMPLE,
        Some(InputKind::Sampling) => SAMPLING_EXAMPLE,
        Some(InputKind::Roots) => ROOTS_EXAMPLE,
        _ => FORM_EXAMPLE,
    }
}

fn refusal(v: &Value) -> bool {
    matches!(
        v.get("action").and_then(Value::as_str),
        Some("decline" | "cancel")
    )
}

/// The response to send for `v`, given to a request of `kind` (`None`: the ledger does not
/// know the request; judged by the response's own shape), or why it is refused.
pub fn normalize_response(v: Value, kind: Option<&InputKind>) -> Result<Value, String> {
    if !v.is_object() {
        return Err(format!(
            "the response must be a JSON object, such as {}",
            example(kind)
        ));
    }
    let kind = match kind {
        Some(k) => k.clone(),
        None if v.get("action").is_some() => InputKind::Form,
        None if v.get("model").is_some() && v.get("role").is_some() => InputKind::Sampling,
        None if v.get("roots").is_some() => InputKind::Roots,
        None => InputKind::Form,
    };
    match kind {
        InputKind::Form | InputKind::Url { .. } => elicitation(v),
        InputKind::Sampling if refusal(&v) => Ok(v),
        InputKind::Sampling => check_sampling(&v).map(|()| v).map_err(|why| {
            format!("a sampling request is answered with a CreateMessageResult ({why}), such as {SAMPLING_EXAMPLE}, or refused with {{\"action\":\"decline\"}}")
        }),
        InputKind::Roots if refusal(&v) => Ok(v),
        InputKind::Roots => check_roots(&v).map(|()| v).map_err(|why| {
            format!("a roots request is answered with a list of roots ({why}), such as {ROOTS_EXAMPLE}, or refused with {{\"action\":\"decline\"}}")
        }),
        InputKind::Other(_) => Ok(v),
    }
}

/// `{"action":…}` as given (an accept's `content`, when present, must be an object), any
/// other object as the `content` of an accept.
fn elicitation(v: Value) -> Result<Value, String> {
    match v.get("action").and_then(Value::as_str) {
        Some("accept") if v.get("content").is_some_and(|c| !c.is_object()) => {
            Err("the content of an accept must be a JSON object".into())
        }
        Some("accept" | "decline" | "cancel") => Ok(v),
        Some(_) => Err(
            "action must be accept, decline or cancel: {\"action\":\"accept\",\"content\":{…}}, \
             {\"action\":\"decline\"}, {\"action\":\"cancel\"} or the content object"
                .into(),
        ),
        None => Ok(json!({ "action": "accept", "content": v })),
    }
}

/// One content block of a sampling reply: text, image or audio.
fn check_block(b: &Value, at: &str) -> Result<(), String> {
    let text = |k: &str| b.get(k).and_then(Value::as_str).is_some();
    match b.get("type").and_then(Value::as_str) {
        Some("text") if text("text") => Ok(()),
        Some("text") => Err(format!("{at}.text must be a string")),
        Some("image" | "audio") if text("data") && text("mimeType") => Ok(()),
        Some("image" | "audio") => Err(format!("{at} needs data and mimeType strings")),
        Some("tool_use" | "tool_result") => Ok(()),
        Some(other) => Err(format!(
            "{at}.type {:?} is not text, image or audio",
            crate::sanitize::sanitize_line(other, 40)
        )),
        None => Err(format!("{at} must be an object with a type (\"text\", …)")),
    }
}

/// Is `v` a `CreateMessageResult`: `role` user or assistant, `model` a string, `content` a
/// block (or a list of them), `stopReason` a string when given?
pub fn check_sampling(v: &Value) -> Result<(), String> {
    if v.get("action").is_some() {
        return Err("it takes no \"action\": that is an elicitation's answer".into());
    }
    match v.get("role").and_then(Value::as_str) {
        Some("assistant" | "user") => {}
        Some(_) => return Err("role must be \"assistant\" or \"user\"".into()),
        None => return Err("role is missing".into()),
    }
    match v.get("model") {
        Some(Value::String(m)) if !m.is_empty() => {}
        Some(_) => return Err("model must be a non-empty string".into()),
        None => return Err("model is missing".into()),
    }
    match v.get("content") {
        Some(Value::Array(blocks)) if !blocks.is_empty() => {
            for (i, b) in blocks.iter().enumerate() {
                check_block(b, &format!("content[{i}]"))?;
            }
        }
        Some(b @ Value::Object(_)) => check_block(b, "content")?,
        Some(_) => return Err("content must be a content block".into()),
        None => return Err("content is missing".into()),
    }
    match v.get("stopReason") {
        None | Some(Value::String(_)) => Ok(()),
        Some(_) => Err("stopReason must be a string".into()),
    }
}

/// Is `v` a `ListRootsResult`: `roots`, a list of `{"uri":"file://…"}`?
pub fn check_roots(v: &Value) -> Result<(), String> {
    let Some(roots) = v.get("roots").and_then(Value::as_array) else {
        return Err("roots must be a list".into());
    };
    for (i, r) in roots.iter().enumerate() {
        match r.get("uri").and_then(Value::as_str) {
            Some(u) if u.starts_with("file://") => {}
            Some(_) => return Err(format!("roots[{i}].uri must be a file:// URI")),
            None => return Err(format!("roots[{i}] needs a uri")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url() -> InputKind {
        InputKind::Url {
            url: "https://x".into(),
            elicitation_id: None,
        }
    }

    #[test]
    fn an_elicitation_takes_an_action_or_the_content() {
        for kind in [Some(InputKind::Form), Some(url()), None] {
            let k = kind.as_ref();
            assert_eq!(
                normalize_response(json!({"action":"decline"}), k),
                Ok(json!({"action":"decline"}))
            );
            assert_eq!(
                normalize_response(json!({"name":"Ada"}), k),
                Ok(json!({"action":"accept","content":{"name":"Ada"}}))
            );
            for bad in [
                json!([]),
                json!(7),
                json!("x"),
                json!(null),
                json!({"action":"accept","content":[1]}),
                json!({"action":"yes"}),
            ] {
                assert!(normalize_response(bad.clone(), k).is_err(), "{bad}");
            }
        }
    }

    #[test]
    fn a_sampling_reply_is_a_create_message_result_sent_as_it_is() {
        let s = Some(&InputKind::Sampling);
        let good = json!({"role":"assistant","content":{"type":"text","text":"hi"},"model":"me"});
        assert_eq!(normalize_response(good.clone(), s), Ok(good.clone()));
        // judged by its shape when the request is not known
        assert_eq!(normalize_response(good.clone(), None), Ok(good));
        assert_eq!(
            normalize_response(json!({"action":"decline"}), s),
            Ok(json!({"action":"decline"}))
        );
        let why = |v: Value| normalize_response(v, s).unwrap_err();
        // the elicitation shape the hint used to suggest
        let e = why(json!({"action":"accept","content":{"text":"hi"}}));
        assert!(
            e.contains("CreateMessageResult") && e.contains("takes no \"action\""),
            "{e}"
        );
        assert!(
            why(json!({"content":{"type":"text","text":"x"},"model":"m"}))
                .contains("role is missing")
        );
        assert!(
            why(json!({"role":"bot","content":{"type":"text","text":"x"},"model":"m"}))
                .contains("role must be")
        );
        assert!(
            why(json!({"role":"assistant","content":{"type":"text","text":"x"}}))
                .contains("model is missing")
        );
        assert!(
            why(json!({"role":"assistant","content":{"type":"text","text":"x"},"model":3}))
                .contains("model must be")
        );
        assert!(
            why(json!({"role":"assistant","content":"x","model":"m"})).contains("content must be")
        );
        assert!(
            why(json!({"role":"assistant","content":{"type":"text"},"model":"m"}))
                .contains("content.text")
        );
        assert!(
            why(json!({"role":"assistant","content":{"type":"image","data":"x"},"model":"m"}))
                .contains("mimeType")
        );
    }

    #[test]
    fn a_roots_reply_lists_file_uris() {
        let r = Some(&InputKind::Roots);
        let good = json!({"roots":[{"uri":"file:///tmp","name":"tmp"}]});
        assert_eq!(normalize_response(good.clone(), r), Ok(good));
        assert!(
            normalize_response(json!({"roots":[{"uri":"https://x"}]}), r)
                .unwrap_err()
                .contains("file://")
        );
        assert!(
            normalize_response(json!({"name":"x"}), r)
                .unwrap_err()
                .contains("roots must be a list")
        );
        assert_eq!(
            normalize_response(json!({"action":"decline"}), r),
            Ok(json!({"action":"decline"}))
        );
    }

    #[test]
    fn every_example_is_accepted_by_its_own_kind() {
        let fill = |s: &str| s.replace("{…}", "{}").replace('…', "x");
        for kind in [
            InputKind::Form,
            url(),
            InputKind::Sampling,
            InputKind::Roots,
        ] {
            let v: Value = serde_json::from_str(&fill(example(Some(&kind)))).unwrap();
            assert!(normalize_response(v, Some(&kind)).is_ok(), "{kind:?}");
        }
    }
}
