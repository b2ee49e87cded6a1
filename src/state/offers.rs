//! What taskrail offers each server when it asks for input (sampling by a person or a
//! command, roots), and what a request therefore needs: the view that answers it, or the
//! words saying it is not offered. Must not render or do I/O.

use std::time::Duration;

use super::{State, TaskRow};
use crate::engine::ServerId;
use crate::mcp::{InputKind, InputRequest, Needs};
use crate::sanitize::sanitize_line;
use crate::state::widths;

/// How sampling requests of a server are answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SamplingSetup {
    /// The person types the reply.
    Person,
    /// After the person approves, `command` gets the request as JSON on stdin; its
    /// output is shown, then sent.
    Command { command: String, timeout: Duration },
}

/// The input kinds a server is offered beyond forms and links (from its config entry).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ServerInput {
    pub sampling: Option<SamplingSetup>,
    pub roots: Option<Vec<String>>,
}

/// Which view answers a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answering {
    Form,
    Consent,
    Sampling,
    Roots,
    /// A kind taskrail does not know.
    Unknown,
}

impl Answering {
    pub fn of(request: &InputRequest) -> Answering {
        match InputKind::of(request) {
            InputKind::Form => Answering::Form,
            InputKind::Url { .. } => Answering::Consent,
            InputKind::Sampling => Answering::Sampling,
            InputKind::Roots => Answering::Roots,
            InputKind::Other(_) => Answering::Unknown,
        }
    }
}

impl State {
    /// The input a server is offered (nothing beyond forms and links when unconfigured).
    pub fn offer(&self, server: &ServerId) -> ServerInput {
        self.input.get(server).cloned().unwrap_or_default()
    }

    /// Why `request` cannot be answered here, in words (`None`: it can).
    pub fn not_offered(&self, server: &ServerId, request: &InputRequest) -> Option<String> {
        let need = self.unmet_need(server, request)?;
        Some(match need {
            Needs::Sampling => {
                "wants sampling (an LLM reply); taskrail does not offer sampling to this server"
                    .to_string()
            }
            Needs::Roots => {
                "wants the roots list; taskrail does not offer roots to this server".to_string()
            }
            Needs::Nothing | Needs::Unknown => format!(
                "wants {}, which taskrail does not know",
                sanitize_line(&request.method, widths::METHOD)
            ),
        })
    }

    /// What `request` needs that this server is not offered, if anything.
    fn unmet_need(&self, server: &ServerId, request: &InputRequest) -> Option<Needs> {
        let offer = self.input.get(server);
        match Needs::of(request) {
            Needs::Nothing => None,
            Needs::Sampling if offer.and_then(|o| o.sampling.as_ref()).is_some() => None,
            Needs::Roots if offer.and_then(|o| o.roots.as_ref()).is_some() => None,
            need => Some(need),
        }
    }

    /// What the row says when its task waits on a request nobody here can answer: the
    /// kind it wants (one word, for the status) and a note with the way out.
    pub fn input_note(&self, row: &TaskRow) -> Option<(String, String)> {
        if row.is_over() || row.pending.is_empty() {
            return None;
        }
        let need = row
            .pending
            .values()
            .find_map(|req| self.unmet_need(&row.key.server, req))?;
        let what = match need {
            Needs::Sampling => "sampling",
            Needs::Roots => "roots",
            Needs::Nothing | Needs::Unknown => "unknown input",
        };
        // A legacy server's request can be refused (a JSON-RPC error); a modern task's
        // only way out is cancelling it.
        let legacy = self
            .servers
            .iter()
            .any(|s| s.id == row.key.server && s.era == Some(crate::mcp::Era::Legacy));
        let way_out = if legacy {
            "a refuses it, c cancels the task"
        } else {
            "c cancels the task"
        };
        Some((
            format!("wants {what}"),
            format!("taskrail does not offer it here; {way_out}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Keymap;
    use serde_json::json;

    fn req(method: &str) -> InputRequest {
        InputRequest {
            method: method.into(),
            params: json!({}),
            reply_to: None,
        }
    }

    #[test]
    fn only_configured_kinds_are_offered() {
        let a = ServerId::named("a");
        let mut s = State::new(vec![a.clone()], false, Keymap::default_keymap());
        assert!(s.not_offered(&a, &req("elicitation/create")).is_none());
        let why = s.not_offered(&a, &req("sampling/createMessage")).unwrap();
        assert!(why.contains("does not offer sampling"), "{why}");
        assert!(s.not_offered(&a, &req("roots/list")).is_some());
        let odd = s.not_offered(&a, &req("x/\u{1b}[31mred")).unwrap();
        assert!(odd.contains("x/") && !odd.contains('\u{1b}'), "{odd}");
        s.input.insert(
            a.clone(),
            ServerInput {
                sampling: Some(SamplingSetup::Person),
                roots: Some(vec!["file:///w".into()]),
            },
        );
        assert!(s.not_offered(&a, &req("sampling/createMessage")).is_none());
        assert!(s.not_offered(&a, &req("roots/list")).is_none());
        assert_eq!(Answering::of(&req("roots/list")), Answering::Roots);
    }
}
