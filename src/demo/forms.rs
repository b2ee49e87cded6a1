//! The input requests the demo tools ask with (form- and URL-mode `elicitation/create`,
//! `sampling/createMessage`, `roots/list`) and the helpers that read an answer back.
//! Pure data, no I/O.

use serde_json::{Map, Value, json};

/// The approval form of `deploy`.
pub fn deploy_approval(service: &str, env: &str, retry_note: Option<&str>) -> Value {
    let mut message = format!("Approve deploying {service} to {env}?");
    if let Some(note) = retry_note {
        message = format!("{note} {message}");
    }
    json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": {
                    "type": "boolean",
                    "title": "Approve deployment",
                    "description": "Let the deployment go ahead",
                    "default": false
                },
                "environment": {
                    "type": "string",
                    "title": "Confirm environment",
                    "description": "Type of environment this deploy targets",
                    "enum": ["staging", "production"],
                    "default": env
                },
                "note": {
                    "type": "string",
                    "title": "Note",
                    "description": "Optional note for the deploy log",
                    "maxLength": 200
                }
            },
            "required": ["approve", "environment"]
        }
    })
}

/// The `survey` form: every field kind the elicitation schema allows.
pub fn survey() -> Value {
    json!({
        "mode": "form",
        "message": "Quick team survey (every field kind a form can have)",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "name": {
                    "type": "string", "title": "Your name",
                    "minLength": 1, "maxLength": 80
                },
                "email": {
                    "type": "string", "title": "Email", "format": "email",
                    "description": "Where we send the summary"
                },
                "homepage": { "type": "string", "title": "Homepage", "format": "uri" },
                "start_date": {
                    "type": "string", "title": "Start date", "format": "date",
                    "default": "2026-08-01"
                },
                "satisfaction": {
                    "type": "number", "title": "Satisfaction (0-10)",
                    "minimum": 0, "maximum": 10, "default": 7.5
                },
                "team_size": {
                    "type": "integer", "title": "Team size",
                    "minimum": 1, "maximum": 500, "default": 5
                },
                "subscribe": { "type": "boolean", "title": "Subscribe to updates", "default": true },
                "editor": {
                    "type": "string", "title": "Editor",
                    "enum": ["vim", "emacs", "vscode", "helix"], "default": "helix"
                },
                "color": {
                    "type": "string", "title": "Favourite colour",
                    "oneOf": [
                        { "const": "#FF0000", "title": "Red" },
                        { "const": "#00AA00", "title": "Green" },
                        { "const": "#0000FF", "title": "Blue" }
                    ],
                    "default": "#00AA00"
                },
                "languages": {
                    "type": "array", "title": "Languages you use",
                    "minItems": 1, "maxItems": 3,
                    "items": { "type": "string", "enum": ["rust", "go", "python", "typescript"] },
                    "default": ["rust"]
                },
                "platforms": {
                    "type": "array", "title": "Platforms you ship to",
                    "maxItems": 2,
                    "items": {
                        "anyOf": [
                            { "const": "linux", "title": "Linux" },
                            { "const": "macos", "title": "macOS" },
                            { "const": "windows", "title": "Windows" }
                        ]
                    }
                },
                "size": {
                    "type": "string", "title": "Company size",
                    "enum": ["s", "m", "l"],
                    "enumNames": ["Small", "Medium", "Large"],
                    "default": "m"
                },
                "comments": {
                    "type": "string", "title": "Comments",
                    "description": "Anything else?", "maxLength": 500
                }
            },
            "required": ["name", "email", "team_size", "editor"]
        }
    })
}

/// The one-field form of `wait_for_input`.
pub fn single_value(prompt: &str) -> Value {
    json!({
        "mode": "form",
        "message": prompt,
        "requestedSchema": {
            "type": "object",
            "properties": { "value": { "type": "string", "title": "Value" } },
            "required": ["value"]
        }
    })
}

/// The URL-mode request of `sign_in`: open the demo's sign-in page.
pub fn sign_in(service: &str, url: &str, token: &str) -> Value {
    json!({
        "method": "elicitation/create",
        "params": {
            "mode": "url",
            "message": format!("Sign in to {service} in your browser to continue."),
            "url": url,
            "elicitationId": token
        }
    })
}

/// The sampling request of `summarize`: a short conversation ending in the ask.
pub fn summarize(text: &str) -> Value {
    json!({
        "method": "sampling/createMessage",
        "params": {
            "systemPrompt": "You are a concise technical writer. Answer in one sentence.",
            "messages": [
                { "role": "user", "content": { "type": "text",
                  "text": format!("Here are release notes:\n\n{text}") } },
                { "role": "assistant", "content": { "type": "text",
                  "text": "Understood. What would you like me to do with them?" } },
                { "role": "user", "content": { "type": "text",
                  "text": "Summarize them for the changelog." } }
            ],
            "modelPreferences": {
                "hints": [ { "name": "claude-3-5-haiku" }, { "name": "gpt-4o-mini" } ],
                "costPriority": 0.6,
                "speedPriority": 0.8,
                "intelligencePriority": 0.3
            },
            "maxTokens": 200,
            "temperature": 0.2,
            "includeContext": "none"
        }
    })
}

/// The text of a sampling reply (`content.text` of a `CreateMessageResult`).
pub fn sampled_text(reply: &Value) -> Option<(String, String)> {
    let text = reply.pointer("/content/text")?.as_str()?.to_string();
    let model = reply
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("unknown")
        .to_string();
    Some((text, model))
}

/// The request of `scan_workspace`.
pub fn roots_request() -> Value {
    json!({ "method": "roots/list", "params": {} })
}

/// An elicitation result, read leniently.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
}

impl Answer {
    /// Unknown actions and malformed results count as `cancel`.
    pub fn parse(result: &Value) -> Answer {
        match result.get("action").and_then(Value::as_str) {
            Some("accept") => Answer::Accept(
                result
                    .get("content")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default(),
            ),
            Some("decline") => Answer::Decline,
            _ => Answer::Cancel,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_answers() {
        assert_eq!(
            Answer::parse(&json!({"action": "accept", "content": {"a": 1}})),
            Answer::Accept(serde_json::from_value(json!({"a": 1})).unwrap())
        );
        assert_eq!(
            Answer::parse(&json!({"action": "decline"})),
            Answer::Decline
        );
        assert_eq!(Answer::parse(&json!({"weird": true})), Answer::Cancel);
    }

    #[test]
    fn survey_has_every_field_kind() {
        let s = survey();
        let props = &s["requestedSchema"]["properties"];
        assert_eq!(props["email"]["format"], "email");
        assert!(props["color"]["oneOf"].is_array());
        assert!(props["languages"]["items"]["enum"].is_array());
        assert!(props["platforms"]["items"]["anyOf"].is_array());
        assert!(props["size"]["enumNames"].is_array());
        assert_eq!(props["team_size"]["type"], "integer");
    }
}
