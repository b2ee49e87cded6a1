//! Smoke tests of the peer harness: each third-party server starts, answers a raw JSON-RPC
//! request on 127.0.0.1, and dies with its `Peer` handle.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const MODERN: &str = "2026-07-28";
const TASKS_EXT: &str = "io.modelcontextprotocol/tasks";

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("reqwest client")
}

fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "taskrail-tests", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {"form": {}},
            "extensions": {TASKS_EXT: {}}
        }
    })
}

/// The JSON-RPC messages in a response body that is either plain JSON or an SSE stream.
fn messages(content_type: &str, body: &str) -> Vec<Value> {
    if content_type.starts_with("text/event-stream") {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(|d| serde_json::from_str(d).unwrap_or_else(|e| panic!("bad SSE data {d}: {e}")))
            .collect()
    } else {
        vec![serde_json::from_str(body).unwrap_or_else(|e| panic!("bad JSON body {body}: {e}"))]
    }
}

#[tokio::test]
async fn fastmcp_http_discover_advertises_tasks() {
    let peer = support::fastmcp_http();
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "server/discover",
        "params": {"_meta": modern_meta()}
    });
    let resp = client()
        .post(&peer.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", MODERN)
        .header("Mcp-Method", "server/discover")
        .json(&body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("POST {} failed: {e}\nlog: {}", peer.url, peer.log.display()));
    assert_eq!(resp.status(), 200, "log: {}", peer.log.display());
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let text = resp.text().await.expect("body");
    let msgs = messages(&ct, &text);
    let reply = msgs.iter().find(|m| m["id"] == 1).expect("reply with id 1");
    let result = &reply["result"];
    assert!(
        result["supportedVersions"]
            .as_array()
            .is_some_and(|v| v.iter().any(|s| s == MODERN)),
        "{reply}"
    );
    assert!(
        result["capabilities"]["extensions"][TASKS_EXT].is_object(),
        "no tasks extension in {reply}"
    );
}

#[tokio::test]
async fn everything_http_initialize_opens_session() {
    let peer = support::everything_http();
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "taskrail-tests", "version": "0"}
        }
    });
    let resp = client()
        .post(&peer.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .unwrap_or_else(|e| panic!("POST {} failed: {e}\nlog: {}", peer.url, peer.log.display()));
    assert_eq!(resp.status(), 200, "log: {}", peer.log.display());
    let session = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    assert!(
        session.as_deref().is_some_and(|s| !s.is_empty()),
        "no mcp-session-id header"
    );
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let text = resp.text().await.expect("body");
    let msgs = messages(&ct, &text);
    let reply = msgs.iter().find(|m| m["id"] == 1).expect("reply with id 1");
    assert_eq!(reply["result"]["protocolVersion"], "2025-11-25", "{reply}");
    assert!(
        reply["result"]["capabilities"]["tasks"].is_object(),
        "{reply}"
    );
}

#[test]
fn fastmcp_stdio_command_answers_discover() {
    let argv = support::fastmcp_stdio_command();
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot spawn {argv:?}: {e}"));
    let mut stdin = child.stdin.take().expect("stdin");
    let request = json!({
        "jsonrpc": "2.0", "id": 7, "method": "server/discover",
        "params": {"_meta": modern_meta()}
    });
    writeln!(stdin, "{request}").expect("write request");
    stdin.flush().expect("flush");

    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let line = rx.recv_timeout(support::READY_TIMEOUT);
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let line = line.expect("no reply on stdout in time");
    let reply: Value = serde_json::from_str(&line).expect("stdout line is JSON");
    assert_eq!(reply["id"], 7, "{reply}");
    assert!(
        reply["result"]["capabilities"]["extensions"][TASKS_EXT].is_object(),
        "{reply}"
    );
}

#[test]
fn dropping_a_peer_kills_its_process_group() {
    // server-everything runs as a grandchild (launcher -> node server): the port closing
    // proves the whole group went away, not just the launcher.
    let peer = support::everything_http();
    let addr: SocketAddr = format!("127.0.0.1:{}", peer.port()).parse().unwrap();
    assert!(TcpStream::connect_timeout(&addr, Duration::from_secs(5)).is_ok());
    drop(peer);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err() {
            break;
        }
        assert!(Instant::now() < deadline, "{addr} still accepts after drop");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[tokio::test]
async fn tower_http_pushes_task_notifications() {
    let peer = support::tower_http();
    let http = client();
    let post = |method: &'static str, name: Option<String>, body: Value| {
        let mut req = http
            .post(&peer.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", MODERN)
            .header("Mcp-Method", method);
        if let Some(name) = name {
            req = req.header("Mcp-Name", name);
        }
        req.json(&body).send()
    };
    let call = post(
        "tools/call",
        Some("work".into()),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "work", "arguments": {"steps": 3, "delay_ms": 700}, "_meta": modern_meta()
        }}),
    )
    .await
    .expect("tools/call");
    assert_eq!(call.status(), 200, "log: {}", peer.log.display());
    let created: Value = call.json().await.expect("tools/call JSON");
    let task_id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no task in {created}"))
        .to_string();

    let mut listen = post(
        "subscriptions/listen",
        None,
        json!({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen", "params": {
            "notifications": {"taskIds": [task_id]}, "_meta": modern_meta()
        }}),
    )
    .await
    .expect("subscriptions/listen");
    assert_eq!(listen.status(), 200, "log: {}", peer.log.display());

    // Read the SSE stream until the task's final state is pushed (bounded in time).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut seen = String::new();
    while !(seen.contains("notifications/subscriptions/acknowledged")
        && seen.contains("\"status\":\"completed\""))
    {
        let chunk = tokio::time::timeout_at(deadline, listen.chunk())
            .await
            .unwrap_or_else(|_| panic!("no completed push within 30 s; got:\n{seen}"))
            .expect("read listen stream")
            .unwrap_or_else(|| panic!("listen stream ended; got:\n{seen}"));
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.contains("notifications/tasks"), "{seen}");
    assert!(seen.contains("step 3/3"), "{seen}");
}
