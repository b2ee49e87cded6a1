//! Two followers of one ledger never poll one task twice: the process holding a task's lease
//! polls it, the others mirror what it records, and take the lease over when it dies
//! (`kill -9`: its pid is gone) or stops renewing it (`kill -STOP`: the lease expires); a
//! process that wakes up to find its lease taken stops polling. Counted at the demo server
//! (`GET /stats`: the time of every `tasks/get`), push off so every update is a poll.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::time::{Duration, Instant};

use support::taskrail::{DemoProcess, Running, Taskrail, signal, task_id};
use support::tmux::Tmux;

const LIMIT: Duration = Duration::from_secs(90);
/// The demo server's `pollIntervalMs`: one follower never polls a task faster.
const POLL_MS: u64 = 500;
/// A measuring window.
const WINDOW: Duration = Duration::from_secs(6);

struct Server {
    demo: DemoProcess,
}

impl Server {
    fn start() -> Server {
        // Slow tasks (import_rows takes 100 x 0.6 s x 3), polled every 500 ms, no push.
        let demo = DemoProcess::start(&[
            "--no-push",
            "--poll-interval",
            &POLL_MS.to_string(),
            "--time-scale",
            "3",
        ]);
        Server { demo }
    }

    /// The server's clock (ms since it started) and the `tasks/get` times of `id`.
    fn polls(&self, id: &str) -> Vec<u64> {
        let stats = self.demo.stats();
        stats["tasksGet"][id]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_u64()).collect())
            .unwrap_or_default()
    }

    /// The `tasks/get` times of `id` during the next `WINDOW`.
    fn window(&self, id: &str) -> Vec<u64> {
        let start = self.polls(id).last().copied().unwrap_or(0);
        std::thread::sleep(WINDOW);
        self.polls(id).into_iter().filter(|t| *t > start).collect()
    }

    /// Wait (bounded) until `id` gets `n` more polls; returns how long that took.
    fn more_polls(&self, id: &str, n: usize, what: &str) -> Duration {
        let t0 = Instant::now();
        let base = self.polls(id).len();
        loop {
            if self.polls(id).len() >= base + n {
                return t0.elapsed();
            }
            assert!(t0.elapsed() < LIMIT, "no polls for {what} in {LIMIT:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Gaps between successive polls shorter than half the interval: two processes polling.
fn short_gaps(times: &[u64]) -> usize {
    times
        .windows(2)
        .filter(|w| w[1] - w[0] < POLL_MS / 2)
        .count()
}

/// At most the polls one follower may make in `WINDOW`, plus one resync.
fn one_follower(times: &[u64], what: &str) {
    let ceiling = (WINDOW.as_millis() as u64 / POLL_MS + 1 + 1) as usize;
    assert!(
        times.len() <= ceiling,
        "{what}: {} polls in {WINDOW:?} (one follower polls at most {ceiling}): {times:?}",
        times.len()
    );
    assert!(
        short_gaps(times) <= 1,
        "{what}: polls closer than {} ms: {times:?}",
        POLL_MS / 2
    );
    assert!(
        times.len() >= 2,
        "{what}: somebody follows the task: {times:?}"
    );
}

fn start_tasks(tr: &Taskrail, url: &str) -> Vec<String> {
    (0..2)
        .map(|_| {
            task_id(&tr.run(
                &[
                    "call",
                    "--server",
                    url,
                    "import_rows",
                    "--args",
                    r#"{"count":100000}"#,
                    "--detach",
                ],
                LIMIT,
            ))
        })
        .collect()
}

fn watch(tr: &Taskrail, url: &str, ids: &[String]) -> Running {
    let mut args = vec!["--no-push", "watch", "--server", url];
    args.extend(ids.iter().map(String::as_str));
    let mut w = tr.spawn(&args);
    w.wait_stderr("connected", LIMIT);
    w
}

#[test]
fn a_dashboard_beside_a_watch_adds_no_polls_and_takes_over_when_it_dies() {
    let server = Server::start();
    let url = server.demo.url.clone();
    let tr = Taskrail::new();
    let ids = start_tasks(&tr, &url);
    let watcher = watch(&tr, &url, &ids);
    server.more_polls(&ids[0], 2, "the watch");
    for id in &ids {
        one_follower(&server.window(id), "the watch alone");
    }

    let tmux = Tmux::start("leases");
    tmux.start_dashboard(&tr, &format!("--no-push --server {url}"));
    tmux.wait("both rows", |s| ids.iter().all(|id| s.contains(&id[..8])));
    for id in &ids {
        one_follower(&server.window(id), "the watch and the dashboard");
    }

    // The polling process dies: the dashboard takes its leases over (the pid is gone).
    watcher.kill9();
    for id in &ids {
        server.more_polls(id, 3, "the dashboard after the watch died");
    }
    for id in &ids {
        one_follower(&server.window(id), "the dashboard alone");
    }
    tmux.quit();
}

#[test]
fn a_stopped_follower_loses_its_leases_and_does_not_poll_again_when_it_wakes() {
    let server = Server::start();
    let url = server.demo.url.clone();
    let tr = Taskrail::new();
    let ids = start_tasks(&tr, &url);
    let first = watch(&tr, &url, &ids);
    server.more_polls(&ids[0], 2, "the first watch");
    let second = watch(&tr, &url, &ids);
    for id in &ids {
        one_follower(&server.window(id), "two watches");
    }

    // Stopped, the first watch cannot renew its leases: they expire and the second takes
    // the tasks over.
    signal(first.pid(), "STOP");
    for id in &ids {
        server.more_polls(id, 3, "the second watch after the first stopped");
    }
    signal(first.pid(), "CONT");
    // Awake again, the first watch finds its leases taken and goes back to mirroring
    // (within one renewal period, ttl / 3).
    std::thread::sleep(Duration::from_secs(5));
    for id in &ids {
        one_follower(&server.window(id), "after the stopped watch woke up");
    }
    first.kill9();
    second.kill9();
}
