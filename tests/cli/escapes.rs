//! Terminal-escape injection through the CLI: a hostile server puts ESC/CSI/OSC/C1
//! sequences, bidi overrides, zero-width and double-width characters, 10,000-character
//! lines and invalid UTF-8 into everything it sends. Human output must carry none of it
//! raw; `--json` output must carry it JSON-escaped, with the content intact.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use serde_json::{Value, json};
use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;
use support::raw_http::raw_server;
use support::taskrail::Taskrail;

const LIMIT: Duration = Duration::from_secs(60);

fn hostile(tag: &str) -> String {
    format!(
        "{tag}\x1b[31mRED\x1b[0m\x1b]0;pwned\x07\x1b]8;;http://evil.test\x1b\\link\x1b]8;;\x1b\\\
         \u{9b}2J\u{90}dcs\u{9c}\u{202e}txt.exe\u{202c}\u{200b}\u{2066}\u{feff}\u{200d}宽字符\r\n\tnext {}",
        "A".repeat(10_000)
    )
}

fn reply(stream: &mut TcpStream, status: &str, body: &[u8]) {
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(body);
}

/// A modern tasks server whose every string is hostile.
fn hostile_server() -> String {
    let (url, _) = raw_server(64, |req, stream| {
        let body = req.split("\r\n\r\n").nth(1).unwrap_or_default();
        let msg: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let id = msg["id"].clone();
        let method = msg["method"].as_str().unwrap_or_default();
        let result = match method {
            "server/discover" => json!({
                "supportedVersions": ["2026-07-28"],
                "capabilities": { "tools": {}, "extensions": { "io.modelcontextprotocol/tasks": {} } },
                "serverInfo": { "name": hostile("server"), "version": hostile("v") }
            }),
            "tools/list" => json!({ "tools": [{
                "name": hostile("tool"), "title": hostile("title"),
                "description": hostile("description"),
                "inputSchema": { "type": "object", "properties": {
                    "p": { "type": "string", "title": hostile("field"), "enum": [hostile("label")] }
                } }
            }] }),
            "tools/call" if msg["params"]["name"] == "bad" => {
                // A 500 whose body is not even UTF-8.
                reply(
                    stream,
                    "500 Internal Server Error",
                    b"\xff\xfe\x1b[2J\x9b\xc0broken",
                );
                return;
            }
            "tools/call" => json!({
                "content": [{ "type": "text", "text": hostile("result") },
                            { "type": "resource_link", "uri": hostile("https://x.test/"), "name": hostile("n") }],
                "isError": false
            }),
            "tasks/get" => json!({
                "taskId": "t-1", "status": "completed", "statusMessage": hostile("status"),
                "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:01Z",
                "ttlMs": 60000, "result": { "content": [{ "type": "text", "text": hostile("done") }] }
            }),
            _ => {
                let err = json!({ "jsonrpc": "2.0", "id": id,
                    "error": { "code": -32603, "message": hostile("error") } });
                reply(stream, "200 OK", err.to_string().as_bytes());
                return;
            }
        };
        let out = json!({ "jsonrpc": "2.0", "id": id, "result": result });
        reply(stream, "200 OK", out.to_string().as_bytes());
    });
    url
}

/// What must never reach a terminal raw.
fn assert_inert(what: &str, text: &str) {
    for (i, c) in text.chars().enumerate() {
        let bad = (c.is_control() && c != '\n')
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}' | '\u{feff}' | '\u{2028}' | '\u{2029}');
        assert!(!bad, "{what}: raw U+{:04X} at char {i}", c as u32);
    }
}

/// Human lines are cut (JSON documents, the machine output of `call` and `get`, keep
/// their content and are checked only for being inert).
fn assert_short_lines(what: &str, text: &str) {
    for line in text.lines() {
        assert!(
            line.chars().count() <= 2000,
            "{what}: a {}-char line",
            line.len()
        );
    }
}

#[test]
fn human_output_is_inert() {
    let url = hostile_server();
    let tr = Taskrail::new();
    for (args, json_stdout) in [
        (vec!["tools", "-s", &url], false),
        (vec!["call", "-s", &url, "plain"], true),
        (vec!["call", "-s", &url, "bad"], true),
        (vec!["call", "-s", &url, "missing-tool-error"], true),
        (vec!["get", "-s", &url, "t-1"], true),
        (vec!["ls", "--all"], false),
        (vec!["timeline", "t-1"], false),
    ] {
        let run = tr.run(&args, LIMIT);
        let what = args.join(" ");
        assert_inert(&format!("{what} stdout"), &run.stdout);
        assert_inert(&format!("{what} stderr"), &run.stderr);
        if !json_stdout {
            assert_short_lines(&what, &run.stdout);
        }
        assert_short_lines(&what, &run.stderr);
    }
}

#[test]
fn json_output_is_escaped_and_intact() {
    let url = hostile_server();
    let tr = Taskrail::new();
    let run = tr.run(&["tools", "-s", &url, "--json"], LIMIT);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_inert("tools --json", &run.stdout);
    let tools: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        tools[0]["name"],
        hostile("tool"),
        "content survives escaping"
    );

    let run = tr.run(&["get", "-s", &url, "t-1"], LIMIT);
    assert_inert("get", &run.stdout);
    let task: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(task["statusMessage"], hostile("status"));

    let run = tr.run(&["ls", "--all", "--json"], LIMIT);
    assert_inert("ls --json", &run.stdout);
    assert!(!run.stdout.trim().is_empty());
}
