//! What this client answers when a server asks for input, per server, and the client
//! capabilities that say so: the per-request `_meta` block (modern) and the `initialize`
//! capabilities (legacy). Only what is really handled is declared: form and URL
//! elicitation always (a person answers, or the request is declined with a reason),
//! sampling and roots only when the server's config entry sets them up.
//!
//! Owns: the capability JSON of both eras and the `roots/list` result. Must not do I/O.

use serde_json::{Map, Value, json};

use super::types::TASKS_EXTENSION;

/// The input kinds a server may ask this client for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InputSupport {
    /// `sampling/createMessage` is answered (a person types the reply, or a configured
    /// command writes it after the person approved).
    pub sampling: bool,
    /// `roots/list` is answered with these `file://` URIs (`None`: roots are not offered).
    pub roots: Option<Vec<String>>,
}

impl InputSupport {
    /// `clientCapabilities` for a modern request's `_meta` (tasks extension included).
    pub fn modern(&self) -> Value {
        let mut caps = self.common();
        caps.insert("extensions".into(), json!({ TASKS_EXTENSION: {} }));
        Value::Object(caps)
    }

    /// `capabilities` for the legacy `initialize`. Requests a server asks to run as a
    /// task on this client (`params.task`) are accepted for the kinds answered here.
    pub fn legacy(&self) -> Value {
        let mut caps = self.common();
        let mut requests = Map::new();
        requests.insert("elicitation".into(), json!({ "create": {} }));
        if self.sampling {
            requests.insert("sampling".into(), json!({ "createMessage": {} }));
        }
        caps.insert(
            "tasks".into(),
            json!({ "list": {}, "cancel": {}, "requests": requests }),
        );
        Value::Object(caps)
    }

    fn common(&self) -> Map<String, Value> {
        let mut caps = Map::new();
        caps.insert("elicitation".into(), json!({ "form": {}, "url": {} }));
        if self.sampling {
            caps.insert("sampling".into(), json!({}));
        }
        if self.roots.is_some() {
            caps.insert("roots".into(), json!({ "listChanged": false }));
        }
        caps
    }

    /// The `roots/list` result, or `None` when roots are not offered.
    pub fn roots_result(&self) -> Option<Value> {
        let roots = self.roots.as_ref()?;
        let list: Vec<Value> = roots
            .iter()
            .map(|uri| {
                let name = uri
                    .trim_end_matches('/')
                    .rsplit('/')
                    .next()
                    .filter(|n| !n.is_empty() && !n.contains(':'));
                match name {
                    Some(n) => json!({ "uri": uri, "name": n }),
                    None => json!({ "uri": uri }),
                }
            })
            .collect();
        Some(json!({ "roots": list }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_configured_kinds_are_declared() {
        let plain = InputSupport::default();
        let m = plain.modern();
        assert_eq!(m["elicitation"], json!({ "form": {}, "url": {} }));
        assert!(m.get("sampling").is_none() && m.get("roots").is_none());
        assert!(m["extensions"].get(TASKS_EXTENSION).is_some());
        let l = plain.legacy();
        assert!(l.get("sampling").is_none() && l.get("roots").is_none());
        assert!(l.pointer("/tasks/requests/elicitation/create").is_some());
        assert!(l.pointer("/tasks/requests/sampling").is_none());
        assert!(l.get("extensions").is_none());

        let full = InputSupport {
            sampling: true,
            roots: Some(vec!["file:///work/repo".into()]),
        };
        for caps in [full.modern(), full.legacy()] {
            assert_eq!(caps["sampling"], json!({}));
            assert_eq!(caps["roots"], json!({ "listChanged": false }));
        }
        assert!(
            full.legacy()
                .pointer("/tasks/requests/sampling/createMessage")
                .is_some()
        );
    }

    #[test]
    fn roots_are_listed_with_a_name() {
        assert_eq!(InputSupport::default().roots_result(), None);
        let s = InputSupport {
            sampling: false,
            roots: Some(vec!["file:///work/repo/".into(), "file:///".into()]),
        };
        assert_eq!(
            s.roots_result().unwrap(),
            json!({ "roots": [
                { "uri": "file:///work/repo/", "name": "repo" },
                { "uri": "file:///" }
            ] })
        );
    }
}
