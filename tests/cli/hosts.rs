//! `taskrail hosts`: the real binary on a fixture of every host format (comments, unrelated
//! keys, a stdio and an HTTP entry each) placed where each host keeps it under a temporary
//! HOME and project directory. Wrap then unwrap gives every file back byte for byte, wrapping
//! twice equals wrapping once, `--dry-run` changes nothing, a broken file is left untouched
//! with an error naming its line, permissions are kept, and a wrapped entry's command line,
//! run with only HOME and PATH, is a working proxy in front of the demo server.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::taskrail::{DemoProcess, Taskrail, bin};

const LIMIT: Duration = Duration::from_secs(60);

/// Fixture file → (under HOME?, where the host keeps it).
const PLACES: &[(&str, bool, &str)] = &[
    ("claude.json", true, ".claude.json"),
    ("mcp.json", false, ".mcp.json"),
    (
        "claude_desktop_config.json",
        true,
        ".config/Claude/claude_desktop_config.json",
    ),
    ("cursor_mcp.json", true, ".cursor/mcp.json"),
    ("vscode_mcp.json", false, ".vscode/mcp.json"),
    (
        "vscode_settings.json",
        true,
        ".config/Code/User/settings.json",
    ),
    ("codex_config.toml", true, ".codex/config.toml"),
    ("gemini_settings.json", true, ".gemini/settings.json"),
    ("goose_config.yaml", true, ".config/goose/config.yaml"),
    ("zed_settings.json", true, ".config/zed/settings.json"),
    ("opencode.json", false, "opencode.json"),
];

fn fixture(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hosts")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A user with a HOME and a project directory holding every fixture.
struct World {
    tr: Taskrail,
    home: PathBuf,
    project: PathBuf,
}

impl World {
    fn new() -> World {
        let tr = Taskrail::new();
        let home = tr.dir().join("home");
        let project = tr.dir().join("project");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        World { tr, home, project }
    }

    fn with_all_fixtures() -> World {
        let w = World::new();
        for (name, _, _) in PLACES {
            w.place(name, &fixture(name));
        }
        w
    }

    fn path(&self, name: &str) -> PathBuf {
        let (_, in_home, rel) = PLACES.iter().find(|(n, _, _)| *n == name).unwrap();
        if *in_home {
            self.home.join(rel)
        } else {
            self.project.join(rel)
        }
    }

    fn place(&self, name: &str, text: &str) {
        let p = self.path(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
    }

    fn snapshot(&self) -> BTreeMap<String, String> {
        PLACES
            .iter()
            .filter(|(n, _, _)| self.path(n).exists())
            .map(|(n, _, _)| {
                (
                    n.to_string(),
                    std::fs::read_to_string(self.path(n)).unwrap(),
                )
            })
            .collect()
    }

    /// `taskrail ARGS` with this HOME, in the project directory (bounded).
    fn run(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let mut cmd = self.tr.command(args);
        cmd.env("HOME", &self.home)
            .env_remove("XDG_CONFIG_HOME")
            .current_dir(&self.project)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let out = child.stdout.take().unwrap();
        let err = child.stderr.take().unwrap();
        let out = std::thread::spawn(move || std::io::read_to_string(out).unwrap_or_default());
        let err = std::thread::spawn(move || std::io::read_to_string(err).unwrap_or_default());
        let deadline = Instant::now() + LIMIT;
        let code = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s.code();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("taskrail {args:?} did not finish in {LIMIT:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        (code, out.join().unwrap(), err.join().unwrap())
    }
}

#[test]
fn wrap_then_unwrap_gives_every_file_back_byte_for_byte() {
    let w = World::with_all_fixtures();
    std::fs::set_permissions(
        w.path("claude.json"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    std::fs::set_permissions(
        w.path("codex_config.toml"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let original = w.snapshot();

    let (code, out, err) = w.run(&["hosts", "wrap"]);
    assert_eq!(code, Some(0), "stdout:\n{out}\nstderr:\n{err}");
    let wrapped = w.snapshot();
    for (name, text) in &original {
        assert_ne!(&wrapped[name], text, "{name} was not wrapped:\n{out}");
        assert!(wrapped[name].contains("TASKRAIL_WRAPPED"), "{name}");
        assert!(!wrapped[name].contains("\"proxy\",\n") || name.ends_with(".json"));
    }
    // Everything outside the entries is kept: comments and unrelated keys.
    assert!(wrapped["vscode_mcp.json"].starts_with("// Workspace MCP servers"));
    assert!(wrapped["codex_config.toml"].contains("[profiles.fast]\nmodel = \"o4-mini\"\n"));
    assert!(wrapped["goose_config.yaml"].contains("  developer:\n    bundled: true\n"));
    assert!(wrapped["goose_config.yaml"].ends_with("GOOSE_MODE: smart_approve\n"));
    let mode = |n: &str| std::fs::metadata(w.path(n)).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode("claude.json"), 0o600);
    assert_eq!(mode("codex_config.toml"), 0o640);

    let (code, out, err) = w.run(&["hosts", "wrap"]);
    assert_eq!(code, Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(w.snapshot(), wrapped, "wrapping twice changed something");
    assert!(out.contains("already wrapped"), "{out}");

    let (code, out, err) = w.run(&["hosts", "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let rows: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(rows.len() >= 22, "{out}");
    for row in &rows {
        let builtin = row["server"] == "developer";
        assert_eq!(row["throughTaskrail"], !builtin, "{row}");
        assert!(
            !row.to_string().contains("SECRET"),
            "a secret in the listing: {row}"
        );
    }

    let (code, out, err) = w.run(&["hosts", "unwrap"]);
    assert_eq!(code, Some(0), "stdout:\n{out}\nstderr:\n{err}");
    let back = w.snapshot();
    for (name, text) in &original {
        assert_eq!(&back[name], text, "{name} is not given back byte for byte");
    }
    assert_eq!(mode("codex_config.toml"), 0o640);
}

#[test]
fn dry_run_prints_a_diff_and_changes_nothing() {
    let w = World::with_all_fixtures();
    let before = w.snapshot();
    let (code, out, err) = w.run(&["hosts", "wrap", "--dry-run"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(w.snapshot(), before);
    assert!(out.contains("+++ ") && out.contains("@@"), "{out}");
    assert!(out.contains("<the original entry, base64>"), "{out}");
    let entries = std::fs::read_dir(w.path("codex_config.toml").parent().unwrap()).unwrap();
    assert_eq!(entries.count(), 1, "a temp file was left behind");
}

#[test]
fn one_host_or_one_server_only() {
    let w = World::with_all_fixtures();
    let before = w.snapshot();
    let (code, out, err) = w.run(&["hosts", "wrap", "cursor", "git"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let after = w.snapshot();
    for (name, text) in &before {
        if name != "cursor_mcp.json" {
            assert_eq!(&after[name], text, "{name} changed");
        }
    }
    let cursor = &after["cursor_mcp.json"];
    assert!(
        cursor.contains("\"url\": \"https://mcp.sentry.example/mcp\""),
        "{cursor}"
    );
    assert!(cursor.contains("TASKRAIL_WRAPPED"), "{cursor}");

    let (code, _, err) = w.run(&["hosts", "wrap", "cursor", "nope"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no server named nope"), "{err}");
}

#[test]
fn a_broken_file_is_left_untouched_with_its_line() {
    let w = World::new();
    let broken = fixture("broken.json");
    w.place("mcp.json", &broken);
    w.place("cursor_mcp.json", &fixture("cursor_mcp.json"));
    let (code, _, err) = w.run(&["hosts", "wrap"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(".mcp.json") && err.contains("line 4"), "{err}");
    assert_eq!(std::fs::read_to_string(w.path("mcp.json")).unwrap(), broken);
    assert!(
        std::fs::read_to_string(w.path("cursor_mcp.json"))
            .unwrap()
            .contains("TASKRAIL_WRAPPED")
    );

    let file = w.path("mcp.json");
    let (code, _, err) = w.run(&["hosts", "unwrap", "--file", file.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(err.contains("line 4"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), broken);
}

/// Run a wrapped entry as its host would (only HOME and PATH, plus the entry's `env`) and
/// send it an `initialize`; the answer line.
fn initialize_through(entry: &Value, home: &Path) -> Value {
    let command = entry["command"].as_str().unwrap();
    let args: Vec<&str> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let mut cmd = Command::new(command);
    cmd.args(&args)
        .env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    for (k, v) in entry["env"].as_object().unwrap() {
        cmd.env(k, v.as_str().unwrap());
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"hosts-wrap-test","version":"1"}}}}}}"#
    )
    .unwrap();
    stdin.flush().unwrap();
    let line = rx.recv_timeout(LIMIT);
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let line = line.unwrap_or_else(|_| panic!("no answer from {command} {args:?}"));
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON-RPC ({e}): {line}"))
}

#[test]
fn a_wrapped_entry_starts_a_working_proxy_from_a_pruned_environment() {
    let demo = DemoProcess::start(&[]);
    let w = World::new();
    let text = fixture("mcp.json")
        .replace("@TASKRAIL@", bin())
        .replace("@DEMO_URL@", &demo.url);
    w.place("mcp.json", &text);
    let (code, out, err) = w.run(&["hosts", "wrap", "claude-code"]);
    assert_eq!(code, Some(0), "stdout:\n{out}\nstderr:\n{err}");
    let wrapped: Value =
        serde_json::from_str(&std::fs::read_to_string(w.path("mcp.json")).unwrap()).unwrap();
    let db = w.tr.db().display().to_string();
    for name in ["local-demo", "remote-demo"] {
        let entry = &wrapped["mcpServers"][name];
        let args = entry["args"].as_array().unwrap();
        assert_eq!(entry["command"].as_str(), Some(bin()), "{entry}");
        assert_eq!(
            args[..3],
            [
                Value::from("--db"),
                Value::from(db.as_str()),
                Value::from("proxy")
            ],
            "{entry}"
        );
        assert!(
            !entry.to_string().contains("demo key 123")
                || entry["env"]["TASKRAIL_PROXY_HEADERS"].is_string()
        );
        assert!(
            args.iter()
                .all(|a| !a.as_str().unwrap().contains("demo key")),
            "a header on the command line: {entry}"
        );
        let answer = initialize_through(entry, &w.home);
        assert_eq!(answer["id"], 1, "{name}: {answer}");
        assert!(
            answer["result"]["protocolVersion"].is_string(),
            "{name}: {answer}"
        );
    }
    let local = wrapped["mcpServers"]["local-demo"]["args"][3]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        local.starts_with("stdio:") && local.contains("'X-Note: hello world'"),
        "{local}"
    );
    assert_eq!(wrapped["mcpServers"]["remote-demo"]["type"], "stdio");
    assert_eq!(
        wrapped["mcpServers"]["remote-demo"]["args"][3],
        demo.url.as_str()
    );

    let (code, _, err) = w.run(&[
        "hosts",
        "unwrap",
        "--file",
        w.path("mcp.json").to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(std::fs::read_to_string(w.path("mcp.json")).unwrap(), text);
}
