//! `taskrail bench proxy-latency` and `proxy-load`: the real `taskrail proxy` binary (a
//! child process of this one) in front of a server in a process of its own (`taskrail
//! serve-demo`, or `--url`), driven by the MCP client as the host. Latency: a plain
//! `tools/call` straight to the server against the same call through the proxy (stdio and
//! HTTP). Load: CPU and memory of one proxy holding N blocking calls whose tasks run
//! concurrently.
//!
//! Must not import the proxy module: it measures the binary a host would start.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{Value, json};

use super::{cpu_time_of, machine_line, quantile, rss_kb_of};
use crate::mcp::{ConnectOptions, Endpoint, McpClient};

/// A child process, killed and reaped on drop.
struct Kid(Child);

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A scratch ledger and log for the proxy child, removed on drop.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new() -> anyhow::Result<Scratch> {
        let dir = std::env::temp_dir().join(format!(
            "taskrail-bench-proxy-{}-{}",
            std::process::id(),
            fastrand::u32(..)
        ));
        std::fs::create_dir_all(&dir)?;
        Ok(Scratch(dir))
    }

    /// `taskrail --db … --log-file … proxy URL` and `extra`.
    fn argv(&self, url: &str, extra: &[&str]) -> anyhow::Result<Vec<String>> {
        let mut argv = self.taskrail("proxy")?;
        argv.push(url.into());
        argv.extend(extra.iter().map(|s| s.to_string()));
        Ok(argv)
    }

    /// `taskrail --db … --log-file … COMMAND` (a log file per command).
    fn taskrail(&self, command: &str) -> anyhow::Result<Vec<String>> {
        let exe = std::env::current_exe().context("the taskrail binary")?;
        Ok(vec![
            exe.display().to_string(),
            "--db".into(),
            self.0.join("ledger.db").display().to_string(),
            "--log-file".into(),
            self.0.join(format!("{command}.log")).display().to_string(),
            command.into(),
        ])
    }

    /// The server under test: `url` when given, else `taskrail serve-demo` as a child (its
    /// own process, so the proxy's and the server's work never share a runtime).
    fn server(&self, url: Option<String>) -> anyhow::Result<(Option<Kid>, String)> {
        if let Some(url) = url {
            return Ok((None, url));
        }
        let argv = self.taskrail("serve-demo")?;
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .args(["--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting the demo server")?;
        let stdout = child.stdout.take().context("the demo server's stdout")?;
        let kid = Kid(child);
        let mut url = String::new();
        BufReader::new(stdout)
            .read_line(&mut url)
            .context("reading the demo server's URL")?;
        let url = url.trim().to_string();
        anyhow::ensure!(
            url.starts_with("http://"),
            "the demo server printed {url:?}"
        );
        Ok((Some(kid), url))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `taskrail proxy URL --listen 127.0.0.1:0` as a child: the child and its URL.
fn listening_proxy(scratch: &Scratch, url: &str) -> anyhow::Result<(Kid, String)> {
    let argv = scratch.argv(url, &["--listen", "127.0.0.1:0"])?;
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("starting the proxy")?;
    let stderr = child.stderr.take().context("the proxy's stderr")?;
    let child = Kid(child);
    let mut lines = BufReader::new(stderr).lines();
    let line = lines
        .next()
        .context("the proxy printed nothing")?
        .context("reading the proxy's stderr")?;
    let url = line
        .rsplit("serving ")
        .next()
        .filter(|u| u.starts_with("http://"))
        .with_context(|| format!("no URL in {line:?}"))?
        .trim()
        .to_string();
    std::thread::spawn(move || for _ in lines {});
    Ok((child, url))
}

fn options() -> ConnectOptions {
    ConnectOptions {
        call_timeout: Duration::from_secs(300),
        ..Default::default()
    }
}

/// A plain `tools/call` as an agent host writes it (no tasks extension declared).
async fn plain_call(client: &McpClient, tool: &str, arguments: Value) -> anyhow::Result<Value> {
    let id = client.request_id();
    let params = json!({ "name": tool, "arguments": arguments });
    match client.forward(&id, "tools/call", params, None).await? {
        Ok(v) => Ok(v),
        Err(e) => anyhow::bail!("tools/call failed: {} {}", e.code, e.message),
    }
}

/// `n` timed calls (after `n / 10` warm-up ones); sorted milliseconds.
async fn time_calls(client: &McpClient, n: usize) -> anyhow::Result<Vec<f64>> {
    for _ in 0..(n / 10).max(10) {
        plain_call(client, "lookup", json!({ "key": "warm" })).await?;
    }
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let started = Instant::now();
        plain_call(client, "lookup", json!({ "key": format!("k{i}") })).await?;
        out.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    out.sort_by(f64::total_cmp);
    Ok(out)
}

fn line(name: &str, ms: &[f64]) -> String {
    format!(
        "{name:<26} p50 {:.3} ms  p90 {:.3} ms  p99 {:.3} ms",
        quantile(ms, 0.5),
        quantile(ms, 0.9),
        quantile(ms, 0.99)
    )
}

/// Added latency of a plain `tools/call` (`lookup`, answered at once) through the proxy
/// on loopback, against `url` or a demo server of its own.
pub async fn latency(calls: usize, url: Option<String>) -> anyhow::Result<()> {
    let scratch = Scratch::new()?;
    let (server, server_url) = scratch.server(url)?;
    let http = |url: &str| Endpoint::Http {
        url: url.to_string(),
    };
    let (direct, _) = McpClient::connect(http(&server_url), options()).await?;
    let direct_ms = time_calls(&direct, calls).await?;
    direct.close().await;
    let stdio = Endpoint::Stdio {
        argv: scratch.argv(&server_url, &[])?,
    };
    let (via_stdio, _) = McpClient::connect(stdio, options()).await?;
    let stdio_ms = time_calls(&via_stdio, calls).await?;
    via_stdio.close().await;
    let (proxy, proxy_url) = listening_proxy(&scratch, &server_url)?;
    let (via_http, _) = McpClient::connect(http(&proxy_url), options()).await?;
    let http_ms = time_calls(&via_http, calls).await?;
    via_http.close().await;
    drop(proxy);
    let where_ = if server.is_some() {
        "`taskrail serve-demo`"
    } else {
        "--url"
    };
    drop(server);
    report!("proxy latency: {calls} plain tools/call (`lookup`) each, one at a time, loopback");
    report!("{}", line("direct (HTTP)", &direct_ms));
    report!("{}", line("through the proxy, stdio", &stdio_ms));
    report!("{}", line("through the proxy, HTTP", &http_ms));
    let p50 = |v: &[f64]| quantile(v, 0.5);
    report!(
        "added p50: stdio {:.3} ms, HTTP {:.3} ms (target <= 1 ms)",
        p50(&stdio_ms) - p50(&direct_ms),
        p50(&http_ms) - p50(&direct_ms)
    );
    report!(
        "method: the MCP client of this binary as the host (this process); the server in \
         its own process ({}); `taskrail proxy` a child process (its own ledger)",
        where_
    );
    report!("{}", machine_line());
    Ok(())
}

/// CPU and RSS of one proxy holding `tasks` concurrent blocking calls of `render_report`
/// (on `url` or a demo server of its own).
pub async fn load(tasks: usize, pages: u64, url: Option<String>) -> anyhow::Result<()> {
    let scratch = Scratch::new()?;
    let (server, server_url) = scratch.server(url)?;
    let (proxy, proxy_url) = listening_proxy(&scratch, &server_url)?;
    let pid = proxy.0.id();
    let endpoint = Endpoint::Http { url: proxy_url };
    let (host, _) = McpClient::connect(endpoint, options()).await?;
    let host = Arc::new(host);
    let (rss_idle, _) = rss_kb_of(pid);
    let cpu_start = cpu_time_of(pid);
    let started = Instant::now();
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..tasks {
        let host = host.clone();
        calls.spawn(
            async move { plain_call(&host, "render_report", json!({ "pages": pages })).await },
        );
    }
    // Sample while every call is held (a report takes pages x 400 ms).
    let mut peak_rss = 0;
    let mut ok = 0usize;
    let mut sampler = tokio::time::interval(Duration::from_millis(500));
    while !calls.is_empty() {
        tokio::select! {
            _ = sampler.tick() => peak_rss = peak_rss.max(rss_kb_of(pid).0),
            Some(done) = calls.join_next() => {
                if matches!(done, Ok(Ok(ref v)) if v.get("isError") == Some(&json!(false))) {
                    ok += 1;
                }
            }
        }
    }
    let held = started.elapsed();
    let cpu = cpu_time_of(pid).saturating_sub(cpu_start);
    let (_, hwm) = rss_kb_of(pid);
    drop(proxy);
    drop(server);
    report!(
        "proxy load: {tasks} concurrent blocking tools/call (`render_report`, {pages} pages, \
         one push per page), one proxy over HTTP"
    );
    report!(
        "results: {ok}/{tasks} completed in {:.1} s",
        held.as_secs_f64()
    );
    report!(
        "proxy CPU: {:.2} s over {:.1} s ({:.1} % of one core)",
        cpu.as_secs_f64(),
        held.as_secs_f64(),
        100.0 * cpu.as_secs_f64() / held.as_secs_f64()
    );
    report!(
        "proxy RSS: {:.1} MB idle, {:.1} MB peak while holding (VmHWM {:.1} MB)",
        rss_idle as f64 / 1024.0,
        peak_rss as f64 / 1024.0,
        hwm as f64 / 1024.0
    );
    report!("{}", machine_line());
    Ok(())
}
