//! `taskrail bench …`: end-to-end measurements of the real dashboard loop (`app::event_loop`
//! on ratatui's `TestBackend`), the real engine and ledger, against the embedded demo
//! server (in-process) or a `--server URL`. Each scenario prints its numbers and how they
//! were obtained. Every scenario uses its own temporary ledger: none reads the caller's
//! `--db`/`TASKRAIL_DB` (the global `--db` is not a bench option). The micro benchmarks (reducer, render) are criterion benches in `benches/`.

/// `println!` for the reports: a closed stdout (`… | head -3`) ends them quietly
/// instead of panicking.
macro_rules! report {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

mod activity;
mod feed_roles;
mod feed_scale;
pub mod fixtures;
mod floor;
mod harness;
mod proxy;
mod push;
mod scenarios;
#[cfg(test)]
mod table_check;

use std::io::Write as _;
use std::time::Duration;

use clap::{Args, Subcommand};

/// `taskrail bench` options.
#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub scenario: Scenario,
}

/// One measurement.
#[derive(Subcommand, Debug, Clone)]
pub enum Scenario {
    /// Push latency: notification sent → state applied → frame drawn (p50/p99).
    PushLatency {
        /// Concurrent tasks (`render_report` on the demo server unless `--tool`).
        #[arg(long, default_value_t = 100)]
        tasks: usize,
        /// Pages per report (one push per page, 400 ms apart): the default `--args`.
        #[arg(long, default_value_t = 20)]
        pages: u64,
        /// An external server instead of the in-process demo server (needs `--push-log`).
        #[arg(long, requires = "push_log")]
        url: Option<String>,
        /// The tool every task calls.
        #[arg(long, default_value = "render_report")]
        tool: String,
        /// The tool's arguments, a JSON object (default `{"pages": PAGES}`).
        #[arg(long, value_name = "JSON")]
        args: Option<String>,
        /// The external server's push log, one line per push:
        /// `<unix microseconds> <task_id> <status> <status message>`.
        #[arg(long, value_name = "PATH", requires = "url")]
        push_log: Option<std::path::PathBuf>,
    },
    /// Idle: CPU and frames drawn while N live tasks do not change.
    Idle {
        #[arg(long, default_value_t = 1000)]
        tasks: usize,
        #[arg(long, default_value_t = 30)]
        secs: u64,
        /// An external server (e.g. `taskrail serve-demo`) instead of the in-process one.
        #[arg(long)]
        url: Option<String>,
    },
    /// Start-up: first frame showing N finished tasks from the ledger, and the RSS then.
    Startup {
        /// How many (default 10,000; with `--ledger`, the ledger's count, which this must
        /// match when given).
        #[arg(long)]
        tasks: Option<usize>,
        /// A ledger already filled by `bench populate`, a SQLite file or a `postgres://`
        /// URL (default: a fresh temporary SQLite one; never the caller's
        /// `--db`/`TASKRAIL_DB`).
        #[arg(long, value_name = "PATH|URL")]
        ledger: Option<std::path::PathBuf>,
    },
    /// Fill a ledger (a SQLite file or a `postgres://` URL) with N finished tasks (used by
    /// `startup`).
    #[command(hide = true)]
    Populate {
        #[arg(long)]
        tasks: usize,
        #[arg(long, value_name = "PATH|URL")]
        ledger: std::path::PathBuf,
    },
    /// Many writer processes and a few watchers on one shared ledger: writes lost or
    /// duplicated per watcher (must be none) and commit → feed latency (p50/p95/p99).
    FeedScale {
        /// The shared ledger: a `postgres://` URL (or a SQLite file). Its tasks of the
        /// server `scale` stay there.
        #[arg(long, value_name = "URL|PATH")]
        ledger: std::path::PathBuf,
        /// Writer processes.
        #[arg(long, default_value_t = 20)]
        writers: u32,
        /// New tasks per second per writer.
        #[arg(long, default_value_t = 10.0)]
        rate: f64,
        /// How long the writers start tasks (their last ones are finished after).
        #[arg(long, default_value_t = 30)]
        secs: u64,
        /// Watcher processes.
        #[arg(long, default_value_t = 2)]
        watchers: u32,
        /// How often a watcher checks for other processes' writes (the dashboard: 250).
        #[arg(long, default_value_t = 250)]
        feed_interval_ms: u64,
    },
    /// The `:stats` view's ledger read (`Ledger::activity`) on a filled ledger, timed.
    Activity {
        /// The ledger: a SQLite file or a `postgres://` URL (`bench populate` fills one).
        #[arg(long, value_name = "PATH|URL")]
        ledger: std::path::PathBuf,
        /// The range read: the last this many hours.
        #[arg(long, default_value_t = 24)]
        hours: u32,
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Also time once the default read (list + one timeline per task).
        #[arg(long)]
        default_read: bool,
    },
    /// One writer of `feed-scale`.
    #[command(hide = true)]
    FeedWriter {
        #[arg(long, value_name = "URL|PATH")]
        ledger: std::path::PathBuf,
        #[arg(long)]
        id: u32,
        #[arg(long)]
        rate: f64,
        #[arg(long)]
        secs: u64,
        #[arg(long, value_name = "PATH")]
        out: std::path::PathBuf,
    },
    /// One watcher of `feed-scale` (stops when stdin closes).
    #[command(hide = true)]
    FeedWatcher {
        #[arg(long, value_name = "URL|PATH")]
        ledger: std::path::PathBuf,
        #[arg(long, default_value_t = 250)]
        feed_interval_ms: u64,
        #[arg(long, value_name = "PATH")]
        out: std::path::PathBuf,
    },
    /// Added latency of a plain `tools/call` through `taskrail proxy` (stdio and HTTP).
    ProxyLatency {
        #[arg(long, default_value_t = 2000)]
        calls: usize,
        /// A server of your own (with a `lookup` tool) instead of `taskrail serve-demo`.
        #[arg(long)]
        url: Option<String>,
    },
    /// CPU and RSS of one proxy holding N concurrent blocking calls.
    ProxyLoad {
        #[arg(long, default_value_t = 100)]
        tasks: usize,
        /// Pages per report (400 ms each): how long each call is held.
        #[arg(long, default_value_t = 50)]
        pages: u64,
        /// A server of your own (with `render_report`) instead of `taskrail serve-demo`.
        #[arg(long)]
        url: Option<String>,
    },
    /// The protocol client alone polling tasks as `watch` does (no engine, ledger or
    /// output): the floor of CPU per `tasks/get`.
    ClientFloor {
        /// The server the tasks are on.
        #[arg(long)]
        url: String,
        /// Stop after this many seconds even if tasks are still running.
        #[arg(long, default_value_t = 300)]
        secs: u64,
        /// Task ids to follow.
        #[arg(required = true, allow_hyphen_values = true)]
        ids: Vec<String>,
    },
    /// The HTTP client alone: `server/discover` requests one after another (below
    /// `client-floor`).
    HttpFloor {
        /// A server of your own (`taskrail serve-demo` prints one).
        #[arg(long)]
        url: String,
        #[arg(long, default_value_t = 2000)]
        requests: u64,
        /// Milliseconds between one reply and the next request (0: back to back).
        #[arg(long, default_value_t = 0)]
        gap_ms: u64,
    },
    /// Politeness: `tasks/get` per task per second against `pollIntervalMs`, push off and on.
    Politeness {
        #[arg(long, default_value_t = 100)]
        tasks: usize,
        #[arg(long, default_value_t = 20)]
        secs: u64,
        /// The demo server's `pollIntervalMs`.
        #[arg(long, default_value_t = 500)]
        poll_interval: u64,
    },
}

/// Run one scenario; returns the process exit code.
pub async fn run(args: BenchArgs) -> u8 {
    let result = match args.scenario {
        Scenario::PushLatency {
            tasks,
            pages,
            url,
            tool,
            args,
            push_log,
        } => {
            let external = url
                .zip(push_log)
                .map(|(url, push_log)| push::External { url, push_log });
            scenarios::push_latency(tasks, pages, &tool, args.as_deref(), external).await
        }
        Scenario::Idle { tasks, secs, url } => {
            scenarios::idle(tasks, Duration::from_secs(secs), url).await
        }
        Scenario::Startup { tasks, ledger } => scenarios::startup(tasks, ledger).await,
        Scenario::Populate { tasks, ledger } => scenarios::populate(&ledger, tasks).await,
        Scenario::FeedScale {
            ledger,
            writers,
            rate,
            secs,
            watchers,
            feed_interval_ms,
        } => {
            let o = feed_scale::FeedScale {
                ledger,
                writers,
                rate,
                secs,
                watchers,
                feed_interval: Duration::from_millis(feed_interval_ms),
            };
            tokio::task::spawn_blocking(move || {
                let dir = scenarios::TempDir::new()?;
                feed_scale::run(o, dir.path())
            })
            .await
            .map_err(anyhow::Error::from)
            .and_then(|r| r)
        }
        Scenario::FeedWriter {
            ledger,
            id,
            rate,
            secs,
            out,
        } => feed_roles::writer(&ledger, id, rate, Duration::from_secs(secs), &out).await,
        Scenario::Activity {
            ledger,
            hours,
            runs,
            default_read,
        } => activity::activity(&ledger, hours, runs, default_read).await,
        Scenario::FeedWatcher {
            ledger,
            feed_interval_ms,
            out,
        } => feed_roles::watcher(&ledger, Duration::from_millis(feed_interval_ms), &out).await,
        Scenario::Politeness {
            tasks,
            secs,
            poll_interval,
        } => scenarios::politeness(tasks, Duration::from_secs(secs), poll_interval).await,
        Scenario::ProxyLatency { calls, url } => proxy::latency(calls, url).await,
        Scenario::ProxyLoad { tasks, pages, url } => proxy::load(tasks, pages, url).await,
        Scenario::ClientFloor { url, secs, ids } => {
            let limit = Duration::from_secs(secs);
            single_threaded(floor::client_floor(url, ids, limit)).await
        }
        Scenario::HttpFloor {
            url,
            requests,
            gap_ms,
        } => {
            single_threaded(floor::http_floor(
                url,
                requests,
                Duration::from_millis(gap_ms),
            ))
            .await
        }
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            let _ = writeln!(std::io::stderr().lock(), "bench failed: {e:#}");
            1
        }
    }
}

/// Run `work` on a runtime of its own, single-threaded like a CLI command's.
async fn single_threaded<F>(work: F) -> anyhow::Result<()>
where
    F: std::future::Future<Output = anyhow::Result<()>> + Send + 'static,
{
    tokio::task::spawn_blocking(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(work)
    })
    .await
    .map_err(anyhow::Error::from)
    .and_then(|r| r)
}

/// A duration in milliseconds, for the reports.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The `q`-th quantile (0..=1) of sorted values (nearest rank).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Resident set size now and at its peak (kB), from `/proc/self/status`.
pub fn rss_kb() -> (u64, u64) {
    rss_of("self")
}

/// [`rss_kb`] of another process.
pub fn rss_kb_of(pid: u32) -> (u64, u64) {
    rss_of(&pid.to_string())
}

fn rss_of(pid: &str) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// User + system CPU time of this process so far, from its CPU clock
/// (`CLOCK_PROCESS_CPUTIME_ID`: to the nanosecond, threads that ended included).
pub fn cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(
        u64::try_from(t.tv_sec).unwrap_or(0),
        u32::try_from(t.tv_nsec).unwrap_or(0),
    )
}

/// User + system CPU time of another process so far, from `/proc/PID/stat` (10 ms ticks).
pub fn cpu_time_of(pid: u32) -> Duration {
    cpu_of(&pid.to_string())
}

fn cpu_of(pid: &str) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which is in parentheses and may contain spaces).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of the whole line: 11 and 12 after the name.
    let total = ticks(11) + ticks(12);
    let hz = 100; // USER_HZ on Linux
    Duration::from_millis(total * 1000 / hz)
}

/// One line about the machine: cores, memory and load.
pub fn machine_line() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    let mem_kb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .unwrap_or(0);
    format!(
        "machine: {cores} cores, {:.1} GiB, load average {}",
        mem_kb as f64 / 1024.0 / 1024.0,
        load.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), 50.0);
        assert_eq!(quantile(&v, 0.99), 99.0);
        assert_eq!(quantile(&v, 1.0), 100.0);
        assert_eq!(quantile(&[3.0], 0.99), 3.0);
        assert!(quantile(&[], 0.5).is_nan());
    }

    #[test]
    fn proc_readers_see_this_process() {
        let (rss, peak) = rss_kb();
        assert!(rss > 0 && peak >= rss);
        assert!(machine_line().starts_with("machine:"));
    }
}
