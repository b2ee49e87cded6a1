//! Soak: the engine follows many tasks on the chaos demo server (streams dropped, 503s,
//! stale snapshots) and must lose no task, prompt no input twice and keep memory flat.
//!
//! CI runs the 2-minute version. The long run is the same test with
//! `TASKRAIL_SOAK_SECS=1800 TASKRAIL_SOAK_TASKS=500`; it prints its numbers.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod support;

use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};
use support::taskrail::DemoProcess;
use taskrail::engine::{
    CallResult, EngineCommand, EngineConfig, EngineEvent, ServerSpec, TaskId, spawn_engine,
};
use taskrail::ledger;
use taskrail::mcp::{ConnectOptions, Endpoint, InputRequest};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Resident set size of this process (the engine lives here; the server does not).
fn rss_kib() -> u64 {
    support::hosts::rss_kb(std::process::id()).unwrap_or(0)
}

/// The work mix: quick jobs, flaky ones, and ones that ask for input.
fn tool_for(i: u64) -> (&'static str, Value) {
    match i % 6 {
        0 => ("render_report", json!({ "pages": 3 })),
        1 => ("import_rows", json!({ "count": 2000 })),
        2 => ("flaky_job", json!({})),
        3 => ("lint", json!({ "repo": format!("repo-{i}") })),
        4 => ("wait_for_input", json!({ "prompt": format!("soak {i}") })),
        _ => (
            "deploy",
            json!({ "service": format!("svc-{i}"), "env": "staging" }),
        ),
    }
}

/// An accepting answer that fills every field of the requested schema.
fn answer(request: &InputRequest) -> Value {
    let schema = request.params.get("requestedSchema").cloned();
    let props = schema
        .as_ref()
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut content = Map::new();
    for (name, prop) in props {
        let v = if let Some(first) = prop.get("enum").and_then(|e| e.get(0)) {
            first.clone()
        } else {
            match prop.get("type").and_then(Value::as_str) {
                Some("boolean") => json!(true),
                Some("number" | "integer") => json!(1),
                Some("array") => json!([]),
                _ => json!("ok"),
            }
        };
        content.insert(name, v);
    }
    json!({ "action": "accept", "content": content })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chaos_soak_loses_no_task_and_prompts_once() {
    let secs = env_u64("TASKRAIL_SOAK_SECS", 120);
    let n_tasks = env_u64("TASKRAIL_SOAK_TASKS", 120);
    let demo = DemoProcess::start(&[
        "--drop-streams-every",
        "7",
        "--http-503-rate",
        "0.05",
        "--stale-snapshots",
        "--seed",
        "11",
        "--time-scale",
        &format!("{}", (secs as f64 / 1200.0).clamp(0.05, 1.0)),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let ledger = ledger::open(&dir.path().join("soak.db")).unwrap();
    let spec = ServerSpec::new(
        Endpoint::parse(&demo.url).unwrap(),
        ConnectOptions::default(),
    );
    let server = spec.id.clone();
    let (engine, mut events, join) =
        spawn_engine(vec![spec], Some(ledger.clone()), EngineConfig::default());

    let started = Instant::now();
    let run_for = Duration::from_secs(secs);
    // Calls are spread over the first half; the rest lets everything finish under chaos.
    let spacing = run_for / 2 / n_tasks.max(1) as u32;
    let hard_limit = run_for + Duration::from_secs(180);
    let mut sent = 0u64;
    let mut next_call = Instant::now();
    let mut created: HashSet<TaskId> = HashSet::new();
    let mut call_errors = Vec::new();
    let mut terminal: HashMap<TaskId, String> = HashMap::new();
    let mut last_seen: HashMap<TaskId, String> = HashMap::new();
    let mut tool_of: HashMap<TaskId, String> = HashMap::new();
    let mut answer_failures = Vec::new();
    let mut prompts: BTreeMap<(TaskId, String), u32> = BTreeMap::new();
    let mut last_requests = 0u64;
    let mut rss_samples: Vec<(u64, u64)> = vec![(0, rss_kib())];
    let mut next_sample = Instant::now() + run_for / 10;

    loop {
        let now = Instant::now();
        let finished = sent == n_tasks
            && created.len() + call_errors.len() == n_tasks as usize
            && created.iter().all(|t| terminal.contains_key(t));
        if (finished && now >= started + run_for) || now >= started + hard_limit {
            break;
        }
        if sent < n_tasks && now >= next_call {
            let (tool, arguments) = tool_for(sent);
            engine
                .send(EngineCommand::CallTool {
                    server: server.clone(),
                    call_id: sent,
                    tool: tool.into(),
                    arguments,
                    parent_task: None,
                })
                .await;
            sent += 1;
            next_call = now + spacing;
        }
        if now >= next_sample {
            rss_samples.push((started.elapsed().as_secs(), rss_kib()));
            next_sample = now + run_for / 10;
        }
        let ev = tokio::time::timeout(Duration::from_millis(100), events.recv()).await;
        let Ok(Some(ev)) = ev else { continue };
        match ev {
            EngineEvent::CallFinished { result, tool, .. } => match result {
                CallResult::Task { task_id, .. } => {
                    tool_of.insert(task_id.clone(), tool);
                    created.insert(task_id);
                }
                CallResult::Plain { .. } => panic!("{tool} answered without a task"),
                CallResult::Error { message, .. } | CallResult::Refused { reason: message } => {
                    call_errors.push(format!("{tool}: {message}"))
                }
            },
            EngineEvent::TaskUpdated { task, source, .. } => {
                let status = task.status.as_str().to_string();
                let pending = task.input_requests.len();
                last_seen.insert(
                    task.task_id.clone(),
                    format!(
                        "{status} via {} ({pending} pending inputs)",
                        source.as_str()
                    ),
                );
                if task.status.is_terminal() {
                    terminal.insert(task.task_id.clone(), status);
                }
            }
            EngineEvent::AnswerFailed { task_id, error, .. } => {
                answer_failures.push(format!("{task_id}: {error}"));
            }
            EngineEvent::InputRequested {
                task_id,
                key,
                request,
                ..
            } => {
                *prompts.entry((task_id.clone(), key.clone())).or_default() += 1;
                let mut responses = BTreeMap::new();
                responses.insert(key, answer(&request));
                engine
                    .send(EngineCommand::Answer {
                        server: server.clone(),
                        task_id,
                        responses,
                    })
                    .await;
            }
            EngineEvent::Stats { requests_total, .. } => last_requests = requests_total,
            _ => {}
        }
    }
    rss_samples.push((started.elapsed().as_secs(), rss_kib()));
    let stats = demo.stats();
    engine.send(EngineCommand::Shutdown).await;
    let _ = tokio::time::timeout(Duration::from_secs(10), join).await;

    let mut by_status: BTreeMap<&str, usize> = BTreeMap::new();
    for s in terminal.values() {
        *by_status.entry(s.as_str()).or_default() += 1;
    }
    let twice: Vec<_> = prompts.iter().filter(|(_, n)| **n > 1).collect();
    let in_ledger = ledger
        .list(true)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.terminal)
        .count();
    println!(
        "soak: {secs}s budget, {:.0}s run, {n_tasks} calls, {} tasks created, {} call errors, \
         terminal {by_status:?}, {} prompts, {} ledger-terminal, engine requests {last_requests}, \
         server 503s {}, server methods {}",
        started.elapsed().as_secs_f64(),
        created.len(),
        call_errors.len(),
        prompts.len(),
        in_ledger,
        stats["http503"],
        stats["methods"],
    );
    println!("soak: RSS KiB over time (s, KiB): {rss_samples:?}");

    // A 503 on tools/call is a refused call, not a lost task; every created task finishes.
    assert!(
        call_errors.iter().all(|e| e.contains("503")),
        "calls failed for other reasons: {call_errors:?}"
    );
    assert!(
        created.len() as u64 >= n_tasks * 8 / 10,
        "too few tasks were created"
    );
    let lost: Vec<_> = created
        .iter()
        .filter(|t| !terminal.contains_key(*t))
        .map(|t| format!("{t} {:?} last {:?}", tool_of.get(t), last_seen.get(t)))
        .collect();
    println!("soak: answer failures {answer_failures:?}");
    assert!(
        lost.is_empty(),
        "tasks never reached a terminal state: {lost:?}"
    );
    assert!(
        twice.is_empty(),
        "inputs prompted more than once: {twice:?}"
    );
    assert!(in_ledger >= created.len(), "the ledger lost tasks");
    let warm = rss_samples[rss_samples.len() / 4].1;
    let end = rss_samples.last().unwrap().1;
    assert!(
        end <= warm * 2 + 32 * 1024,
        "memory grew from {warm} KiB to {end} KiB"
    );
}
