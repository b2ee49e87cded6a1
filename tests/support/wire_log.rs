//! Reading a `--wire` file in tests: every line one record with the documented fields,
//! and what a test asks of them (methods sent and received, no secret anywhere).

use serde_json::Value;
use std::path::Path;

/// Every record of a wire file, each checked for the documented shape.
pub fn records(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("wire file {}: {e}", path.display()));
    text.lines()
        .map(|line| {
            let rec: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not one JSON object per line ({e}): {line}"));
            check(&rec);
            rec
        })
        .collect()
}

/// The documented fields: `time` (RFC 3339), `server`, `direction`, `transport`,
/// `message` (a JSON-RPC message), and nothing else (no headers).
pub fn check(rec: &Value) {
    let obj = rec.as_object().expect("a record is an object");
    let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        ["direction", "message", "server", "time", "transport"],
        "{rec}"
    );
    let time = rec["time"].as_str().expect("time");
    assert!(
        chrono::DateTime::parse_from_rfc3339(time).is_ok(),
        "time is RFC 3339: {time}"
    );
    assert!(
        matches!(rec["direction"].as_str(), Some("send" | "recv")),
        "{rec}"
    );
    assert!(
        matches!(
            rec["transport"].as_str(),
            Some("http" | "sse" | "stdio" | "host-http" | "host-stdio")
        ),
        "{rec}"
    );
    assert!(!rec["server"].as_str().unwrap_or("").is_empty(), "{rec}");
    assert_eq!(rec["message"]["jsonrpc"], "2.0", "{rec}");
}

/// `(direction, transport, method or result/error)` of each record, in order.
pub fn flow(recs: &[Value]) -> Vec<(String, String, String)> {
    recs.iter()
        .map(|r| {
            let m = &r["message"];
            let what = match m["method"].as_str() {
                Some(method) => method.to_string(),
                None if m.get("error").is_some() => "error".to_string(),
                None => "result".to_string(),
            };
            (
                r["direction"].as_str().unwrap_or("").to_string(),
                r["transport"].as_str().unwrap_or("").to_string(),
                what,
            )
        })
        .collect()
}

/// Whether a record `direction`/`transport` carries `method` (or `result`).
pub fn has(recs: &[Value], direction: &str, transport: &str, what: &str) -> bool {
    flow(recs)
        .iter()
        .any(|(d, t, w)| d == direction && t == transport && w == what)
}

/// The masked form the log uses for a task id.
pub fn masked(id: &str) -> String {
    let head: String = id.chars().take(4).collect();
    format!("{head}…")
}
