//! Honest rows and exit codes, as a new user meets them: one code for an unknown task
//! across `get`, `timeline`, `cancel`, `watch` and `answer`; no row for a task the server
//! never had; a server's "invalid params" (`-32602`) its own code; `call --args` checked
//! against the tool's `inputSchema` before anything is sent; the config's only server
//! taken without `--server`; `ls` saying `tool error` as the board does. Against the
//! embedded demo server as its own process (legacy: its tool error ends `failed`).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;
use support::taskrail::{DemoProcess, Taskrail};

const LIMIT: Duration = Duration::from_secs(60);

fn demo() -> DemoProcess {
    DemoProcess::start(&["--time-scale", "0.05", "--poll-interval", "200", "--legacy"])
}

/// The README's exit-code table: code → meaning.
fn readme_exit(code: u8) -> String {
    let readme = std::fs::read_to_string(support::repo_dir().join("README.md")).unwrap();
    readme
        .lines()
        .find(|l| l.starts_with(&format!("| {code} |")))
        .unwrap_or_else(|| panic!("exit {code} is not in the README's table"))
        .to_string()
}

#[test]
fn an_unknown_task_is_exit_5_for_every_command_and_leaves_no_row() {
    let server = demo();
    let url = server.url.as_str();
    let tr = Taskrail::new();
    let answer = ["answer", "zzzz", "k", "--json", "{}"];
    for args in [
        &["get", "zzzz"][..],
        &["timeline", "zzzz"],
        &["cancel", "zzzz"],
        &["watch", "zzzz"],
        &answer,
    ] {
        let run = tr.run(args, LIMIT);
        assert_eq!(run.code, Some(5), "{args:?}: {run:#?}");
        assert!(
            run.stderr.contains("no task in the ledger"),
            "{args:?}: {run:#?}"
        );
    }
    let answer = [
        "answer",
        "-s",
        url,
        "nonexistenttaskid",
        "k",
        "--json",
        "{}",
    ];
    for args in [
        &["get", "-s", url, "nonexistenttaskid"][..],
        &["cancel", "-s", url, "nonexistenttaskid"],
        &["watch", "-s", url, "nonexistenttaskid"],
        &answer,
    ] {
        let run = tr.run(args, LIMIT);
        assert_eq!(run.code, Some(5), "{args:?}: {run:#?}");
    }
    let ls = tr.run(&["ls", "--all"], LIMIT);
    assert_eq!(ls.stdout.trim(), "no tasks", "nothing recorded: {ls:#?}");
    assert!(readme_exit(5).contains("unknown"), "{}", readme_exit(5));
}

#[test]
fn call_checks_its_arguments_and_an_invalid_call_has_its_own_exit_code() {
    let server = demo();
    let tr = Taskrail::new();
    let cfg = tr.dir().join("config.toml");
    std::fs::write(
        &cfg,
        format!("[[server]]\nname = \"demo\"\nurl = \"{}\"\n", server.url),
    )
    .unwrap();
    let cfg = cfg.to_str().unwrap();
    let calls = || {
        server.stats()["methods"]["tools/call"]
            .as_u64()
            .unwrap_or(0)
    };

    // The one configured server needs no --server; the schema is checked first.
    let bad = tr.run(
        &[
            "--config",
            cfg,
            "call",
            "render_report",
            "--args",
            r#"{"pages":"x"}"#,
        ],
        LIMIT,
    );
    assert_eq!(bad.code, Some(2), "{bad:#?}");
    assert!(
        bad.stderr.contains("field pages") && bad.stderr.contains("inputSchema"),
        "{}",
        bad.stderr
    );
    assert_eq!(calls(), 0, "nothing sent: {}", server.stats());

    // What the server refuses as invalid params (an unknown tool) is neither a
    // connection error nor a usage error here.
    let invalid = tr.run(&["--config", cfg, "call", "no_such_tool"], LIMIT);
    assert_eq!(invalid.code, Some(8), "{invalid:#?}");
    assert!(invalid.stderr.contains("as invalid"), "{}", invalid.stderr);
    assert!(readme_exit(8).contains("-32602"), "{}", readme_exit(8));

    // A tool error reads `tool error` in `ls`, as on the board.
    let lint = tr.run(
        &["--config", cfg, "call", "lint", "--args", r#"{"repo":"x"}"#],
        LIMIT,
    );
    assert_eq!(lint.code, Some(1), "{lint:#?}");
    let ls = tr.run(&["--config", cfg, "ls", "--all"], LIMIT);
    let row = ls
        .stdout
        .lines()
        .find(|l| l.contains("lint"))
        .unwrap_or_default();
    assert!(row.contains("tool error"), "{}", ls.stdout);
}

#[test]
fn watch_json_prints_the_current_state_first_whoever_follows_the_task() {
    let server = demo();
    let url = server.url.as_str();
    let tr = Taskrail::new();
    let args = [
        "call",
        "-s",
        url,
        "wait_for_input",
        "--args",
        r#"{"prompt":"Name it"}"#,
    ];
    let handle = tr.run(&[&args[..], &["--detach"]].concat(), LIMIT);
    let id = support::taskrail::task_id(&handle);
    // Another process follows it (holds its lease) and has seen it wait for input.
    let mut holder = tr.spawn(&["watch", "-s", url, &id]);
    holder.wait_stdout("input_required", LIMIT);
    let started = std::time::Instant::now();
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c").arg(format!(
        "exec timeout 20 '{}' watch '{id}' --json 2>/dev/null | head -1",
        support::taskrail::bin()
    ));
    tr.apply_env(&mut cmd);
    let out = cmd.output().unwrap();
    let elapsed = started.elapsed();
    let line: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_eq!(line["status"], "input_required", "{line}");
    assert_eq!(line["source"], "ledger", "{line}");
    assert!(
        elapsed < Duration::from_secs(10),
        "`| head -1` returns at once, not at the next change: {elapsed:?}"
    );
    let readme = std::fs::read_to_string(support::repo_dir().join("README.md")).unwrap();
    assert!(
        readme.contains("`ledger`"),
        "the README lists the ledger source"
    );
    holder.kill9();
}
