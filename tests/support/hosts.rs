//! Agent hosts for the proxy tests, played by clients nobody here wrote: the official Python
//! SDK client (`tests/interop/host_python.py`, in the FastMCP venv) and the TypeScript SDK
//! client (`tests/interop/host_ts.cjs`). Each prints JSON event lines; every wait is bounded.
//! Also `taskrail proxy --listen` as a process, for hosts that reach it by URL.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
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
    serde_json::json!([bin(), "proxy", server]).to_string()
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
            Via::Url(url) => cmd.arg("--url").arg(url),
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

/// `taskrail proxy SERVER --listen 127.0.0.1:0` on `tr`'s ledger; its URL.
pub fn listen(tr: &Taskrail, server: &str) -> (Running, String) {
    let mut proxy = tr.spawn(&["proxy", server, "--listen", "127.0.0.1:0"]);
    let line = proxy.wait_stderr("serving ", Duration::from_secs(30));
    let url = line
        .rsplit("serving ")
        .next()
        .map(|s| s.trim().to_string())
        .expect("the proxy's URL");
    (proxy, url)
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
