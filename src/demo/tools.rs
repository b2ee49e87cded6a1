//! The demo tools: their catalogue (`tools/list` in both eras), argument checking, and
//! the simulated work each one does through a `Work` context (progress, input, cancel).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::forms::{self, Answer};
use super::store::{Outcome, Progress, Store};
use super::wire::{INTERNAL_ERROR, RpcError};

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
            json!({ "type": "object", "properties": { "key": str_prop("Key to look up") },
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

/// The work was stopped (cancel request, TTL purge or shutdown).
#[derive(Debug)]
pub struct Stopped;

/// What a running tool can do: report progress, ask for input, sleep, notice cancel.
pub struct Work {
    store: Arc<Store>,
    task: Option<String>,
    cancel: CancellationToken,
    time_scale: f64,
    keys: u32,
    progress_tx: Option<mpsc::UnboundedSender<(String, Progress)>>,
}

impl Work {
    /// Work behind a task.
    pub fn for_task(
        store: Arc<Store>,
        task: String,
        cancel: CancellationToken,
        time_scale: f64,
    ) -> Work {
        Work {
            store,
            task: Some(task),
            cancel,
            time_scale,
            keys: 0,
            progress_tx: None,
        }
    }

    /// Work answered inline; progress (if wanted) goes to `progress_tx`.
    pub fn inline(
        store: Arc<Store>,
        time_scale: f64,
        progress_tx: Option<mpsc::UnboundedSender<(String, Progress)>>,
    ) -> Work {
        Work {
            store,
            task: None,
            cancel: CancellationToken::new(),
            time_scale,
            keys: 0,
            progress_tx,
        }
    }

    fn scaled(&self, ms: u64) -> Duration {
        let scale = if self.time_scale.is_finite() && self.time_scale >= 0.0 {
            self.time_scale
        } else {
            1.0
        };
        Duration::from_secs_f64(ms as f64 * scale / 1000.0)
    }

    async fn sleep(&self, ms: u64) -> Result<(), Stopped> {
        tokio::select! {
            _ = tokio::time::sleep(self.scaled(ms)) => Ok(()),
            _ = self.cancel.cancelled() => Err(Stopped),
        }
    }

    fn progress(&self, message: &str, done: f64, total: Option<f64>) {
        let progress = Progress {
            progress: done,
            total,
        };
        if let Some(task) = &self.task {
            self.store
                .set_progress(task, message, Some(progress.clone()));
        }
        if let Some(tx) = &self.progress_tx {
            let _ = tx.send((message.to_string(), progress));
        }
    }

    /// Put a form on the task (a fresh key each time) and wait for the answer.
    async fn ask(&mut self, prefix: &str, params: Value, waiting: &str) -> Result<Answer, Stopped> {
        let Some(task) = &self.task else {
            // Inline calls cannot ask; tools that ask always run as tasks.
            return Ok(Answer::Cancel);
        };
        self.keys += 1;
        let key = format!("{prefix}-{}", self.keys);
        let request = json!({ "method": "elicitation/create", "params": params });
        let rx = self
            .store
            .request_input(task, &key, request, waiting)
            .map_err(|_| Stopped)?;
        tokio::select! {
            answer = rx => answer.map(|a| Answer::parse(&a)).map_err(|_| Stopped),
            _ = self.cancel.cancelled() => Err(Stopped),
        }
    }
}

fn text_result(text: String, structured: Value, is_error: bool) -> Outcome {
    Outcome::Result(json!({
        "content": [{ "type": "text", "text": text }],
        "structuredContent": structured,
        "isError": is_error
    }))
}

fn cancelled() -> Outcome {
    Outcome::Cancelled("Cancelled by request".into())
}

/// Run a tool to its end.
pub async fn run(call: ToolCall, work: &mut Work) -> Outcome {
    match run_inner(call, work).await {
        Ok(outcome) => outcome,
        Err(Stopped) => cancelled(),
    }
}

async fn run_inner(call: ToolCall, work: &mut Work) -> Result<Outcome, Stopped> {
    match call {
        ToolCall::RenderReport { pages } => {
            for page in 1..=pages {
                if page == pages {
                    // The last page always finishes: a cancel this late loses the race.
                    tokio::time::sleep(work.scaled(400)).await;
                } else {
                    work.sleep(400).await?;
                }
                work.progress(
                    &format!("page {page}/{pages}"),
                    page as f64,
                    Some(pages as f64),
                );
            }
            Ok(text_result(
                format!("Report ready: {pages} pages rendered to quarterly-report.pdf"),
                json!({ "file": "quarterly-report.pdf", "pages": pages,
                        "sections": ["summary", "revenue", "costs", "outlook"] }),
                false,
            ))
        }
        ToolCall::Deploy { service, env } => {
            work.progress(&format!("building {service}"), 1.0, Some(4.0));
            work.sleep(1200).await?;
            work.progress("running pre-deploy checks", 2.0, Some(4.0));
            work.sleep(800).await?;
            let mut retry_note = None;
            for _ in 0..3 {
                let form = forms::deploy_approval(&service, &env, retry_note);
                match work.ask("approval", form, "waiting for approval").await? {
                    Answer::Accept(content) => {
                        let approve = content.get("approve").and_then(Value::as_bool);
                        let confirmed = content.get("environment").and_then(Value::as_str);
                        let note = content.get("note").and_then(Value::as_str).unwrap_or("");
                        if approve == Some(false) {
                            return Ok(Outcome::Cancelled("Deployment rejected".into()));
                        }
                        if approve.is_none() || confirmed != Some(env.as_str()) {
                            retry_note = Some("The environment was not confirmed.");
                            continue;
                        }
                        work.progress(&format!("deploying to {env}"), 3.0, Some(4.0));
                        work.sleep(1500).await?;
                        work.progress("verifying health", 4.0, Some(4.0));
                        work.sleep(500).await?;
                        let note_text = if note.is_empty() {
                            String::new()
                        } else {
                            format!(" (note: {note})")
                        };
                        return Ok(text_result(
                            format!("Deployed {service} to {env}: approved{note_text}"),
                            json!({ "service": service, "environment": env,
                                    "approved": true, "note": note }),
                            false,
                        ));
                    }
                    Answer::Decline => return Ok(Outcome::Cancelled("Deployment declined".into())),
                    Answer::Cancel => return Ok(cancelled()),
                }
            }
            Ok(Outcome::Cancelled("Deployment not confirmed".into()))
        }
        ToolCall::ImportRows { count } => {
            for pct in 1..=100u64 {
                work.sleep(600).await?;
                let rows = count * pct / 100;
                work.progress(
                    &format!("{pct}% ({rows}/{count} rows)"),
                    rows as f64,
                    Some(count as f64),
                );
            }
            Ok(text_result(
                format!("Imported {count} rows into analytics.events"),
                json!({ "rows": count, "table": "analytics.events" }),
                false,
            ))
        }
        ToolCall::FlakyJob => {
            for attempt in 1..=3 {
                work.progress(
                    &format!("attempt {attempt}/3: calling billing-api"),
                    attempt as f64,
                    Some(3.0),
                );
                work.sleep(700).await?;
            }
            Ok(Outcome::Error(json!({
                "code": INTERNAL_ERROR,
                "message": "Upstream service unavailable after 3 attempts",
                "data": { "service": "billing-api", "attempts": 3 }
            })))
        }
        ToolCall::Lint { repo } => {
            work.progress(&format!("scanning {repo}"), 1.0, Some(2.0));
            work.sleep(800).await?;
            work.progress("checking style", 2.0, Some(2.0));
            work.sleep(600).await?;
            Ok(text_result(
                format!("lint found 3 problems in {repo}"),
                json!({ "repo": repo, "problems": [
                    { "file": "src/main.rs", "line": 12, "rule": "unused-import" },
                    { "file": "src/lib.rs", "line": 40, "rule": "missing-docs" },
                    { "file": "src/net.rs", "line": 7, "rule": "unwrap-used" }
                ] }),
                true,
            ))
        }
        ToolCall::Lookup { key } => {
            let value = match key.as_str() {
                "region" => Some("eu-west-1"),
                "owner" => Some("platform-team"),
                "version" => Some("4.2.0"),
                "oncall" => Some("alex"),
                _ => None,
            };
            Ok(match value {
                Some(v) => text_result(
                    format!("{key} = {v}"),
                    json!({ "key": key, "value": v }),
                    false,
                ),
                None => text_result(
                    format!("no entry for '{key}'"),
                    json!({ "key": key, "value": null }),
                    false,
                ),
            })
        }
        ToolCall::Survey => {
            work.sleep(300).await?;
            match work
                .ask("survey", forms::survey(), "waiting for survey answers")
                .await?
            {
                Answer::Accept(content) => {
                    work.progress("tallying answers", 1.0, Some(1.0));
                    work.sleep(300).await?;
                    let echoed = Value::Object(content);
                    Ok(text_result(
                        format!("Thanks! Your answers: {echoed}"),
                        json!({ "answers": echoed }),
                        false,
                    ))
                }
                Answer::Decline => Ok(text_result(
                    "Survey declined".into(),
                    json!({ "answers": null }),
                    false,
                )),
                Answer::Cancel => Ok(cancelled()),
            }
        }
        ToolCall::WaitForInput { prompt } => {
            for _ in 0..3 {
                let form = forms::single_value(&prompt);
                match work.ask("value", form, "waiting for input").await? {
                    Answer::Accept(content) => {
                        if let Some(value) = content.get("value").and_then(Value::as_str) {
                            return Ok(text_result(
                                format!("Received: {value}"),
                                json!({ "value": value }),
                                false,
                            ));
                        }
                    }
                    Answer::Decline => return Ok(Outcome::Cancelled("Input declined".into())),
                    Answer::Cancel => return Ok(cancelled()),
                }
            }
            Ok(Outcome::Cancelled("No valid input given".into()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::store::Scope;

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

    #[tokio::test]
    async fn wait_for_input_echoes_the_answer() {
        let store = Arc::new(Store::new());
        let (id, _, cancel) = store.create(Scope::Modern, 60_000, 1000, "x");
        let mut work = Work::for_task(store.clone(), id.clone(), cancel, 0.0);
        let call = ToolCall::WaitForInput {
            prompt: "Say".into(),
        };
        let runner = tokio::spawn(async move { run(call, &mut work).await });
        for _ in 0..200 {
            if store.status(&id, &Scope::Modern) == Ok(super::super::store::Status::InputRequired) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let answers = serde_json::from_value(
            json!({"value-1": {"action": "accept", "content": {"value": "hi there"}}}),
        )
        .unwrap();
        assert_eq!(store.answer(&id, &Scope::Modern, &answers), Ok(1));
        let outcome = runner.await.unwrap();
        let Outcome::Result(result) = outcome else {
            panic!("expected a result, got {outcome:?}");
        };
        assert_eq!(result["content"][0]["text"], "Received: hi there");
    }
}
