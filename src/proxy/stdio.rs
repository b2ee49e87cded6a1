//! The stdio host transport: newline-delimited JSON-RPC on stdin and stdout (nothing else
//! is ever written to stdout), one host session, served until the host closes stdin.
//!
//! Must not log to stdout.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;

use super::Proxy;
use crate::mcp::lines::{Line, leading_id, leading_is_request, read_lines};
use crate::mcp::wire::Carrier;

/// Largest accepted line from the host.
const MAX_LINE: usize = 16 * 1024 * 1024;

/// Serve one host on this process's stdin and stdout until it closes stdin.
pub async fn serve_stdio(proxy: Arc<Proxy>) -> anyhow::Result<()> {
    serve_lines(proxy, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serve one host on a pair of streams.
pub async fn serve_lines<R, W>(proxy: Arc<Proxy>, input: R, output: W) -> anyhow::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (out, mut outgoing) = mpsc::channel::<Value>(1024);
    let (sent_tap, recv_tap) = (proxy.wire.clone(), proxy.wire.clone());
    let mut writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(msg) = outgoing.recv().await {
            if let Some(tap) = &sent_tap {
                tap.sent(Carrier::HostStdio, &msg);
            }
            let mut line = msg.to_string();
            line.push('\n');
            if output.write_all(line.as_bytes()).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    let host = proxy.host(Some(out.clone()), Default::default());
    let read = read_lines(input, MAX_LINE, |line| {
        let (proxy, host, out, tap) = (&proxy, &host, &out, &recv_tap);
        async move {
            match line {
                Line::Full(bytes) if bytes.trim_ascii().is_empty() => {}
                Line::Full(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                    Ok(msg) => {
                        if let Some(tap) = tap {
                            tap.received(Carrier::HostStdio, &msg);
                        }
                        super::dispatch::handle(host, proxy, msg, out.clone())
                    }
                    Err(e) => {
                        let reply = error_reply(Value::Null, -32700, &format!("Parse error: {e}"));
                        let _ = out.send(reply).await;
                    }
                },
                Line::TooLong { head, len } => {
                    tracing::warn!(
                        "dropping a message of {len} bytes from the client, longer than {MAX_LINE}"
                    );
                    // A request is answered at once, so the host does not wait for a reply
                    // that will never come (a response or notification is only dropped).
                    if let Some(id) = leading_id(&head).filter(|_| leading_is_request(&head)) {
                        let text =
                            format!("message of {len} bytes is over the {MAX_LINE}-byte limit");
                        let _ = out.send(error_reply(id, -32600, &text)).await;
                    }
                }
            }
        }
    })
    .await;
    if let Err(e) = read {
        tracing::warn!("reading from the client failed: {e}");
    }
    tracing::info!("the client closed its input; stopping");
    drop(host);
    drop(out);
    // Replies already on their way still go out; calls still waiting end with the process.
    if tokio::time::timeout(std::time::Duration::from_millis(500), &mut writer)
        .await
        .is_err()
    {
        writer.abort();
    }
    Ok(())
}

/// A JSON-RPC error reply to `id`.
fn error_reply(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}
