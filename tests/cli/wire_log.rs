//! `--wire FILE` against the embedded demo server: every message of a call, its listen
//! stream and a later watch, one record per line with the documented fields; task ids
//! masked everywhere; no header and no bearer token; the file private; rotation to
//! `FILE.1` at the bound (keeping one old file); a full disk turns the log off and the
//! command still succeeds.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;
use support::taskrail::{DemoProcess, Taskrail, task_id};
use support::wire_log::{has, masked, records};

const LIMIT: Duration = Duration::from_secs(60);
const TOKEN: &str = "wire-b3arer-t0ken-5e1f";

#[test]
fn a_call_and_its_watch_are_logged_whole_with_task_ids_masked_and_no_token() {
    let demo = DemoProcess::start(&["--time-scale", "0.05"]);
    let tr = Taskrail::new();
    let auth = format!("Authorization: Bearer {TOKEN}");
    let (first, second) = (tr.dir().join("call.ndjson"), tr.dir().join("watch.ndjson"));
    let run = tr.run(
        &[
            "-H",
            &auth,
            "--wire",
            first.to_str().unwrap(),
            "call",
            "-s",
            &demo.url,
            "--detach",
            "import_rows",
            "--args",
            r#"{"count":100}"#,
        ],
        LIMIT,
    );
    let id = task_id(&run);
    assert!(id.len() >= 8, "{id}");
    let run = tr.run(
        &[
            "-H",
            &auth,
            "--wire",
            second.to_str().unwrap(),
            "watch",
            "-s",
            &demo.url,
            &id,
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{run:#?}");

    let call = records(&first);
    assert!(has(&call, "send", "http", "server/discover"), "{call:#?}");
    assert!(has(&call, "send", "http", "tools/call"), "{call:#?}");
    let created = call
        .iter()
        .find(|r| r["direction"] == "recv" && r["message"]["result"]["taskId"].is_string())
        .expect("the reply that created the task");
    assert_eq!(created["message"]["result"]["taskId"], masked(&id));
    assert!(
        call.iter().all(|r| r["server"] == demo.url.as_str()),
        "{call:#?}"
    );

    let watch = records(&second);
    assert!(
        has(&watch, "send", "http", "subscriptions/listen"),
        "{watch:#?}"
    );
    assert!(
        has(&watch, "recv", "sse", "notifications/tasks"),
        "{watch:#?}"
    );
    let last = watch
        .iter()
        .rev()
        .find(|r| r["message"]["method"] == "notifications/tasks")
        .unwrap();
    assert_eq!(last["message"]["params"]["status"], "completed", "{last}");
    assert_eq!(last["message"]["params"]["taskId"], masked(&id));

    for path in [&first, &second] {
        let bytes = std::fs::read_to_string(path).unwrap();
        assert!(
            !bytes.contains(&id),
            "the full task id is in {}",
            path.display()
        );
        assert!(
            !bytes.contains(&id[4..]),
            "the id's tail is in {}",
            path.display()
        );
        assert!(
            !bytes.contains(TOKEN),
            "the bearer token is in {}",
            path.display()
        );
        assert!(
            !bytes.to_ascii_lowercase().contains("authorization"),
            "a header is in {}",
            path.display()
        );
        let mode = std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", path.display());
    }
}

#[test]
fn the_file_rotates_at_its_bound_keeping_one_old_file() {
    let demo = DemoProcess::start(&["--time-scale", "0.05"]);
    let tr = Taskrail::new().with_env("TASKRAIL_WIRE_MAX_BYTES", "3000");
    let file = tr.dir().join("wire.ndjson");
    for _ in 0..2 {
        let run = tr.run(
            &[
                "--wire",
                file.to_str().unwrap(),
                "call",
                "-s",
                &demo.url,
                "render_report",
                "--args",
                r#"{"pages":3}"#,
            ],
            LIMIT,
        );
        assert_eq!(run.code, Some(0), "{run:#?}");
    }
    let old = tr.dir().join("wire.ndjson.1");
    assert!(old.exists(), "rotated to FILE.1");
    assert!(
        !tr.dir().join("wire.ndjson.2").exists(),
        "one old file only"
    );
    for path in [&file, &old] {
        let size = std::fs::metadata(path).unwrap().len();
        let lines = records(path).len();
        assert!(lines >= 1, "{}", path.display());
        // Over the bound only when a single record is larger than it.
        assert!(
            size <= 3000 || lines == 1,
            "{} has {size} bytes",
            path.display()
        );
    }
}

#[test]
fn a_full_disk_turns_the_log_off_and_the_command_goes_on() {
    let demo = DemoProcess::start(&["--time-scale", "0.05"]);
    let tr = Taskrail::new();
    let run = tr.run(
        &[
            "--wire",
            "/dev/full",
            "call",
            "-s",
            &demo.url,
            "render_report",
            "--args",
            r#"{"pages":2}"#,
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    let log = std::fs::read_to_string(tr.log()).unwrap();
    let off: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("the wire log is off"))
        .collect();
    assert_eq!(off.len(), 1, "one line says the log is off:\n{log}");
    assert!(off[0].contains("/dev/full"), "{}", off[0]);
}

#[test]
fn an_unwritable_wire_file_is_a_usage_error_before_anything_is_sent() {
    let tr = Taskrail::new();
    let run = tr.run(
        &[
            "--wire",
            "/nonexistent-dir/wire.ndjson",
            "tools",
            "-s",
            "http://127.0.0.1:9/mcp",
        ],
        LIMIT,
    );
    assert_eq!(
        run.code,
        Some(taskrail::cli::exit::USAGE.into()),
        "{run:#?}"
    );
    assert!(run.stderr.contains("--wire"), "{}", run.stderr);
}
