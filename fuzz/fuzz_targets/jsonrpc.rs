//! Fuzz the JSON-RPC envelope and the MCP decoders: whatever a server sends must decode to
//! a value or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use taskrail::mcp::jsonrpc::{Incoming, RequestId};
use taskrail::mcp::{Task, ToolInfo, decode_call_result};

fn decode_payload(v: &Value) {
    let _ = Task::from_wire(v);
    if let Some(task) = v.get("task") {
        let _ = Task::from_wire(task);
    }
    let _ = decode_call_result(v);
    if let Some(tools) = v.get("tools").and_then(Value::as_array) {
        for t in tools {
            let _ = ToolInfo::from_wire(t);
        }
    }
    let _ = ToolInfo::from_wire(v);
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Incoming::parse(text) {
        Ok(Incoming::Response { id, outcome }) => {
            let _ = RequestId::Num(1).matches(&id);
            let _ = RequestId::Str("1".into()).matches(&id);
            if let Ok(result) = outcome {
                decode_payload(&result);
            }
        }
        Ok(Incoming::Request { params, .. }) | Ok(Incoming::Notification { params, .. }) => {
            let _ = Incoming::subscription_id(&params);
            decode_payload(&params);
        }
        Err(_) => {}
    }
});
