//! Synthetic tasks and boards for the criterion benches (`benches/`): realistic snapshots
//! built from wire JSON, folded into a `State` through the real reducer.

use serde_json::json;

use crate::engine::{EngineEvent, KnownTask, ServerId, UpdateSource};
use crate::mcp::Task;
use crate::state::{Keymap, Msg, Now, State, update};

/// The server every fixture task lives on.
pub fn server() -> ServerId {
    ServerId::named("bench")
}

/// A task id shaped like a UUID, unique per `i`.
pub fn task_id(i: usize) -> crate::ids::TaskId {
    crate::ids::TaskId::new(&format!(
        "{:08x}-{:04x}-4000-8000-{:012x}",
        (i as u64).wrapping_mul(2_654_435_761) & 0xffff_ffff,
        i % 0xffff,
        i
    ))
}

/// Snapshot `step` of task `i`: mostly working with a progress message; every tenth task
/// finished in one of the terminal states.
pub fn snapshot(i: usize, step: usize) -> Task {
    let status = match i % 10 {
        0 => "completed",
        1 => "failed",
        2 => "input_required",
        _ => "working",
    };
    Task::from_wire(&json!({
        "taskId": task_id(i),
        "status": status,
        "statusMessage": format!("page {}/{}", step % 100, 100),
        "createdAt": "2026-01-01T00:00:00Z",
        "lastUpdatedAt": format!("2026-01-01T00:{:02}:{:02}Z", (step / 60) % 60, step % 60),
        "ttlMs": 600000,
        "pollIntervalMs": 1000,
    }))
    .expect("fixture task")
}

/// A working snapshot of task `i` (never terminal, so every one of them applies).
pub fn working(i: usize, step: usize) -> Task {
    Task::from_wire(&json!({
        "taskId": task_id(i),
        "status": "working",
        "statusMessage": format!("page {}/{}", step % 100, 100),
        "createdAt": "2026-01-01T00:00:00Z",
        "lastUpdatedAt": format!("2026-01-01T00:{:02}:{:02}Z", (step / 60) % 60, step % 60),
        "ttlMs": 600000,
        "pollIntervalMs": 1000,
    }))
    .expect("fixture task")
}

/// The engine event carrying `task`, as a loop message.
pub fn updated(task: Task) -> Msg {
    Msg::Engine(EngineEvent::TaskUpdated {
        server: server(),
        task,
        source: UpdateSource::Push,
        latency_ms: Some(3),
        pending: Vec::new(),
    })
}

/// A dashboard state holding `n` tasks (tools, statuses and messages vary), told that
/// `table_rows` rows fit, with its view built.
pub fn board(n: usize, table_rows: usize, now: Now) -> State {
    let mut state = State::new(vec![server()], false, Keymap::default_keymap());
    let tools = ["render_report", "import_rows", "deploy", "lint", "survey"];
    for i in 0..n {
        let msg = Msg::Engine(EngineEvent::TaskKnown {
            server: server(),
            task: KnownTask {
                tool: Some(tools[i % tools.len()].to_string()),
                arguments: Some(json!({ "n": i })),
                ..KnownTask::new(task_id(i), now)
            },
        });
        update(&mut state, msg, now);
        update(&mut state, updated(snapshot(i, i)), now);
    }
    update(
        &mut state,
        Msg::Viewport {
            table_rows,
            page_rows: table_rows,
        },
        now,
    );
    state.ensure_view();
    state
}
