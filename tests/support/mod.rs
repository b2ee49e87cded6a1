//! Test harness that starts real third-party MCP servers ("peers") for integration tests.
//!
//! Each test binary includes it once: `#[path = "../support/mod.rs"] mod support;` in
//! `tests/<area>/main.rs` (`mod support;` in a single-file binary such as `tests/soak.rs`),
//! and its modules `use crate::support;`. Every peer binds 127.0.0.1 on an ephemeral port,
//! prints `READY <url>` once it answers, and is killed (whole process group) when its
//! [`Peer`] is dropped. The peers are installed by
//! `bash tests/interop/setup.sh` (run by `bash tests/run_all.sh`) into `$TASKRAIL_PEERS_DIR`,
//! default `<repo>/.peers`; a missing install is a test failure, never a skip.
#![allow(dead_code)]

pub mod otlp;
pub mod tower;

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a peer may take to print its `READY` line.
pub const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// A running peer server. Dropping it kills the peer's whole process group.
pub struct Peer {
    /// The MCP endpoint, e.g. `http://127.0.0.1:41029/mcp`.
    pub url: String,
    /// Short name used in messages and log file names.
    pub name: &'static str,
    /// File receiving the peer's stdout (after `READY`) and stderr.
    pub log: PathBuf,
    /// Whatever followed the URL on the `READY` line (an access token, for example).
    pub extra: Option<String>,
    child: Child,
}

impl Peer {
    /// The TCP port the peer listens on.
    pub fn port(&self) -> u16 {
        port_of(&self.url).unwrap_or_else(|| panic!("no port in peer url {}", self.url))
    }

    /// The OS process id of the peer's launcher (also its process group id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The last `max_bytes` of the peer's log, for assertion messages.
    pub fn log_tail(&self, max_bytes: usize) -> String {
        log_tail(&self.log, max_bytes)
    }
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer")
            .field("name", &self.name)
            .field("url", &self.url)
            .field("pid", &self.child.id())
            .field("log", &self.log)
            .finish()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

/// Kills the process group led by `child` (node/python grandchildren included), then reaps it.
fn kill_group(child: &mut Child) {
    let pgid = format!("-{}", child.id());
    // No libc in the dependency tree of the tests: use kill(1) for the group signal.
    let grouped = Command::new("kill")
        .args(["-KILL", "--", &pgid])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !grouped {
        let _ = child.kill();
    }
    let _ = child.wait();
}

/// Where `tests/interop/setup.sh` installed the peers.
pub fn peers_dir() -> PathBuf {
    match std::env::var_os("TASKRAIL_PEERS_DIR") {
        Some(dir) if !dir.is_empty() => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                repo_dir().join(dir)
            }
        }
        _ => repo_dir().join(".peers"),
    }
}

/// The repository root (the crate's manifest directory).
pub fn repo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/interop` in the repository.
pub fn interop_dir() -> PathBuf {
    repo_dir().join("tests").join("interop")
}

/// Panics unless `path` exists, telling the user how to install the peers.
fn require_installed(path: &Path, what: &str) {
    if !path.exists() {
        panic!(
            "{what} is not installed: {} does not exist.\n\
             Install the test peers with `bash tests/run_all.sh` (runs everything), or only \
             the peers with `bash tests/interop/setup.sh`. They go to $TASKRAIL_PEERS_DIR \
             (default <repo>/.peers; here {}).",
            path.display(),
            peers_dir().display()
        );
    }
}

/// The venv Python that runs the FastMCP peer.
pub fn peers_python() -> PathBuf {
    let python = peers_dir().join("venv").join("bin").join("python");
    require_installed(&python, "the FastMCP peer (Python venv)");
    python
}

/// The FastMCP peer script.
pub fn fastmcp_script() -> PathBuf {
    interop_dir().join("fastmcp_peer.py")
}

/// Starts the FastMCP + fastmcp-tasks peer (modern `2026-07-28`, tasks-v2, polling only)
/// over Streamable HTTP.
pub fn fastmcp_http() -> Peer {
    let mut cmd = Command::new(peers_python());
    cmd.arg(fastmcp_script())
        .arg("--port")
        .arg("0")
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    start("fastmcp", cmd)
}

/// The argv a client spawns for the FastMCP peer over stdio
/// (`<venv python> tests/interop/fastmcp_peer.py --stdio`).
pub fn fastmcp_stdio_command() -> Vec<String> {
    vec![
        peers_python().display().to_string(),
        fastmcp_script().display().to_string(),
        "--stdio".to_string(),
    ]
}

/// Starts `@modelcontextprotocol/server-everything` (legacy `2025-11-25`, tasks-v1, with a
/// GET SSE stream) over Streamable HTTP, forced onto 127.0.0.1.
pub fn everything_http() -> Peer {
    everything_http_on(0)
}

/// [`everything_http`] on a given port (0: an ephemeral one), e.g. to restart the server
/// where its clients expect it.
pub fn everything_http_on(port: u16) -> Peer {
    let entry = peers_dir()
        .join("node")
        .join("node_modules")
        .join("@modelcontextprotocol")
        .join("server-everything")
        .join("dist")
        .join("index.js");
    require_installed(&entry, "server-everything (npm)");
    let mut cmd = Command::new("node");
    cmd.arg(interop_dir().join("everything.cjs"))
        .arg("--port")
        .arg(port.to_string())
        .env("TASKRAIL_PEERS_DIR", peers_dir());
    start("everything", cmd)
}

/// The directory of the TypeScript SDK's example servers.
pub fn sdk_examples_dir() -> PathBuf {
    let dir = peers_dir()
        .join("node")
        .join("node_modules")
        .join("@modelcontextprotocol")
        .join("sdk")
        .join("dist")
        .join("esm")
        .join("examples")
        .join("server");
    require_installed(&dir, "@modelcontextprotocol/sdk (npm)");
    dir
}

/// Starts one of the TypeScript SDK's example servers over Streamable HTTP on 127.0.0.1
/// (`tests/interop/sdk_example.cjs`): `simpleTaskInteractive`, `elicitationFormExample`,
/// or `elicitationUrlExample` (whose access token is in [`Peer::extra`]).
pub fn sdk_example(name: &'static str) -> Peer {
    sdk_examples_dir();
    let mut cmd = Command::new("node");
    cmd.arg(interop_dir().join("sdk_example.cjs"))
        .arg(name)
        .env("TASKRAIL_PEERS_DIR", peers_dir());
    start(name, cmd)
}

/// The `stdio:` server spec of a stdio example server of the TypeScript SDK.
pub fn sdk_stdio_example(name: &str) -> String {
    let script = sdk_examples_dir().join(format!("{name}.js"));
    format!("stdio:node {}", script.display())
}

/// Starts the FastMCP peer protected by FastMCP's in-memory OAuth provider (its own
/// authorization server on the same origin; dynamic registration, rotating refresh tokens).
pub fn fastmcp_oauth_http() -> Peer {
    let mut cmd = Command::new(peers_python());
    cmd.arg(fastmcp_script())
        .args(["--port", "0", "--oauth"])
        .env("PYTHONUNBUFFERED", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1");
    start("fastmcp-oauth", cmd)
}

/// Starts the TypeScript SDK's OAuth example (`simpleStreamableHttp.js --oauth`, with its
/// own authorization server on a second port) forced onto 127.0.0.1; its URL uses
/// `localhost`, the name the example gives itself.
pub fn sdk_oauth_http() -> Peer {
    let entry = peers_dir()
        .join("node/node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js");
    require_installed(&entry, "@modelcontextprotocol/sdk (npm)");
    let mut cmd = Command::new("node");
    cmd.arg(interop_dir().join("sdk_oauth.cjs"))
        .env("TASKRAIL_PEERS_DIR", peers_dir());
    start("sdk-oauth", cmd)
}

/// Starts the tower-mcp peer (modern `2026-07-28`, tasks-v2 with `subscriptions/listen`
/// push), building it first if needed. See [`tower::tower_http`].
pub fn tower_http() -> Peer {
    tower::tower_http()
}

/// Directory for peer logs: `<target>/<profile>/peer-logs`, next to the test binaries.
pub fn log_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // <target>/<profile>/deps/<test binary>
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .map(|p| p.join("peer-logs"))
        .unwrap_or_else(|| std::env::temp_dir().join("taskrail-peer-logs"));
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

fn new_log_file(name: &str) -> (PathBuf, File) {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let path = log_dir().join(format!("{name}-{}-{n}.log", std::process::id()));
    let file = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("cannot create peer log {}: {e}", path.display()));
    (path, file)
}

fn log_tail(path: &Path, max_bytes: usize) -> String {
    let text = fs::read(path).unwrap_or_default();
    let start = text.len().saturating_sub(max_bytes);
    String::from_utf8_lossy(&text[start..]).into_owned()
}

fn port_of(url: &str) -> Option<u16> {
    let rest = url.split("://").nth(1)?;
    let authority = rest.split('/').next()?;
    authority.rsplit(':').next()?.parse().ok()
}

/// Spawns `cmd` in its own process group and waits (bounded) for its `READY <url>` line.
/// Lines before and after it, and all of stderr, go to a log file.
pub fn start(name: &'static str, mut cmd: Command) -> Peer {
    let (log, log_file) = new_log_file(name);
    let stderr = log_file
        .try_clone()
        .unwrap_or_else(|e| panic!("cannot clone peer log handle: {e}"));
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .process_group(0);
    let program = format!("{cmd:?}");
    let mut child = cmd.spawn().unwrap_or_else(|e| {
        panic!(
            "cannot start peer {name} ({program}): {e}\nIs the program installed? \
             Run `bash tests/run_all.sh` or `bash tests/interop/setup.sh`."
        )
    });
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel::<String>();
    let mut sink = log_file;
    std::thread::Builder::new()
        .name(format!("peer-{name}-stdout"))
        .spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(url) = line.strip_prefix("READY ")
                    && let Some(tx) = tx.take()
                {
                    let _ = tx.send(url.trim().to_string());
                    continue;
                }
                // Keep draining so the peer never blocks on a full pipe.
                let _ = writeln!(sink, "[stdout] {line}");
            }
        })
        .expect("spawn peer stdout reader");

    let started = Instant::now();
    match rx.recv_timeout(READY_TIMEOUT) {
        Ok(line) => {
            let (url, extra) = match line.split_once(char::is_whitespace) {
                Some((u, rest)) => (u.to_string(), Some(rest.trim().to_string())),
                None => (line, None),
            };
            Peer {
                url,
                name,
                log,
                extra,
                child,
            }
        }
        Err(err) => {
            let status = child.try_wait().ok().flatten();
            kill_group(&mut child);
            let why = match err {
                mpsc::RecvTimeoutError::Timeout => {
                    format!("no READY line within {:?}", READY_TIMEOUT)
                }
                mpsc::RecvTimeoutError::Disconnected => format!(
                    "it closed stdout without a READY line after {:?} (exit status: {})",
                    started.elapsed(),
                    status.map_or_else(|| "still running".to_string(), |s| s.to_string())
                ),
            };
            panic!(
                "peer {name} did not start: {why}.\ncommand: {program}\nlog: {}\n--- log tail ---\n{}",
                log.display(),
                log_tail(&log, 4000)
            );
        }
    }
}
pub mod browser;
pub mod hostile;
pub mod hosts;
pub mod postgres;
pub mod raw_http;
pub mod relay;
pub mod screen;
pub mod shared;
pub mod taskrail;
pub mod tmux;
pub mod wire_log;

/// A plain web server that is not an MCP endpoint: Python's `http.server` on 127.0.0.1
/// (GET → 404 for `/mcp`, POST → 501), serving an empty directory.
pub fn plain_web_http() -> Peer {
    let script = "import http.server, os, sys\n\
                  os.chdir(sys.argv[1])\n\
                  srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler)\n\
                  print(f'READY http://127.0.0.1:{srv.server_address[1]}/mcp', flush=True)\n\
                  srv.serve_forever()\n";
    let dir = log_dir().join(format!("plain-web-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    let mut cmd = Command::new(peers_python());
    cmd.arg("-c").arg(script).arg(&dir);
    start("plain-web", cmd)
}
