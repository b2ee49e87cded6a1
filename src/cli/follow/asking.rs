//! How `call` puts input requests to the person. On a terminal: the prompt, the
//! dashboard's own views for the form, the link or the sampling request. Without one, a
//! task's request is printed (answer it on stdin or with `taskrail answer`), and a request
//! outside any task is declined at once, saying why — nobody is there to answer it.
//!
//! Must not talk to servers except through the engine.

use std::time::Duration;

use serde_json::json;

use super::Follower;
use crate::engine::{EngineCommand, InputOrigin, ServerId, TaskId};
use crate::mcp::{InputKind, InputRequest};
use crate::prompt::{self, Ask, Outcome};
use crate::sanitize::sanitize_line;

fn what(request: &InputRequest) -> &'static str {
    match InputKind::of(request) {
        InputKind::Form => "a form",
        InputKind::Url { .. } => "a link to open",
        InputKind::Sampling => "an LLM reply (sampling)",
        InputKind::Roots => "the roots list",
        InputKind::Other(_) => "input of an unknown kind",
    }
}

/// ": <the request's message>", or the last message of a sampling conversation.
fn gist(request: &InputRequest) -> String {
    let text = request.message().or_else(|| {
        request
            .params
            .get("messages")
            .and_then(serde_json::Value::as_array)
            .and_then(|m| m.last())
            .and_then(|m| m.pointer("/content/text"))
            .and_then(serde_json::Value::as_str)
    });
    match text.map(|t| sanitize_line(t, 300)) {
        Some(t) if !t.is_empty() => format!(": {t}"),
        _ => String::new(),
    }
}

fn origin_text(origin: &InputOrigin) -> String {
    match origin {
        InputOrigin::Call { tool, .. } => format!("during {}", sanitize_line(tool, 60)),
        InputOrigin::Session => "outside any call".to_string(),
    }
}

impl Follower {
    /// A task's input request: the prompt on a terminal. Returns false when there is no
    /// terminal (the caller prints it).
    pub(super) async fn ask_task(
        &mut self,
        server: &ServerId,
        task_id: &TaskId,
        key: &str,
        request: &InputRequest,
    ) -> bool {
        let Some(settings) = self.prompt.clone() else {
            return false;
        };
        let Some(task) = self
            .targets
            .get(&(server.clone(), task_id.clone()))
            .and_then(|t| t.last.clone())
        else {
            return false;
        };
        let ask = Ask::Task {
            server: server.clone(),
            tool: self.tool.clone(),
            task,
            key: key.to_string(),
            request: request.clone(),
        };
        match self.prompt_ask(ask, &settings).await {
            Ok(Outcome::Closed) => eprintln!(
                "input for task {task_id} not answered; answer it with `taskrail answer` (or run the dashboard)"
            ),
            Ok(Outcome::Gone) => {}
            Ok(Outcome::Answered(cmds)) => self.send_all(cmds).await,
            Err(e) => eprintln!("cannot ask on this terminal: {e:#}"),
        }
        true
    }

    /// A request outside any task: the prompt on a terminal, else declined with the reason.
    pub(super) async fn ask_foreground(
        &mut self,
        server: ServerId,
        key: String,
        origin: InputOrigin,
        request: InputRequest,
        expires_in: Duration,
    ) {
        eprintln!(
            "{server} asks for {} {}{}",
            what(&request),
            origin_text(&origin),
            gist(&request)
        );
        let Some(settings) = self.prompt.clone() else {
            eprintln!(
                "  declined: stdin is not a terminal, so nobody can answer it here (run `taskrail call` on a terminal, or use the dashboard)"
            );
            return self
                .answer(server, key, json!({ "action": "decline" }))
                .await;
        };
        let ask = Ask::Foreground {
            server: server.clone(),
            key: key.clone(),
            origin,
            request,
            expires_in,
        };
        match self.prompt_ask(ask, &settings).await {
            Ok(Outcome::Gone) => {}
            Ok(Outcome::Closed) => {
                eprintln!("  closed without an answer: cancelled");
                self.answer(server, key, json!({ "action": "cancel" }))
                    .await;
            }
            Ok(Outcome::Answered(cmds)) => {
                eprintln!("  answered");
                self.send_all(cmds).await;
            }
            Err(e) => eprintln!("cannot ask on this terminal: {e:#}"),
        }
    }

    /// The prompt, reading the engine's events meanwhile (kept for after it).
    async fn prompt_ask(
        &mut self,
        ask: Ask,
        settings: &prompt::PromptSettings,
    ) -> anyhow::Result<Outcome> {
        let Some(mut events) = self.events.take() else {
            anyhow::bail!("no engine events to follow");
        };
        let mut backlog = std::mem::take(&mut self.backlog);
        let outcome = prompt::ask(ask, settings, &mut events, &mut backlog).await;
        self.events = Some(events);
        self.backlog = backlog;
        outcome
    }

    async fn answer(&self, server: ServerId, key: String, response: serde_json::Value) {
        let cmd = EngineCommand::AnswerForeground {
            server,
            key,
            response,
        };
        self.engine.send(cmd).await;
    }

    async fn send_all(&self, cmds: Vec<EngineCommand>) {
        for cmd in cmds {
            self.engine.send(cmd).await;
        }
    }
}
