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
