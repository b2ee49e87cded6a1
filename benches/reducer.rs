//! Reducer ingest: task snapshots folded into the dashboard state per second, on one core
//! (target ≥ 200,000/s). Run: `cargo bench --bench reducer`.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use taskrail::bench::fixtures::{board, updated, working};
use taskrail::state::update;

/// Snapshots per measured batch, spread over `TASKS` tasks.
const BATCH: usize = 10_000;
const TASKS: usize = 1_000;

fn ingest(c: &mut Criterion) {
    let now = chrono::Utc::now();
    let mut group = c.benchmark_group("reducer");
    group.throughput(Throughput::Elements(BATCH as u64));
    for tasks in [TASKS, 10_000] {
        let mut state = board(tasks, 44, now);
        // Distinct snapshots of live tasks (the fixture ends tasks 0 and 1 of every ten,
        // which would refuse them): every message changes its task's status message.
        let live = |k: usize| {
            let i = (k * 7) % tasks;
            if i % 10 < 2 { i + 2 } else { i }
        };
        let msgs: Vec<_> = (0..BATCH)
            .map(|k| updated(working(live(k), k / tasks + 1)))
            .collect();
        group.bench_function(
            format!("ingest {BATCH} snapshots into {tasks} tasks"),
            |b| {
                b.iter_batched(
                    || msgs.clone(),
                    |msgs| {
                        for m in msgs {
                            update(&mut state, m, now);
                        }
                    },
                    BatchSize::LargeInput,
                )
            },
        );
    }
    group.finish();
}

criterion_group!(benches, ingest);
criterion_main!(benches);
