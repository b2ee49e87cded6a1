//! A private tmux server per test for driving the real dashboard binary: its own `-L`
//! socket, `send-keys` in, `capture-pane` out, every wait bounded. tmux is required (`.ci/run`
//! installs it): a missing tmux fails the test, never skips it.
#![allow(dead_code)]

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::taskrail::{Taskrail, bin};

/// How long one visible change may take before the test fails.
pub const LIMIT: Duration = Duration::from_secs(40);
/// Marker the shell prints after the dashboard exits, followed by its exit status.
pub const EXITED: &str = "dashboard-exit-status=";

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A private tmux server with one 120x35 window running `sh`. Dropping it kills the server
/// (and with it the shell and anything still running in the pane) and removes its socket.
pub struct Tmux {
    socket: String,
    socket_path: Option<PathBuf>,
    /// The dashboard's log, quoted when a wait fails.
    log: RefCell<Option<PathBuf>>,
}

impl Tmux {
    pub fn start(name: &str) -> Tmux {
        if let Err(e) = Command::new("tmux").arg("-V").output() {
            panic!(
                "tmux is required by the end-to-end tests but cannot be run ({e}); \
                 install it (`apt-get install tmux`; `.ci/run` does this)"
            );
        }
        let socket = format!(
            "taskrail-tmux-{}-{}-{name}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let mut tmux = Tmux {
            socket,
            socket_path: None,
            log: RefCell::new(None),
        };
        let out = tmux.raw(&[
            "new-session",
            "-d",
            "-x",
            "120",
            "-y",
            "35",
            "env PS1='$ ' /bin/sh",
        ]);
        assert!(out.status.success(), "tmux new-session failed: {out:?}");
        let path = tmux.tmux(&["display-message", "-p", "#{socket_path}"]);
        tmux.socket_path = Some(PathBuf::from(path.trim()));
        tmux
    }

    pub fn raw(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            // no user configuration; the server starts with this environment
            .args(["-u", "-f", "/dev/null", "-L", &self.socket])
            .args(args)
            .env("LANG", "C.UTF-8")
            .env("TERM", "xterm-256color")
            .env_remove("TMUX")
            .env_remove("HTTP_PROXY")
            .env_remove("http_proxy")
            .env_remove("ALL_PROXY")
            .output()
            .expect("run tmux")
    }

    pub fn tmux(&self, args: &[&str]) -> String {
        let out = self.raw(args);
        assert!(
            out.status.success(),
            "tmux {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Named keys (`Enter`, `Escape`, `j`, …), one argument each.
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "0"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Literal text.
    pub fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "0", "-l", text]);
    }

    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "0"])
    }

    pub fn alternate_screen(&self) -> bool {
        self.tmux(&["display-message", "-p", "-t", "0", "#{alternate_on}"])
            .trim()
            == "1"
    }

    pub fn resize(&self, w: u16, h: u16) {
        self.tmux(&[
            "resize-window",
            "-t",
            "0",
            "-x",
            &w.to_string(),
            "-y",
            &h.to_string(),
        ]);
    }

    /// The number of the dashboard's last whole frame (it titles the pane `taskrail frame N`
    /// when started by `launch_dashboard`); `None` when no dashboard draws in the pane.
    pub fn frame(&self) -> Option<u64> {
        self.tmux(&["display-message", "-p", "-t", "0", "#{pane_title}"])
            .trim()
            .strip_prefix("taskrail frame ")
            .and_then(|n| n.parse().ok())
    }

    /// Poll the pane until `cond` holds; returns that screen. While a dashboard draws in the
    /// pane, a screen counts only when no frame ended while it was read (the frame number
    /// is the same before and after), so a half-drawn frame is never taken for the answer.
    /// Panics with the last screen.
    pub fn wait(&self, what: &str, cond: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + LIMIT;
        loop {
            let before = self.frame();
            let screen = self.screen();
            if cond(&screen) && self.frame() == before {
                return screen;
            }
            if Instant::now() > deadline {
                let log = self
                    .log
                    .borrow()
                    .as_ref()
                    .and_then(|p| std::fs::read_to_string(p).ok())
                    .unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(30).collect();
                panic!(
                    "timed out after {LIMIT:?} waiting for {what}; the pane shows:\n{screen}\n\
                     last lines of the dashboard log (newest first):\n{}",
                    tail.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Start the dashboard from the shell in the pane with `args`, on `tr`'s ledger.
    pub fn start_dashboard(&self, tr: &Taskrail, args: &str) {
        self.launch_dashboard(tr, args);
        self.wait("the dashboard header", |s| {
            s.contains(" taskrail ") && s.contains("connected")
        });
    }

    /// Start the dashboard (like `start_dashboard`) without waiting for a connection.
    pub fn launch_dashboard(&self, tr: &Taskrail, args: &str) {
        *self.log.borrow_mut() = Some(tr.log());
        let extra: String = tr
            .extra_env()
            .iter()
            .map(|(k, v)| format!("{k}={} ", quote(Path::new(v))))
            .collect();
        let line = format!(
            "TASKRAIL_FRAME_TITLE=1 TASKRAIL_NO_NOTIFY=1 TASKRAIL_DB={} TASKRAIL_LOG={} TASKRAIL_TOKEN_STORE={} TASKRAIL_LOG_LEVEL=debug {extra}{} {args}; echo {EXITED}$?",
            quote(&tr.db()),
            quote(&tr.log()),
            quote(&tr.tokens()),
            quote(Path::new(bin())),
        );
        self.type_text(&line);
        self.keys(&["Enter"]);
    }

    /// Run a taskrail command line in the pane (`env` first, e.g. `BROWSER=…`), on `tr`'s
    /// ledger; it ends with the exit marker (see [`Tmux::exit_code`]).
    pub fn start_cli(&self, tr: &Taskrail, env: &str, args: &str) {
        *self.log.borrow_mut() = Some(tr.log());
        let line = format!(
            "clear; {env} TASKRAIL_NO_NOTIFY=1 TASKRAIL_DB={} TASKRAIL_LOG={} TASKRAIL_LOG_LEVEL=debug {} {args}; echo {EXITED}$?",
            quote(&tr.db()),
            quote(&tr.log()),
            quote(Path::new(bin())),
        );
        self.type_text(&line);
        self.keys(&["Enter"]);
    }

    /// Wait for the command started by `start_cli` (or the dashboard) to exit; its code.
    pub fn exit_code(&self) -> i32 {
        let code = |l: &str| {
            l.strip_prefix(EXITED)
                .and_then(|c| c.trim().parse::<i32>().ok())
        };
        let screen = self.wait("the command to exit", |s| {
            s.lines().any(|l| code(l).is_some())
        });
        screen.lines().find_map(code).unwrap_or(-1)
    }

    /// The process id of the program the pane's shell runs in the foreground.
    pub fn foreground_pid(&self) -> u32 {
        let shell = self.tmux(&["display-message", "-p", "-t", "0", "#{pane_pid}"]);
        let deadline = Instant::now() + LIMIT;
        loop {
            let out = Command::new("pgrep")
                .args(["-P", shell.trim()])
                .output()
                .expect("run pgrep");
            let text = String::from_utf8_lossy(&out.stdout);
            if let Some(pid) = text.lines().next().and_then(|l| l.trim().parse().ok()) {
                return pid;
            }
            assert!(Instant::now() < deadline, "no program runs in the pane");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Quit with `q` and wait for the shell to report a clean exit.
    /// Close the view on top with Escape and wait until `marker` (something only that view
    /// shows) is gone, so that the next key is not read together with the Escape as an Alt
    /// chord (`Esc q` read at once is Alt+q to a terminal reader).
    pub fn escape_from(&self, marker: &str) {
        self.keys(&["Escape"]);
        self.wait(&format!("the view showing {marker:?} to close"), |s| {
            !s.contains(marker)
        });
    }

    pub fn quit(&self) {
        self.keys(&["q"]);
        self.wait("the dashboard to exit", |s| {
            s.contains(&format!("{EXITED}0"))
        });
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.raw(&["kill-server"]);
        if let Some(path) = &self.socket_path {
            let _ = std::fs::remove_file(path);
        }
    }
}

pub fn quote(p: &Path) -> String {
    format!("'{}'", p.display().to_string().replace('\'', r"'\''"))
}
