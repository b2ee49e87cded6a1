//! The end-to-end scenarios of `taskrail bench`: push latency, idle, start-up and memory,
//! politeness. Each prints its numbers, the method and the machine line.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::{Value, json};

use super::harness::{self, BenchProbe, Shared};
use super::push;
use super::{cpu_time, machine_line, ms, quantile, rss_kb};
use crate::demo::{DemoOptions, DemoServer};
use crate::engine::{
    EngineCommand, EngineConfig, EngineHandle, ServerId, ServerSpec, spawn_engine,
};
use crate::ledger::{self, LedgerHandle};
use crate::mcp::{ConnectOptions, Endpoint, Era, Task};

const SERVER: &str = "bench";

fn spec(url: &str) -> ServerSpec {
    ServerSpec {
        id: ServerId::named(SERVER),
        ..ServerSpec::new(
            Endpoint::Http {
                url: url.to_string(),
            },
            ConnectOptions::default(),
        )
    }
}

/// A scratch directory removed on drop.
pub(super) struct TempDir(PathBuf);

impl TempDir {
    pub(super) fn new() -> anyhow::Result<TempDir> {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("taskrail-bench-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(TempDir(dir))
    }

    pub(super) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_ledger() -> anyhow::Result<(TempDir, LedgerHandle)> {
    let dir = TempDir::new()?;
    let ledger = ledger::open(&dir.path().join("ledger.db"))?;
    Ok((dir, ledger))
}

fn snapshot(r: &Shared) -> std::sync::MutexGuard<'_, harness::Record> {
    r.lock().unwrap_or_else(|e| e.into_inner())
}

/// Wait until `done(record)` or `limit` passes; returns whether it came true.
async fn wait_for(r: &Shared, limit: Duration, done: impl Fn(&harness::Record) -> bool) -> bool {
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if done(&snapshot(r)) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

async fn call_many(engine: &EngineHandle, n: usize, tool: &str, arguments: Value) {
    for i in 0..n {
        engine
            .send(EngineCommand::CallTool {
                server: ServerId::named(SERVER),
                call_id: 10_000_000 + i as u64,
                tool: tool.into(),
                arguments: arguments.clone(),
                parent_task: None,
            })
            .await;
    }
}

fn line3(name: &str, mut v: Vec<f64>) {
    v.sort_by(f64::total_cmp);
    report!(
        "  {name:<22} p50 {:>7.2} ms   p99 {:>7.2} ms   max {:>7.2} ms   (n={})",
        quantile(&v, 0.5),
        quantile(&v, 0.99),
        v.last().copied().unwrap_or(f64::NAN),
        v.len()
    );
}

/// (4) notification sent by the server → `TaskUpdated` applied → frame drawn: on the
/// in-process demo server, or on an external one (`--url`) that logs its pushes.
pub async fn push_latency(
    tasks: usize,
    pages: u64,
    tool: &str,
    args: Option<&str>,
    external: Option<push::External>,
) -> anyhow::Result<()> {
    let arguments = push::arguments(args, pages)?;
    let clock = push::Clock::now();
    let (demo, url) = match &external {
        Some(e) => (None, e.url.clone()),
        None => {
            let server = DemoServer::start(DemoOptions::default()).await?;
            let url = server.url.clone();
            (Some(server), url)
        }
    };
    let (_dir, ledger) = temp_ledger()?;
    let (engine, events, join) =
        spawn_engine(vec![spec(&url)], Some(ledger), EngineConfig::default());
    let (probe, rec) = BenchProbe::new(0);
    let run = harness::start(
        vec![ServerId::named(SERVER)],
        engine.sender(),
        events,
        probe,
    );
    let cpu0 = cpu_time();
    let t0 = Instant::now();
    call_many(&engine, tasks, tool, arguments.clone()).await;
    let limit = match &external {
        Some(_) => push::EXTERNAL_LIMIT,
        None => Duration::from_millis(pages * 400) + Duration::from_secs(60),
    };
    // Tasks that never appear (a wrong tool, say) end the wait early.
    let created = wait_for(&rec, Duration::from_secs(60), |r| r.board_tasks >= tasks).await;
    let all_done = created && wait_for(&rec, limit, |r| r.board_terminal >= tasks).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let wall = t0.elapsed();
    let cpu = cpu_time() - cpu0;
    run.stop().await?;
    engine.send(EngineCommand::Shutdown).await;
    let _ = tokio::time::timeout(Duration::from_secs(3), join).await;
    let (who, log) = match (&external, demo) {
        (Some(e), _) => (e.url.as_str(), push::read_push_log(&e.push_log, &clock)?),
        (None, Some(server)) => {
            let (started, pushes) = server.push_log();
            server.shutdown().await;
            let pushes = pushes
                .into_iter()
                .map(|p| push::Pushed {
                    task_id: p.task_id,
                    status: p.status,
                    status_message: p.status_message,
                    sent: started + Duration::from_micros(p.at_us),
                })
                .collect();
            let log = push::PushLog {
                pushes,
                ..Default::default()
            };
            ("the in-process demo server", log)
        }
        (None, None) => anyhow::bail!("no server to measure"),
    };

    let r = snapshot(&rec);
    let l = push::match_pushes(&log.pushes, &r.updates);
    report!("push latency: {tasks} {tool} tasks with {arguments} on {who} (push on)");
    report!(
        "  notifications sent {}, distinct states matched {}, frames drawn {}, terminal on the board {}/{} ({})",
        log.pushes.len(),
        l.drawn.len(),
        r.frames,
        r.board_terminal,
        r.board_tasks,
        if all_done {
            "all"
        } else if created {
            "timed out"
        } else {
            "not all created within 60 s"
        }
    );
    if external.is_some() {
        report!(
            "  push log: {} lines, {} malformed skipped, {} stamped before this run{}",
            log.lines,
            log.malformed,
            log.earlier,
            if log.capped {
                format!(
                    ", stopped at the cap ({} lines or {} MiB)",
                    push::MAX_LINES,
                    push::MAX_BYTES >> 20
                )
            } else {
                String::new()
            }
        );
    }
    if l.early > 0 {
        report!(
            "  {} updates were received before their push was stamped (counted as 0 ms)",
            l.early
        );
    }
    line3("sent -> received", l.received);
    line3("sent -> state applied", l.applied);
    line3("sent -> frame drawn", l.drawn);
    report!(
        "  process CPU {:.2} s over {:.1} s wall ({})",
        cpu.as_secs_f64(),
        wall.as_secs_f64(),
        if external.is_some() {
            "dashboard + engine"
        } else {
            "dashboard + engine + demo server"
        }
    );
    if external.is_some() {
        report!("  method: the server stamps each push (unix microseconds, in its push log) just");
        report!(
            "  before handing it to its router, put on this process's clock by a (SystemTime, Instant) pair;"
        );
    } else {
        report!(
            "  method: the demo server stamps each notification as it hands it to the SSE stream;"
        );
    }
    report!(
        "  the loop's probe stamps the TaskUpdated(push) carrying the same task/status/message"
    );
    report!(
        "  when received, after update(), and after the next terminal.draw() on a 200x50 TestBackend."
    );
    report!("  {}", machine_line());
    Ok(())
}

/// (5) CPU and redraws while `tasks` live tasks wait for input and nothing changes.
pub async fn idle(tasks: usize, secs: Duration, url: Option<String>) -> anyhow::Result<()> {
    let demo = match &url {
        Some(_) => None,
        None => Some(DemoServer::start(DemoOptions::default()).await?),
    };
    let url = url.unwrap_or_else(|| demo.as_ref().map(|d| d.url.clone()).unwrap_or_default());
    let (_dir, ledger) = temp_ledger()?;
    let (engine, events, join) =
        spawn_engine(vec![spec(&url)], Some(ledger), EngineConfig::default());
    let (probe, rec) = BenchProbe::new(0);
    let run = harness::start(
        vec![ServerId::named(SERVER)],
        engine.sender(),
        events,
        probe,
    );
    call_many(&engine, tasks, "wait_for_input", json!({ "prompt": "ok?" })).await;
    let ready = wait_for(&rec, Duration::from_secs(180), |r| r.board_input >= tasks).await;
    anyhow::ensure!(ready, "the {tasks} tasks did not all reach input_required");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let requests = |d: &Option<DemoServer>| -> u64 {
        d.as_ref()
            .and_then(|d| d.stats()["methods"].as_object().cloned())
            .map(|m| m.values().filter_map(Value::as_u64).sum())
            .unwrap_or(0)
    };
    let (f0, m0) = {
        let r = snapshot(&rec);
        (r.frames, r.messages)
    };
    let (q0, cpu0, t0) = (requests(&demo), cpu_time(), Instant::now());
    tokio::time::sleep(secs).await;
    let (cpu, wall, q1) = (cpu_time() - cpu0, t0.elapsed(), requests(&demo));
    let (f1, m1, board) = {
        let r = snapshot(&rec);
        (r.frames, r.messages, r.board_tasks)
    };
    run.stop().await?;
    engine.send(EngineCommand::Shutdown).await;
    let _ = tokio::time::timeout(Duration::from_secs(3), join).await;
    if let Some(d) = demo {
        d.shutdown().await;
    }
    let who = if q1 > 0 || q0 > 0 {
        "dashboard + engine + in-process demo server"
    } else {
        "dashboard + engine"
    };
    report!(
        "idle: {board} live tasks waiting for input (push on), nothing changing, {:.0} s",
        wall.as_secs_f64()
    );
    report!(
        "  CPU {:.3} s = {:.2} % of one core ({who})",
        cpu.as_secs_f64(),
        100.0 * cpu.as_secs_f64() / wall.as_secs_f64()
    );
    report!(
        "  frames drawn {} ({:.2}/s), loop messages {}, server requests {}",
        f1 - f0,
        (f1 - f0) as f64 / wall.as_secs_f64(),
        m1 - m0,
        q1.saturating_sub(q0)
    );
    let (soonest, latest) = EngineConfig::default().safety_poll_range(board);
    report!(
        "  not in the window: safety polls, each pushed task every {:.0}-{:.0} s (about {:.1} tasks/get a second in the long run)",
        soonest.as_secs_f64(),
        latest.as_secs_f64(),
        2.0 * board as f64 / (soonest + latest).as_secs_f64()
    );
    report!(
        "  method: the process CPU clock (CLOCK_PROCESS_CPUTIME_ID) over the window, after the tasks settled;"
    );
    report!(
        "  frames counted by the loop's probe after each terminal.draw() on a 200x50 TestBackend."
    );
    report!("  {}", machine_line());
    Ok(())
}

/// Fill the ledger at `path` (a file or a `postgres://` URL) with `n` finished tasks of the
/// bench server.
pub async fn populate(path: &Path, n: usize) -> anyhow::Result<()> {
    let ledger = ledger::open(path)?;
    // Every write is called at once (queued in order) and awaited at the end.
    let mut writes = Vec::with_capacity(n);
    let tools = ["render_report", "import_rows", "deploy", "lint", "survey"];
    for i in 0..n {
        let status = match i % 10 {
            0 => "failed",
            1 => "cancelled",
            _ => "completed",
        };
        let task = Task::from_wire(&json!({
            "taskId": format!("{:08x}-{:04x}-4000-8000-{:012x}", i * 2654435761 % 0xffff_ffff, i % 0xffff, i),
            "status": status,
            "statusMessage": format!("step {}/{}", i % 97, 97),
            "createdAt": "2026-01-01T00:00:00Z",
            "lastUpdatedAt": "2026-01-01T00:01:00Z",
            "ttlMs": 600000,
            "pollIntervalMs": 1000,
            "result": { "content": [{ "type": "text", "text": format!("done {i}") }] },
        }))?;
        let tool = tools[i % tools.len()];
        writes.push(ledger.record_created(crate::ledger::NewTask {
            server: &ServerId::named(SERVER),
            era: Era::Modern,
            tool,
            arguments: &json!({ "n": i }),
            task: &task,
            parent_task: None,
            session: None,
            started_by: None,
        }));
    }
    ledger::all(writes).await
}

/// (7) First frame with `tasks` finished tasks resumed from the ledger, and memory then.
pub async fn startup(tasks: Option<usize>, db: Option<PathBuf>) -> anyhow::Result<()> {
    let dir = TempDir::new()?;
    let (path, tasks) = match db {
        Some(p) => {
            // A URL is not shown: it may hold a password.
            let shown = match ledger::Location::parse(p.as_os_str()).map_err(anyhow::Error::msg)? {
                ledger::Location::File(file) => {
                    anyhow::ensure!(file.is_file(), "no ledger at {}", file.display());
                    file.display().to_string()
                }
                ledger::Location::Postgres(_) => "the PostgreSQL ledger".to_string(),
            };
            let held = ledger::open(&p)?
                .count_server(&ServerId::named(SERVER))
                .await?;
            anyhow::ensure!(
                held > 0,
                "{shown} holds no task of the server {SERVER:?} (fill it with `taskrail bench populate`)"
            );
            if let Some(n) = tasks.filter(|n| *n != held) {
                anyhow::bail!("--tasks {n}, but {shown} holds {held} tasks");
            }
            (p, held)
        }
        None => {
            let tasks = tasks.unwrap_or(10_000);
            // Filled by a child process, so this one's peak RSS is the dashboard's alone.
            let path = dir.path().join("ledger.db");
            let status = std::process::Command::new(std::env::current_exe()?)
                .args([
                    "bench",
                    "populate",
                    "--tasks",
                    &tasks.to_string(),
                    "--ledger",
                ])
                .arg(&path)
                .env_remove(crate::paths::DB_ENV)
                .status()
                .context("running bench populate")?;
            anyhow::ensure!(status.success(), "bench populate failed");
            (path, tasks)
        }
    };
    let server = DemoServer::start(DemoOptions::default()).await?;
    let (rss_before, _) = rss_kb();
    let t0 = Instant::now();
    let ledger = ledger::open(&path)?;
    let config = EngineConfig {
        resume: true,
        history: true,
        ..Default::default()
    };
    let (engine, events, join) = spawn_engine(vec![spec(&server.url)], Some(ledger), config);
    let (mut probe, rec) = BenchProbe::new(tasks);
    let (full_tx, full_rx) = tokio::sync::oneshot::channel();
    probe.on_full = Some(full_tx);
    let run = harness::start(
        vec![ServerId::named(SERVER)],
        engine.sender(),
        events,
        probe,
    );
    let got = tokio::time::timeout(Duration::from_secs(300), full_rx).await;
    anyhow::ensure!(
        matches!(got, Ok(Ok(()))),
        "no frame showed all {tasks} tasks"
    );
    let (first, full, resumed, frames) = {
        let r = snapshot(&rec);
        (r.first_frame, r.full_frame, r.resumed, r.frames_to_full)
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (rss, peak) = rss_kb();
    run.stop().await?;
    engine.send(EngineCommand::Shutdown).await;
    let _ = tokio::time::timeout(Duration::from_secs(3), join).await;
    server.shutdown().await;
    let since = |t: Option<Instant>| t.map_or(f64::NAN, |t| ms(t - t0));
    let backend = match ledger::Location::parse(path.as_os_str()) {
        Ok(ledger::Location::Postgres(_)) => "PostgreSQL",
        _ => "SQLite",
    };
    report!(
        "start-up: {tasks} finished tasks in the {backend} ledger, dashboard resumes them (history on)"
    );
    report!(
        "  first frame {:.1} ms, first frame showing all {tasks} tasks {:.1} ms",
        since(first),
        since(full)
    );
    report!(
        "  the last of them reached the loop at {:.1} ms; {frames} frames were drawn up to that one",
        since(resumed)
    );
    report!(
        "  RSS {:.1} MB after loading (peak {:.1} MB; {:.1} MB before opening the ledger)",
        rss as f64 / 1024.0,
        peak as f64 / 1024.0,
        rss_before as f64 / 1024.0
    );
    report!("  method: clock from opening the ledger (as the CLI does) through engine resume and");
    report!("  the real loop to the first terminal.draw() whose state holds every task (200x50");
    report!("  TestBackend); RSS and peak from /proc/self/status 2 s later. Process start and");
    report!("  runtime set-up are not included; the ledger was filled by a separate process.");
    report!("  {}", machine_line());
    Ok(())
}

/// Per-task `tasks/get` times (ms since the server started) from the demo stats.
fn gets(stats: &Value) -> Vec<Vec<u64>> {
    stats["tasksGet"]
        .as_object()
        .map(|m| {
            m.values()
                .filter_map(|v| {
                    v.as_array()
                        .map(|a| a.iter().filter_map(Value::as_u64).collect())
                })
                .collect()
        })
        .unwrap_or_default()
}

async fn politeness_run(tasks: usize, secs: Duration, opts: DemoOptions) -> anyhow::Result<Value> {
    let server = DemoServer::start(opts).await?;
    let (_dir, ledger) = temp_ledger()?;
    let (engine, events, join) = spawn_engine(
        vec![spec(&server.url)],
        Some(ledger),
        EngineConfig::default(),
    );
    let (probe, rec) = BenchProbe::new(tasks);
    let run = harness::start(
        vec![ServerId::named(SERVER)],
        engine.sender(),
        events,
        probe,
    );
    // import_rows runs 60 s at time-scale 1: longer than the window.
    call_many(&engine, tasks, "import_rows", json!({ "count": 1000 })).await;
    wait_for(&rec, Duration::from_secs(60), |r| r.board_tasks >= tasks).await;
    tokio::time::sleep(secs).await;
    let stats = server.stats();
    run.stop().await?;
    engine.send(EngineCommand::Shutdown).await;
    let _ = tokio::time::timeout(Duration::from_secs(3), join).await;
    server.shutdown().await;
    Ok(stats)
}

/// (6) Requests per task per second against `pollIntervalMs`, with push off and on.
pub async fn politeness(tasks: usize, secs: Duration, poll_ms: u64) -> anyhow::Result<()> {
    let off = politeness_run(
        tasks,
        secs,
        DemoOptions {
            no_push: true,
            poll_interval: poll_ms,
            ..Default::default()
        },
    )
    .await?;
    let per_task = gets(&off);
    let mut gaps: Vec<f64> = Vec::new();
    let mut rates: Vec<f64> = Vec::new();
    for t in &per_task {
        for w in t.windows(2) {
            gaps.push((w[1] - w[0]) as f64);
        }
        if t.len() >= 2 {
            let span = (t[t.len() - 1] - t[0]) as f64 / 1000.0;
            rates.push((t.len() - 1) as f64 / span.max(0.001));
        }
    }
    gaps.sort_by(f64::total_cmp);
    rates.sort_by(f64::total_cmp);
    let below = gaps.iter().filter(|g| **g < poll_ms as f64).count();
    report!(
        "politeness: {tasks} import_rows tasks for {} s, pollIntervalMs {poll_ms}",
        secs.as_secs()
    );
    report!(
        "  push off: tasks/get {} for {} tasks",
        gaps.len() + per_task.len(),
        per_task.len()
    );
    report!(
        "    per-task rate max {:.3}/s, median {:.3}/s (ceiling 1/pollIntervalMs = {:.3}/s)",
        rates.last().copied().unwrap_or(f64::NAN),
        quantile(&rates, 0.5),
        1000.0 / poll_ms as f64
    );
    report!(
        "    gap between gets of one task: min {:.0} ms, median {:.0} ms; gaps under pollIntervalMs: {below}",
        gaps.first().copied().unwrap_or(f64::NAN),
        quantile(&gaps, 0.5)
    );
    let on = politeness_run(
        tasks,
        secs,
        DemoOptions {
            poll_interval: poll_ms,
            ..Default::default()
        },
    )
    .await?;
    let per_task = gets(&on);
    let total: usize = per_task.iter().map(Vec::len).sum();
    let max = per_task.iter().map(Vec::len).max().unwrap_or(0);
    report!(
        "  push on: tasks/get {total} for {} tasks (max {max} per task) in {} s, notifications {}, listens opened {}",
        per_task.len(),
        secs.as_secs(),
        on["notificationsSent"],
        on["listensOpened"]
    );
    report!("  method: the demo server's own per-task tasks/get timestamps (GET /stats, ms).");
    report!("  {}", machine_line());
    Ok(())
}
