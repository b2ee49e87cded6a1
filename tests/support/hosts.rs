//! Agent hosts for the proxy tests, played by clients nobody here wrote: the official Python
//! SDK client (`tests/interop/host_python.py`, in the FastMCP venv) and the TypeScript SDK
//! client (`tests/interop/host_ts.cjs`). Each prints JSON event lines; every wait is bounded.
//! Also `taskrail proxy --listen` as a process, for hosts that reach it by URL with a
//! bearer token each (`taskrail proxy token --host NAME`), and [`RawHost`]: a host written
//! here on a plain TCP socket, for what no SDK client does (no token, a foreign `Host` or
//! `Origin`, another host's task id, a GET stream never read, huge bodies).
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::taskrail::{Running, Taskrail, bin};
use super::{interop_dir, peers_dir, peers_python};

/// Which SDK plays the host.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sdk {
    Python,
    Ts,
}

/// How the host reaches the proxy.
pub enum Via<'a> {
    /// The host starts `taskrail proxy SERVER` itself, on stdio.
    Stdio(&'a str),
    /// Like [`Via::Stdio`], with more arguments for the proxy (e.g. `--answer-within 2s`).
    StdioWith(&'a str, &'a [&'a str]),
    /// `taskrail proxy --listen` at this URL.
    Url(&'a str),
}

/// A running host.
pub struct Host {
    child: Child,
    lines: mpsc::Receiver<String>,
    pub events: Vec<Value>,
    what: String,
    stderr: std::path::PathBuf,
}

/// The argv a host runs to start the proxy on stdio.
pub fn proxy_argv(server: &str) -> String {
    proxy_argv_with(server, &[])
}

/// [`proxy_argv`] with more arguments for the proxy.
pub fn proxy_argv_with(server: &str, extra: &[&str]) -> String {
    let mut argv = vec![bin(), "proxy", server];
    argv.extend_from_slice(extra);
    serde_json::json!(argv).to_string()
}

impl Host {
    /// Start `sdk`'s host with `args` (after the `--stdio`/`--url` choice), in `tr`'s
    /// environment (the proxy it starts uses `tr`'s ledger).
    pub fn start(tr: &Taskrail, sdk: Sdk, via: Via<'_>, args: &[&str]) -> Host {
        let mut cmd = match sdk {
            Sdk::Python => {
                let mut c = Command::new(peers_python());
                c.arg(interop_dir().join("host_python.py"))
                    .env("PYTHONUNBUFFERED", "1")
                    .env("PYTHONDONTWRITEBYTECODE", "1");
                c
            }
            Sdk::Ts => {
                let mut c = Command::new("node");
                c.arg(interop_dir().join("host_ts.cjs"))
                    .env("TASKRAIL_PEERS_DIR", peers_dir());
                c
            }
        };
        match via {
            Via::Stdio(server) => cmd.arg("--stdio").arg(proxy_argv(server)),
            Via::StdioWith(server, extra) => cmd.arg("--stdio").arg(proxy_argv_with(server, extra)),
            Via::Url(url) => {
                cmd.arg("--url").arg(url);
                // A listener started by [`listen`] wants its default token; a test that
                // passes its own `--header` chooses for itself.
                if !args.contains(&"--header")
                    && let Some(token) = default_token_of(url)
                {
                    cmd.arg("--header").arg(bearer(&token));
                }
                &mut cmd
            }
        };
        cmd.args(args);
        tr.apply_env(&mut cmd);
        let stderr = tr.dir().join(format!(
            "host-{}-{}.err",
            std::process::id(),
            fastrand_suffix()
        ));
        let err_file = std::fs::File::create(&stderr).expect("host stderr file");
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(err_file));
        let what = format!("{sdk:?} host {}", args.join(" "));
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the {what}: {e}"));
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Host {
            child,
            lines,
            events: Vec::new(),
            what,
            stderr,
        }
    }

    fn stderr_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        let start = text.len().saturating_sub(3000);
        text[start..].to_string()
    }

    /// Wait (bounded) for an event named `event`; returns it.
    pub fn wait(&mut self, event: &str, limit: Duration) -> Value {
        if let Some(e) = self.events.iter().find(|e| e["event"] == event) {
            return e.clone();
        }
        let deadline = Instant::now() + limit;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let Ok(v) = serde_json::from_str::<Value>(&line) else {
                        continue;
                    };
                    self.events.push(v.clone());
                    if v["event"] == event {
                        return v;
                    }
                }
                Err(_) => break,
            }
        }
        panic!(
            "the {} gave no {event:?} event in {limit:?}; events: {:?}\nstderr:\n{}",
            self.what,
            self.events,
            self.stderr_tail()
        );
    }

    /// Wait for the host to exit (bounded); every event it printed.
    pub fn finish(mut self, limit: Duration) -> Vec<Value> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
                    if let Ok(v) = serde_json::from_str::<Value>(&line) {
                        self.events.push(v);
                    }
                }
                assert!(
                    status.success(),
                    "the {} failed ({status}); events: {:?}\nstderr:\n{}",
                    self.what,
                    self.events,
                    self.stderr_tail()
                );
                return std::mem::take(&mut self.events);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "the {} did not finish in {limit:?}; events: {:?}\nstderr:\n{}",
                    self.what,
                    self.events,
                    self.stderr_tail()
                );
            }
            if let Ok(line) = self.lines.recv_timeout(Duration::from_millis(50))
                && let Ok(v) = serde_json::from_str::<Value>(&line)
            {
                self.events.push(v);
            }
        }
    }

    /// SIGKILL the host, as a crash would (a proxy it started sees its stdin close).
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fastrand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// The one event named `event` among `events`.
pub fn event<'a>(events: &'a [Value], event: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["event"] == event)
        .unwrap_or_else(|| panic!("no {event:?} event in {events:?}"))
}

/// `taskrail proxy token --host NAME` (created on first use): the bearer token of host
/// `name` for `tr`'s listeners.
pub fn token(tr: &Taskrail, name: &str) -> String {
    token_run(tr, &["proxy", "token", "--host", name])
}

/// `taskrail proxy token --host NAME --rotate`: a new token; the old one stops working.
pub fn rotate_token(tr: &Taskrail, name: &str) -> String {
    token_run(tr, &["proxy", "token", "--host", name, "--rotate"])
}

fn token_run(tr: &Taskrail, args: &[&str]) -> String {
    let run = tr.run(args, Duration::from_secs(30));
    assert_eq!(run.code, Some(0), "taskrail {}: {run:#?}", args.join(" "));
    let lines: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), 1, "one line, the token: {run:#?}");
    let token = lines[0].trim().to_string();
    assert!(
        token.len() >= 16 && token.bytes().all(|b| b.is_ascii_graphic()),
        "a token fit for a header: {token:?}"
    );
    token
}

/// The `--header` value that sends `token`.
pub fn bearer(token: &str) -> String {
    format!("Authorization: Bearer {token}")
}

/// A `taskrail proxy SERVER --listen 127.0.0.1:0` process and the tokens of its hosts.
pub struct Listener {
    pub proxy: Running,
    /// `http://127.0.0.1:PORT/mcp`
    pub url: String,
    /// `127.0.0.1:PORT`
    pub addr: String,
    /// One per name given to [`listen_as`], in order.
    pub tokens: Vec<String>,
}

impl Listener {
    /// The `--header` argument for host `i`'s token.
    pub fn header(&self, i: usize) -> String {
        bearer(&self.tokens[i])
    }

    pub fn port(&self) -> u16 {
        self.addr
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("a port")
    }

    pub fn pid(&self) -> u32 {
        self.proxy.pid()
    }

    /// A raw host with host `i`'s token (no session yet).
    pub fn raw(&self, i: usize) -> RawHost {
        RawHost::new(&self.addr, Some(&self.tokens[i]))
    }
}

/// A listener whose hosts are `names` (a token minted for each, before it starts).
pub fn listen_as(tr: &Taskrail, server: &str, names: &[&str]) -> Listener {
    listen_with(tr, server, names, &[])
}

/// [`listen_as`] with more arguments for the proxy (`--session-idle 2s`, `--max-body N`, …).
pub fn listen_with(tr: &Taskrail, server: &str, names: &[&str], extra: &[&str]) -> Listener {
    let tokens: Vec<String> = names.iter().map(|n| token(tr, n)).collect();
    let mut args = vec!["proxy", server, "--listen", "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let mut proxy = tr.spawn(&args);
    let line = proxy.wait_stderr("serving ", Duration::from_secs(30));
    let url = line
        .rsplit("serving ")
        .next()
        .map(|s| s.trim().to_string())
        .expect("the proxy's URL");
    let addr = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .expect("an address")
        .to_string();
    Listener {
        proxy,
        url,
        addr,
        tokens,
    }
}

/// Tokens of the listeners [`listen`] started, by URL.
fn default_tokens() -> &'static Mutex<HashMap<String, String>> {
    static TOKENS: std::sync::OnceLock<Mutex<HashMap<String, String>>> = std::sync::OnceLock::new();
    TOKENS.get_or_init(Default::default)
}

fn default_token_of(url: &str) -> Option<String> {
    default_tokens()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(url)
        .cloned()
}

/// `taskrail proxy SERVER --listen 127.0.0.1:0` on `tr`'s ledger, with a token for the host
/// `default`; its URL. A [`Host`] started on that URL without a `--header` of its own sends
/// the token.
pub fn listen(tr: &Taskrail, server: &str) -> (Running, String) {
    let l = listen_as(tr, server, &["default"]);
    default_tokens()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(l.url.clone(), l.tokens[0].clone());
    (l.proxy, l.url)
}

/// The ledger's tasks (`taskrail ls --all --json`).
pub fn ledger_tasks(tr: &Taskrail) -> Vec<Value> {
    let run = tr.run(&["ls", "--all", "--json"], Duration::from_secs(30));
    assert_eq!(run.code, Some(0), "{run:#?}");
    run.json_lines()
}

/// Poll the ledger (bounded) until a task satisfies `cond`; returns it.
pub fn ledger_task(tr: &Taskrail, what: &str, cond: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let tasks = ledger_tasks(tr);
        if let Some(t) = tasks.iter().find(|t| cond(t)) {
            return t.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no task in the ledger is {what}: {tasks:#?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A config file naming one server `up` at `url`, set for every command of the returned
/// user (so `taskrail proxy up` and the dashboard agree on the server's id).
pub fn user_with_server(url: &str) -> Taskrail {
    let tr = Taskrail::new();
    let cfg = tr.dir().join("config.toml");
    std::fs::write(
        &cfg,
        format!("[[server]]\nname = \"up\"\nurl = \"{url}\"\n"),
    )
    .expect("write config");
    tr.with_env("TASKRAIL_CONFIG", cfg.display().to_string())
}

/// Like [`user_with_server`] for a stdio server (`command` run by the proxy).
pub fn user_with_stdio_server(argv: &[String]) -> Taskrail {
    let tr = Taskrail::new();
    let cfg = tr.dir().join("config.toml");
    let command = argv
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', "")))
        .collect::<Vec<_>>()
        .join(" ");
    let toml_command = command.replace('\\', "\\\\").replace('"', "\\\"");
    std::fs::write(
        &cfg,
        format!("[[server]]\nname = \"up\"\ncommand = \"{toml_command}\"\n"),
    )
    .expect("write config");
    tr.with_env("TASKRAIL_CONFIG", cfg.display().to_string())
}

/// The JSON-RPC messages of a body: one JSON value, or the `data:` of each SSE event.
pub fn messages_of(body: &str) -> Vec<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(body.trim()) {
        return vec![v];
    }
    let mut out = Vec::new();
    let mut data = String::new();
    for line in body.lines().chain(std::iter::once("")) {
        if let Some(d) = line.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(d.strip_prefix(' ').unwrap_or(d));
        } else if line.trim().is_empty() && !data.is_empty() {
            if let Ok(v) = serde_json::from_str(&data) {
                out.push(v);
            }
            data.clear();
        }
    }
    out
}

/// An HTTP response read whole (the request said `Connection: close`).
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    /// A header's value (name in any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn messages(&self) -> Vec<Value> {
        messages_of(&self.body)
    }

    /// The JSON-RPC response to request `id` in the body.
    pub fn response(&self, id: u64) -> Value {
        self.messages()
            .into_iter()
            .find(|m| m["id"] == id && m.get("method").is_none())
            .unwrap_or_else(|| panic!("no response to id {id} in {self:#?}"))
    }
}

/// A response whose body is read as it comes (chunked or not), event by event.
pub struct Streamed {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    reader: BufReader<Body>,
    /// Messages read so far.
    pub seen: Vec<Value>,
}

/// A response body: chunked transfer coding undone.
struct Body {
    inner: BufReader<TcpStream>,
    chunked: bool,
    /// Bytes left in the current chunk, or of the whole body when it has a length.
    left: Option<usize>,
    done: bool,
}

impl Read for Body {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        if self.chunked {
            if self.left.unwrap_or(0) == 0 {
                let mut line = String::new();
                if self.inner.read_line(&mut line)? == 0 {
                    self.done = true;
                    return Ok(0);
                }
                if line.trim().is_empty() {
                    // The CRLF after a chunk's data.
                    line.clear();
                    if self.inner.read_line(&mut line)? == 0 {
                        self.done = true;
                        return Ok(0);
                    }
                }
                let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                    .unwrap_or(0);
                if size == 0 {
                    self.done = true;
                    return Ok(0);
                }
                self.left = Some(size);
            }
            let want = buf.len().min(self.left.unwrap_or(0));
            let n = self.inner.read(&mut buf[..want])?;
            if n == 0 {
                self.done = true;
            }
            self.left = Some(self.left.unwrap_or(0) - n);
            Ok(n)
        } else {
            let want = match self.left {
                Some(0) => {
                    self.done = true;
                    return Ok(0);
                }
                Some(left) => buf.len().min(left),
                None => buf.len(),
            };
            let n = self.inner.read(&mut buf[..want])?;
            if n == 0 {
                self.done = true;
            }
            if let Some(left) = self.left.as_mut() {
                *left -= n;
            }
            Ok(n)
        }
    }
}

impl Streamed {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The next JSON-RPC message (one JSON body, or the next SSE event), waiting at most
    /// `limit`; `None` at the end of the body or when the time is up.
    pub fn next(&mut self, limit: Duration) -> Option<Value> {
        let deadline = Instant::now() + limit;
        let mut data = String::new();
        let mut whole = String::new();
        loop {
            let left = deadline.checked_duration_since(Instant::now())?;
            self.reader
                .get_ref()
                .inner
                .get_ref()
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .ok()?;
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) => {
                    // The end: a JSON body has no blank line after it.
                    let v = serde_json::from_str::<Value>(whole.trim()).ok()?;
                    self.seen.push(v.clone());
                    return Some(v);
                }
                Ok(_) => {}
                Err(_) => return None,
            }
            whole.push_str(&line);
            if let Some(d) = line.strip_prefix("data:") {
                if !data.is_empty() {
                    data.push('\n');
                }
                data.push_str(d.trim_end_matches(['\r', '\n']).trim_start_matches(' '));
            } else if line.trim().is_empty() && !data.is_empty() {
                if let Ok(v) = serde_json::from_str::<Value>(&data) {
                    self.seen.push(v.clone());
                    return Some(v);
                }
                data.clear();
            }
        }
    }

    /// Read until the response to request `id` (bounded); every message before it is in
    /// [`Streamed::seen`].
    pub fn response(&mut self, id: u64, limit: Duration) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline
                .checked_duration_since(Instant::now())
                .unwrap_or_default();
            match self.next(left) {
                Some(m) if m["id"] == id && m.get("method").is_none() => return m,
                Some(_) => {}
                None => panic!(
                    "no response to id {id} in {limit:?} (status {}); messages: {:?}",
                    self.status, self.seen
                ),
            }
        }
    }
}

/// Send one HTTP/1.1 request to `addr` (`127.0.0.1:PORT`) and read the head of its
/// response. `headers` are sent as given; `Host: addr` is added unless one of them is a
/// `Host`, and `Content-Length` when there is a body.
pub fn open(
    addr: &str,
    method: &str,
    headers: &[(String, String)],
    body: Option<&[u8]>,
) -> std::io::Result<Streamed> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_write_timeout(Some(Duration::from_secs(60)))?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut head = format!("{method} /mcp HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        head.push_str(&format!("Content-Length: {}\r\n", b.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    if let Some(b) = body {
        // A server may answer (413, 401) before reading a big body, and close.
        let _ = stream.write_all(b);
    }
    stream.flush()?;
    let mut inner = BufReader::new(stream);
    let mut status_line = String::new();
    inner.read_line(&mut status_line)?;
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            std::io::Error::other(format!("not an HTTP status line: {status_line:?}"))
        })?;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if inner.read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let find = |name: &str| {
        headers
            .iter()
            .find(|(k, _): &&(String, String)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.clone())
    };
    let chunked =
        find("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    let left = if chunked {
        None
    } else {
        find("content-length").and_then(|v| v.parse().ok())
    };
    Ok(Streamed {
        status,
        headers,
        reader: BufReader::new(Body {
            inner,
            chunked,
            left,
            done: false,
        }),
        seen: Vec::new(),
    })
}

/// [`open`] and read the whole body (the request asks the server to close after it).
pub fn request(
    addr: &str,
    method: &str,
    headers: &[(String, String)],
    body: Option<&[u8]>,
) -> Reply {
    let mut headers = headers.to_vec();
    headers.push(("Connection".into(), "close".into()));
    let mut s = open(addr, method, &headers, body)
        .unwrap_or_else(|e| panic!("{method} http://{addr}/mcp failed: {e}"));
    let mut body = Vec::new();
    let _ = s.reader.read_to_end(&mut body);
    Reply {
        status: s.status,
        headers: s.headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// A host written here on a plain socket: a 2025-11-25 session (`initialize`,
/// `Mcp-Session-Id`) or a session-less 2026-07-28 host (`_meta` on every request).
pub struct RawHost {
    pub addr: String,
    pub token: Option<String>,
    pub session: Option<String>,
    pub modern: bool,
    /// A 2026-07-28 host declares the tasks extension (it drives tasks itself).
    pub declare_tasks: bool,
    pub name: String,
    next_id: u64,
}

pub const MODERN: &str = "2026-07-28";
pub const LEGACY: &str = "2025-11-25";

impl RawHost {
    pub fn new(addr: &str, token: Option<&str>) -> RawHost {
        RawHost {
            addr: addr.to_string(),
            token: token.map(str::to_string),
            session: None,
            modern: false,
            declare_tasks: true,
            name: "raw-host".into(),
            next_id: 1,
        }
    }

    /// The headers of every request: token, JSON, both accepted kinds, session, version.
    pub fn headers(&self) -> Vec<(String, String)> {
        let mut h = vec![
            ("Content-Type".to_string(), "application/json".to_string()),
            (
                "Accept".to_string(),
                "application/json, text/event-stream".to_string(),
            ),
        ];
        if let Some(t) = &self.token {
            h.push(("Authorization".into(), format!("Bearer {t}")));
        }
        if let Some(s) = &self.session {
            h.push(("Mcp-Session-Id".into(), s.clone()));
        }
        h.push((
            "MCP-Protocol-Version".into(),
            if self.modern { MODERN } else { LEGACY }.into(),
        ));
        h
    }

    /// The next request id.
    pub fn id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// A request body for `method`; a 2026-07-28 host puts its version, name and
    /// capabilities (the tasks extension) in `_meta`.
    pub fn body(&self, id: u64, method: &str, mut params: Value) -> Value {
        if self.modern {
            if !params.is_object() {
                params = serde_json::json!({});
            }
            let meta = params
                .as_object_mut()
                .expect("object")
                .entry("_meta")
                .or_insert_with(|| serde_json::json!({}));
            meta["io.modelcontextprotocol/protocolVersion"] = MODERN.into();
            meta["io.modelcontextprotocol/clientInfo"] =
                serde_json::json!({ "name": self.name, "version": "1" });
            meta["io.modelcontextprotocol/clientCapabilities"] = if self.declare_tasks {
                serde_json::json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } })
            } else {
                serde_json::json!({})
            };
        }
        serde_json::json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
    }

    /// Open a 2025-11-25 session declaring `capabilities`; panics unless it is granted.
    pub fn initialize(&mut self, name: &str, capabilities: Value) -> &mut Self {
        self.name = name.to_string();
        let id = self.id();
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": "initialize",
            "params": {
                "protocolVersion": LEGACY,
                "capabilities": capabilities,
                "clientInfo": { "name": name, "version": "1" }
            }
        });
        let reply = self.post(&body);
        assert_eq!(reply.status, 200, "initialize: {reply:#?}");
        let r = reply.response(id);
        assert!(r.get("result").is_some(), "initialize: {r}");
        self.session = Some(
            reply
                .header("mcp-session-id")
                .unwrap_or_else(|| panic!("no session id: {reply:#?}"))
                .to_string(),
        );
        let done = self
            .post(&serde_json::json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
        assert_eq!(done.status, 202, "notifications/initialized: {done:#?}");
        self
    }

    /// Speak 2026-07-28 without a session, as `name`, blocking calls (no tasks extension).
    pub fn modern_plain(mut self, name: &str) -> Self {
        self.declare_tasks = false;
        self.modern(name)
    }

    /// Speak 2026-07-28 without a session, as `name`, declaring the tasks extension.
    pub fn modern(mut self, name: &str) -> Self {
        self.modern = true;
        self.name = name.to_string();
        self
    }

    /// POST one message and read the whole reply.
    pub fn post(&self, msg: &Value) -> Reply {
        request(
            &self.addr,
            "POST",
            &self.headers(),
            Some(msg.to_string().as_bytes()),
        )
    }

    /// Call `method` and wait for its response (the whole JSON-RPC message).
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.id();
        let reply = self.post(&self.body(id, method, params));
        assert_eq!(reply.status, 200, "{method}: {reply:#?}");
        reply.response(id)
    }

    /// Call `method`, reading the reply as it streams (the caller reads it).
    pub fn open_call(&mut self, method: &str, params: Value) -> (u64, Streamed) {
        let id = self.id();
        let body = self.body(id, method, params).to_string();
        let s = open(&self.addr, "POST", &self.headers(), Some(body.as_bytes()))
            .unwrap_or_else(|e| panic!("POST {method}: {e}"));
        (id, s)
    }

    /// A notification (or an answer to the proxy's request); the HTTP status.
    pub fn notify(&self, msg: &Value) -> u16 {
        self.post(msg).status
    }

    /// The session's GET stream, opened (the head read, the body left to the caller).
    pub fn get_stream(&self) -> Streamed {
        let mut h = self.headers();
        h.retain(|(k, _)| !k.eq_ignore_ascii_case("content-type"));
        h.retain(|(k, _)| !k.eq_ignore_ascii_case("accept"));
        h.push(("Accept".into(), "text/event-stream".into()));
        open(&self.addr, "GET", &h, None).unwrap_or_else(|e| panic!("GET: {e}"))
    }
}

/// The first `taskId` anywhere in `v`.
pub fn task_id_in(v: &Value) -> Option<String> {
    match v {
        Value::Object(m) => m
            .get("taskId")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| m.values().find_map(task_id_in)),
        Value::Array(a) => a.iter().find_map(task_id_in),
        _ => None,
    }
}

/// The `VmRSS` of process `pid` in kB.
pub fn rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The ledger's timeline of task `id` (`taskrail timeline ID --json`), one value a line.
pub fn timeline(tr: &Taskrail, id: &str) -> Vec<Value> {
    let run = tr.run(&["timeline", id, "--json"], Duration::from_secs(30));
    assert_eq!(run.code, Some(0), "{run:#?}");
    run.json_lines()
}

/// A ledger row's `cancel_by` (however the row spells it: `cancelBy` or `cancel_by`).
pub fn cancel_by(row: &Value) -> Value {
    row.get("cancelBy")
        .or_else(|| row.get("cancel_by"))
        .cloned()
        .unwrap_or(Value::Null)
}
