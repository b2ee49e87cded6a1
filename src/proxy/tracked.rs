//! Blocking calls the proxy tracks as tasks of its own. A `tools/call` whose server answers
//! blocking (it does not speak tasks, the tool forbids them, or it just answers in line) and
//! is still running after `--track-after` — or that the server asks input of, or whose host
//! gives up waiting — becomes a task with an id the proxy mints, recorded with origin
//! `proxy` (`ledger::Origin`): the board shows it with its progress (the upstream's
//! `notifications/progress` for the call) and the server's requests on the call's stream,
//! which the host or a person answers (the first answer wins), and a cancel from anyone
//! stops the call (`notifications/cancelled` upstream, or the request dropped where that
//! is how the era cancels). Its result or error is stored when it ends.
//!
//! Only this process can follow such a task: if it dies, readers that find its lease free
//! mark it lost (`Tombstone::ProxyLost`); a proxy whose host goes away waits for its tracked
//! calls before it exits ([`Tracker::wait_idle`]).
//!
//! Owns: each tracked call's slot and its snapshot. Must not decide the call's result (the
//! server does) nor answer a host itself (the call path does).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use super::Proxy;
use super::host::{Host, Outbound};
use crate::engine::{CallResult, EngineCommand, LocalAsk};
use crate::mcp::jsonrpc::RequestId;
use crate::mcp::{ErrorObject, McpClient, Task, TaskId};

/// Prefix of the ids the proxy mints (the ledger's `origin` is what tells them apart).
const ID_PREFIX: &str = "call-";

/// How long recording a tracked call may take.
const RECORD_WAIT: Duration = Duration::from_secs(30);

/// A server request on a tracked call's stream, waiting for an answer.
struct Ask {
    upstream: RequestId,
    method: String,
    params: Value,
    /// The host it was also sent to: (host, stream, its id there).
    host: Option<(Weak<Host>, Outbound, RequestId)>,
}

#[derive(Default)]
struct SlotState {
    message: Option<String>,
    asks: BTreeMap<String, Ask>,
    ended: bool,
}

/// One forwarded `tools/call`, tracked or not yet.
pub struct Slot {
    proxy: Weak<Proxy>,
    client: Arc<McpClient>,
    pub upstream: RequestId,
    tool: String,
    arguments: Value,
    started_by: Option<String>,
    /// The call's key, when its host waits for the result (a retry may attach).
    pub key: Option<String>,
    /// The host's cancel token and reason for this call.
    host_cancel: CancellationToken,
    host_why: super::cancel::Why,
    task: OnceCell<Option<TaskId>>,
    created_at: String,
    state: Mutex<SlotState>,
    /// Fired when anyone (a person, the CLI, the host) asks to stop the call.
    pub stop: CancellationToken,
}

/// What a tracked call came to.
pub enum Finished {
    Result(Value),
    Error(ErrorObject),
    /// Stopped at someone's request (the cancel records who).
    Cancelled,
    /// The server answered with a task of its own after all.
    BecameTask(TaskId),
}

/// The proxy's tracked calls.
#[derive(Default)]
pub struct Tracker {
    /// By upstream request id.
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    /// By the proxy's task id, once tracked.
    by_task: Mutex<HashMap<TaskId, Arc<Slot>>>,
    idle: tokio::sync::Notify,
}

/// What a slot is opened with.
pub struct Opening {
    pub client: Arc<McpClient>,
    pub upstream: RequestId,
    pub tool: String,
    pub arguments: Value,
    pub started_by: Option<String>,
    pub key: Option<String>,
    pub host_cancel: CancellationToken,
    pub host_why: super::cancel::Why,
}

impl Tracker {
    /// A forwarded call starts; the slot goes when [`Tracker::close`] is called.
    pub fn open(&self, proxy: &Arc<Proxy>, o: Opening) -> Arc<Slot> {
        let slot = Arc::new(Slot {
            proxy: Arc::downgrade(proxy),
            client: o.client,
            upstream: o.upstream,
            tool: o.tool,
            arguments: o.arguments,
            started_by: o.started_by,
            key: o.key,
            host_cancel: o.host_cancel,
            host_why: o.host_why,
            task: OnceCell::new(),
            created_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            state: Mutex::new(SlotState::default()),
            stop: CancellationToken::new(),
        });
        self.slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(slot.upstream.to_string(), slot.clone());
        slot
    }

    /// The call ended (its final snapshot was sent, if it was tracked).
    pub fn close(&self, slot: &Slot) {
        self.slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&slot.upstream.to_string());
        if let Some(Some(id)) = slot.task.get() {
            self.by_task
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(id);
        }
        self.idle.notify_waiters();
    }

    /// The one call running, if exactly one does (a transport that cannot tell which
    /// request's stream carried a message).
    pub fn only_one(&self) -> Option<Arc<Slot>> {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        (slots.len() == 1)
            .then(|| slots.values().next().cloned())
            .flatten()
    }

    /// The slot of upstream request `id`, while its call runs.
    pub fn by_upstream(&self, id: &RequestId) -> Option<Arc<Slot>> {
        self.slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id.to_string())
            .cloned()
    }

    fn by_task(&self, task_id: &TaskId) -> Option<Arc<Slot>> {
        self.by_task
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(task_id)
            .cloned()
    }

    /// A running call with key `key` whose host gave up waiting: its task (tracked now if
    /// it was not yet), for an identical call to attach to.
    pub async fn abandoned(&self, key: &str) -> Option<TaskId> {
        let found = {
            let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            slots
                .values()
                .find(|s| {
                    s.key.as_deref() == Some(key)
                        && s.host_cancel.is_cancelled()
                        && s.host_why.gave_up()
                })
                .cloned()
        };
        found?.track().await
    }

    /// Calls running now (tracked or not yet).
    pub fn live(&self) -> usize {
        self.slots.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Wait until no call runs, or `limit` passed; whether none runs.
    pub async fn wait_idle(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let idle = self.idle.notified();
            if self.live() == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
                return self.live() == 0;
            }
        }
    }

    /// The ids of the calls tracked now.
    pub fn tracked_ids(&self) -> Vec<TaskId> {
        self.by_task
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect()
    }

    /// Carry out what someone asked of a tracked call (from the engine), and report it.
    pub async fn carry_out(
        &self,
        proxy: &Proxy,
        task_id: TaskId,
        request: Option<i64>,
        ask: LocalAsk,
    ) {
        let error = match (&ask, self.by_task(&task_id)) {
            (_, None) => Some("the call has ended".to_string()),
            (LocalAsk::Answer(responses), Some(slot)) => slot.answer(responses).await.err(),
            (LocalAsk::Cancel(_), Some(slot)) => {
                slot.stop.cancel();
                None
            }
        };
        proxy
            .command(EngineCommand::LocalDone {
                server: proxy.server.clone(),
                task_id,
                request,
                ask,
                error,
            })
            .await;
    }
}

/// A task id of the proxy's own.
fn mint() -> TaskId {
    TaskId::new(&format!("{ID_PREFIX}{}", uuid::Uuid::new_v4().simple()))
}

/// The status line of a progress notification.
fn progress_line(message: Option<&str>, progress: f64, total: Option<f64>) -> String {
    let count = match total {
        Some(t) if t > 0.0 => format!("{progress}/{t}"),
        _ => format!("{progress}"),
    };
    match message {
        Some(m) if !m.trim().is_empty() => crate::sanitize::sanitize_line(m, 300),
        _ => format!("progress {count}"),
    }
}

impl Slot {
    /// The task of this call, recorded the first time it is asked for (`None`: it could
    /// not be recorded).
    pub async fn track(&self) -> Option<TaskId> {
        self.task
            .get_or_init(|| async {
                let proxy = self.proxy.upgrade()?;
                let task_id = mint();
                let task = self.snapshot(&task_id, "working", None, None)?;
                let call_id = proxy.call_id();
                let done = proxy.board.expect_call(call_id);
                proxy
                    .command(EngineCommand::RecordCreated {
                        server: proxy.server.clone(),
                        call_id,
                        tool: self.tool.clone(),
                        arguments: self.arguments.clone(),
                        task,
                        started_by: self.started_by.clone(),
                        local: true,
                    })
                    .await;
                match tokio::time::timeout(RECORD_WAIT, done).await {
                    Ok(Ok(CallResult::Task { stored: true, .. })) => {}
                    other => {
                        if other.is_err() {
                            proxy.board.forget_call(call_id);
                        }
                        tracing::warn!("a blocking call could not be put on the board");
                        return None;
                    }
                }
                tracing::info!(task = %task_id, "a blocking call is tracked as a task of the proxy's own");
                Some(task_id)
            })
            .await
            .clone()
            .inspect(|id| {
                if let Some(proxy) = self.proxy.upgrade()
                    && let Some(me) = proxy.tracker.by_upstream(&self.upstream)
                {
                    proxy
                        .tracker
                        .by_task
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .insert(id.clone(), me);
                }
            })
    }

    /// The task id, if the call is tracked.
    pub fn task_id(&self) -> Option<TaskId> {
        self.task.get().cloned().flatten()
    }

    /// The call's snapshot now, with `status` and its payload.
    fn snapshot(
        &self,
        task_id: &TaskId,
        status: &str,
        result: Option<Value>,
        error: Option<&ErrorObject>,
    ) -> Option<Task> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let input: serde_json::Map<String, Value> = state
            .asks
            .iter()
            .map(|(k, a)| (k.clone(), json!({ "method": a.method, "params": a.params })))
            .collect();
        let status = if status == "working" && !input.is_empty() {
            "input_required"
        } else {
            status
        };
        let mut wire = json!({
            "taskId": task_id.as_str(),
            "status": status,
            "createdAt": self.created_at,
            "lastUpdatedAt": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        });
        if let Some(m) = &state.message {
            wire["statusMessage"] = json!(m);
        }
        if !input.is_empty() {
            wire["inputRequests"] = Value::Object(input);
        }
        if let Some(r) = result {
            wire["result"] = r;
        }
        if let Some(e) = error {
            wire["error"] = serde_json::to_value(e).unwrap_or(Value::Null);
        }
        Task::from_wire(&wire).ok()
    }

    /// Send the engine the call's snapshot now.
    async fn publish(&self, status: &str, result: Option<Value>, error: Option<&ErrorObject>) {
        let (Some(proxy), Some(task_id)) = (self.proxy.upgrade(), self.task_id()) else {
            return;
        };
        if let Some(task) = self.snapshot(&task_id, status, result, error) {
            proxy
                .command(EngineCommand::LocalUpdate {
                    server: proxy.server.clone(),
                    task,
                })
                .await;
        }
    }

    /// The upstream reported progress on the call.
    pub async fn progress(&self, message: Option<&str>, progress: f64, total: Option<f64>) {
        let line = progress_line(message, progress, total);
        {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if state.ended || state.message.as_deref() == Some(line.as_str()) {
                return;
            }
            state.message = Some(line);
        }
        self.publish("working", None, None).await;
    }

    /// The call ended: its final snapshot.
    pub async fn finish(&self, how: Finished) {
        {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            if state.ended {
                return;
            }
            state.ended = true;
            state.asks.clear();
        }
        match how {
            Finished::Result(v) => self.publish("completed", Some(v), None).await,
            Finished::Error(e) => self.publish("failed", None, Some(&e)).await,
            Finished::Cancelled => self.publish("cancelled", None, None).await,
            Finished::BecameTask(id) => {
                let text = format!("the server made task {} of this call", id.short());
                let r = json!({ "content": [{ "type": "text", "text": text }], "isError": false });
                self.publish("completed", Some(r), None).await;
                // The server's task serves the call from now on: never attach to this row.
                if let (Some(proxy), Some(mine)) = (self.proxy.upgrade(), self.task_id()) {
                    let settled = crate::ledger::Delivery::Settled;
                    let settle = proxy.ledger.set_delivery(&proxy.server, &mine, settled);
                    if let Err(e) = settle.await {
                        tracing::warn!("ledger: {e:#}");
                    }
                }
            }
        }
    }

    /// A server request on the call's stream: on the board (the call is tracked now), and
    /// sent to the host too when `host` can take it. Its answer goes upstream once.
    pub async fn server_request(
        self: &Arc<Self>,
        upstream: RequestId,
        method: String,
        params: Value,
        host: Option<(Arc<Host>, Outbound)>,
    ) -> bool {
        let Some(task_id) = self.track().await else {
            return false;
        };
        let kind = if method == "sampling/createMessage" {
            "sampling"
        } else {
            "elicitation"
        };
        let key = format!("{kind}-{upstream}");
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .asks
            .insert(
                key.clone(),
                Ask {
                    upstream: upstream.clone(),
                    method: method.clone(),
                    params: params.clone(),
                    host: None,
                },
            );
        self.publish("working", None, None).await;
        if let Some((h, out)) = host
            && let Some((host_id, rx)) = h.ask(&out, &method, params).await
        {
            if let Some(a) = self
                .state
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .asks
                .get_mut(&key)
            {
                a.host = Some((Arc::downgrade(&h), out, host_id));
            }
            let (proxy, task_id) = (self.proxy.clone(), task_id.clone());
            tokio::spawn(async move {
                // The host's answer goes the way every answer goes: once, through the engine.
                let Ok(Ok(answer)) = rx.await else { return };
                let Some(proxy) = proxy.upgrade() else { return };
                proxy
                    .command(EngineCommand::Answer {
                        server: proxy.server.clone(),
                        task_id,
                        responses: [(key, answer)].into_iter().collect(),
                    })
                    .await;
            });
        }
        true
    }

    /// Answer open requests upstream (each once); the host's copy is withdrawn.
    async fn answer(&self, responses: &BTreeMap<String, Value>) -> Result<(), String> {
        let mut taken = Vec::new();
        {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            for (key, response) in responses {
                match state.asks.remove(key) {
                    Some(ask) => taken.push((ask, response.clone())),
                    None => return Err(format!("no open request {key}: answered already")),
                }
            }
        }
        for (ask, response) in taken {
            if let Err(e) = self.client.respond(&ask.upstream, Ok(response)).await {
                return Err(format!("the answer could not be sent: {e}"));
            }
            if let Some((host, out, id)) = ask.host
                && let Some(host) = host.upgrade()
            {
                host.withdraw(&out, &id, "answered elsewhere (the taskrail dashboard)")
                    .await;
            }
        }
        self.publish("working", None, None).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_reads_as_a_status_line() {
        assert_eq!(progress_line(Some("step 2"), 2.0, Some(3.0)), "step 2");
        assert_eq!(progress_line(None, 2.0, Some(3.0)), "progress 2/3");
        assert_eq!(progress_line(Some("  "), 5.0, None), "progress 5");
        assert!(mint().as_str().starts_with(ID_PREFIX));
        assert_ne!(mint(), mint());
    }
}
