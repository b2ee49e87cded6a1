//! Resource bounds with 100,000 tracked tasks: the reducer takes them all, the board
//! renders only what fits, and memory per task stays small.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod support;

use support::screen::now;
use taskrail::engine::{EngineEvent, ServerId, TaskId, UpdateSource};
use taskrail::mcp::{Task, TaskStatus};
use taskrail::state::{Keymap, Msg, State, update};

const TASKS: usize = 100_000;

fn rss_kib() -> u64 {
    support::hosts::rss_kb(std::process::id()).unwrap_or(0)
}

#[test]
fn a_hundred_thousand_tasks_fit_and_render() {
    let server = ServerId::named("many");
    let before = rss_kib();
    let mut s = State::new(vec![server.clone()], false, Keymap::default_keymap());
    for i in 0..TASKS {
        let task = Task {
            task_id: TaskId::new(&format!("task-{i:08}-0000-4000-8000-000000000000")),
            status: if i % 3 == 0 {
                TaskStatus::Completed
            } else {
                TaskStatus::Working
            },
            status_message: Some(format!("step {} of 40", i % 40)),
            created_at: Some("2026-07-28T09:00:00Z".into()),
            last_updated_at: None,
            ttl_ms: Some(3_600_000),
            poll_interval_ms: Some(5000),
            input_requests: Default::default(),
            result: None,
            error: None,
            more_input_requests: 0,
        };
        update(
            &mut s,
            Msg::Engine(EngineEvent::snapshot(
                server.clone(),
                task,
                UpdateSource::Poll,
                None,
            )),
            now(),
        );
    }
    s.ensure_view();
    assert_eq!(s.tasks.len(), TASKS);
    let backend = support::screen::render(&s, 100, 30, now());
    let screen = format!("{backend}");
    assert!(screen.contains("100000 tasks"), "{screen}");
    let grown = rss_kib().saturating_sub(before);
    println!("100k tasks: RSS grew by {grown} KiB");
    assert!(
        grown < TASKS as u64 * 4,
        "{grown} KiB for {TASKS} tasks is more than 4 KiB each"
    );
}

/// The statistics view's read over a ledger of 100,000 tasks (each with its status changes
/// and polls): every task is counted, and how long the read and the aggregation take is
/// printed (a measurement, not a timed assertion; this is a debug build).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_statistics_of_a_hundred_thousand_tasks() {
    use taskrail::ledger::{EventKind, SnapshotWrite};
    use taskrail::state::charts::Range;

    let dir = tempfile::tempdir().unwrap();
    let ledger = taskrail::ledger::open(&dir.path().join("ledger.db")).unwrap();
    let servers = [ServerId::named("many"), ServerId::named("more")];
    let filled = std::time::Instant::now();
    let task = |i: usize, status: TaskStatus, at: &str| Task {
        task_id: TaskId::new(&format!("task-{i:08}-0000-4000-8000-000000000000")),
        status,
        status_message: None,
        created_at: Some("2026-07-28T09:00:00Z".into()),
        last_updated_at: Some(at.into()),
        ttl_ms: Some(3_600_000),
        poll_interval_ms: Some(5000),
        input_requests: Default::default(),
        result: None,
        error: None,
        more_input_requests: 0,
    };
    for chunk in (0..TASKS).collect::<Vec<_>>().chunks(5000) {
        let mut batch: Vec<SnapshotWrite> = Vec::new();
        for &i in chunk {
            let server = servers[i % 2].clone();
            let source = if i % 2 == 0 {
                EventKind::Push
            } else {
                EventKind::Poll
            };
            batch.push((
                server.clone(),
                task(i, TaskStatus::Working, "2026-07-28T09:00:01Z"),
                source,
                Some(12),
            ));
            if i % 3 != 0 {
                let end = if i % 10 == 1 {
                    TaskStatus::Failed
                } else {
                    TaskStatus::Completed
                };
                batch.push((
                    server,
                    task(i, end, "2026-07-28T09:00:02Z"),
                    source,
                    Some(15),
                ));
            }
        }
        ledger.record_snapshots(&batch).await.unwrap();
    }
    println!("100k tasks written in {:?}", filled.elapsed());
    let (read, cpu) = (std::time::Instant::now(), taskrail::bench::cpu_time());
    let since = chrono::Utc::now() - chrono::Duration::hours(1);
    let limits = taskrail::cli::stats_read::LIMITS;
    let activity = ledger.clone().activity(since, limits).await.unwrap();
    println!(
        "activity read alone: {} tasks, {} entries in {} ms ({} ms of CPU)",
        activity.tasks.len(),
        activity.events.len(),
        read.elapsed().as_millis(),
        (taskrail::bench::cpu_time() - cpu).as_millis()
    );
    for range in [Range::Hour, Range::Week] {
        let cpu = taskrail::bench::cpu_time();
        let (summary, took) =
            taskrail::cli::stats_read::summary(ledger.clone(), range, chrono::Utc::now())
                .await
                .unwrap();
        println!(
            "statistics of {} over 100k tasks: read and aggregated in {} ms ({} ms of CPU)",
            range.label(),
            took.as_millis(),
            (taskrail::bench::cpu_time() - cpu).as_millis()
        );
        assert_eq!(summary.tasks, TASKS);
        assert!(!summary.truncated);
        let last = summary.window.n - 1;
        let s = &summary.status;
        let ended: u64 = s.completed.iter().chain(&s.failed).sum();
        assert_eq!(
            ended as usize,
            TASKS - TASKS.div_ceil(3),
            "every ended task counted once"
        );
        assert!(s.running[last] as usize >= TASKS.div_ceil(3));
        let arrived: u64 = summary.arrivals.values().map(|a| a.push + a.poll).sum();
        assert!(arrived as usize >= TASKS, "{arrived}");
    }
}
