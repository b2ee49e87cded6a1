//! Input, host side. A task's input requests are answered in the dashboard (its answer
//! reaches this process through the ledger's outbox, since this engine follows the task);
//! when the waiting host declared the capability (elicitation, sampling, roots), each
//! request also goes to the host. The first answer wins: a host answer is sent with
//! `tasks/update` (or as the legacy reply) and the dashboard sees the key answered; a key
//! answered elsewhere is withdrawn from the host with `notifications/cancelled`.
//! Multi round-trip input before a task exists is asked of a 2025-era host the same way. A
//! 2026-07-28 host that waits for a result has no server requests: its call ends with an
//! `input_required` result, and the retry carrying the answers (and the `requestState` we
//! gave) goes back to waiting for the same task.
//!
//! Must not send an answer upstream itself: the engine does, once per key.

use std::collections::{BTreeMap, HashMap, HashSet};

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use serde_json::{Value, json};

use super::board::TaskView;
use super::host::{Answer, Ctx, takes};
use super::rpc_error;
use crate::mcp::jsonrpc::RequestId;
use crate::mcp::{CallOutcome, ErrorObject, TaskId, decode_call_result};

/// Input requests of one task sent to the waiting host.
pub struct Asks {
    /// v1 hosts: requests name the task they belong to.
    related: Option<TaskId>,
    open: HashMap<String, RequestId>,
    /// Keys asked once (never asked again, answered or not).
    asked: HashSet<String>,
    answers: FuturesUnordered<BoxFuture<'static, (String, Answer)>>,
}

fn with_related(params: &Value, task: Option<&TaskId>) -> Value {
    let mut params = params.clone();
    if let (Some(task), Some(obj)) = (task, params.as_object_mut()) {
        let meta = obj.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(
                "io.modelcontextprotocol/related-task".into(),
                json!({ "taskId": task.as_str() }),
            );
        }
    }
    params
}

impl Asks {
    pub fn new(related: Option<TaskId>) -> Asks {
        Asks {
            related,
            open: HashMap::new(),
            asked: HashSet::new(),
            answers: FuturesUnordered::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.answers.is_empty()
    }

    /// Ask the host for every pending key it can answer; withdraw the keys no longer
    /// pending (answered in the dashboard, or the task moved on).
    pub async fn sync(&mut self, ctx: &Ctx, view: &TaskView) {
        let Some(task) = &view.task else { return };
        for key in &view.pending {
            if self.asked.contains(key) {
                continue;
            }
            let Some(req) = task.input_requests.get(key) else {
                continue;
            };
            if !ctx.can_answer(&req.method, &req.params) {
                continue;
            }
            self.asked.insert(key.clone());
            let params = with_related(&req.params, self.related.as_ref());
            if let Some((id, rx)) = ctx.host.ask(&ctx.out, &req.method, params).await {
                tracing::debug!(task = %task.task_id, "input request sent to the client too");
                self.open.insert(key.clone(), id);
                let key = key.clone();
                self.answers.push(Box::pin(async move {
                    let answer = rx
                        .await
                        .unwrap_or_else(|_| Err(rpc_error(-32603, "the client went away")));
                    (key, answer)
                }));
            }
        }
        let gone: Vec<String> = self
            .open
            .keys()
            .filter(|k| !view.pending.contains(k))
            .cloned()
            .collect();
        for key in gone {
            if let Some(id) = self.open.remove(&key) {
                ctx.host
                    .withdraw(&ctx.out, &id, "answered elsewhere (the taskrail dashboard)")
                    .await;
            }
        }
    }

    /// The next answer the host gave (its request is closed).
    pub async fn next(&mut self) -> Option<(String, Answer)> {
        let (key, answer) = self.answers.next().await?;
        self.open.remove(&key);
        Some((key, answer))
    }

    /// Withdraw every request still open.
    pub async fn withdraw_all(&mut self, ctx: &Ctx, reason: &str) {
        for (_, id) in self.open.drain() {
            ctx.host.withdraw(&ctx.out, &id, reason).await;
        }
    }
}

/// Multi round-trip input a server asks for before a call starts, asked of a 2025-era host
/// one request at a time: the `inputResponses` of the retry, `None` when the host cancelled
/// the call meanwhile, an error when it cannot answer one of them.
pub async fn ask_first(ctx: &Ctx, first: &Value) -> Result<Option<Value>, ErrorObject> {
    let Ok(CallOutcome::InputRequired { input_requests, .. }) = decode_call_result(first) else {
        return Err(rpc_error(
            -32603,
            "a malformed input request from the server",
        ));
    };
    let mut responses = BTreeMap::new();
    for (key, req) in input_requests {
        if !ctx.can_answer(&req.method, &req.params) {
            return Err(rpc_error(
                -32603,
                format!(
                    "the server needs input ({}) before the call can start, and this client \
                     did not declare that it can give it",
                    crate::sanitize::sanitize_line(&req.method, 60)
                ),
            ));
        }
        let Some((id, rx)) = ctx.host.ask(&ctx.out, &req.method, req.params).await else {
            return Ok(None);
        };
        let answer = tokio::select! {
            a = rx => a.unwrap_or_else(|_| Err(rpc_error(-32603, "the client went away"))),
            _ = ctx.cancel.cancelled() => {
                ctx.host.withdraw(&ctx.out, &id, "the call was cancelled").await;
                return Ok(None);
            }
        };
        responses.insert(key, answer?);
    }
    Ok(Some(serde_json::to_value(responses).unwrap_or(Value::Null)))
}

/// The `requestState` prefix of a call that waits for a task of ours.
const RESUME: &str = "taskrail-proxy:";

/// For a 2026-07-28 host that declared the capability: the `input_required` result that
/// asks it for the task's pending requests (`None` when there are none it can answer).
pub fn ask_modern(ctx: &Ctx, view: &TaskView, task_id: &TaskId) -> Option<Value> {
    let task = view.task.as_ref()?;
    let requests: serde_json::Map<String, Value> = view
        .pending
        .iter()
        .filter_map(|k| task.input_requests.get(k).map(|r| (k, r)))
        .filter(|(_, r)| takes(&ctx.caps, &r.method, &r.params))
        .map(|(k, r)| (k.clone(), json!({ "method": r.method, "params": r.params })))
        .collect();
    if requests.is_empty() {
        return None;
    }
    let state = format!("{RESUME}{}", uuid::Uuid::new_v4().simple());
    let mut resumes = ctx.proxy.resumes.lock().unwrap_or_else(|e| e.into_inner());
    if resumes.len() >= 4096 {
        let board = &ctx.proxy.board;
        resumes.retain(|_, id| board.view(id).is_some_and(|v| !v.finished()));
    }
    resumes.insert(state.clone(), task_id.clone());
    Some(json!({
        "resultType": "input_required",
        "inputRequests": requests,
        "requestState": state,
    }))
}

/// A retried `tools/call` carrying our `requestState`: its answers go to the task (the
/// engine sends each key once; one answered in the dashboard meanwhile is ignored), and the
/// task to wait for again is returned. `None`: not such a retry.
pub async fn resume(ctx: &Ctx) -> Option<Result<TaskId, ErrorObject>> {
    let state = ctx.params.get("requestState").and_then(Value::as_str)?;
    if !state.starts_with(RESUME) {
        return None;
    }
    let task_id = ctx
        .proxy
        .resumes
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(state);
    let Some(task_id) = task_id else {
        return Some(Err(rpc_error(
            -32602,
            "requestState is unknown or was used already",
        )));
    };
    let responses: BTreeMap<String, Value> = ctx
        .params
        .get("inputResponses")
        .and_then(|r| serde_json::from_value(r.clone()).ok())
        .unwrap_or_default();
    if !responses.is_empty() {
        // Once acknowledged the keys are pending no more, so they are not asked again.
        if let Err(e) = ctx.proxy.answer(&task_id, responses).await {
            tracing::debug!(task = %task_id, "an answer from the client was not taken: {e}");
        }
    }
    Some(Ok(task_id))
}
