//! `call`: the one server (`--server`, or the config's only one), the arguments checked
//! against the tool's `inputSchema` before anything is sent (the input form's own checks,
//! a problem named by its field), then the call sent through the engine and its task
//! followed to its end.
//!
//! Owns: that command. Must not talk to servers except through the engine.

use std::collections::VecDeque;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::args::exit;
use super::follow::{Follower, Mode};
use super::{CliResult, Context, extras, fail, stop_engine};
use crate::engine::{EngineCommand, EngineEvent, ServerId, spawn_engine};
use crate::mcp::{Endpoint, ToolInfo};
use crate::state::form::{ContentProblem, check_content};

pub async fn call(ctx: &Context, tool: &str, args: &str, detach: bool) -> CliResult {
    let arguments: serde_json::Value = match serde_json::from_str(args) {
        Ok(v @ serde_json::Value::Object(_)) => v,
        Ok(_) => return Err(fail("--args must be a JSON object", exit::USAGE)),
        Err(e) => return Err(fail(&format!("--args is not valid JSON: {e}"), exit::USAGE)),
    };
    let spec = ctx.single()?;
    if detach && matches!(spec.endpoint, Endpoint::Stdio { .. }) {
        return Err(fail(
            "call --detach refused: a stdio server's tasks live in the server process, which \
             ends with this command; follow the task instead (taskrail call without --detach), \
             or use the dashboard",
            exit::USAGE,
        ));
    }
    // Refused before the engine starts: nothing reaches a read-only server.
    if let Some(refused) = spec.refuse("call") {
        return Err(fail(refused.text(), exit::USAGE));
    }
    let ledger = ctx.ledger().await?;
    let server = spec.id.clone();
    let wait = spec.options.request_timeout + Duration::from_secs(5);
    let (engine, mut events, join) = spawn_engine(vec![spec], Some(ledger), ctx.engine_config());
    // The tool's schema first: arguments that do not fit are refused here, not sent.
    engine
        .send(EngineCommand::ListTools {
            server: server.clone(),
        })
        .await;
    let (listed, backlog) = tools_of(&mut events, &server, wait).await;
    if let Some(problem) = listed
        .as_ref()
        .and_then(|tools| tools.iter().find(|t| t.name == tool))
        .and_then(|t| check_arguments(&t.input_schema, &arguments).err())
    {
        stop_engine(engine, join).await;
        return Err(fail(
            &format!(
                "--args: field {}: {} (from the tool's inputSchema; nothing was sent)",
                problem.field, problem.why
            ),
            exit::USAGE,
        )
        .advise(format!(
            "the tool's arguments: taskrail tools --json{}",
            if ctx.servers.is_empty() {
                String::new()
            } else {
                format!(
                    " --server {}",
                    shlex::try_quote(server.as_str()).unwrap_or_default()
                )
            }
        )));
    }
    let mut follower = Follower::new(engine.clone(), Mode::Call { detach }).with_backlog(backlog);
    if crate::prompt::available() && !detach {
        follower = follower.with_prompt(extras::prompt_settings(ctx), tool);
    }
    follower.expect_call(server.clone(), 1, tool);
    engine
        .send(EngineCommand::CallTool {
            server,
            call_id: 1,
            tool: tool.to_string(),
            arguments,
            parent_task: None,
        })
        .await;
    let code = follower.run(events).await;
    stop_engine(engine, join).await;
    Ok(code)
}

/// The server's tools, once listed (`None`: it could not be reached or did not list them
/// in time), and every other event read meanwhile, for the follower.
async fn tools_of(
    events: &mut mpsc::Receiver<EngineEvent>,
    server: &ServerId,
    wait: Duration,
) -> (Option<Vec<ToolInfo>>, VecDeque<EngineEvent>) {
    let deadline = tokio::time::Instant::now() + wait;
    let mut backlog = VecDeque::new();
    loop {
        let ev = match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Some(ev)) => ev,
            Ok(None) | Err(_) => return (None, backlog),
        };
        match ev {
            EngineEvent::ToolsListed { server: s, tools } if s == *server => {
                return (Some(tools), backlog);
            }
            EngineEvent::ToolsListFailed { .. } => return (None, backlog),
            ev @ (EngineEvent::ServerDegraded { .. } | EngineEvent::SignInRequired { .. }) => {
                backlog.push_back(ev);
                return (None, backlog);
            }
            ev => backlog.push_back(ev),
        }
    }
}

/// Do `arguments` fit `schema` (a tool's `inputSchema`), as the new-task form checks what a
/// person typed? Keys the schema does not name pass unless it says
/// `additionalProperties: false`; a schema the form cannot express is not checked.
pub fn check_arguments(schema: &Value, arguments: &Value) -> Result<(), ContentProblem> {
    let Some(given) = arguments.as_object() else {
        return Ok(());
    };
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    let named = schema.get("properties").and_then(Value::as_object);
    let checked: Map<String, Value> = given
        .iter()
        .filter(|(k, _)| closed || named.is_some_and(|p| p.contains_key(*k)))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    check_content(schema, &checked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn arguments_are_checked_against_the_input_schema() {
        let schema = json!({
            "type": "object",
            "properties": {
                "topic": {"type": "string"},
                "steps": {"type": "integer", "minimum": 1}
            },
            "required": ["topic"]
        });
        assert_eq!(check_arguments(&schema, &json!({"topic": "tides"})), Ok(()));
        let e = check_arguments(&schema, &json!({"topic": 3})).unwrap_err();
        assert_eq!(e.field, "topic");
        let e = check_arguments(&schema, &json!({})).unwrap_err();
        assert_eq!((e.field.as_str(), e.why.as_str()), ("topic", "required"));
        let e = check_arguments(&schema, &json!({"topic": "x", "steps": "two"})).unwrap_err();
        assert_eq!(e.field, "steps");
        // an open schema takes keys it does not name; a closed one does not
        assert_eq!(
            check_arguments(&schema, &json!({"topic": "x", "extra": 1})),
            Ok(())
        );
        let mut closed = schema.clone();
        closed["additionalProperties"] = json!(false);
        let e = check_arguments(&closed, &json!({"topic": "x", "extra": 1})).unwrap_err();
        assert_eq!(e.field, "extra");
    }
}
