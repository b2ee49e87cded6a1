//! Which upstream task serves a host's blocking call, and which later calls are attached to
//! it. A call is the same as an earlier one when it names the same tool with the same
//! arguments (compared as canonical JSON: object keys sorted, nothing else changed) on the
//! same upstream; a host that stopped waiting for the earlier one (its timeout, or it went
//! away) left it *undelivered*, and the repeated call waits for that task — or gets its
//! stored result at once — instead of starting the work again. A result delivered to a
//! host once, or a call a host asked to stop, is never handed out again.
//!
//! The ledger holds the facts (`ledger::calls`), so every proxy process on it attaches;
//! in this process a waiter whose host has just given up counts at once, before its
//! ledger write lands.
//!
//! Owns: the call key, the search for a call to attach to, and each waiting host's
//! [`Waiting`] guard. Must not follow tasks (the engine does) nor answer the host.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::Proxy;
use super::cancel::Why;
use super::host::Ctx;
use crate::engine::EngineCommand;
use crate::ledger::Delivery;
use crate::mcp::TaskId;

/// The key of a call: a digest of the tool and its canonical arguments.
pub fn call_key(tool: &str, arguments: &Value) -> String {
    let mut text = String::new();
    canonical(&json!({ "tool": tool, "arguments": arguments }), &mut text);
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// JSON text with every object's keys sorted (numbers and strings as serde_json writes them).
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// One host waiting in this process.
struct Waiter {
    serial: u64,
    why: Why,
    cancel: CancellationToken,
}

impl Waiter {
    fn gave_up(&self) -> bool {
        self.cancel.is_cancelled() && self.why.gave_up()
    }
}

#[derive(Default)]
struct Live {
    key: String,
    waiters: Vec<Waiter>,
}

/// The blocking calls waited for in this process, by task.
#[derive(Default)]
pub struct Calls {
    live: Mutex<HashMap<TaskId, Live>>,
    next: std::sync::atomic::AtomicU64,
}

impl Calls {
    /// A task of `key` whose every waiter here has given up.
    fn abandoned(&self, key: &str) -> Option<TaskId> {
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.iter()
            .find(|(_, l)| {
                l.key == key && !l.waiters.is_empty() && l.waiters.iter().all(Waiter::gave_up)
            })
            .map(|(id, _)| id.clone())
    }

    fn enter(&self, task_id: &TaskId, key: &str, why: Why, cancel: CancellationToken) -> u64 {
        let serial = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let entry = live.entry(task_id.clone()).or_default();
        entry.key = key.to_string();
        entry.waiters.push(Waiter {
            serial,
            why,
            cancel,
        });
        serial
    }

    /// Take waiter `serial` of `task_id` out; whether it was still there.
    fn leave(&self, task_id: &TaskId, serial: u64) -> bool {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        let Some(entry) = live.get_mut(task_id) else {
            return false;
        };
        let before = entry.waiters.len();
        entry.waiters.retain(|w| w.serial != serial);
        let was = entry.waiters.len() < before;
        if entry.waiters.is_empty() {
            live.remove(task_id);
        }
        was
    }

    /// Every waiter, emptied (the proxy is stopping).
    fn drain(&self) -> Vec<TaskId> {
        let mut live = self.live.lock().unwrap_or_else(|e| e.into_inner());
        live.drain().map(|(id, _)| id).collect()
    }
}

/// The task an identical earlier call left undelivered, if any (and attaching is on).
pub async fn find(ctx: &Ctx, key: &str) -> Option<TaskId> {
    let proxy = &ctx.proxy;
    if !proxy.reattach {
        return None;
    }
    if let Some(id) = proxy.calls.abandoned(key) {
        return Some(id);
    }
    if let Some(id) = proxy.tracker.abandoned(key).await {
        return Some(id);
    }
    let (server, key) = (proxy.server.clone(), key.to_string());
    match proxy.ledger.undelivered(&server, &key).await {
        Ok(found) => found.map(|r| r.task_id),
        Err(e) => {
            tracing::warn!("ledger: {e:#}");
            None
        }
    }
}

/// Attach this host's call to `task_id`: recorded, the host may act on the task, and the
/// engine follows it if it did not already.
pub async fn attach(ctx: &Ctx, task_id: &TaskId) {
    let proxy = &ctx.proxy;
    ctx.host.created_task(task_id.clone());
    let host = host_name(ctx);
    tracing::info!(task = %task_id, "a repeated call was attached to the work already running");
    let (server, id) = (proxy.server.clone(), task_id.clone());
    let detail = json!({ "host": host });
    if let Err(e) = proxy.ledger.attached(&server, &id, &detail).await {
        tracing::warn!("ledger: {e:#}");
    }
    if proxy.board.view(task_id).is_none() {
        proxy
            .command(EngineCommand::Track {
                server: proxy.server.clone(),
                task_id: task_id.clone(),
            })
            .await;
    }
}

/// The name a host's notes and cancels carry.
pub fn host_name(ctx: &Ctx) -> String {
    ctx.host
        .started_by(ctx.client_name.as_deref())
        .unwrap_or_else(|| "a client".into())
}

/// `task_id` serves this host's blocking call `key` from now on (recorded).
pub async fn serve(ctx: &Ctx, task_id: &TaskId, key: &str) {
    let (server, id, key) = (ctx.proxy.server.clone(), task_id.clone(), key.to_string());
    if let Err(e) = ctx.proxy.ledger.set_call(&server, &id, &key).await {
        tracing::warn!("ledger: {e:#}");
    }
}

/// A host waiting for the task that serves its call. Ends as delivered, as stopped (the
/// host asked to cancel the work), or — dropped without either — as given up: the task
/// runs on, and a repeated call attaches to it.
pub struct Waiting {
    proxy: Arc<Proxy>,
    task_id: TaskId,
    serial: u64,
    host: String,
    why: Why,
    began: std::time::Instant,
}

impl Waiting {
    pub fn new(ctx: &Ctx, task_id: &TaskId, key: &str) -> Waiting {
        let serial = ctx
            .proxy
            .calls
            .enter(task_id, key, ctx.why.clone(), ctx.cancel.clone());
        Waiting {
            proxy: ctx.proxy.clone(),
            task_id: task_id.clone(),
            serial,
            host: host_name(ctx),
            why: ctx.why.clone(),
            began: ctx.began,
        }
    }

    /// The host received the result (or asked to stop the work): never handed out again.
    pub async fn settle(self) {
        if self.proxy.calls.leave(&self.task_id, self.serial) {
            let (server, id) = (self.proxy.server.clone(), self.task_id.clone());
            let write = self
                .proxy
                .ledger
                .set_delivery(&server, &id, Delivery::Settled);
            if let Err(e) = write.await {
                tracing::warn!("ledger: {e:#}");
            }
        }
    }

    /// The host was answered "still running": it is not waiting any more, and its next
    /// identical call gets the result.
    pub async fn answered_running(self) {
        if self.proxy.calls.leave(&self.task_id, self.serial) {
            let note = self.note("answered \"still running\" (--answer-within)");
            gave_up(&self.proxy, &self.task_id, note).await;
        }
    }

    fn note(&self, reason: &str) -> Value {
        json!({ "host": self.host, "afterS": seconds(self.began), "reason": reason })
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if !self.proxy.calls.leave(&self.task_id, self.serial) {
            return;
        }
        let reason = self
            .why
            .reason()
            .unwrap_or("the client went away")
            .to_string();
        let note = self.note(&reason);
        let (proxy, task_id) = (self.proxy.clone(), self.task_id.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { gave_up(&proxy, &task_id, note).await });
        }
    }
}

/// Seconds since `t`, to a tenth.
fn seconds(t: std::time::Instant) -> f64 {
    (t.elapsed().as_millis() as f64 / 100.0).round() / 10.0
}

async fn gave_up(proxy: &Proxy, task_id: &TaskId, note: Value) {
    tracing::info!(task = %task_id, "the client stopped waiting; the task runs on");
    let (server, id) = (proxy.server.clone(), task_id.clone());
    if let Err(e) = proxy.ledger.host_gave_up(&server, &id, &note).await {
        tracing::warn!("ledger: {e:#}");
    }
}

/// A host gave up before the upstream even answered its call with a task: the task serves
/// the call, undelivered, for the host's retry.
pub async fn left_before_start(
    proxy: &Proxy,
    task_id: &TaskId,
    key: &str,
    host: &str,
    why: &Why,
    began: std::time::Instant,
) {
    let (server, id, key) = (proxy.server.clone(), task_id.clone(), key.to_string());
    if let Err(e) = proxy.ledger.set_call(&server, &id, &key).await {
        tracing::warn!("ledger: {e:#}");
    }
    let reason = why.reason().unwrap_or("the client went away");
    let note = json!({ "host": host, "afterS": seconds(began), "reason": reason });
    gave_up(proxy, task_id, note).await;
}

/// The proxy is stopping: every host still waiting here has, in effect, given up.
pub async fn abandon_all(proxy: &Proxy) {
    for task_id in proxy.calls.drain() {
        let note = json!({ "host": null, "reason": "the proxy stopped while a client waited" });
        gave_up(proxy, &task_id, note).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_call_is_the_same_whatever_the_key_order() {
        let a = call_key(
            "slow",
            &json!({ "n": 1, "opts": { "x": [1, 2], "a": null } }),
        );
        let b = call_key(
            "slow",
            &json!({ "opts": { "a": null, "x": [1, 2] }, "n": 1 }),
        );
        assert_eq!(a, b);
        assert_eq!(a.len(), 64);
        assert_ne!(
            a,
            call_key(
                "slow",
                &json!({ "n": 2, "opts": { "x": [1, 2], "a": null } })
            )
        );
        assert_ne!(
            a,
            call_key(
                "slow",
                &json!({ "n": 1, "opts": { "x": [2, 1], "a": null } })
            )
        );
        assert_ne!(
            a,
            call_key(
                "fast",
                &json!({ "n": 1, "opts": { "x": [1, 2], "a": null } })
            )
        );
        assert_ne!(
            call_key("t", &json!({ "n": 1 })),
            call_key("t", &json!({ "n": "1" }))
        );
    }

    #[test]
    fn a_waiter_who_gave_up_leaves_its_task_to_the_next_call() {
        let calls = Calls::default();
        let (why, cancel) = (Why::default(), CancellationToken::new());
        let t = TaskId::new("t1");
        let serial = calls.enter(&t, "k", why.clone(), cancel.clone());
        assert_eq!(calls.abandoned("k"), None, "still waited for");
        cancel.cancel();
        assert_eq!(
            calls.abandoned("k"),
            None,
            "a cancel without a timeout stops the work"
        );
        let why2 = Why::default();
        let c2 = CancellationToken::new();
        let t2 = TaskId::new("t2");
        let s2 = calls.enter(&t2, "k2", why2.clone(), c2.clone());
        why2.set_for_test("MCP error -32001: Request timed out");
        c2.cancel();
        assert_eq!(calls.abandoned("k2"), Some(t2.clone()));
        assert!(calls.leave(&t2, s2));
        assert!(!calls.leave(&t2, s2));
        assert!(calls.leave(&t, serial));
        assert!(calls.drain().is_empty());
    }
}
