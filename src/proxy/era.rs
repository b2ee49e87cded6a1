//! What differs between the host's protocol version and the upstream's: the handshake
//! replies (`initialize` for 2025-era hosts, `server/discover` for 2026-07-28 ones), the
//! `resultType` of results, and a task in either tasks generation (v1 nested with `ttl`,
//! v2 flat with `ttlMs` and its payload inline).
//!
//! Pure: no I/O. Must not change anything the eras agree on.

use serde_json::{Map, Value, json};

use crate::ledger::Tombstone;
use crate::mcp::{ErrorObject, LEGACY_VERSION, MODERN_VERSION, ServerInfo, TASKS_EXTENSION, Task};

/// Protocol versions a host may open a 2025-era session with.
pub const LEGACY_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", LEGACY_VERSION];

/// The first version with (v1) tasks in the core protocol.
const TASKS_V1_VERSION: &str = LEGACY_VERSION;

/// Which protocol a host speaks on one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostEra {
    /// An `initialize` session at this version.
    Legacy(String),
    /// Per-request `_meta` (2026-07-28).
    Modern,
}

impl HostEra {
    /// Whether the host's version has v1 tasks (`params.task`, `tasks/result`).
    pub fn has_v1_tasks(&self) -> bool {
        matches!(self, HostEra::Legacy(v) if v == TASKS_V1_VERSION)
    }
}

/// The version to answer an `initialize` with: the host's when known, else the newest.
pub fn negotiate(requested: Option<&str>) -> String {
    match requested {
        Some(v) if LEGACY_VERSIONS.contains(&v) => v.to_string(),
        _ => LEGACY_VERSION.to_string(),
    }
}

fn server_identity(up: &ServerInfo) -> Value {
    json!({
        "name": up.name.clone().unwrap_or_else(|| "taskrail-proxy".into()),
        "version": up.version.clone().unwrap_or_else(|| env!("CARGO_PKG_VERSION").into()),
    })
}

fn capabilities(up: &ServerInfo) -> Map<String, Value> {
    up.capabilities.as_object().cloned().unwrap_or_default()
}

/// The `initialize` result for a 2025-era host at `version`: the upstream's capabilities,
/// with v1 tasks offered when the host's version has them and the upstream has tasks.
pub fn initialize_result(up: &ServerInfo, version: &str) -> Value {
    let mut caps = capabilities(up);
    caps.remove("tasks");
    if let Some(ext) = caps.get_mut("extensions").and_then(Value::as_object_mut) {
        ext.remove(TASKS_EXTENSION);
        if ext.is_empty() {
            caps.remove("extensions");
        }
    }
    if up.tasks && version == TASKS_V1_VERSION {
        caps.insert(
            "tasks".into(),
            json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } }),
        );
    }
    let mut out = json!({
        "protocolVersion": version,
        "capabilities": caps,
        "serverInfo": server_identity(up),
    });
    if let Some(i) = &up.instructions {
        out["instructions"] = json!(i);
    }
    out
}

/// The `server/discover` result for a 2026-07-28 host: the upstream's capabilities, with
/// the tasks extension declared when the upstream has tasks (either generation).
pub fn discover_result(up: &ServerInfo) -> Value {
    let mut caps = capabilities(up);
    caps.remove("tasks");
    let ext = caps.entry("extensions").or_insert_with(|| json!({}));
    if let Some(ext) = ext.as_object_mut() {
        if up.tasks {
            ext.insert(TASKS_EXTENSION.into(), json!({}));
        } else {
            ext.remove(TASKS_EXTENSION);
        }
    }
    if caps
        .get("extensions")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
    {
        caps.remove("extensions");
    }
    let mut versions = vec![MODERN_VERSION];
    versions.extend(LEGACY_VERSIONS.iter().rev());
    let mut out = json!({
        "resultType": "complete",
        "supportedVersions": versions,
        "capabilities": caps,
        "_meta": { "io.modelcontextprotocol/serverInfo": server_identity(up) },
    });
    if let Some(i) = &up.instructions {
        out["instructions"] = json!(i);
    }
    out
}

/// A result as the host's era writes it: 2025-era results carry no `resultType
/// "complete"`, 2026-07-28 ones must.
pub fn shape_result(mut result: Value, era: &HostEra) -> Value {
    if let Some(obj) = result.as_object_mut() {
        match era {
            HostEra::Legacy(_) => {
                if obj.get("resultType").and_then(Value::as_str) == Some("complete") {
                    obj.remove("resultType");
                }
            }
            HostEra::Modern => {
                obj.entry("resultType").or_insert_with(|| json!("complete"));
            }
        }
    }
    result
}

/// List results a 2026-07-28 host reads caching hints on (`ttlMs`, `cacheScope`).
const CACHEABLE: [&str; 5] = [
    "tools/list",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/templates/list",
];

/// A 2026-07-28 host requires caching hints on list results; a 2025-era upstream gives
/// none, and announces changes instead: such a result is not to be kept (`ttlMs` 0).
pub fn cache_hints(method: &str, mut result: Value, era: &HostEra) -> Value {
    if *era == HostEra::Modern
        && CACHEABLE.contains(&method)
        && let Some(obj) = result.as_object_mut()
    {
        obj.entry("ttlMs").or_insert_with(|| json!(0));
        obj.entry("cacheScope").or_insert_with(|| json!("private"));
    }
    result
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A task as v1 (2025-11-25) writes it: `ttl`/`pollInterval`, and a tool error is `failed`.
pub fn task_v1(task: &Task) -> Value {
    let status = if crate::mcp::outcome(Some(task), false) == Some(crate::mcp::Outcome::ToolError) {
        "failed"
    } else {
        task.status.as_str()
    };
    let mut out = json!({
        "taskId": task.task_id.as_str(),
        "status": status,
        "createdAt": task.created_at.clone().unwrap_or_else(now),
        "lastUpdatedAt": task.last_updated_at.clone().unwrap_or_else(now),
        "ttl": task.ttl_ms,
    });
    if let Some(m) = &task.status_message {
        out["statusMessage"] = json!(m);
    }
    if let Some(p) = task.poll_interval_ms {
        out["pollInterval"] = json!(p);
    }
    out
}

/// A v1 `CreateTaskResult`: the task nested under `task`.
pub fn create_task_v1(task: &Task) -> Value {
    json!({ "task": task_v1(task) })
}

fn task_v2_base(task: &Task) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("taskId".into(), json!(task.task_id.as_str()));
    out.insert("status".into(), json!(task.status.as_str()));
    if let Some(m) = &task.status_message {
        out.insert("statusMessage".into(), json!(m));
    }
    out.insert(
        "createdAt".into(),
        json!(task.created_at.clone().unwrap_or_else(now)),
    );
    out.insert(
        "lastUpdatedAt".into(),
        json!(task.last_updated_at.clone().unwrap_or_else(now)),
    );
    out.insert("ttlMs".into(), json!(task.ttl_ms));
    if let Some(p) = task.poll_interval_ms {
        out.insert("pollIntervalMs".into(), json!(p));
    }
    out
}

/// A v2 `CreateTaskResult` (`resultType: "task"`, flat, no payload).
pub fn create_task_v2(task: &Task) -> Value {
    let mut out = task_v2_base(task);
    out.insert("resultType".into(), json!("task"));
    Value::Object(out)
}

/// A v2 `tasks/get` result: the task with the input requests still `pending` and its
/// result or error inline.
pub fn task_v2(task: &Task, pending: &[String]) -> Value {
    let mut out = task_v2_base(task);
    out.insert("resultType".into(), json!("complete"));
    let inputs: Map<String, Value> = task
        .input_requests
        .iter()
        .filter(|(k, _)| pending.contains(k))
        .map(|(k, r)| (k.clone(), json!({ "method": r.method, "params": r.params })))
        .collect();
    if !inputs.is_empty() {
        out.insert("inputRequests".into(), Value::Object(inputs));
    }
    if let Some(r) = &task.result {
        out.insert("result".into(), (**r).clone());
    }
    if let Some(e) = &task.error {
        out.insert(
            "error".into(),
            serde_json::to_value(e).unwrap_or(Value::Null),
        );
    }
    Value::Object(out)
}

/// How a followed task ended, for a host that waits for it.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The `CallToolResult` to answer with (including `isError: true` ones).
    Result(Value),
    /// The JSON-RPC error to answer with.
    Error(ErrorObject),
}

/// The honest answer to a host that cannot wait longer (`--answer-within`): the work runs
/// on as task `task_id` on `server`, with its last status; calling the tool again with the
/// same arguments returns its result without running it twice.
pub fn still_running(
    view: &super::board::TaskView,
    task_id: &crate::mcp::TaskId,
    server: &crate::ids::ServerId,
    tool: &str,
) -> Value {
    let status = view
        .task
        .as_ref()
        .and_then(|t| t.status_message.as_deref())
        .map(|m| {
            format!(
                " Its latest status: {}.",
                crate::sanitize::sanitize_line(m, 300)
            )
        })
        .unwrap_or_default();
    let text = format!(
        "The work is still running as task {} on {}.{status} It was not stopped and will not \
         run twice: call {} again with the same arguments to get its result when it is done.",
        task_id.short(),
        crate::sanitize::sanitize_line(server.as_str(), 120),
        crate::sanitize::sanitize_line(tool, 120),
    );
    json!({
        "content": [{ "type": "text", "text": text }],
        "isError": false,
        "_meta": { "io.taskrail/stillRunning": { "taskId": task_id.as_str() } },
    })
}

/// A tool result saying the call did not finish (`isError: true`).
pub fn unfinished(text: &str) -> Value {
    json!({ "content": [{ "type": "text", "text": text }], "isError": true })
}

/// What a terminal task comes to for a host: `None` while it is live, or terminal but its
/// payload has not arrived yet.
pub fn outcome(task: &Task) -> Option<Outcome> {
    use crate::mcp::TaskStatus::*;
    match task.status {
        Completed => task.result.as_deref().cloned().map(Outcome::Result),
        Failed => match (&task.error, &task.result) {
            (Some(e), _) => Some(Outcome::Error((**e).clone())),
            // v1: a tool error is `failed`, with the tool result.
            (None, Some(r)) => Some(Outcome::Result((**r).clone())),
            (None, None) => None,
        },
        Cancelled => Some(Outcome::Result(unfinished(&format!(
            "The task was cancelled{}.",
            task.status_message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        )))),
        _ => None,
    }
}

/// The answer for a terminal task whose payload never came.
pub fn payload_missing(task: &Task) -> Outcome {
    match task.status {
        crate::mcp::TaskStatus::Failed => Outcome::Error(ErrorObject {
            code: -32603,
            message: task
                .status_message
                .clone()
                .unwrap_or_else(|| "the task failed".into()),
            data: None,
        }),
        _ => Outcome::Result(unfinished(
            "The task completed, but the server gave no result for it.",
        )),
    }
}

/// The answer for a task that ended without a terminal state.
pub fn tombstone(why: Tombstone) -> Outcome {
    let text = match why {
        Tombstone::Expired => "The task is gone: the server no longer knows it (expired).",
        Tombstone::SessionLost => {
            "The task is gone: the server dropped the session (or process) it ran in."
        }
        Tombstone::ProxyLost => {
            "The call is lost: the taskrail proxy that ran it ended while it was running; the \
             server may have finished it."
        }
    };
    Outcome::Result(unfinished(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::Era;

    fn up(caps: Value, tasks: bool) -> ServerInfo {
        ServerInfo {
            era: Era::Modern,
            protocol_version: MODERN_VERSION.into(),
            tasks,
            capabilities: caps,
            name: Some("srv".into()),
            version: Some("1".into()),
            instructions: Some("be nice".into()),
        }
    }

    #[test]
    fn initialize_offers_v1_tasks_only_to_hosts_that_have_them() {
        let caps = json!({"tools": {"listChanged": true}, "extensions": {TASKS_EXTENSION: {}}});
        let r = initialize_result(&up(caps.clone(), true), "2025-11-25");
        assert_eq!(r["protocolVersion"], "2025-11-25");
        assert!(r["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object());
        assert!(r["capabilities"].get("extensions").is_none());
        assert_eq!(r["capabilities"]["tools"]["listChanged"], true);
        assert_eq!(r["serverInfo"]["name"], "srv");
        assert_eq!(r["instructions"], "be nice");
        let old = initialize_result(&up(caps, true), "2025-06-18");
        assert!(old["capabilities"].get("tasks").is_none());
        assert_eq!(negotiate(Some("2025-06-18")), "2025-06-18");
        assert_eq!(negotiate(Some("1999-01-01")), LEGACY_VERSION);
    }

    #[test]
    fn discover_declares_the_extension_for_either_generation() {
        let legacy_caps = json!({"tools": {}, "tasks": {"cancel": {}}});
        let r = discover_result(&up(legacy_caps, true));
        assert_eq!(r["resultType"], "complete");
        assert!(r["capabilities"]["extensions"][TASKS_EXTENSION].is_object());
        assert!(r["capabilities"].get("tasks").is_none());
        assert_eq!(r["supportedVersions"][0], MODERN_VERSION);
        let none = discover_result(&up(json!({"tools": {}}), false));
        assert!(none["capabilities"].get("extensions").is_none());
    }

    #[test]
    fn a_2026_host_gets_caching_hints_on_lists() {
        let legacy_list = json!({"tools": []});
        let hinted = cache_hints("tools/list", legacy_list.clone(), &HostEra::Modern);
        assert_eq!(
            (&hinted["ttlMs"], &hinted["cacheScope"]),
            (&json!(0), &json!("private"))
        );
        let kept = cache_hints(
            "tools/list",
            json!({"tools": [], "ttlMs": 5, "cacheScope": "public"}),
            &HostEra::Modern,
        );
        assert_eq!(kept["ttlMs"], 5);
        let v1 = HostEra::Legacy("2025-11-25".into());
        assert_eq!(
            cache_hints("tools/list", legacy_list.clone(), &v1),
            legacy_list
        );
        assert_eq!(
            cache_hints("tools/call", json!({}), &HostEra::Modern),
            json!({})
        );
    }

    #[test]
    fn results_follow_the_host_era() {
        let modern = shape_result(json!({"content": []}), &HostEra::Modern);
        assert_eq!(modern["resultType"], "complete");
        let legacy = shape_result(
            json!({"resultType": "complete", "content": []}),
            &HostEra::Legacy("2025-06-18".into()),
        );
        assert!(legacy.get("resultType").is_none());
    }

    #[test]
    fn tasks_render_in_both_generations() {
        let t = Task::from_wire(&json!({
            "taskId": "t1", "status": "input_required", "ttlMs": 9000, "pollIntervalMs": 500,
            "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:01Z",
            "inputRequests": {
                "a": {"method": "elicitation/create", "params": {"message": "?"}},
                "b": {"method": "elicitation/create", "params": {"message": "!"}}
            }
        }))
        .unwrap();
        let v1 = create_task_v1(&t);
        assert_eq!(v1["task"]["ttl"], 9000);
        assert_eq!(v1["task"]["pollInterval"], 500);
        let v2 = task_v2(&t, &["b".to_string()]);
        assert_eq!(v2["ttlMs"], 9000);
        assert!(v2["inputRequests"].get("a").is_none());
        assert_eq!(v2["inputRequests"]["b"]["params"]["message"], "!");
        assert_eq!(create_task_v2(&t)["resultType"], "task");
    }

    #[test]
    fn outcomes() {
        let done = Task::from_wire(&json!({"taskId": "t", "status": "completed",
            "result": {"content": [], "isError": true}}))
        .unwrap();
        assert_eq!(task_v1(&done)["status"], "failed");
        assert!(matches!(outcome(&done), Some(Outcome::Result(r)) if r["isError"] == true));
        let failed = Task::from_wire(&json!({"taskId": "t", "status": "failed",
            "error": {"code": -32603, "message": "boom"}}))
        .unwrap();
        assert!(matches!(outcome(&failed), Some(Outcome::Error(e)) if e.message == "boom"));
        let bare = Task::from_wire(&json!({"taskId": "t", "status": "completed"})).unwrap();
        assert_eq!(outcome(&bare), None);
        let cancelled = Task::from_wire(&json!({"taskId": "t", "status": "cancelled"})).unwrap();
        assert!(matches!(outcome(&cancelled), Some(Outcome::Result(r)) if r["isError"] == true));
        let working = Task::from_wire(&json!({"taskId": "t", "status": "working"})).unwrap();
        assert_eq!(outcome(&working), None);
    }
}
