//! The command line as a Unix tool, against the demo server and real peers: a closed
//! stdout ends every subcommand quietly; ids starting with `-` and unique prefixes work
//! wherever an id does; every `--json` speaks the wire's camelCase (`tools --json` keeps
//! `execution.taskSupport`); `answer` checks a response against the request before
//! sending; an unset `${VAR}` disables one configured server only; stderr reads in causal
//! order.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::process::Stdio;
use std::time::{Duration, Instant};

use support::taskrail::{DemoProcess, Run, Taskrail, task_id};

const LIMIT: Duration = Duration::from_secs(60);

fn demo() -> DemoProcess {
    // a long TTL: a test that runs for a while still finds its first tasks
    DemoProcess::start(&[
        "--time-scale",
        "0.05",
        "--poll-interval",
        "200",
        "--ttl",
        "3600000",
    ])
}

fn detach(tr: &Taskrail, url: &str, tool: &str, args: &str) -> String {
    task_id(&tr.run(
        &["call", "--server", url, tool, "--args", args, "--detach"],
        LIMIT,
    ))
}

/// Wait (bounded) until `taskrail get` shows the task waiting for input; its keys.
fn wait_input_keys(tr: &Taskrail, url: &str, id: &str) -> Vec<String> {
    let deadline = Instant::now() + LIMIT;
    loop {
        let run = tr.run(&["get", "--server", url, id], LIMIT);
        let task = run.json();
        if task["status"] == "input_required"
            && let Some(keys) = task["inputRequests"].as_object()
        {
            return keys.keys().cloned().collect();
        }
        assert!(Instant::now() < deadline, "no input request: {task:#}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_closed_stdout_ends_every_subcommand_quietly() {
    let server = demo();
    let url = server.url.as_str();
    let tr = Taskrail::new();
    let done = detach(&tr, url, "lint", r#"{"repo":"r"}"#);
    let asking = detach(&tr, url, "wait_for_input", r#"{"prompt":"Name it"}"#);
    // waits for input until answered: still running when it is cancelled at the end
    let running = detach(&tr, url, "wait_for_input", r#"{"prompt":"Never answered"}"#);
    let key = wait_input_keys(&tr, url, &asking).remove(0);
    let out = tr.dir().join("export.jsonl");
    let out = out.to_str().unwrap();
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["tools", "--server", url], 0),
        (vec!["tools", "--server", url, "--json"], 0),
        (vec!["ls", "--all"], 0),
        (vec!["ls", "--all", "--json"], 0),
        (vec!["timeline", &done], 0),
        (vec!["timeline", &done, "--json"], 0),
        (vec!["export", &done], 0),
        (vec!["get", "--server", url, &running], 0),
        // the usual code of a tool error, its JSON lost quietly
        (vec!["get", "--server", url, &done], 1),
        (
            vec![
                "call",
                "--server",
                url,
                "lookup",
                "--args",
                r#"{"key":"region"}"#,
            ],
            0,
        ),
        (
            vec!["call", "--server", url, "lint", "--args", r#"{"repo":"r"}"#],
            1,
        ),
        (
            vec![
                "call",
                "--server",
                url,
                "lint",
                "--args",
                r#"{"repo":"r"}"#,
                "--detach",
            ],
            0,
        ),
        (vec!["watch", "--server", url, &running], 0),
        (vec!["watch", "--server", url, &running, "--json"], 0),
        (
            vec![
                "answer",
                "--server",
                url,
                &asking,
                &key,
                "--json",
                r#"{"value":"v1"}"#,
            ],
            0,
        ),
        (vec!["cancel", "--server", url, &running], 0),
        (vec!["completions", "bash"], 0),
        (vec!["man"], 0),
        (vec!["prune", "--older-than", "30d"], 0),
        (vec!["serve-demo"], 0),
        // nothing goes to stdout here: unaffected
        (vec!["export", &done, "-o", out], 0),
    ];
    for (args, code) in cases {
        let run = tr.run_closed_stdout(&args, LIMIT);
        assert_eq!(run.code, Some(code), "{args:?}: {run:#?}");
        for noise in ["panicked", "Broken pipe", "failed printing", "error:"] {
            assert!(
                !run.stderr.contains(noise),
                "{args:?} said {noise:?}: {run:#?}"
            );
        }
    }
}

#[test]
fn ids_starting_with_a_hyphen_reach_the_server_and_prefixes_resolve_through_the_ledger() {
    let server = demo();
    let url = server.url.as_str();
    let tr = Taskrail::new();
    // An id no server has: every subcommand takes it as an id (the server, or the ledger,
    // then says it does not know it), never as an option.
    let id = "-Xq3_bcd";
    let never = "-Zz9_never";
    let unknown: Vec<(Vec<&str>, i32)> = vec![
        // (the ledger has no such task either)
        (vec!["timeline", never], 5),
        (vec!["export", never], 5),
        (vec!["get", "--server", url, id], 5),
        (vec!["watch", "--server", url, id], 5),
        (vec!["cancel", "--server", url, id], 5),
        (vec!["answer", "--server", url, id, "-k", "--json", "{}"], 5),
        // the server said it does not know it: nothing was recorded
        (vec!["timeline", id], 5),
    ];
    for (args, code) in unknown {
        let run = tr.run(&args, LIMIT);
        assert!(
            !run.stderr.contains("unexpected argument"),
            "{args:?}: {run:#?}"
        );
        assert_eq!(run.code, Some(code), "{args:?}: {run:#?}");
    }

    // A unique prefix of a task in the ledger works without --server, for every command.
    let id = detach(&tr, url, "wait_for_input", r#"{"prompt":"Never answered"}"#);
    let prefix = &id[..6];
    let got = tr.run(&["get", prefix], LIMIT);
    assert_eq!(got.code, Some(0), "{got:#?}");
    assert_eq!(got.json()["taskId"], id.as_str());
    let timeline = tr.run(&["timeline", prefix, "--json"], LIMIT);
    assert_eq!(timeline.json_lines()[0]["taskId"], id.as_str());
    let cancel = tr.run(&["cancel", prefix], LIMIT);
    assert_eq!(cancel.code, Some(0), "{cancel:#?}");
    assert_eq!(cancel.json()["taskId"], id.as_str());
    let watch = tr.run(&["watch", prefix, "--json"], LIMIT);
    assert_eq!(watch.code, Some(4), "cancelled: {watch:#?}");
    assert_eq!(watch.json_lines().last().unwrap()["taskId"], id.as_str());
    // … and with --server too; a prefix no task has is said to be unknown
    let with_server = tr.run(&["get", "--server", url, prefix], LIMIT);
    assert_eq!(with_server.json()["taskId"], id.as_str());
    let none = tr.run(&["get", "zzzz-no-such"], LIMIT);
    assert_eq!(none.code, Some(5), "unknown, as everywhere: {none:#?}");
    assert!(none.stderr.contains("give --server"), "{none:#?}");
}

#[test]
fn every_json_output_is_camel_case_and_tools_keep_their_task_support() {
    let server = demo();
    let url = server.url.as_str();
    let tr = Taskrail::new();
    let id = detach(&tr, url, "lint", r#"{"repo":"r"}"#);
    tr.run(&["watch", "--server", url, &id], LIMIT);
    let ls = tr.run(&["ls", "--all", "--json"], LIMIT);
    let rec = &ls.json_lines()[0];
    for key in [
        "taskId",
        "recordedAt",
        "lastSeen",
        "answeredKeys",
        "pollIntervalMs",
    ] {
        assert!(rec.get(key).is_some(), "ls --json lacks {key}: {rec}");
    }
    let text = ls.stdout.clone();
    for snake in [
        "task_id",
        "recorded_at",
        "last_seen",
        "answered_keys",
        "ttl_ms",
    ] {
        assert!(
            !text.contains(&format!("\"{snake}\"")),
            "{snake} in ls --json: {text}"
        );
    }

    // server-everything marks its task tool `execution.taskSupport: required`
    let everything = support::everything_http();
    let tools = tr.run(&["tools", "--server", &everything.url, "--json"], LIMIT);
    assert_eq!(tools.code, Some(0), "{tools:#?}");
    let list = tools.json();
    let research = list
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "simulate-research-query")
        .unwrap_or_else(|| panic!("no task tool: {list:#}"));
    assert_eq!(
        research["execution"]["taskSupport"], "required",
        "{research:#}"
    );
    assert!(research.get("taskSupport").is_none());
    assert!(research["inputSchema"].is_object());
    let text = tr.run(&["tools", "--server", &everything.url], LIMIT);
    assert!(
        text.stdout
            .lines()
            .any(|l| l.starts_with("simulate-research-query") && l.contains("[task: required]")),
        "{}",
        text.stdout
    );
}

#[test]
fn answer_checks_the_response_and_the_key_before_sending() {
    let peer = support::fastmcp_http();
    let url = peer.url.as_str();
    let tr = Taskrail::new();
    let id = detach(&tr, url, "ask_name", "{}");
    let key = wait_input_keys(&tr, url, &id).remove(0);
    let answer = |json: &str, more: &[&str]| {
        let mut args = vec!["answer", "--server", url, &id, &key, "--json", json];
        args.extend_from_slice(more);
        tr.run(&args, LIMIT)
    };

    // FastMCP asks for a required `name`: a response without it is not sent
    let bad = answer(r#"{"nmae":"Ada"}"#, &[]);
    assert_eq!(bad.code, Some(2), "{bad:#?}");
    assert!(bad.stderr.contains("field name: required"), "{bad:#?}");
    let wrong_type = answer(r#"{"name":7}"#, &[]);
    assert_eq!(wrong_type.code, Some(2), "{wrong_type:#?}");
    assert!(
        wrong_type.stderr.contains("must be a string"),
        "{wrong_type:#?}"
    );
    let timeline = tr.run(&["timeline", &id, "--json"], LIMIT);
    assert!(
        !timeline.stdout.contains("input_sent"),
        "nothing was sent: {}",
        timeline.stdout
    );

    // a key the task does not ask for: refused, or sent with --force and said ignored
    // (FastMCP acknowledges an unknown key and ignores it)
    let other = |more: &[&str]| {
        let mut args = vec![
            "answer",
            "--server",
            url,
            &id,
            "nope",
            "--json",
            r#"{"name":"Ada"}"#,
        ];
        args.extend_from_slice(more);
        tr.run(&args, LIMIT)
    };
    let refused = other(&[]);
    assert_eq!(refused.code, Some(2), "{refused:#?}");
    assert!(
        refused.stderr.contains("does not ask for this key"),
        "{refused:#?}"
    );
    let forced = other(&["--force"]);
    assert_eq!(forced.code, Some(0), "{forced:#?}");
    let ignored = forced.json()["ignored"].as_str().unwrap_or("").to_string();
    assert!(ignored.contains("does not ask for this key"), "{forced:#?}");
    assert!(forced.stderr.contains("ignores it"), "{forced:#?}");

    let ok = answer(r#"{"name":"Ada"}"#, &[]);
    assert_eq!(ok.code, Some(0), "{ok:#?}");
    assert_eq!(ok.json()["ok"], true);
    assert!(ok.json().get("ignored").is_none(), "{ok:#?}");

    // the same key again: the ledger knows it was answered; nothing is sent, --force or not
    for more in [&[][..], &["--force"][..]] {
        let again = answer(r#"{"name":"Bob"}"#, more);
        assert_eq!(again.code, Some(2), "{again:#?}");
        assert!(again.stderr.contains("already answered"), "{again:#?}");
    }

    let watch = tr.run(&["watch", "--server", url, &id, "--json"], LIMIT);
    let last = watch.json_lines().pop().unwrap();
    assert_eq!(
        last["result"]["content"][0]["text"], "Hello, Ada!",
        "{last:#}"
    );
}

#[test]
fn an_unset_variable_disables_one_configured_server_only() {
    let server = demo();
    let tr = Taskrail::new();
    let config = tr.dir().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[[server]]\nname = \"secure\"\nurl = \"http://127.0.0.1:9/mcp\"\n\
             headers = {{ Authorization = \"Bearer ${{TASKRAIL_TEST_UNSET_TOKEN}}\" }}\n\n\
             [[server]]\nname = \"demo\"\nurl = \"{}\"\n",
            server.url
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let run = |args: &[&str]| {
        let mut cmd = tr.command(&[&["--config", config], args].concat());
        cmd.env_remove("TASKRAIL_TEST_UNSET_TOKEN")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = cmd.spawn().expect("spawn");
        let out = child.wait_with_output().expect("wait");
        Run {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };
    let ls = run(&["ls"]);
    assert_eq!(ls.code, Some(0), "{ls:#?}");
    let secure = run(&["tools", "--server", "secure"]);
    assert_eq!(secure.code, Some(2), "{secure:#?}");
    assert!(
        secure.stderr.contains(
            "server secure is disabled: line 4: header Authorization: environment variable \
             TASKRAIL_TEST_UNSET_TOKEN is not set"
        ),
        "{secure:#?}"
    );
    let demo = run(&["tools", "--server", "demo"]);
    assert_eq!(demo.code, Some(0), "{demo:#?}");
    assert!(demo.stdout.contains("render_report"), "{demo:#?}");
    let id = task_id(&run(&[
        "call",
        "--server",
        "demo",
        "lint",
        "--args",
        r#"{"repo":"r"}"#,
        "--detach",
    ]));
    let timeline = run(&["timeline", &id]);
    assert_eq!(timeline.code, Some(0), "{timeline:#?}");
}

#[test]
fn stderr_says_the_task_was_created_before_its_first_status() {
    let server = demo();
    let tr = Taskrail::new();
    let run = tr.run(
        &[
            "call",
            "--server",
            &server.url,
            "render_report",
            "--args",
            r#"{"pages":3}"#,
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    let lines: Vec<&str> = run.stderr.lines().collect();
    let created = lines
        .iter()
        .position(|l| l.contains("render_report: task") && l.ends_with("created"))
        .unwrap_or_else(|| panic!("no created line: {}", run.stderr));
    let first_status = lines
        .iter()
        .position(|l| l.contains(" working") || l.contains(" completed"))
        .unwrap_or_else(|| panic!("no status line: {}", run.stderr));
    assert!(created < first_status, "{}", run.stderr);
    assert_eq!(
        lines.iter().filter(|l| l.ends_with("created")).count(),
        1,
        "said once: {}",
        run.stderr
    );
}
