//! The two roles of `bench feed-scale`, each a process of its own sharing one ledger: a
//! writer (tasks at a steady rate, each created, changed a few times and finished, every
//! write's commit time logged) and a watcher (the engine's own feed loop,
//! `engine::feed::run`, on `Ledger::changed` + `Ledger::changes` as the dashboard runs it,
//! every task state it hands on logged with the time it arrived).
//!
//! Logs name a write by writer, task number and version (carried in the status message),
//! never by task id. Times are wall-clock microseconds: the processes share one clock.

use std::io::{BufRead as _, Write as _};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use serde_json::json;
use tokio::sync::mpsc;

use crate::engine::{EngineConfig, ServerId};
use crate::ledger::{self, Changes, NewTask, Owner};
use crate::mcp::{Era, Task};

/// The server every scale task is recorded under.
pub const SERVER: &str = "scale";

/// The statuses a task goes through: created working, then each a write of its own.
pub const STEPS: [&str; 4] = ["working", "input_required", "working", "completed"];

/// A write, as the logs name it: writer, task number, version.
pub type Key = (u32, u32, u32);

/// Wall-clock microseconds since the Unix epoch.
pub fn now_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

/// The status message naming a write: `scale <writer> <task> <version>`.
fn label(writer: u32, task: u32, version: usize) -> String {
    format!("{SERVER} {writer} {task} {version}")
}

/// The (writer, task, version) of a status message [`label`] wrote.
pub fn parse_label(message: &str) -> Option<Key> {
    let mut it = message.strip_prefix(SERVER)?.split_whitespace();
    let key = (
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
    );
    it.next().is_none().then_some(key)
}

fn snapshot(run: &str, writer: u32, task: u32, version: usize) -> anyhow::Result<Task> {
    Ok(Task::from_wire(&json!({
        "taskId": format!("{SERVER}-{run}-{writer}-{task}"),
        "status": STEPS[version],
        "statusMessage": label(writer, task, version),
        "createdAt": "2026-01-01T00:00:00Z",
        // One second later per version: each write is newer than the one before.
        "lastUpdatedAt": format!("2026-01-01T00:00:{:02}Z", version + 1),
        "ttlMs": 600000,
        "pollIntervalMs": 1000,
    }))?)
}

/// One writer: every `1/rate` s a new task (for `secs`), and each live task one step on;
/// then the last tasks are finished. Each committed write is a line `writer task version
/// commit_us` in `out`.
pub async fn writer(
    url: &Path,
    id: u32,
    rate: f64,
    secs: Duration,
    out: &Path,
) -> anyhow::Result<()> {
    anyhow::ensure!(rate > 0.0, "--rate must be positive");
    let ledger = ledger::open(url)?;
    let run = format!("{:x}", now_us());
    let server = ServerId::named(SERVER);
    let mut log = std::io::BufWriter::new(std::fs::File::create(out)?);
    let mut tick = tokio::time::interval(Duration::from_secs_f64(1.0 / rate));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let end = Instant::now() + secs;
    // Live tasks and the version each last reached.
    let mut live: Vec<(u32, usize)> = Vec::new();
    let mut next = 0u32;
    let mut unchanged = 0u64;
    loop {
        tick.tick().await;
        for (task, version) in &mut live {
            *version += 1;
            let snap = snapshot(&run, id, *task, *version)?;
            let changed = ledger
                .record_snapshot(&server, &snap, ledger::EventKind::Poll, Some(1))
                .await?;
            if !changed {
                unchanged += 1;
                continue;
            }
            writeln!(log, "{id} {task} {version} {}", now_us())?;
        }
        live.retain(|(_, v)| *v + 1 < STEPS.len());
        if Instant::now() < end {
            let snap = snapshot(&run, id, next, 0)?;
            ledger
                .record_created(NewTask {
                    server: &server,
                    era: Era::Modern,
                    tool: "scale",
                    arguments: &json!({ "writer": id }),
                    task: &snap,
                    parent_task: None,
                    session: None,
                    started_by: None,
                })
                .await?;
            writeln!(log, "{id} {next} 0 {}", now_us())?;
            live.push((next, 0));
            next += 1;
        } else if live.is_empty() {
            break;
        }
    }
    log.flush()?;
    anyhow::ensure!(unchanged == 0, "{unchanged} writes changed nothing");
    Ok(())
}

/// One watcher: the engine's feed loop (checking every `interval`; the dashboard's is
/// `EngineConfig::feed_interval`) from the ledger's cursor now (`ready` on stdout
/// once it is taken), until stdin closes; each scale task state the feed hands on is a
/// line `writer task version seen_us` in `out`.
pub async fn watcher(url: &Path, interval: Duration, out: &Path) -> anyhow::Result<()> {
    let ledger = ledger::open(url)?;
    let cursor = ledger.feed_cursor().await?;
    let config = EngineConfig::default();
    let (tx, mut rx) = mpsc::channel::<Changes>(16);
    let feed = tokio::spawn(crate::engine::feed::run(
        ledger.clone(),
        Owner::new(),
        cursor,
        interval,
        config.lease_ttl,
        tx,
    ));
    let (stop_tx, mut stop) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        // Whatever stdin says, its end is the signal.
        for _ in std::io::stdin().lock().lines() {}
        let _ = stop_tx.send(());
    });
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "ready")?;
        stdout.flush()?;
    }
    let mut log = std::io::BufWriter::new(std::fs::File::create(out)?);
    let server = ServerId::named(SERVER);
    loop {
        tokio::select! {
            changes = rx.recv() => {
                let Some(changes) = changes else { break };
                let seen = now_us();
                for rec in changes.tasks.iter().filter(|r| r.server == server) {
                    let key = rec
                        .snapshot
                        .as_ref()
                        .and_then(|t| t.status_message.as_deref())
                        .and_then(parse_label);
                    if let Some((w, t, v)) = key {
                        writeln!(log, "{w} {t} {v} {seen}")?;
                    }
                }
            }
            _ = &mut stop => break,
        }
    }
    feed.abort();
    log.flush()?;
    Ok(())
}

/// Read a log of lines `a b c time` (as the roles write them).
pub fn read_log(path: &Path) -> anyhow::Result<Vec<(Key, i64)>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            anyhow::ensure!(f.len() == 4, "bad log line in {}", path.display());
            Ok(((f[0].parse()?, f[1].parse()?, f[2].parse()?), f[3].parse()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_and_nothing_else_parses() {
        assert_eq!(parse_label(&label(3, 17, 2)), Some((3, 17, 2)));
        assert_eq!(parse_label("scale 1 2"), None);
        assert_eq!(parse_label("scale 1 2 3 4"), None);
        assert_eq!(parse_label("page 1/100"), None);
    }
}
