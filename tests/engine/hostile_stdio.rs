//! stdio against a hostile child (`support/hostile_stdio.py`): one message over the bound
//! is skipped without ending the session, stderr without a newline is bounded, and a
//! non-UTF-8 byte on stderr does not stop the reader (so the child never dies of EPIPE).
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::Duration;
use support::taskrail::Taskrail;

const LIMIT: Duration = Duration::from_secs(90);

fn server(tr: &Taskrail, flags: &str) -> (String, std::path::PathBuf) {
    let starts = tr.dir().join("starts.txt");
    let script = support::repo_dir().join("tests/support/hostile_stdio.py");
    let spec = format!(
        "stdio:python3 {} --starts {} {flags}",
        script.display(),
        starts.display()
    );
    (spec, starts)
}

fn starts(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .count()
}

#[test]
fn one_oversized_message_does_not_end_the_session() {
    let tr = Taskrail::new();
    let (spec, started) = server(&tr, "--oversize-first-get");
    let run = tr.run(&["--timeout", "10", "call", "-s", &spec, "work"], LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert_eq!(starts(&started), 1, "the child was started again: {run:#?}");
    for bad in ["unknown to", "non-durable", "expired"] {
        assert!(!run.stderr.contains(bad), "{bad:?} in:\n{}", run.stderr);
    }
    let log = std::fs::read_to_string(tr.log()).unwrap_or_default();
    assert!(
        log.contains("longer than"),
        "the skipped message is not logged"
    );
}

#[test]
fn stderr_without_newlines_is_bounded() {
    let tr = Taskrail::new();
    let (spec, _) = server(&tr, &format!("--stderr-flood {}", 512 << 20));
    let mut call = tr.spawn(&["call", "-s", &spec, "work"]);
    let pid = call.child.id();
    let deadline = std::time::Instant::now() + LIMIT;
    let mut peak = 0;
    while call.child.try_wait().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "call did not finish");
        peak = peak.max(support::hostile::peak_rss_kb(pid).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(50));
    }
    let run = call.finish(LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        peak < 150 * 1024,
        "peak RSS {peak} kB for 512 MiB of stderr"
    );
}

#[test]
fn a_non_utf8_byte_on_stderr_does_not_stop_the_reader() {
    let tr = Taskrail::new();
    let (spec, started) = server(&tr, "--stderr-binary");
    let run = tr.run(&["call", "-s", &spec, "work"], LIMIT);
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert_eq!(starts(&started), 1, "the child died and was restarted");
    let log = std::fs::read_to_string(tr.log()).unwrap_or_default();
    assert!(log.contains("request"), "later stderr lines are not logged");
}
