//! The stdio host transport: newline-delimited JSON-RPC on stdin and stdout (nothing else
//! is ever written to stdout), one host session, served until the host closes stdin.
//!
//! Must not log to stdout.

use std::sync::Arc;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};

use super::Proxy;

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
    let mut writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(msg) = outgoing.recv().await {
            let mut line = msg.to_string();
            line.push('\n');
            if output.write_all(line.as_bytes()).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    let host = proxy.host(Some(out.clone()));
    let mut lines = FramedRead::new(input, LinesCodec::new_with_max_length(MAX_LINE));
    loop {
        match lines.next().await {
            None => break,
            Some(Err(LinesCodecError::MaxLineLengthExceeded)) => {
                tracing::warn!("dropping a message from the client longer than {MAX_LINE} bytes");
            }
            Some(Err(e)) => {
                tracing::warn!("reading from the client failed: {e}");
                break;
            }
            Some(Ok(line)) if line.trim().is_empty() => {}
            Some(Ok(line)) => match serde_json::from_str::<Value>(&line) {
                Ok(msg) => host.handle(&proxy, msg, out.clone()),
                Err(e) => {
                    let reply = json!({
                        "jsonrpc": "2.0", "id": null,
                        "error": { "code": -32700, "message": format!("Parse error: {e}") },
                    });
                    let _ = out.send(reply).await;
                }
            },
        }
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
