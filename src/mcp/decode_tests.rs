//! Decoder tests for every JSON shape of TASKS-PROTOCOL.md, both eras: task handles,
//! the five `tasks/get` variants, acks, notifications under both names, listen acks,
//! errors, unknown fields, and sloppy values (null TTL, bad timestamps, odd ids).

use serde_json::{Value, json};

use super::jsonrpc::{Incoming, RequestId};
use super::*;

fn result(v: Value) -> Value {
    match Incoming::classify(v).unwrap() {
        Incoming::Response { outcome: Ok(r), .. } => r,
        other => panic!("not a success response: {other:?}"),
    }
}

#[test]
fn modern_create_task_result_is_flat_with_result_type_task() {
    let r = result(json!({ "jsonrpc": "2.0", "id": 2, "result": {
        "resultType": "task", "taskId": "786512e2", "status": "working",
        "statusMessage": "The operation is now in progress.",
        "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:40:00Z",
        "ttlMs": 60000, "pollIntervalMs": 5000, "somethingNew": { "x": 1 } } }));
    let CallOutcome::Task(t) = decode_call_result(&r).unwrap() else {
        panic!()
    };
    assert_eq!(
        (t.task_id.as_str(), &t.status),
        ("786512e2", &TaskStatus::Working)
    );
    assert_eq!((t.ttl_ms, t.poll_interval_ms), (Some(60000), Some(5000)));
    assert_eq!(
        t.status_message.as_deref(),
        Some("The operation is now in progress.")
    );
}

#[test]
fn legacy_create_task_result_nests_the_task_and_uses_ttl_and_poll_interval() {
    let r = result(json!({ "jsonrpc": "2.0", "id": 1, "result": {
        "task": { "taskId": "786512e2", "status": "working", "statusMessage": "in progress",
                  "createdAt": "2025-11-25T10:30:00Z", "lastUpdatedAt": "2025-11-25T10:40:00Z",
                  "ttl": 60000, "pollInterval": 5000 },
        "_meta": { "io.modelcontextprotocol/model-immediate-response": "optional text" } } }));
    let CallOutcome::Task(t) = decode_call_result(&r).unwrap() else {
        panic!()
    };
    assert_eq!((t.ttl_ms, t.poll_interval_ms), (Some(60000), Some(5000)));
}

#[test]
fn plain_results_with_and_without_result_type() {
    let modern = json!({ "resultType": "complete", "content": [{ "type": "text", "text": "Hello!" }], "isError": false });
    assert_eq!(
        decode_call_result(&modern).unwrap(),
        CallOutcome::Complete(modern.clone())
    );
    let legacy = json!({ "content": [], "structuredContent": { "a": 1 } });
    assert!(matches!(
        decode_call_result(&legacy).unwrap(),
        CallOutcome::Complete(_)
    ));
}

#[test]
fn mrtr_input_required_before_a_task_exists() {
    let r = json!({ "resultType": "input_required", "requestState": "opaque-blob",
        "inputRequests": { "github_login": { "method": "elicitation/create", "params": {
            "mode": "form", "message": "Please provide your GitHub username",
            "requestedSchema": { "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] } } } } });
    let CallOutcome::InputRequired {
        input_requests,
        request_state,
    } = decode_call_result(&r).unwrap()
    else {
        panic!()
    };
    assert_eq!(request_state, Some(json!("opaque-blob")));
    assert_eq!(
        input_requests["github_login"].message(),
        Some("Please provide your GitHub username")
    );
}

#[test]
fn an_unknown_result_type_is_invalid() {
    assert!(decode_call_result(&json!({ "resultType": "later", "content": [] })).is_err());
}

#[test]
fn the_five_tasks_get_variants() {
    let base = |extra: Value| {
        let mut v = json!({ "resultType": "complete", "taskId": "t", "createdAt": "2025-11-25T10:30:00Z",
                            "lastUpdatedAt": "2025-11-25T10:50:00Z", "ttlMs": 3600000 });
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        Task::from_wire(&v).unwrap()
    };
    let working = base(
        json!({ "status": "working", "statusMessage": "Step 2 of 5", "pollIntervalMs": 5000 }),
    );
    assert_eq!(working.status, TaskStatus::Working);
    let input = base(
        json!({ "status": "input_required", "inputRequests": { "name": { "method": "elicitation/create",
        "params": { "mode": "form", "message": "Please enter your name.", "requestedSchema": { "type": "object",
        "properties": { "name": { "type": "string" } }, "required": ["name"] } } } } }),
    );
    assert_eq!(input.input_requests["name"].method, "elicitation/create");
    let done = base(
        json!({ "status": "completed", "result": { "content": [{ "type": "text", "text": "Hello, Luca!" }], "isError": false } }),
    );
    assert!(done.result.is_some() && !done.result_is_error());
    let tool_error =
        base(json!({ "status": "completed", "result": { "content": [], "isError": true } }));
    assert!(tool_error.result_is_error());
    let failed = base(
        json!({ "status": "failed", "statusMessage": "Tool execution failed: API rate limit exceeded",
        "error": { "code": -32603, "message": "API rate limit exceeded" } }),
    );
    assert_eq!(failed.error.as_ref().map(|e| e.code), Some(-32603));
    let cancelled = base(json!({ "status": "cancelled", "statusMessage": "Cancelled by request" }));
    assert!(cancelled.status.is_terminal());
    // The draft's `resultType: "task"` on a tasks/get reply is tolerated.
    assert!(
        Task::from_wire(&json!({ "resultType": "task", "taskId": "t", "status": "working" }))
            .is_ok()
    );
}

#[test]
fn sloppy_values_are_tolerated() {
    let t = Task::from_wire(&json!({ "taskId": "t", "status": "working", "ttlMs": null, "createdAt": "a",
        "lastUpdatedAt": 5, "pollIntervalMs": 250.0, "inputRequests": { "bad": 3, "ok": { "method": "roots/list" } } })).unwrap();
    assert_eq!(t.ttl_ms, None, "null TTL means unlimited");
    assert_eq!(
        t.created_at.as_deref(),
        Some("a"),
        "invalid timestamps are kept raw"
    );
    assert_eq!(t.last_updated_at, None);
    assert_eq!(t.poll_interval_ms, Some(250));
    assert_eq!(
        t.input_requests.len(),
        1,
        "a malformed request is skipped, the rest kept"
    );
    let odd = Task::from_wire(&json!({ "taskId": "t", "status": "paused" })).unwrap();
    assert_eq!(odd.status, TaskStatus::Other("paused".into()));
    assert!(!odd.status.is_terminal());
    assert!(
        Task::from_wire(&json!({ "status": "working" })).is_err(),
        "a task needs an id"
    );
    assert!(Task::from_wire(&json!([1])).is_err());
}

#[test]
fn notifications_under_both_names_and_both_shapes() {
    let v2 = Incoming::parse(
        r#"{"jsonrpc":"2.0","method":"notifications/tasks","params":{
        "_meta":{"io.modelcontextprotocol/subscriptionId":12},"taskId":"t","status":"completed",
        "ttlMs":60000,"pollIntervalMs":5000,"result":{"content":[],"isError":false}}}"#,
    )
    .unwrap();
    let Incoming::Notification { method, params } = v2 else {
        panic!()
    };
    assert_eq!(method, "notifications/tasks");
    assert!(RequestId::Num(12).matches(Incoming::subscription_id(&params).unwrap()));
    assert!(
        RequestId::Str("12".into()).matches(Incoming::subscription_id(&params).unwrap()),
        "lenient id comparison"
    );
    assert!(Task::from_wire(&params).unwrap().result.is_some());
    let v1 = Incoming::parse(
        r#"{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{
        "taskId":"t","status":"working","ttl":null,"pollInterval":1000}}"#,
    )
    .unwrap();
    let Incoming::Notification { params, .. } = v1 else {
        panic!()
    };
    assert_eq!(
        Task::from_wire(&params).unwrap().poll_interval_ms,
        Some(1000)
    );
}

#[test]
fn acks_server_requests_and_errors_are_classified() {
    assert!(matches!(
        Incoming::parse(r#"{"jsonrpc":"2.0","id":6,"result":{"resultType":"complete"}}"#).unwrap(),
        Incoming::Response { outcome: Ok(_), .. }
    ));
    let req = Incoming::parse(
        r#"{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{
        "message":"ok?","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t"}}}}"#,
    )
    .unwrap();
    assert!(matches!(req, Incoming::Request { id: RequestId::Str(ref s), .. } if s == "e1"));
    let ack = Incoming::parse(r#"{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged",
        "params":{"_meta":{"io.modelcontextprotocol/subscriptionId":12},"notifications":{"taskIds":["a"]}}}"#).unwrap();
    assert!(matches!(ack, Incoming::Notification { .. }));
    let Incoming::Response { outcome: Err(e), .. } = Incoming::parse(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32021,
        "message":"Missing required client capability","data":{"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}"#).unwrap()
    else { panic!() };
    assert!(matches!(
        McpError::from_rpc(&e, false),
        McpError::MissingCapability {
            required: Some(_),
            ..
        }
    ));
    for (code, task_call) in [
        (-32003, false),
        (-32020, false),
        (-32001, false),
        (-32022, false),
        (-32004, false),
        (-32602, true),
        (-32601, false),
    ] {
        let err = ErrorObject {
            code,
            message: "m".into(),
            data: Some(json!({ "supported": ["2026-07-28"] })),
        };
        let mapped = McpError::from_rpc(&err, task_call);
        assert!(
            !matches!(mapped, McpError::Rpc { .. }),
            "{code} has a meaning: {mapped:?}"
        );
    }
    let generic = McpError::from_rpc(
        &ErrorObject {
            code: -32602,
            message: "bad".into(),
            data: None,
        },
        false,
    );
    assert!(
        matches!(generic, McpError::Rpc { code: -32602, .. }),
        "-32602 outside tasks/* is not 'task gone'"
    );
    assert!(Incoming::parse("{not json").is_err());
    assert!(Incoming::parse(r#"{"jsonrpc":"2.0","id":1}"#).is_err());
}

#[test]
fn tools_carry_the_legacy_task_support_hint() {
    let t = ToolInfo::from_wire(
        &json!({ "name": "simulate-research-query", "inputSchema": { "type": "object" },
        "execution": { "taskSupport": "required" }, "annotations": {} }),
    )
    .unwrap();
    assert_eq!(t.task_support.as_deref(), Some("required"));
    assert!(ToolInfo::from_wire(&json!({ "description": "no name" })).is_none());
}
