//! Runs the real `taskrail` binary in tests: an isolated ledger and log per test, bounded
//! waits, captured output, and `serve-demo` processes that can be killed and restarted.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_taskrail")
}

/// What a finished run printed.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("stdout is not one JSON value ({e}): {self:#?}"))
    }

    pub fn json_lines(&self) -> Vec<serde_json::Value> {
        self.stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("not a JSON line ({e}): {l}"))
            })
            .collect()
    }
}

/// One isolated taskrail "user": its own ledger file, log and token store.
pub struct Taskrail {
    dir: tempfile::TempDir,
    /// Extra environment for every command (e.g. a token a header refers to).
    env: Vec<(String, String)>,
}

impl Default for Taskrail {
    fn default() -> Self {
        Self::new()
    }
}

impl Taskrail {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("tempdir"),
            env: Vec::new(),
        }
    }

    /// Set `key=value` in the environment of every command this user runs.
    pub fn with_env(mut self, key: &str, value: impl Into<String>) -> Self {
        self.env.push((key.to_string(), value.into()));
        self
    }

    /// Use `tests/interop/fake_browser.py` as the browser (it follows the authorization
    /// URL's redirects, approving at once, and counts its visits).
    pub fn with_fake_browser(self) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/fake_browser.py");
        let log = self.dir.path().join("browser-visits.log");
        self.with_env("BROWSER", script.display().to_string())
            .with_env("FAKE_BROWSER_LOG", log.display().to_string())
    }

    /// The variables set with `with_env`.
    pub fn extra_env(&self) -> &[(String, String)] {
        &self.env
    }

    /// How often the fake browser was opened.
    pub fn browser_visits(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("browser-visits.log"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("ledger.db")
    }

    pub fn log(&self) -> PathBuf {
        self.dir.path().join("taskrail.log")
    }

    /// This user's token store (a file: tests never touch the OS keyring).
    pub fn tokens(&self) -> PathBuf {
        self.dir.path().join("tokens.json")
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(bin());
        cmd.args(args);
        self.apply_env(&mut cmd);
        cmd
    }

    /// This user's environment (ledger, log, extra variables) on any command, e.g. an agent
    /// host that starts `taskrail proxy` itself.
    pub fn apply_env(&self, cmd: &mut Command) {
        cmd.env("TASKRAIL_DB", self.db())
            .env("TASKRAIL_LOG", self.log())
            .env("TASKRAIL_LOG_LEVEL", "debug")
            .env("TASKRAIL_TOKEN_STORE", self.tokens())
            .env_remove("HTTP_PROXY")
            .env_remove("http_proxy")
            .env_remove("ALL_PROXY")
            .envs(self.env.iter().map(|(k, v)| (k, v)));
    }

    /// Run to completion (killed after `limit`), stdin closed.
    pub fn run(&self, args: &[&str], limit: Duration) -> Run {
        let mut cmd = self.command(args);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd.spawn().expect("spawn taskrail");
        wait(child, limit, &format!("taskrail {}", args.join(" ")))
    }

    /// Run to completion (killed after `limit`) with stdout on a pipe nobody reads: its
    /// reading end is closed before the start, so every write to stdout fails.
    pub fn run_closed_stdout(&self, args: &[&str], limit: Duration) -> Run {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let mut cmd = self.command(args);
        cmd.stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped());
        let child = cmd.spawn().expect("spawn taskrail");
        wait(child, limit, &format!("taskrail {}", args.join(" ")))
    }

    /// Start with piped stdin and stderr read line by line.
    pub fn spawn(&self, args: &[&str]) -> Running {
        let mut cmd = self.command(args);
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn taskrail");
        let stdin = child.stdin.take();
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdout = child.stdout.take().expect("stdout");
        let (otx, orx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if otx.send(line).is_err() {
                    break;
                }
            }
        });
        Running {
            child,
            stdin,
            stderr: rx,
            stdout: orx,
            seen_err: Vec::new(),
            seen_out: Vec::new(),
            what: args.join(" "),
        }
    }
}

impl Taskrail {
    /// Every task in the ledger (`ls --all --json`), newest first.
    pub fn records(&self) -> Vec<serde_json::Value> {
        let run = self.run(&["ls", "--all", "--json"], Duration::from_secs(60));
        assert_eq!(run.code, Some(0), "ls --all --json: {run:#?}");
        run.json_lines()
    }

    /// The ledger record of one task, if any.
    pub fn record(&self, task_id: &str) -> Option<serde_json::Value> {
        self.records()
            .into_iter()
            .find(|r| r["taskId"].as_str() == Some(task_id))
    }
}

/// Send `signal` (`STOP`, `CONT`, `KILL`, …) to process `pid`.
pub fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal} {pid} failed");
}

/// A taskrail process still running.
pub struct Running {
    pub child: Child,
    stdin: Option<ChildStdin>,
    stderr: mpsc::Receiver<String>,
    stdout: mpsc::Receiver<String>,
    pub seen_err: Vec<String>,
    pub seen_out: Vec<String>,
    what: String,
}

impl Running {
    /// Wait (bounded) for a stderr line containing `needle`; returns it.
    pub fn wait_stderr(&mut self, needle: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.stderr.recv_timeout(left) {
                Ok(line) => {
                    self.seen_err.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(_) => break,
            }
        }
        panic!(
            "`taskrail {}` printed no stderr line with {needle:?} in {limit:?}; stderr so far:\n{}",
            self.what,
            self.seen_err.join("\n")
        );
    }

    /// Wait (bounded) for a stdout line containing `needle`; returns it.
    pub fn wait_stdout(&mut self, needle: &str, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.stdout.recv_timeout(left) {
                Ok(line) => {
                    self.seen_out.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(_) => break,
            }
        }
        panic!(
            "`taskrail {}` printed no stdout line with {needle:?} in {limit:?}; stdout so far:\n{}",
            self.what,
            self.seen_out.join("\n")
        );
    }

    pub fn write_line(&mut self, line: &str) {
        self.write_bytes(format!("{line}\n").as_bytes());
    }

    /// Write raw bytes to its stdin (not necessarily UTF-8, nor whole lines).
    pub fn write_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is piped");
        stdin.write_all(bytes).expect("write to taskrail");
        stdin.flush().expect("flush");
    }

    /// Wait for the exit (bounded); returns the code and the rest of the output.
    pub fn finish(mut self, limit: Duration) -> Run {
        drop(self.stdin.take());
        let deadline = Instant::now() + limit;
        let code = loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                break status.code();
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "`taskrail {}` did not finish in {limit:?}; stderr:\n{}",
                    self.what,
                    self.seen_err.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        std::thread::sleep(Duration::from_millis(50));
        self.seen_err.extend(self.stderr.try_iter());
        self.seen_out.extend(self.stdout.try_iter());
        Run {
            code,
            stdout: self.seen_out.join("\n"),
            stderr: self.seen_err.join("\n"),
        }
    }

    /// The OS process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, as a crash would.
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Running {
    /// A test that fails midway leaves no process behind (stopped ones included).
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait(mut child: Child, limit: Duration, what: &str) -> Run {
    // stdout is not piped when a test gives the child its own (a closed pipe)
    let stdout = child.stdout.take();
    let stderr = child.stderr.take().expect("stderr");
    let out = std::thread::spawn(move || {
        stdout
            .map(|s| std::io::read_to_string(s).unwrap_or_default())
            .unwrap_or_default()
    });
    let err = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let deadline = Instant::now() + limit;
    let code = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = err.join().unwrap_or_default();
            panic!("`{what}` did not finish in {limit:?}; stderr:\n{stderr}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        code,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    }
}

/// `taskrail serve-demo` as its own process (so a test can kill and restart it).
pub struct DemoProcess {
    pub url: String,
    child: Child,
}

impl DemoProcess {
    pub fn start(args: &[&str]) -> DemoProcess {
        let mut cmd = Command::new(bin());
        cmd.arg("serve-demo")
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("spawn serve-demo");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(first)) = lines.next() {
                let _ = tx.send(first);
            }
            for _ in lines {}
        });
        let url = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| {
                let _ = child.kill();
                panic!("serve-demo printed no URL")
            });
        DemoProcess {
            url: url.trim().to_string(),
            child,
        }
    }

    /// `GET /stats` of the demo server.
    pub fn stats(&self) -> serde_json::Value {
        stats(&self.url)
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for DemoProcess {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// `GET /stats` of a demo server at `url` (`…/mcp`), with a blocking client.
pub fn stats(url: &str) -> serde_json::Value {
    let base = url.trim_end_matches("/mcp");
    let addr = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).expect("connect to the demo server");
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok();
    write!(
        stream,
        "GET /stats HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let body = std::io::read_to_string(stream).expect("read");
    let json = body.split("\r\n\r\n").nth(1).unwrap_or_default();
    let json = if json.trim_start().starts_with('{') {
        json.to_string()
    } else {
        dechunk(json)
    };
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("stats is not JSON ({e}): {body}"))
}

fn dechunk(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

/// The task id in a `call --detach` handle.
pub fn task_id(run: &Run) -> String {
    assert_eq!(run.code, Some(0), "call --detach failed: {run:#?}");
    run.json()["taskId"].as_str().expect("taskId").to_string()
}
