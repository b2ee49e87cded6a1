//! The sampling view's data: a `sampling/createMessage` request as a document (system
//! prompt, conversation, model preferences, token limit), the reply being composed and where
//! it stands, and command output made inert. Must not change `State`.

use serde_json::{Value, json};

use crate::mcp::{Era, InputRequest};
use crate::sanitize::{sanitize_block, sanitize_line};
use crate::state::State;
use crate::state::doc::{DocLine, LineKind, json_lines};
use crate::state::input_target::InputTarget;
use crate::state::offers::SamplingSetup;
use crate::state::text_area::TextArea;
use crate::state::widths;

/// At most this much of a command's output (or a typed reply) is kept, in chars.
pub const MAX_REPLY: usize = 16 * 1024;
/// Messages of the conversation shown (the latest ones).
const MAX_MESSAGES: usize = 100;

/// Where the reply stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// The person types (or may run the command).
    Compose,
    /// The command runs.
    Running,
    /// The command's output is in the reply, to be read before sending.
    Review,
    /// The command failed (why); the reply is untouched.
    Failed(String),
}

/// The sampling view of one request.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingView {
    pub target: InputTarget,
    pub input_key: String,
    /// Sanitized: whose request.
    pub title: String,
    /// The request, sanitized and bounded, ready to show.
    pub doc: Vec<DocLine>,
    /// The request as sent, for the command's stdin.
    pub request: InputRequest,
    /// `None`: sampling is not offered to this server.
    pub setup: Option<SamplingSetup>,
    /// Whether a refusal can be sent (a modern task's sampling request has no refusal).
    pub can_refuse: bool,
    pub reply: TextArea,
    pub phase: Phase,
    pub scroll: usize,
    /// Why the last key did nothing, display-safe (made so when set).
    pub error: Option<String>,
}

fn content_lines(out: &mut Vec<DocLine>, content: &Value) {
    let blocks: Vec<&Value> = match content {
        Value::Array(a) => a.iter().take(50).collect(),
        other => vec![other],
    };
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                let text = b.get("text").and_then(Value::as_str).unwrap_or("");
                for l in sanitize_block(text, widths::MESSAGE_LINES, widths::SAMPLING_COLS) {
                    out.push(DocLine::new(LineKind::Body, l));
                }
            }
            Some(kind @ ("image" | "audio")) => {
                let mime = b.get("mimeType").and_then(Value::as_str).unwrap_or("?");
                out.push(DocLine::new(
                    LineKind::Dim,
                    format!("[{kind}, {}]", sanitize_line(mime, widths::LABEL)),
                ));
            }
            _ => out.extend(json_lines(b, 30)),
        }
    }
}

/// The request as a document: system prompt, conversation, preferences and limits.
pub fn request_doc(params: &Value) -> Vec<DocLine> {
    let mut out = Vec::new();
    if let Some(sp) = params.get("systemPrompt").and_then(Value::as_str) {
        out.push(DocLine::new(LineKind::Heading, "System prompt"));
        for l in sanitize_block(sp, widths::PROMPT_LINES, widths::SAMPLING_COLS) {
            out.push(DocLine::new(LineKind::Body, l));
        }
    }
    out.push(DocLine::new(LineKind::Heading, "Conversation"));
    let messages = params
        .get("messages")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if messages.len() > MAX_MESSAGES {
        out.push(DocLine::new(
            LineKind::Dim,
            format!(
                "… {} earlier messages not shown",
                messages.len() - MAX_MESSAGES
            ),
        ));
    }
    if messages.is_empty() {
        out.push(DocLine::new(LineKind::Dim, "(no messages)"));
    }
    for m in messages
        .iter()
        .skip(messages.len().saturating_sub(MAX_MESSAGES))
    {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("?");
        out.push(DocLine::new(
            LineKind::SubHeading,
            format!("{}:", sanitize_line(role, widths::ROLE)),
        ));
        content_lines(&mut out, m.get("content").unwrap_or(&Value::Null));
    }
    out.push(DocLine::new(LineKind::Heading, "Asked for"));
    let max = params
        .get("maxTokens")
        .and_then(Value::as_u64)
        .map_or("(not given)".to_string(), |n| n.to_string());
    out.push(DocLine::field("max tokens", max));
    if let Some(t) = params.get("temperature").and_then(Value::as_f64) {
        out.push(DocLine::field("temperature", format!("{t}")));
    }
    if let Some(stops) = params.get("stopSequences").and_then(Value::as_array) {
        let list: Vec<String> = stops
            .iter()
            .take(10)
            .filter_map(Value::as_str)
            .map(|s| format!("{:?}", sanitize_line(s, widths::HINT)))
            .collect();
        out.push(DocLine::field("stop at", list.join(", ")));
    }
    if let Some(prefs) = params.get("modelPreferences") {
        let hints: Vec<String> = prefs
            .get("hints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .take(10)
            .filter_map(|h| h.get("name").and_then(Value::as_str))
            .map(|n| sanitize_line(n, widths::LABEL))
            .collect();
        if !hints.is_empty() {
            out.push(DocLine::field("models", hints.join(", ")));
        }
        let mut prio = Vec::new();
        for (k, name) in [
            ("intelligencePriority", "intelligence"),
            ("speedPriority", "speed"),
            ("costPriority", "cost"),
        ] {
            if let Some(v) = prefs.get(k).and_then(Value::as_f64) {
                prio.push(format!("{name} {v}"));
            }
        }
        if !prio.is_empty() {
            out.push(DocLine::field("priorities", prio.join(", ")));
        }
    }
    if let Some(ctx) = params.get("includeContext").and_then(Value::as_str) {
        out.push(DocLine::field("context", sanitize_line(ctx, widths::HINT)));
    }
    if params.get("tools").is_some() {
        out.push(DocLine::new(
            LineKind::Dim,
            "The server also offers tools to the model; a reply here uses none.",
        ));
    }
    out
}

impl SamplingView {
    pub fn build(
        state: &State,
        target: InputTarget,
        title: String,
        input_key: &str,
        request: &InputRequest,
    ) -> SamplingView {
        let server = target.server().clone();
        let legacy_task = matches!(&target, InputTarget::Task(_))
            && state
                .servers
                .iter()
                .any(|s| s.id == server && s.era == Some(Era::Legacy));
        let can_refuse = matches!(target, InputTarget::Foreground { .. }) || legacy_task;
        let draft = state
            .drafts
            .get(&(target.clone(), input_key.to_string()))
            .cloned()
            .unwrap_or_default();
        SamplingView {
            doc: request_doc(&request.params),
            request: request.clone(),
            setup: state.offer(&server).sampling,
            can_refuse,
            target,
            input_key: input_key.to_string(),
            title,
            reply: TextArea::new(&draft),
            phase: Phase::Compose,
            scroll: 0,
            error: None,
        }
    }

    /// The `CreateMessageResult` sent for the reply.
    pub fn result(&self) -> Value {
        let model = match &self.setup {
            Some(SamplingSetup::Command { command, .. }) if self.phase == Phase::Review => {
                shlex::split(command)
                    .and_then(|a| a.into_iter().next())
                    .map(|p| sanitize_line(p.rsplit('/').next().unwrap_or(&p), widths::LABEL))
                    .unwrap_or_else(|| "command".into())
            }
            _ => "person".to_string(),
        };
        json!({
            "role": "assistant",
            "content": { "type": "text", "text": self.reply.text() },
            "model": model,
            "stopReason": "endTurn"
        })
    }
}

/// Command output made inert: lines kept, controls and escapes gone, bounded.
pub fn clean_output(out: &str) -> String {
    let lines = sanitize_block(out.trim_end(), widths::OUTPUT_LINES, MAX_REPLY);
    let mut text = lines.join("\n");
    if text.chars().count() > MAX_REPLY {
        text = text.chars().take(MAX_REPLY).collect();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_document_shows_everything_the_server_sent() {
        let doc = request_doc(&json!({
            "systemPrompt": "Be brief.",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Hi\nthere \u{1b}[2J"}},
                {"role": "assistant", "content": [{"type": "image", "mimeType": "image/png", "data": "xx"}]}
            ],
            "maxTokens": 50,
            "temperature": 0.7,
            "modelPreferences": {"hints": [{"name": "claude-3"}], "speedPriority": 0.5},
            "stopSequences": ["END"]
        }));
        let text: Vec<String> = doc
            .iter()
            .map(|l| format!("{}{}", l.label.clone().unwrap_or_default(), l.text))
            .collect();
        let all = text.join("|");
        for want in [
            "Be brief.",
            "user:",
            "Hi",
            "there",
            "[image, image/png]",
            "max tokens50",
            "temperature0.7",
            "modelsclaude-3",
            "speed 0.5",
            "\"END\"",
        ] {
            assert!(all.contains(want), "{want} missing from {all}");
        }
        assert!(!all.contains('\u{1b}'));
    }

    #[test]
    fn command_output_is_made_inert_and_bounded() {
        assert_eq!(
            clean_output("line 1\n\u{1b}[31mred\u{1b}[0m\n\n"),
            "line 1\nred"
        );
        assert!(clean_output(&"x".repeat(MAX_REPLY * 2)).chars().count() <= MAX_REPLY);
    }
}
