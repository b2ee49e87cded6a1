//! The demo tools as the wire sees them: names, input schemas and task support
//! (`tools/list` in both eras), and argument checking into a `ToolCall`.

use serde_json::{Value, json};

use super::wire::RpcError;

/// Whether a tool runs as a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskSupport {
    /// Always answers at once (legacy: `forbidden`).
    Never,
    /// Runs as a task if the client supports tasks, inline otherwise.
    Optional,
    /// Only as a task; `-32021` (modern) / `-32601` (legacy) otherwise.
    Required,
}

/// A parsed, validated tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolCall {
    RenderReport { pages: u64 },
    Deploy { service: String, env: String },
    ImportRows { count: u64 },
    FlakyJob,
    Lint { repo: String },
    Lookup { key: String },
    Survey,
    WaitForInput { prompt: String },
    SignIn { service: String },
    Summarize { text: String },
    ScanWorkspace,
}

fn int_arg(args: &Value, name: &str, default: u64, max: u64) -> Result<u64, RpcError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_u64()
            .or_else(|| {
                v.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            })
            .filter(|n| (1..=max).contains(n))
            .ok_or_else(|| {
                RpcError::invalid_params(format!("'{name}' must be an integer from 1 to {max}"))
            }),
    }
}

fn str_arg(args: &Value, name: &str) -> Result<String, RpcError> {
    args.get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string)
        .ok_or_else(|| RpcError::invalid_params(format!("'{name}' must be a non-empty string")))
}

impl ToolCall {
    /// Validate `params.name` + `params.arguments`. Unknown tools and bad arguments are
    /// `-32602`.
    pub fn parse(name: &str, args: &Value) -> Result<ToolCall, RpcError> {
        if !args.is_object() && !args.is_null() {
            return Err(RpcError::invalid_params("'arguments' must be an object"));
        }
        Ok(match name {
            "render_report" => ToolCall::RenderReport {
                pages: int_arg(args, "pages", 12, 100)?,
            },
            "deploy" => {
                let env = str_arg(args, "env")?;
                if env != "staging" && env != "production" {
                    return Err(RpcError::invalid_params(
                        "'env' must be \"staging\" or \"production\"",
                    ));
                }
                ToolCall::Deploy {
                    service: str_arg(args, "service")?,
                    env,
                }
            }
            "import_rows" => ToolCall::ImportRows {
                count: int_arg(args, "count", 50_000, 10_000_000)?,
            },
            "flaky_job" => ToolCall::FlakyJob,
            "lint" => ToolCall::Lint {
                repo: str_arg(args, "repo")?,
            },
            "lookup" => ToolCall::Lookup {
                key: str_arg(args, "key")?,
            },
            "survey" => ToolCall::Survey,
            "wait_for_input" => ToolCall::WaitForInput {
                prompt: str_arg(args, "prompt")?,
            },
            "sign_in" => ToolCall::SignIn {
                service: match args.get("service") {
                    None | Some(Value::Null) => "billing-portal".into(),
                    Some(_) => str_arg(args, "service")?,
                },
            },
            "summarize" => ToolCall::Summarize {
                text: str_arg(args, "text")?,
            },
            "scan_workspace" => ToolCall::ScanWorkspace,
            other => return Err(RpcError::invalid_params(format!("Unknown tool: {other}"))),
        })
    }

    pub fn task_support(&self) -> TaskSupport {
        match self {
            ToolCall::Lookup { .. } => TaskSupport::Never,
            ToolCall::RenderReport { .. } | ToolCall::FlakyJob | ToolCall::Lint { .. } => {
                TaskSupport::Optional
            }
            _ => TaskSupport::Required,
        }
    }

    /// Replies concerning this tool go out as an SSE stream instead of plain JSON.
    pub fn streams_reply(&self) -> bool {
        matches!(self, ToolCall::RenderReport { .. })
    }

    /// The first status message of a fresh task.
    pub fn opening_message(&self) -> String {
        match self {
            ToolCall::RenderReport { pages } => format!("page 0/{pages}"),
            ToolCall::Deploy { service, env } => format!("preparing {service} for {env}"),
            ToolCall::ImportRows { .. } => "0%".into(),
            ToolCall::FlakyJob => "starting".into(),
            ToolCall::Lint { repo } => format!("cloning {repo}"),
            ToolCall::Lookup { .. } => "looking up".into(),
            ToolCall::Survey => "preparing survey".into(),
            ToolCall::WaitForInput { .. } => "waiting for input".into(),
            ToolCall::SignIn { service } => format!("preparing sign-in to {service}"),
            ToolCall::Summarize { .. } => "reading the text".into(),
            ToolCall::ScanWorkspace => "asking for the workspace roots".into(),
        }
    }
}

/// The `tools` array of `tools/list`. Legacy adds `execution.taskSupport`.
pub fn catalog(legacy: bool) -> Value {
    let str_prop = |desc: &str| json!({ "type": "string", "description": desc });
    let tools = [
        (
            "render_report",
            "Render report",
            "Render a multi-page report; progress is reported per page.",
            json!({ "type": "object", "properties": {
                "pages": { "type": "integer", "minimum": 1, "maximum": 100, "default": 12,
                           "description": "Number of pages" } } }),
            TaskSupport::Optional,
        ),
        (
            "deploy",
            "Deploy service",
            "Deploy a service; asks for approval before going live.",
            json!({ "type": "object", "properties": {
                "service": str_prop("Service name"),
                "env": { "type": "string", "enum": ["staging", "production"],
                         "description": "Target environment" } },
                "required": ["service", "env"] }),
            TaskSupport::Required,
        ),
        (
            "import_rows",
            "Import rows",
            "Import rows from the warehouse (about a minute); cancellable.",
            json!({ "type": "object", "properties": {
                "count": { "type": "integer", "minimum": 1, "default": 50000,
                           "description": "Rows to import" } } }),
            TaskSupport::Required,
        ),
        (
            "flaky_job",
            "Flaky job",
            "Calls an unreliable upstream and fails with a JSON-RPC error.",
            json!({ "type": "object", "properties": {} }),
            TaskSupport::Optional,
        ),
        (
            "lint",
            "Lint repository",
            "Lint a repository; finishes with a tool error listing the problems.",
            json!({ "type": "object", "properties": { "repo": str_prop("Repository") },
                    "required": ["repo"] }),
            TaskSupport::Optional,
        ),
        (
            "lookup",
            "Lookup",
            "Look a key up in the config table; answers at once, never a task.",
            // The key also travels as an `Mcp-Param-Key` header (`x-mcp-header`).
            json!({ "type": "object",
                    "properties": { "key": { "type": "string", "description": "Key to look up",
                                             "x-mcp-header": "Key" } },
                    "required": ["key"] }),
            TaskSupport::Never,
        ),
        (
            "survey",
            "Team survey",
            "Asks a form with every field kind and echoes the answers.",
            json!({ "type": "object", "properties": {} }),
            TaskSupport::Required,
        ),
        (
            "wait_for_input",
            "Wait for input",
            "Asks for one value and returns it verbatim.",
            json!({ "type": "object", "properties": { "prompt": str_prop("Question to ask") },
                    "required": ["prompt"] }),
            TaskSupport::Required,
        ),
        (
            "sign_in",
            "Sign in",
            "Asks you to open a sign-in page in your browser (URL-mode elicitation).",
            json!({ "type": "object", "properties": {
                "service": { "type": "string", "default": "billing-portal",
                             "description": "Service to sign in to" } } }),
            TaskSupport::Required,
        ),
        (
            "summarize",
            "Summarize",
            "Asks the client's model for a one-sentence summary (sampling).",
            json!({ "type": "object", "properties": { "text": str_prop("Text to summarize") },
                    "required": ["text"] }),
            TaskSupport::Required,
        ),
        (
            "scan_workspace",
            "Scan workspace",
            "Asks the client for its roots and lists them.",
            json!({ "type": "object", "properties": {} }),
            TaskSupport::Required,
        ),
    ];
    let list: Vec<Value> = tools
        .into_iter()
        .map(|(name, title, description, schema, support)| {
            let mut tool = json!({
                "name": name, "title": title, "description": description, "inputSchema": schema
            });
            if legacy {
                match support {
                    TaskSupport::Optional => tool["execution"] = json!({"taskSupport": "optional"}),
                    TaskSupport::Required => tool["execution"] = json!({"taskSupport": "required"}),
                    TaskSupport::Never => {}
                }
            }
            tool
        })
        .collect();
    Value::Array(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_checks() {
        assert_eq!(
            ToolCall::parse("render_report", &json!({})).unwrap(),
            ToolCall::RenderReport { pages: 12 }
        );
        assert!(ToolCall::parse("render_report", &json!({"pages": "x"})).is_err());
        assert!(ToolCall::parse("deploy", &json!({"service": "a", "env": "moon"})).is_err());
        assert!(ToolCall::parse("nope", &json!({})).is_err());
        assert_eq!(
            ToolCall::parse("import_rows", &json!({}))
                .unwrap()
                .task_support(),
            TaskSupport::Required
        );
    }

    #[test]
    fn legacy_catalog_has_task_support() {
        let tools = catalog(true);
        let find = |n: &str| {
            tools
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == n)
                .cloned()
        };
        assert_eq!(
            find("import_rows").unwrap()["execution"]["taskSupport"],
            "required"
        );
        assert!(find("lookup").unwrap().get("execution").is_none());
        assert!(catalog(false)[0].get("execution").is_none());
    }
}
