//! Push latency's bookkeeping: a server's push log read back and matched with what was drawn.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;
use serde_json::{Value, json};

use super::harness::Seen;
use super::ms;
use crate::engine::UpdateSource;

/// Reading a push log stops after this many lines (as the demo server's own log does)…
pub const MAX_LINES: usize = 200_000;
/// …or this many bytes; a line longer than [`MAX_LINE`] is skipped as malformed.
pub const MAX_BYTES: u64 = 64 << 20;
pub const MAX_LINE: usize = 4096;

/// How long the bench waits for an external server's tasks to end (it cannot know
/// how long the tool runs).
pub const EXTERNAL_LIMIT: Duration = Duration::from_secs(600);

/// A server in another process, and the push log it writes.
#[derive(Debug, Clone)]
pub struct External {
    pub url: String,
    pub push_log: PathBuf,
}

/// The arguments of every call: `--args` (a JSON object), or the demo's `{"pages": N}`.
pub fn arguments(args: Option<&str>, pages: u64) -> anyhow::Result<Value> {
    let Some(text) = args else {
        return Ok(json!({ "pages": pages }));
    };
    let value: Value = serde_json::from_str(text).context("--args is not JSON")?;
    anyhow::ensure!(value.is_object(), "--args must be a JSON object");
    Ok(value)
}

/// One push, on this process's clock.
#[derive(Debug, Clone)]
pub struct Pushed {
    pub task_id: String,
    pub status: String,
    pub status_message: Option<String>,
    pub sent: Instant,
}

/// A (SystemTime, Instant) pair taken together: turns another process's unix
/// timestamps into Instants of this one.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    wall: SystemTime,
    mono: Instant,
}

impl Clock {
    pub fn now() -> Clock {
        Clock {
            mono: Instant::now(),
            wall: SystemTime::now(),
        }
    }

    /// When the pair was taken.
    pub fn start(&self) -> Instant {
        self.mono
    }

    /// The Instant of `unix_us` microseconds since the epoch, if representable.
    pub fn instant_of(&self, unix_us: u64) -> Option<Instant> {
        let t = SystemTime::UNIX_EPOCH.checked_add(Duration::from_micros(unix_us))?;
        match t.duration_since(self.wall) {
            Ok(after) => self.mono.checked_add(after),
            Err(e) => self.mono.checked_sub(e.duration()),
        }
    }
}

/// A push log as read.
#[derive(Debug, Default)]
pub struct PushLog {
    /// Pushes stamped at or after the clock's start.
    pub pushes: Vec<Pushed>,
    pub lines: usize,
    pub malformed: usize,
    /// Well-formed lines stamped before the clock's start (an earlier run's).
    pub earlier: usize,
    /// Reading stopped at [`MAX_LINES`] or [`MAX_BYTES`].
    pub capped: bool,
}

/// `<unix µs> <task_id> <status> <status message>`; the message may hold spaces and may
/// be absent.
pub fn parse_line(line: &str) -> Option<(u64, &str, &str, Option<&str>)> {
    let mut parts = line.splitn(4, ' ');
    let us = parts.next()?.parse().ok()?;
    let task_id = parts.next().filter(|s| !s.is_empty())?;
    let status = parts.next().filter(|s| !s.is_empty())?;
    let message = parts.next().filter(|s| !s.is_empty());
    Some((us, task_id, status, message))
}

/// Read the push log at `path` (see [`read_push_log_from`]).
pub fn read_push_log(path: &Path, clock: &Clock) -> anyhow::Result<PushLog> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("opening the push log {}", path.display()))?;
    read_push_log_from(BufReader::new(file.take(MAX_BYTES)), clock)
        .with_context(|| format!("reading the push log {}", path.display()))
}

/// Parse a push log: at most [`MAX_LINES`] lines of at most [`MAX_LINE`] bytes;
/// malformed lines are counted and skipped.
pub fn read_push_log_from(mut r: impl BufRead, clock: &Clock) -> std::io::Result<PushLog> {
    let mut log = PushLog::default();
    let mut consumed: u64 = 0;
    let mut buf = Vec::with_capacity(128);
    loop {
        if log.lines >= MAX_LINES {
            log.capped = !r.fill_buf()?.is_empty();
            break;
        }
        buf.clear();
        let n = r
            .by_ref()
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        consumed += n as u64;
        log.lines += 1;
        if !buf.ends_with(b"\n") && buf.len() > MAX_LINE {
            consumed += skip_line(&mut r)?;
            log.malformed += 1;
            continue;
        }
        let line = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let parsed = std::str::from_utf8(line).ok().and_then(parse_line);
        let Some((us, task_id, status, message)) = parsed else {
            log.malformed += 1;
            continue;
        };
        let Some(sent) = clock.instant_of(us) else {
            log.malformed += 1;
            continue;
        };
        if sent < clock.start() {
            log.earlier += 1;
            continue;
        }
        log.pushes.push(Pushed {
            task_id: task_id.to_string(),
            status: status.to_string(),
            status_message: message.map(str::to_string),
            sent,
        });
    }
    log.capped |= consumed >= MAX_BYTES;
    Ok(log)
}

/// Consume the rest of an overlong line; returns the bytes consumed.
fn skip_line(r: &mut impl BufRead) -> std::io::Result<u64> {
    let mut skipped = 0u64;
    loop {
        let avail = r.fill_buf()?;
        if avail.is_empty() {
            return Ok(skipped);
        }
        let (n, done) = match avail.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (avail.len(), false),
        };
        r.consume(n);
        skipped += n as u64;
        if done {
            return Ok(skipped);
        }
    }
}

/// Milliseconds from each push to when the loop received, applied and drew it.
#[derive(Debug, Default)]
pub struct Latencies {
    pub received: Vec<f64>,
    pub applied: Vec<f64>,
    pub drawn: Vec<f64>,
    /// Matched pushes the loop received before they were stamped sent (clock error);
    /// counted as 0 ms.
    pub early: usize,
}

/// Match each distinct (task, status, message) pushed with the first `TaskUpdated` from
/// push carrying the same; later repeats of a state are not counted.
pub fn match_pushes(pushes: &[Pushed], updates: &[Seen]) -> Latencies {
    let mut first: HashMap<(&str, &str, Option<&str>), &Seen> = HashMap::new();
    for u in updates.iter().filter(|u| u.source == UpdateSource::Push) {
        first
            .entry((u.task_id.as_str(), &u.status, u.status_message.as_deref()))
            .or_insert(u);
    }
    let mut out = Latencies::default();
    let mut seen_keys = HashSet::new();
    for p in pushes {
        let key = (
            p.task_id.as_str(),
            p.status.as_str(),
            p.status_message.as_deref(),
        );
        if !seen_keys.insert(key) {
            continue;
        }
        let Some(u) = first.get(&key) else { continue };
        if u.received < p.sent {
            out.early += 1;
        }
        out.received
            .push(ms(u.received.saturating_duration_since(p.sent)));
        if let Some(a) = u.applied {
            out.applied.push(ms(a.saturating_duration_since(p.sent)));
        }
        if let Some(d) = u.drawn {
            out.drawn.push(ms(d.saturating_duration_since(p.sent)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A clock whose wall time is a whole number of microseconds, and that number.
    fn clock() -> (Clock, u64) {
        let now = 1_700_000_000_000_000;
        let clock = Clock {
            wall: SystemTime::UNIX_EPOCH + Duration::from_micros(now),
            mono: Instant::now() + Duration::from_secs(10),
        };
        (clock, now)
    }

    #[test]
    fn lines_parse_with_and_without_a_message() {
        assert_eq!(
            parse_line("1700000000000000 t-1 working step 3/20"),
            Some((1_700_000_000_000_000, "t-1", "working", Some("step 3/20")))
        );
        assert_eq!(
            parse_line("5 t input_required"),
            Some((5, "t", "input_required", None))
        );
        assert_eq!(parse_line("x t working m"), None);
        assert_eq!(parse_line("5 t"), None);
        assert_eq!(parse_line("5  working m"), None);
        assert_eq!(parse_line(""), None);
    }

    #[test]
    fn the_clock_pair_maps_unix_time_both_ways() {
        let (clock, now) = clock();
        assert_eq!(
            clock.instant_of(now + 1500),
            Some(clock.start() + Duration::from_micros(1500))
        );
        assert_eq!(
            clock.instant_of(now - 2000),
            clock.start().checked_sub(Duration::from_micros(2000))
        );
    }

    #[test]
    fn the_log_is_read_bounded_and_malformed_lines_counted() {
        let (clock, now) = clock();
        let long = "x".repeat(MAX_LINE * 3);
        let mut text = format!(
            "{} a working step 1/2\n\
             garbage\n\
             {} a working {long}\n\
             {} old working step 1/2\n\
             {} a working step 2/2\r\n",
            now + 10,
            now + 20,
            now - 5_000_000,
            now + 30,
        )
        .into_bytes();
        text.extend_from_slice(b"\xff\xfe not utf-8\n");
        text.extend_from_slice(format!("{} b input_required waiting", now + 40).as_bytes());
        let log = read_push_log_from(std::io::Cursor::new(text), &clock).unwrap();
        assert_eq!(log.lines, 7);
        assert_eq!(log.malformed, 3, "garbage, the overlong line, not UTF-8");
        assert_eq!(log.earlier, 1);
        assert!(!log.capped);
        let got: Vec<_> = log
            .pushes
            .iter()
            .map(|p| {
                (
                    p.task_id.as_str(),
                    p.status.as_str(),
                    p.status_message.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("a", "working", Some("step 1/2")),
                ("a", "working", Some("step 2/2")),
                ("b", "input_required", Some("waiting")),
            ]
        );
        assert_eq!(
            log.pushes[0].sent,
            clock.start() + Duration::from_micros(10)
        );
    }

    #[test]
    fn the_log_stops_at_the_line_cap() {
        let (clock, now) = clock();
        let text = format!("{now} t working m\n").repeat(MAX_LINES + 5);
        let log = read_push_log_from(std::io::Cursor::new(text), &clock).unwrap();
        assert_eq!(log.lines, MAX_LINES);
        assert_eq!(log.pushes.len(), MAX_LINES);
        assert!(log.capped);
    }

    #[test]
    fn arguments_default_to_pages_and_must_be_an_object() {
        assert_eq!(arguments(None, 7).unwrap(), json!({ "pages": 7 }));
        assert_eq!(
            arguments(Some(r#"{"steps":5}"#), 7).unwrap(),
            json!({ "steps": 5 })
        );
        assert!(arguments(Some("[1]"), 7).is_err());
        assert!(arguments(Some("{"), 7).is_err());
    }

    #[test]
    fn pushes_match_the_first_update_of_the_same_state() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let seen = |id: &str, msg: &str, source, received: u64, drawn: Option<u64>| Seen {
            task_id: crate::ids::TaskId::new(id),
            status: "working".into(),
            status_message: Some(msg.into()),
            source,
            received: at(received),
            applied: Some(at(received + 1)),
            drawn: drawn.map(at),
        };
        let pushed = |id: &str, msg: &str, sent: u64| Pushed {
            task_id: id.into(),
            status: "working".into(),
            status_message: Some(msg.into()),
            sent: at(sent),
        };
        let updates = [
            seen("a", "step 1/2", UpdateSource::Poll, 5, Some(6)),
            seen("a", "step 1/2", UpdateSource::Push, 12, Some(20)),
            seen("a", "step 1/2", UpdateSource::Push, 40, Some(41)),
            seen("b", "step 1/2", UpdateSource::Push, 8, None),
        ];
        let pushes = [
            pushed("a", "step 1/2", 10),
            pushed("a", "step 1/2", 30),
            pushed("b", "step 1/2", 9),
            pushed("c", "step 1/2", 1),
        ];
        let l = match_pushes(&pushes, &updates);
        assert_eq!(l.received, [2.0, 0.0]);
        assert_eq!(l.applied, [3.0, 0.0]);
        assert_eq!(l.drawn, [10.0]);
        assert_eq!(l.early, 1);
    }
}
