//! `taskrail conformance <server-url>`: the client entry point the MCP conformance suite
//! starts (`MCP_CONFORMANCE_SCENARIO` names the scenario). It connects, lists the tools,
//! calls each with arguments made from its input schema, and accepts untracked
//! elicitations with the schema's defaults filled in through the real form builder. Signing
//! in is the real flow with two stand-ins: the token store lives in memory, and the
//! "browser" is a GET of the authorization URL whose redirect is the response (the suite's
//! authorization endpoint redirects at once). `MCP_CONFORMANCE_CONTEXT` may carry client
//! credentials (a pre-registered client, or the client-credentials grant's secret or key).
//!
//! Owns: nothing the rest of the CLI uses. Must not print unsanitized server text.

use futures::StreamExt;
use serde_json::{Map, Value, json};
use std::sync::Arc;

use super::output::out;
use super::{CliResult, Context, exit, fail};
use crate::mcp::auth::{
    AuthSettings, Authorizer, ClientAssertion, DirectFetch, Grant, Secret, TokenStore,
};
use crate::mcp::{CallOutcome, ConnectOptions, Endpoint, Era, McpClient};
use crate::sanitize::sanitize_line;
use crate::state::form::Form;

/// At most this many tools are called in one run.
const MAX_CALLS: usize = 8;

/// Run the scenario against `url`; exit 0 when every step succeeded.
pub async fn run(ctx: &Context, url: &str, client_metadata_url: Option<String>) -> CliResult {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let _ = out!("scenario {}", sanitize_line(&scenario, 80));
    let endpoint = match Endpoint::parse(url) {
        Ok(e) => e,
        Err(e) => return Err(fail(&e.to_string(), exit::USAGE)),
    };
    let opts = ctx.connect_options()?;
    let settings = settings_from_context(&scenario, client_metadata_url);
    let auth = match Authorizer::new(url, settings, TokenStore::memory(), &opts.client_name) {
        Ok(a) => Arc::new(a),
        Err(e) => return Err(fail(&e.to_string(), exit::USAGE)),
    };
    match auth.http() {
        Ok(http) => auth.set_interaction(Some(DirectFetch::new(http.clone()))),
        Err(e) => return Err(fail(&e.to_string(), exit::CONNECTION)),
    }
    let opts = ConnectOptions {
        call_timeout: opts.request_timeout,
        auth: Some(auth),
        ..opts
    };
    let (client, _pushes) = match McpClient::connect(endpoint, opts).await {
        Ok(c) => c,
        Err(e) => return Err(fail(&format!("cannot connect: {e}"), exit::CONNECTION)),
    };
    client.on_untracked_elicitation(Arc::new(accept_with_defaults));
    let stream_task = legacy_stream(&client).await;
    let info = client.info();
    let _ = out!(
        "connected: era {} protocol {}",
        info.era.as_str(),
        sanitize_line(&info.protocol_version, 40)
    );
    let code = call_tools(&client).await;
    if let Some(task) = stream_task {
        task.abort();
    }
    client.close().await;
    code
}

/// Sign-in settings from `MCP_CONFORMANCE_CONTEXT`: a private key means the
/// client-credentials grant with a signed JWT, a secret in a client-credentials scenario
/// that grant with the secret, any other client id a pre-registered client.
fn settings_from_context(scenario: &str, client_metadata_url: Option<String>) -> AuthSettings {
    let ctx: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(Value::Null);
    let text = |k: &str| ctx.get(k).and_then(Value::as_str).map(str::to_string);
    let client_id = text("client_id");
    let secret = text("client_secret").map(Secret::new);
    let grant = if let Some(pem) = text("private_key_pem") {
        Grant::ClientCredentials(ClientAssertion::Jwt {
            private_key_pem: Secret::new(pem),
            algorithm: text("signing_algorithm").unwrap_or_else(|| "ES256".into()),
        })
    } else if let (true, Some(s)) = (scenario.contains("client-credentials"), secret.clone()) {
        Grant::ClientCredentials(ClientAssertion::Secret(s))
    } else {
        Grant::AuthorizationCode
    };
    let client_secret = match grant {
        Grant::AuthorizationCode => secret,
        Grant::ClientCredentials(_) => None,
    };
    AuthSettings {
        client_id,
        client_secret,
        client_metadata_url,
        grant,
        ..Default::default()
    }
}

/// Legacy: read the session's GET stream (server requests not tied to a call arrive
/// there) and dispatch every message, as the engine does.
async fn legacy_stream(client: &Arc<McpClient>) -> Option<tokio::task::JoinHandle<()>> {
    if client.era() != Era::Legacy {
        return None;
    }
    let mut stream = client.open_legacy_stream().await.ok()?;
    let client = Arc::downgrade(client);
    Some(tokio::spawn(async move {
        while let Some(item) = stream.next().await {
            let Some(client) = client.upgrade() else {
                break;
            };
            match item {
                Ok(msg) => client.dispatch(msg).await,
                Err(e) => tracing::debug!("GET stream: {e}"),
            }
        }
    }))
}

async fn call_tools(client: &McpClient) -> CliResult {
    let tools = match client.list_tools().await {
        Ok(t) => t,
        Err(e) => return Err(fail(&format!("tools/list: {e}"), exit::CONNECTION)),
    };
    let _ = out!("{} tool(s)", tools.len());
    let mut code = exit::COMPLETED;
    for tool in tools.iter().take(MAX_CALLS) {
        let args = arguments_for(&tool.input_schema);
        let name = sanitize_line(&tool.name, 80);
        match client
            .call_tool(&tool.name, Value::Object(args), None, None)
            .await
        {
            Ok(CallOutcome::Complete(result)) => {
                let text = first_text(&result).unwrap_or_default();
                let _ = out!("{name}: {}", sanitize_line(&text, 200));
            }
            Ok(CallOutcome::Task(task)) => {
                let _ = out!("{name}: task {}", sanitize_line(task.status.as_str(), 40));
            }
            Ok(CallOutcome::InputRequired { .. }) => {
                let _ = out!("{name}: input required");
            }
            Err(e) => code = fail(&format!("{name}: {e}"), exit::TOOL_ERROR).report(),
        }
    }
    Ok(code)
}

/// Arguments that satisfy a flat input schema: defaults where given, else a plain value
/// of the property's type for every required property.
fn arguments_for(schema: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return out;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for (name, prop) in props {
        let value = prop.get("default").cloned().or_else(|| {
            required.contains(&name.as_str()).then(|| {
                match prop.get("type").and_then(Value::as_str) {
                    Some("number" | "integer") => json!(1),
                    Some("boolean") => json!(true),
                    Some("array") => json!([]),
                    Some("object") => json!({}),
                    _ => json!("x"),
                }
            })
        });
        if let Some(v) = value {
            out.insert(name.clone(), v);
        }
    }
    out
}

/// Accept a form elicitation with every default the requested schema names (SEP-1034),
/// built by the dashboard's form builder; decline what it cannot fill.
pub fn accept_with_defaults(params: &Value) -> Value {
    let schema = params
        .get("requestedSchema")
        .cloned()
        .unwrap_or(Value::Null);
    let mut form = Form::default();
    if form.append_schema(0, &schema).is_none() {
        return json!({ "action": "decline" });
    }
    match form.collect(0) {
        Ok(content) => json!({ "action": "accept", "content": content }),
        Err(_) => json!({ "action": "decline" }),
    }
}

fn first_text(result: &Value) -> Option<String> {
    result
        .get("content")?
        .as_array()?
        .iter()
        .find_map(|c| c.get("text").and_then(Value::as_str))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_of_every_kind_are_filled() {
        let params = json!({ "message": "m", "requestedSchema": { "type": "object", "properties": {
            "name": { "type": "string", "default": "John Doe" },
            "age": { "type": "integer", "default": 30 },
            "score": { "type": "number", "default": 95.5 },
            "status": { "type": "string", "enum": ["active", "inactive"], "default": "active" },
            "verified": { "type": "boolean", "default": true }
        }, "required": [] } });
        let r = accept_with_defaults(&params);
        assert_eq!(r["action"], "accept");
        assert_eq!(
            r["content"],
            json!({ "name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true })
        );
    }

    #[test]
    fn a_required_field_without_default_declines() {
        let params = json!({ "requestedSchema": { "type": "object",
            "properties": { "x": { "type": "string" } }, "required": ["x"] } });
        assert_eq!(accept_with_defaults(&params)["action"], "decline");
    }

    #[test]
    fn required_arguments_get_plain_values() {
        let schema = json!({ "type": "object", "properties": {
            "a": { "type": "number" }, "b": { "type": "number" }, "c": { "type": "string" }
        }, "required": ["a", "b"] });
        assert_eq!(
            arguments_for(&schema),
            *json!({ "a": 1, "b": 1 }).as_object().unwrap()
        );
    }
}
