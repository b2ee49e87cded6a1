//! Render: one frame of the dashboard with 10,000 and 100,000 tasks at 200x50
//! (targets: ≤ 2 ms unchanged; after one change ≤ 1 ms at 10,000, ≤ 5 ms at 100,000).
//! Run: `cargo bench --bench render`.
//!
//! - `widget`: the `Dashboard` widget into a fresh buffer (view already built);
//! - `terminal.draw`: what the loop does per frame (render, diff, backend write) on a
//!   `TestBackend`, nothing changed since the last frame but the clock;
//! - `draw after a change`: one snapshot applied first, so its row is re-placed in the
//!   sorted view and the counts before the frame — the busy-dashboard case.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use criterion::{Criterion, criterion_group, criterion_main};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use taskrail::bench::fixtures::{board, updated, working};
use taskrail::state::update;
use taskrail::ui::{Dashboard, Theme, render};

const W: u16 = 200;
const H: u16 = 50;

fn frame(c: &mut Criterion) {
    for tasks in [10_000, 100_000] {
        frame_with(c, tasks);
    }
}

fn frame_with(c: &mut Criterion, tasks: usize) {
    let now = chrono::Utc::now();
    let theme = Theme::default();
    let area = Rect::new(0, 0, W, H);
    // 50 lines minus header (2), tabs, notice, footer and the table's header row.
    let mut state = board(tasks, 44, now);
    let mut group = c.benchmark_group(format!("render {tasks} tasks 200x50"));
    group.bench_function("widget", |b| {
        let mut buf = Buffer::empty(area);
        b.iter(|| {
            buf.reset();
            render(&state, &theme, now, area, &mut buf);
        })
    });
    let mut terminal = Terminal::new(TestBackend::new(W, H)).expect("test terminal");
    group.bench_function("terminal.draw", |b| {
        b.iter(|| {
            terminal
                .draw(|f| {
                    f.render_widget(
                        Dashboard {
                            state: &state,
                            theme: &theme,
                            now,
                        },
                        f.area(),
                    )
                })
                .expect("draw");
        })
    });
    let mut step = 1;
    group.bench_function("draw after a change", |b| {
        b.iter(|| {
            step += 1;
            update(&mut state, updated(working(step % tasks, step)), now);
            state.ensure_view();
            terminal
                .draw(|f| {
                    f.render_widget(
                        Dashboard {
                            state: &state,
                            theme: &theme,
                            now,
                        },
                        f.area(),
                    )
                })
                .expect("draw");
        })
    });
    group.finish();
}

criterion_group!(benches, frame);
criterion_main!(benches);
