//! The simulated work of each demo tool, done through a `Work` context: progress in the
//! status message, input requests with fresh keys, cooperative cancellation, time scale.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::catalog::ToolCall;
use super::forms::{self, Answer};
use super::sign_in::SignIns;
use super::store::{Outcome, Progress, Store};
use super::wire::INTERNAL_ERROR;

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
    sign_ins: Option<Arc<SignIns>>,
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
            sign_ins: None,
        }
    }

    /// The sign-in pages `sign_in` sends the person to.
    pub fn with_sign_ins(mut self, sign_ins: Arc<SignIns>) -> Work {
        self.sign_ins = Some(sign_ins);
        self
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
            sign_ins: None,
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
        let request = json!({ "method": "elicitation/create", "params": params });
        let answer = self.ask_raw(prefix, request, waiting).await?;
        Ok(Answer::parse(&answer))
    }

    /// Put any input request on the task and wait for the raw answer (`{"action":
    /// "cancel"}` when the work runs inline: tools that ask always run as tasks).
    async fn ask_raw(
        &mut self,
        prefix: &str,
        request: Value,
        waiting: &str,
    ) -> Result<Value, Stopped> {
        let Some(task) = &self.task else {
            return Ok(json!({ "action": "cancel" }));
        };
        self.keys += 1;
        let key = format!("{prefix}-{}", self.keys);
        let rx = self
            .store
            .request_input(task, &key, request, waiting)
            .map_err(|_| Stopped)?;
        tokio::select! {
            answer = rx => answer.map_err(|_| Stopped),
            _ = self.cancel.cancelled() => Err(Stopped),
        }
    }

    /// `sign_in`: consent to open the page, then the visit (within a minute).
    async fn sign_in(&mut self, service: &str) -> Result<Outcome, Stopped> {
        let (Some(sign_ins), Some(task)) = (self.sign_ins.clone(), self.task.clone()) else {
            return Ok(cancelled());
        };
        let (token, url, visited) = sign_ins.open(&task);
        let request = forms::sign_in(service, &url, &token);
        let answer = self
            .ask_raw("sign-in", request, "waiting for the sign-in consent")
            .await;
        let outcome = match answer.map(|a| Answer::parse(&a)) {
            Err(e) => Err(e),
            Ok(Answer::Accept(_)) => {
                self.progress("waiting for the sign-in page to be opened", 1.0, Some(2.0));
                let wait = self.scaled(60_000).max(Duration::from_secs(5));
                tokio::select! {
                    v = visited => Ok(match v {
                        Ok(()) => text_result(
                            format!("Signed in to {service}"),
                            json!({ "service": service, "signedIn": true }),
                            false,
                        ),
                        Err(_) => cancelled(),
                    }),
                    _ = tokio::time::sleep(wait) => Ok(text_result(
                        format!("Consent given, but the sign-in page of {service} was not opened in time"),
                        json!({ "service": service, "signedIn": false }),
                        true,
                    )),
                    _ = self.cancel.cancelled() => Err(Stopped),
                }
            }
            Ok(Answer::Decline) => Ok(Outcome::Cancelled("Sign-in declined".into())),
            Ok(Answer::Cancel) => Ok(cancelled()),
        };
        sign_ins.close(&token);
        outcome
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
        ToolCall::SignIn { service } => work.sign_in(&service).await,
        ToolCall::Summarize { text } => {
            work.sleep(300).await?;
            let reply = work
                .ask_raw(
                    "sample",
                    forms::summarize(&text),
                    "waiting for the model's reply",
                )
                .await?;
            Ok(match forms::sampled_text(&reply) {
                Some((summary, model)) => text_result(
                    format!("Summary: {summary}"),
                    json!({ "summary": summary, "model": model }),
                    false,
                ),
                None => Outcome::Cancelled("Sampling refused".into()),
            })
        }
        ToolCall::ScanWorkspace => {
            let reply = work
                .ask_raw("roots", forms::roots_request(), "waiting for the roots")
                .await?;
            let roots: Vec<String> = reply
                .get("roots")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|r| r.get("uri").and_then(Value::as_str).map(str::to_string))
                .collect();
            Ok(if roots.is_empty() && reply.get("roots").is_none() {
                Outcome::Cancelled("No roots shared".into())
            } else {
                text_result(
                    format!("Scanned {} root(s): {}", roots.len(), roots.join(", ")),
                    json!({ "roots": roots }),
                    false,
                )
            })
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

    /// Run `call` as a task, answer its first input request with `answer(request)`.
    async fn answered(call: ToolCall, answer: impl Fn(&Value) -> Value) -> (Outcome, Value) {
        let store = Arc::new(Store::new());
        let sign_ins = Arc::new(SignIns::default());
        let (id, _, cancel) = store.create(Scope::Modern, 60_000, 1000, "x");
        let mut work =
            Work::for_task(store.clone(), id.clone(), cancel, 0.0).with_sign_ins(sign_ins.clone());
        let runner = tokio::spawn(async move { run(call, &mut work).await });
        let mut asked = Value::Null;
        for _ in 0..400 {
            let snap = store.read(&id, &Scope::Modern, false, false).unwrap();
            if let Some((k, req)) = snap["inputRequests"]
                .as_object()
                .and_then(|m| m.iter().next())
            {
                asked = req.clone();
                if let Some(token) = req.pointer("/params/elicitationId").and_then(Value::as_str) {
                    sign_ins.visit(token);
                }
                let mut answers = serde_json::Map::new();
                answers.insert(k.clone(), answer(req));
                store.answer(&id, &Scope::Modern, &answers).unwrap();
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        (runner.await.unwrap(), asked)
    }

    fn text_of(outcome: &Outcome) -> String {
        match outcome {
            Outcome::Result(r) => r["content"][0]["text"].as_str().unwrap().to_string(),
            other => format!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn summarize_asks_for_sampling_and_uses_the_reply() {
        let call = ToolCall::Summarize {
            text: "fixed a crash".into(),
        };
        let (outcome, asked) = answered(call, |_| {
            json!({"role": "assistant", "model": "person",
                   "content": {"type": "text", "text": "Crash fixed."}})
        })
        .await;
        assert_eq!(asked["method"], "sampling/createMessage");
        assert_eq!(asked["params"]["maxTokens"], 200);
        assert_eq!(text_of(&outcome), "Summary: Crash fixed.");
        let call = ToolCall::Summarize { text: "x".into() };
        let (refused, _) = answered(call, |_| json!({"action": "cancel"})).await;
        assert!(matches!(refused, Outcome::Cancelled(m) if m == "Sampling refused"));
    }

    #[tokio::test]
    async fn scan_workspace_lists_the_roots_it_is_given() {
        let (outcome, asked) = answered(
            ToolCall::ScanWorkspace,
            |_| json!({"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}),
        )
        .await;
        assert_eq!(asked["method"], "roots/list");
        assert_eq!(text_of(&outcome), "Scanned 2 root(s): file:///a, file:///b");
    }

    #[tokio::test]
    async fn sign_in_completes_when_its_page_is_visited() {
        let call = ToolCall::SignIn {
            service: "portal".into(),
        };
        let (outcome, asked) = answered(call, |_| json!({"action": "accept"})).await;
        assert_eq!(asked["params"]["mode"], "url");
        assert!(
            asked["params"]["url"]
                .as_str()
                .unwrap()
                .contains("/sign-in/")
        );
        assert_eq!(text_of(&outcome), "Signed in to portal");
        let call = ToolCall::SignIn {
            service: "portal".into(),
        };
        let (declined, _) = answered(call, |_| json!({"action": "decline"})).await;
        assert!(matches!(declined, Outcome::Cancelled(m) if m == "Sign-in declined"));
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
