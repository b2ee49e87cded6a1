//! `taskrail bench feed-scale`: many writer processes and a few watcher processes on one
//! shared ledger (`feed_roles.rs`), then every write each watcher should have heard checked
//! against what it heard: lost, duplicated, and the latency from the writer's commit to
//! the watcher's feed handing the row on.
//!
//! What counts: the feed carries task rows, so a row read once after two quick writes
//! hands on only the later state. A write is *lost* to a watcher when neither it nor any
//! later write of the same task reached it; *superseded* when a later one did (counted,
//! not an error); *duplicated* when a write reached it again, or an older state after a
//! newer one. Fails when any watcher lost or duplicated a write.

use std::collections::HashMap;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::feed_roles::{Key, STEPS, read_log};
use super::{machine_line, quantile};

/// The scenario's options.
#[derive(Debug, Clone)]
pub struct FeedScale {
    pub ledger: PathBuf,
    pub writers: u32,
    pub rate: f64,
    pub secs: u64,
    pub watchers: u32,
    /// How often the watchers' ledgers check for other processes' writes.
    pub feed_interval: Duration,
}

/// What one watcher heard, judged.
#[derive(Debug, Default)]
pub struct Heard {
    pub seen: usize,
    pub superseded: usize,
    pub lost: usize,
    pub duplicated: usize,
    pub unknown: usize,
    /// Commit → handed on, ms, sorted.
    pub latency_ms: Vec<f64>,
}

/// Judge one watcher's log against every write committed.
pub fn judge(written: &HashMap<Key, i64>, heard: &[(Key, i64)]) -> Heard {
    let mut out = Heard::default();
    // Per task, the newest version heard so far, and every version heard.
    let mut newest: HashMap<(u32, u32), u32> = HashMap::new();
    let mut first: HashMap<Key, i64> = HashMap::new();
    for &(key, at) in heard {
        let Some(committed) = written.get(&key) else {
            out.unknown += 1;
            continue;
        };
        let task = (key.0, key.1);
        let back = newest.get(&task).is_some_and(|&v| v >= key.2);
        if first.contains_key(&key) || back {
            out.duplicated += 1;
            continue;
        }
        first.insert(key, at);
        newest.insert(task, key.2);
        out.latency_ms.push((at - committed) as f64 / 1000.0);
    }
    for key in written.keys() {
        if first.contains_key(key) {
            out.seen += 1;
        } else if newest.get(&(key.0, key.1)).is_some_and(|&v| v > key.2) {
            out.superseded += 1;
        } else {
            out.lost += 1;
        }
    }
    out.latency_ms.sort_by(f64::total_cmp);
    out
}

fn spawn(args: &[String], stdin: Stdio, stdout: Stdio) -> anyhow::Result<Child> {
    Command::new(std::env::current_exe()?)
        .args(args)
        .env_remove(crate::paths::DB_ENV)
        .stdin(stdin)
        .stdout(stdout)
        .spawn()
        .context("starting a bench process")
}

/// Kills what is left of the children on an early return.
struct Children(Vec<Child>);

impl Drop for Children {
    fn drop(&mut self) {
        for c in &mut self.0 {
            if matches!(c.try_wait(), Ok(None)) {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

/// Run the scenario and print its figures.
pub fn run(o: FeedScale, dir: &Path) -> anyhow::Result<()> {
    let ledger = o
        .ledger
        .to_str()
        .context("the ledger location is not UTF-8")?;
    let mut watchers = Children(Vec::new());
    let mut watch_logs = Vec::new();
    for i in 0..o.watchers {
        let log = dir.join(format!("watcher-{i}.log"));
        let args: Vec<String> = vec![
            "bench".into(),
            "feed-watcher".into(),
            "--ledger".into(),
            ledger.into(),
            "--feed-interval-ms".into(),
            o.feed_interval.as_millis().to_string(),
            "--out".into(),
            log.display().to_string(),
        ];
        let mut child = spawn(&args, Stdio::piped(), Stdio::piped())?;
        let stdout = child.stdout.take().context("watcher stdout")?;
        let mut line = String::new();
        std::io::BufReader::new(stdout).read_line(&mut line)?;
        anyhow::ensure!(line.trim() == "ready", "watcher {i} did not start");
        watchers.0.push(child);
        watch_logs.push(log);
    }
    let t0 = Instant::now();
    let mut writers = Children(Vec::new());
    let mut write_logs = Vec::new();
    for w in 0..o.writers {
        let log = dir.join(format!("writer-{w}.log"));
        let args: Vec<String> = vec![
            "bench".into(),
            "feed-writer".into(),
            "--ledger".into(),
            ledger.into(),
            "--id".into(),
            w.to_string(),
            "--rate".into(),
            o.rate.to_string(),
            "--secs".into(),
            o.secs.to_string(),
            "--out".into(),
            log.display().to_string(),
        ];
        writers
            .0
            .push(spawn(&args, Stdio::null(), Stdio::inherit())?);
        write_logs.push(log);
    }
    for (w, child) in writers.0.iter_mut().enumerate() {
        let status = child.wait()?;
        anyhow::ensure!(status.success(), "writer {w} failed ({status})");
    }
    let wrote_for = t0.elapsed();
    // Long enough for the slowest watcher's next feed read (and its slow poll).
    std::thread::sleep(Duration::from_secs(3));
    for (i, child) in watchers.0.iter_mut().enumerate() {
        drop(child.stdin.take());
        let status = child.wait()?;
        anyhow::ensure!(status.success(), "watcher {i} failed ({status})");
    }

    let mut written: HashMap<Key, i64> = HashMap::new();
    for log in &write_logs {
        written.extend(read_log(log)?);
    }
    let tasks = written.keys().filter(|k| k.2 == 0).count();
    report!(
        "feed scale: {} writer processes ({} tasks/s each, {} s; each task created, then {} \
         status changes, the last terminal), {} watcher processes on {}",
        o.writers,
        o.rate,
        o.secs,
        STEPS.len() - 1,
        o.watchers,
        match crate::ledger::Location::parse(o.ledger.as_os_str()) {
            Ok(crate::ledger::Location::Postgres(_)) => "a PostgreSQL ledger",
            _ => "a SQLite ledger",
        }
    );
    report!(
        "  written: {tasks} tasks ({:.1} tasks/s per writer achieved), {} writes; the writers \
         were done after {:.1} s",
        tasks as f64 / f64::from(o.writers.max(1)) / (o.secs.max(1) as f64),
        written.len(),
        wrote_for.as_secs_f64()
    );
    let mut failed = false;
    for (i, log) in watch_logs.iter().enumerate() {
        let h = judge(&written, &read_log(log)?);
        failed |= h.lost > 0 || h.duplicated > 0 || h.unknown > 0;
        let q = |p| quantile(&h.latency_ms, p);
        report!(
            "  watcher {i}: lost {}, duplicated {}; seen {} of {} writes ({} superseded by a \
             later write of the same task before the feed read it, {} unknown)",
            h.lost,
            h.duplicated,
            h.seen,
            written.len(),
            h.superseded,
            h.unknown
        );
        report!(
            "    commit → feed latency p50 {:.1} ms, p95 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
            q(0.5),
            q(0.95),
            q(0.99),
            q(1.0)
        );
    }
    report!("  method: each writer and watcher is a process of its own (`bench feed-writer`,");
    report!("  `bench feed-watcher`); a writer awaits each write and logs the time it returned");
    report!(
        "  (committed); a watcher runs the engine's feed loop (Ledger::changed every {} ms",
        o.feed_interval.as_millis()
    );
    report!("  (the dashboard's: 250), then Ledger::changes from its cursor) and logs when each");
    report!("  row reached it. Wall clock, one machine.");
    report!("  {}", machine_line());
    anyhow::ensure!(!failed, "a watcher lost or duplicated writes");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_superseded_and_duplicated_are_told_apart() {
        let written: HashMap<Key, i64> = [
            ((0, 0, 0), 1_000),
            ((0, 0, 1), 2_000),
            ((0, 0, 2), 3_000),
            ((0, 1, 0), 1_000),
            ((0, 2, 0), 1_000),
        ]
        .into_iter()
        .collect();
        let heard = [
            ((0, 0, 0), 11_000),
            ((0, 0, 2), 13_000), // (0,0,1) superseded
            ((0, 0, 2), 14_000), // duplicated
            ((0, 0, 1), 15_000), // older after newer: duplicated
            ((0, 1, 0), 2_000),
            ((9, 9, 9), 2_000), // unknown
        ];
        let h = judge(&written, &heard);
        assert_eq!(
            (h.seen, h.superseded, h.lost, h.duplicated, h.unknown),
            (3, 1, 1, 2, 1)
        );
        assert_eq!(h.latency_ms, [1.0, 10.0, 10.0]);
    }
}
