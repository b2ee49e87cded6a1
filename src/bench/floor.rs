//! `taskrail bench client-floor`: the protocol client alone following tasks — the same
//! `tasks/get` stream `taskrail watch` sends (each task once per `pollIntervalMs`, at
//! most 16 in flight, until it ends), with no engine, ledger or output. Its CPU per
//! request is the floor the whole `watch` is measured against.
//!
//! `taskrail bench http-floor`: below that, the HTTP client alone — one `server/discover`
//! POST after another on one kept-alive connection, with or without a timer between: what
//! a request and its reply cost this machine before any protocol work.
//!
//! Must not use the engine or the ledger: it measures what is left without them.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use super::{cpu_time, machine_line, rss_kb};
use crate::ids::TaskId;
use crate::mcp::{ConnectOptions, Endpoint, McpClient};

/// Requests in flight at most (the engine's default).
const IN_FLIGHT: usize = 16;

/// Follow `ids` on `url` until each is terminal (or `limit` passes); report CPU per request.
pub async fn client_floor(url: String, ids: Vec<String>, limit: Duration) -> anyhow::Result<()> {
    anyhow::ensure!(!ids.is_empty(), "give the task ids to follow");
    let endpoint = Endpoint::Http { url };
    let (client, _pushes) = McpClient::connect(endpoint, ConnectOptions::default()).await?;
    let client = Arc::new(client);
    let gate = Arc::new(tokio::sync::Semaphore::new(IN_FLIGHT));
    let cpu0 = cpu_time();
    let t0 = Instant::now();
    let deadline = t0 + limit;
    let n = ids.len();
    let mut runs = tokio::task::JoinSet::new();
    for (i, id) in ids.into_iter().enumerate() {
        let (client, gate) = (client.clone(), gate.clone());
        // Spread the first requests over one second, as tasks created one after another.
        let first = t0 + Duration::from_millis((i * 1000 / n) as u64);
        runs.spawn(async move {
            let id = TaskId::new(&id);
            let mut next = first;
            let mut sent = 0u64;
            let mut errors = 0u64;
            while Instant::now() < deadline {
                tokio::time::sleep_until(next).await;
                let reply = {
                    let _slot = gate.acquire().await;
                    client.get_task(&id).await
                };
                sent += 1;
                let interval = match reply {
                    Ok(task) if task.status.is_terminal() => return (sent, errors, true),
                    Ok(task) => task.poll_interval_ms.unwrap_or(1000).max(250),
                    Err(_) => {
                        errors += 1;
                        1000
                    }
                };
                next = Instant::now() + Duration::from_millis(interval);
            }
            (sent, errors, false)
        });
    }
    let (mut sent, mut errors, mut ended) = (0u64, 0u64, 0usize);
    while let Some(r) = runs.join_next().await {
        let (s, e, done) = r?;
        sent += s;
        errors += e;
        ended += usize::from(done);
    }
    let cpu = cpu_time().saturating_sub(cpu0);
    let wall = t0.elapsed();
    let (_, peak) = rss_kb();
    client.close().await;
    report!("client floor: {n} tasks followed by the protocol client alone, {ended} ended");
    report!(
        "  tasks/get {sent} ({errors} errors) in {:.1} s, CPU {:.2} s = {:.0} us per tasks/get, peak RSS {:.1} MB",
        wall.as_secs_f64(),
        cpu.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / sent.max(1) as f64,
        peak as f64 / 1024.0
    );
    report!("  method: McpClient::get_task per task every pollIntervalMs, at most {IN_FLIGHT} in");
    report!("  flight, on a current-thread runtime; no engine, ledger or output. CPU from");
    report!("  the process CPU clock over the run (connection set-up excluded).");
    report!("  {}", machine_line());
    Ok(())
}

/// POST `requests` `server/discover` requests to `url` one after another, sleeping `gap`
/// between them (zero: back to back); report the CPU per request.
pub async fn http_floor(url: String, requests: u64, gap: Duration) -> anyhow::Result<()> {
    crate::mcp::http::install_crypto_provider();
    let client = reqwest::Client::builder().no_proxy().build()?;
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let post = || {
        client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "server/discover")
            .body(body)
            .send()
    };
    // The connection is opened before the clock starts.
    post().await?.bytes().await?;
    let cpu0 = cpu_time();
    let t0 = Instant::now();
    for _ in 0..requests {
        post().await?.error_for_status()?.bytes().await?;
        if !gap.is_zero() {
            tokio::time::sleep(gap).await;
        }
    }
    let cpu = cpu_time().saturating_sub(cpu0);
    let wall = t0.elapsed();
    report!(
        "http floor: {requests} server/discover POSTs, {} ms apart, to {}",
        gap.as_millis(),
        crate::sanitize::sanitize_line(&url, 80)
    );
    report!(
        "  in {:.1} s, CPU {:.2} s = {:.0} us per request",
        wall.as_secs_f64(),
        cpu.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / requests.max(1) as f64
    );
    report!("  method: reqwest alone, one kept-alive connection, one request at a time, on a");
    report!("  current-thread runtime; CPU from the process CPU clock over the requests.");
    report!("  {}", machine_line());
    Ok(())
}
