//! The engine against the embedded demo server, in process: push accounting, chaos
//! (dropped streams, 503s with Retry-After, stale snapshots), polling politeness.
//! Every wait is bounded; request counts are read from the server's own `/stats`.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;
use taskrail::demo::{DemoOptions, DemoServer};
use taskrail::engine::*;
use taskrail::ledger;
use taskrail::mcp::{ConnectOptions, Endpoint, Task, TaskStatus};
use tokio::sync::mpsc;

struct Rig {
    server: DemoServer,
    engine: EngineHandle,
    events: mpsc::Receiver<EngineEvent>,
    id: ServerId,
    _dir: tempfile::TempDir,
}

async fn rig(opts: DemoOptions, cfg: EngineConfig) -> Rig {
    taskrail::mcp::http::install_crypto_provider();
    let server = DemoServer::start(opts).await.expect("demo server");
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger::open(&dir.path().join("ledger.db")).unwrap();
    let spec = ServerSpec::new(
        Endpoint::Http {
            url: server.url.clone(),
        },
        ConnectOptions::default(),
    );
    let id = spec.id.clone();
    let (engine, events, _join) = spawn_engine(vec![spec], Some(ledger), cfg);
    Rig {
        server,
        engine,
        events,
        id,
        _dir: dir,
    }
}

/// What the events said about each task.
#[derive(Default)]
struct Seen {
    /// call id → task id
    calls: HashMap<u64, TaskId>,
    /// task id → every status observed, in order
    statuses: HashMap<TaskId, Vec<String>>,
    finals: HashMap<TaskId, Task>,
    /// (task id, key) of every InputRequested
    inputs: Vec<(TaskId, String)>,
    sources: HashMap<TaskId, Vec<UpdateSource>>,
    /// Push streams lost and reopened.
    reconnects: usize,
    /// Calls the server refused (no task was created).
    failed_calls: usize,
}

impl Rig {
    async fn call(&self, call_id: u64, tool: &str, arguments: Value) {
        let cmd = EngineCommand::CallTool {
            server: self.id.clone(),
            call_id,
            tool: tool.into(),
            arguments,
            parent_task: None,
        };
        self.engine.send(cmd).await;
    }

    /// Collect events until `calls` tasks are terminal; answers input requests with `answer`.
    async fn run(
        &mut self,
        calls: usize,
        limit: Duration,
        answer: impl Fn(&str) -> Option<Value>,
    ) -> Seen {
        let mut seen = Seen::default();
        let deadline = tokio::time::Instant::now() + limit;
        while seen.finals.len() + seen.failed_calls < calls {
            let ev = tokio::time::timeout_at(deadline, self.events.recv())
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "only {} of {calls} tasks ended in {limit:?}; statuses: {:?}",
                        seen.finals.len(),
                        seen.statuses
                    )
                })
                .expect("engine stopped");
            match ev {
                EngineEvent::CallFinished {
                    call_id,
                    result: CallResult::Task { task_id, .. },
                    ..
                } => {
                    seen.calls.insert(call_id, task_id);
                }
                EngineEvent::CallFinished {
                    result: CallResult::Error { .. },
                    ..
                } => seen.failed_calls += 1,
                EngineEvent::CallFinished { result, .. } => {
                    panic!("a call did not create a task: {result:?}")
                }
                EngineEvent::TaskUpdated { task, source, .. } => {
                    let st = seen.statuses.entry(task.task_id.clone()).or_default();
                    if st.last().map(String::as_str) != Some(task.status.as_str()) {
                        st.push(task.status.as_str().to_string());
                    }
                    seen.sources
                        .entry(task.task_id.clone())
                        .or_default()
                        .push(source);
                    if task.status.is_terminal() {
                        seen.finals.insert(task.task_id.clone(), task);
                    }
                }
                EngineEvent::InputRequested {
                    task_id,
                    key,
                    request,
                    ..
                } => {
                    seen.inputs.push((task_id.clone(), key.clone()));
                    let tool = request.message().unwrap_or_default().to_string();
                    if let Some(response) = answer(&tool) {
                        let responses = BTreeMap::from([(key, response)]);
                        self.engine
                            .send(EngineCommand::Answer {
                                server: self.id.clone(),
                                task_id,
                                responses,
                            })
                            .await;
                    }
                }
                EngineEvent::TaskExpired { task_id, .. } => panic!("task {task_id} expired"),
                EngineEvent::Reconnecting { .. } => seen.reconnects += 1,
                _ => {}
            }
        }
        seen
    }

    async fn stop(self) -> Value {
        self.engine.send(EngineCommand::Shutdown).await;
        let stats = self.server.stats();
        self.server.shutdown().await;
        stats
    }
}

fn no_input(_: &str) -> Option<Value> {
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_delivers_every_transition_with_one_resync_per_subscription() {
    // Slow enough that the tasks outlive the first listen by several pages.
    let opts = DemoOptions {
        time_scale: 0.5,
        ..Default::default()
    };
    let mut rig = rig(opts, EngineConfig::default()).await;
    for i in 0..50 {
        rig.call(i, "render_report", json!({ "pages": 6 })).await;
    }
    let seen = rig.run(50, Duration::from_secs(120), no_input).await;
    let stats = rig.stop().await;
    assert_eq!(seen.finals.len(), 50);
    for (id, task) in &seen.finals {
        assert_eq!(task.status, TaskStatus::Completed, "{id}");
        assert!(
            task.result.is_some(),
            "the pushed terminal snapshot carries the result"
        );
    }
    let pushes: usize = seen
        .sources
        .values()
        .flatten()
        .filter(|s| **s == UpdateSource::Push)
        .count();
    // Pages that turned before the listen was acknowledged are covered by the one resync.
    assert!(
        pushes >= 50 * 4,
        "page transitions arrive by push ({pushes} pushes)"
    );
    let listens = stats["listensOpened"].as_u64().unwrap();
    for (id, gets) in stats["tasksGet"].as_object().unwrap() {
        let gets = gets.as_array().unwrap().len() as u64;
        assert!(
            gets <= 1,
            "task {id}: {gets} tasks/get; only one resync per subscription is allowed"
        );
    }
    let total_gets = stats["methods"]["tasks/get"].as_u64().unwrap_or(0);
    println!(
        "push, 50 tasks: {pushes} pushes applied, {total_gets} tasks/get, {listens} listens, {} notifications sent",
        stats["notificationsSent"]
    );
    assert!(
        total_gets <= 50,
        "{total_gets} tasks/get for 50 tasks over {listens} listens"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_tasks_survive_dropped_streams_and_each_input_is_prompted_once() {
    // Tasks run for several seconds, so the streams are dropped under them many times.
    let opts = DemoOptions {
        time_scale: 0.6,
        drop_streams_every: Some(0.4),
        seed: Some(7),
        ..Default::default()
    };
    let mut rig = rig(
        opts,
        EngineConfig {
            backoff: taskrail::mcp::backoff::Backoff {
                base: Duration::from_millis(100),
                max: Duration::from_secs(30),
            },
            ..Default::default()
        },
    )
    .await;
    let plan = ["render_report", "lint", "flaky_job", "wait_for_input"];
    let mut expected: HashMap<u64, &str> = HashMap::new();
    for i in 0..200u64 {
        let tool = plan[i as usize % plan.len()];
        let args = match tool {
            "render_report" => json!({ "pages": 5 }),
            "lint" => json!({ "repo": format!("repo-{i}") }),
            "wait_for_input" => json!({ "prompt": format!("value for {i}") }),
            _ => json!({}),
        };
        expected.insert(i, tool);
        rig.call(i, tool, args).await;
    }
    let seen = rig
        .run(200, Duration::from_secs(240), |msg| {
            let n = msg.trim_start_matches("value for ");
            Some(json!({ "action": "accept", "content": { "value": format!("answer-{n}") } }))
        })
        .await;
    let stats = rig.stop().await;
    for (call, tool) in &expected {
        let id = &seen.calls[call];
        let task = &seen.finals[id];
        match *tool {
            "render_report" => assert_eq!(task.status, TaskStatus::Completed),
            "lint" => assert!(task.status == TaskStatus::Completed && task.result_is_error()),
            "flaky_job" => assert!(task.status == TaskStatus::Failed && task.error.is_some()),
            _ => {
                assert_eq!(task.status, TaskStatus::Completed);
                let text = task.result.as_ref().unwrap()["content"][0]["text"]
                    .as_str()
                    .unwrap();
                assert!(
                    text.contains(&format!("answer-{call}")),
                    "the answer reached task {call}: {text}"
                );
            }
        }
    }
    let unique: HashSet<_> = seen.inputs.iter().collect();
    assert_eq!(
        unique.len(),
        seen.inputs.len(),
        "an input request was reported twice"
    );
    assert_eq!(seen.inputs.len(), 50, "one prompt per wait_for_input task");
    for (id, statuses) in &seen.statuses {
        let first_terminal = statuses
            .iter()
            .position(|s| ["completed", "failed", "cancelled"].contains(&s.as_str()));
        assert_eq!(
            first_terminal,
            Some(statuses.len() - 1),
            "task {id} left a terminal state: {statuses:?}"
        );
    }
    assert!(
        stats["listensOpened"].as_u64().unwrap() > 1,
        "streams were dropped and reopened: {stats}"
    );
    assert!(
        seen.reconnects >= 2,
        "the streams were dropped under the tasks ({} reconnects)",
        seen.reconnects
    );
    println!(
        "drop streams every 0.4 s, 200 tasks: {} reconnects, {} listens, {} tasks/get, {} notifications, {} prompts",
        seen.reconnects,
        stats["listensOpened"],
        stats["methods"]["tasks/get"],
        stats["notificationsSent"],
        seen.inputs.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_push_each_task_is_polled_at_most_once_per_poll_interval() {
    let opts = DemoOptions {
        time_scale: 0.05,
        no_push: true,
        poll_interval: 300,
        ..Default::default()
    };
    let mut rig = rig(
        opts,
        EngineConfig {
            poll_floor: Duration::from_millis(50),
            ..Default::default()
        },
    )
    .await;
    for i in 0..10 {
        rig.call(i, "import_rows", json!({ "count": 2000 })).await;
    }
    let seen = rig.run(10, Duration::from_secs(120), no_input).await;
    let stats = rig.stop().await;
    assert_eq!(seen.finals.len(), 10);
    assert_eq!(stats["listensOpened"].as_u64(), Some(0));
    let mut gaps = Vec::new();
    for times in stats["tasksGet"].as_object().unwrap().values() {
        let t: Vec<u64> = times
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert!(t.len() >= 2, "the task was polled: {t:?}");
        gaps.extend(t.windows(2).map(|w| w[1] - w[0]));
    }
    let min = *gaps.iter().min().unwrap();
    let mean = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
    println!(
        "no push, 10 tasks, pollIntervalMs 300: {} tasks/get, gap min {min} ms, mean {mean:.0} ms",
        gaps.len() + 10
    );
    // Server-side clock: allow for transport jitter between two requests.
    assert!(
        min + 25 >= 300,
        "two tasks/get of one task {min} ms apart with pollIntervalMs 300"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_503_backs_off_and_honours_retry_after() {
    let opts = DemoOptions {
        time_scale: 0.05,
        no_push: true,
        poll_interval: 100,
        http_503_rate: 0.4,
        seed: Some(3),
        ..Default::default()
    };
    let mut rig = rig(
        opts,
        EngineConfig {
            poll_floor: Duration::from_millis(50),
            ..Default::default()
        },
    )
    .await;
    let started = std::time::Instant::now();
    for i in 0..20 {
        rig.call(i, "render_report", json!({ "pages": 4 })).await;
    }
    // A call refused three times in a row ends without a task; every created task ends.
    let seen = rig.run(20, Duration::from_secs(180), no_input).await;
    let created = seen.calls.len();
    assert!(
        created >= 15,
        "refused calls are retried: only {created} of 20 created a task"
    );
    let elapsed = started.elapsed().as_secs_f64();
    let stats = rig.stop().await;
    assert_eq!(seen.finals.len(), created);
    let refused = stats["http503"].as_u64().unwrap() as f64;
    println!(
        "503 rate 0.4, {created} tasks: {refused} refusals, {} requests served in {elapsed:.1} s",
        stats["methods"]
    );
    // Retry-After: 1 pauses the server's polling for a second after each 503, so refusals
    // stay near one per second instead of half of ~200 requests per second.
    assert!(
        refused <= elapsed * 2.0 + 25.0,
        "{refused} refusals in {elapsed:.1} s: no backoff"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_snapshot_after_a_terminal_one_is_ignored() {
    let opts = DemoOptions {
        time_scale: 0.05,
        no_push: true,
        poll_interval: 100,
        stale_snapshots: true,
        seed: Some(11),
        ..Default::default()
    };
    let mut rig = rig(
        opts,
        EngineConfig {
            poll_floor: Duration::from_millis(50),
            ..Default::default()
        },
    )
    .await;
    for i in 0..20 {
        rig.call(i, "render_report", json!({ "pages": 5 })).await;
    }
    let seen = rig.run(20, Duration::from_secs(120), no_input).await;
    // Give late (stale) replies time to arrive, then check nothing moved after the end.
    let deadline = tokio::time::Instant::now() + Duration::from_millis(1500);
    while let Ok(Some(ev)) = tokio::time::timeout_at(deadline, rig.events.recv()).await {
        if let EngineEvent::TaskUpdated { task, .. } = ev {
            assert!(
                task.status.is_terminal(),
                "task {} went back to {} after ending",
                task.task_id,
                task.status.as_str()
            );
        }
    }
    rig.stop().await;
    for (id, statuses) in &seen.statuses {
        assert_eq!(
            statuses.last().map(String::as_str),
            Some("completed"),
            "{id}: {statuses:?}"
        );
        let pages: Vec<&String> = statuses
            .iter()
            .filter(|s| s.as_str() == "completed")
            .collect();
        assert_eq!(pages.len(), 1, "{id}: {statuses:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_tasks_are_answered_and_cancelled_through_the_engine() {
    let opts = DemoOptions {
        time_scale: 0.05,
        legacy: true,
        poll_interval: 200,
        ..Default::default()
    };
    let mut rig = rig(
        opts,
        EngineConfig {
            poll_floor: Duration::from_millis(50),
            ..Default::default()
        },
    )
    .await;
    rig.call(1, "wait_for_input", json!({ "prompt": "legacy value" }))
        .await;
    rig.call(2, "import_rows", json!({ "count": 1_000_000 }))
        .await;
    rig.call(3, "lint", json!({ "repo": "r" })).await;
    // Cancel the import as soon as it exists.
    let mut seen = Seen::default();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while seen.finals.len() < 3 {
        let ev = tokio::time::timeout_at(deadline, rig.events.recv())
            .await
            .expect("tasks end")
            .expect("engine runs");
        match ev {
            EngineEvent::CallFinished {
                call_id,
                result: CallResult::Task { task_id, .. },
                ..
            } => {
                if call_id == 2 {
                    rig.engine
                        .send(EngineCommand::Cancel {
                            server: rig.id.clone(),
                            task_id: task_id.clone(),
                            by: taskrail::engine::CancelBy::cli(),
                        })
                        .await;
                }
                seen.calls.insert(call_id, task_id);
            }
            EngineEvent::InputRequested { task_id, key, .. } => {
                seen.inputs.push((task_id.clone(), key.clone()));
                let responses = BTreeMap::from([(
                    key,
                    json!({ "action": "accept", "content": { "value": "from-the-engine" } }),
                )]);
                rig.engine
                    .send(EngineCommand::Answer {
                        server: rig.id.clone(),
                        task_id,
                        responses,
                    })
                    .await;
            }
            EngineEvent::TaskUpdated { task, .. }
                if task.status.is_terminal() && task.result.is_some() || task.error.is_some() =>
            {
                seen.finals.insert(task.task_id.clone(), task);
            }
            EngineEvent::TaskUpdated { task, .. } if task.status == TaskStatus::Cancelled => {
                seen.finals.insert(task.task_id.clone(), task);
            }
            _ => {}
        }
    }
    rig.stop().await;
    assert_eq!(seen.inputs.len(), 1, "one prompt");
    let answered = &seen.finals[&seen.calls[&1]];
    assert_eq!(answered.status, TaskStatus::Completed);
    assert!(
        answered
            .result
            .as_ref()
            .unwrap()
            .to_string()
            .contains("from-the-engine")
    );
    assert_eq!(seen.finals[&seen.calls[&2]].status, TaskStatus::Cancelled);
    let lint = &seen.finals[&seen.calls[&3]];
    assert!(
        lint.status == TaskStatus::Failed && lint.result_is_error(),
        "legacy reports a tool error as failed with the result"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_safety_polls_of_many_pushed_tasks_are_spread_to_about_one_per_spacing() {
    let opts = DemoOptions {
        poll_interval: 100,
        ..Default::default()
    };
    let mut rig = rig(
        opts,
        EngineConfig {
            poll_floor: Duration::from_millis(50),
            safety_poll: Duration::from_millis(100),
            safety_spacing: Duration::from_millis(100),
            ..Default::default()
        },
    )
    .await;
    let tasks = 20;
    for i in 0..tasks {
        rig.call(i, "wait_for_input", json!({ "prompt": "ok?" }))
            .await;
    }
    let mut waiting = HashSet::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while waiting.len() < tasks as usize {
        match tokio::time::timeout_at(deadline, rig.events.recv()).await {
            Ok(Some(EngineEvent::InputRequested { task_id, .. })) => {
                waiting.insert(task_id);
            }
            Ok(Some(_)) => {}
            Ok(None) => panic!("engine stopped"),
            Err(_) => panic!("only {} of {tasks} tasks asked for input", waiting.len()),
        }
    }
    let drain = tokio::spawn(async move { while rig.events.recv().await.is_some() {} });
    let gets = |s: &Value| s["methods"]["tasks/get"].as_u64().unwrap_or(0);
    // The subscription and its one resync per task settle first.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = gets(&rig.server.stats());
    tokio::time::sleep(Duration::from_secs(3)).await;
    let polled = gets(&rig.server.stats()) - before;
    let stats = rig.server.stats();
    drain.abort();
    println!(
        "push on, {tasks} tasks, safety poll 100 ms, spacing 100 ms: {polled} tasks/get in 3 s"
    );
    assert!(stats["listensOpened"].as_u64() >= Some(1), "{stats}");
    // 20 subscribed tasks x 100 ms spacing: each task every 1-2.2 s, about 37 in 3 s
    // (each task every ~100 ms without the spacing: about 600).
    assert!(
        (5..=150).contains(&polled),
        "{polled} safety polls of {tasks} pushed tasks in 3 s"
    );
}
