//! Push against an independent implementation: a test server on the tower-mcp crate
//! (modern protocol, `subscriptions/listen` + `notifications/tasks`). Tasks are followed
//! to their end by push, duplicates are deduplicated, and the state a task had before
//! the listen opened is fetched once.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use serde_json::json;
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;
use support::taskrail::Taskrail;
use taskrail::engine::*;
use taskrail::mcp::{ConnectOptions, Endpoint, TaskStatus};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_are_followed_to_their_end_by_push() {
    taskrail::mcp::http::install_crypto_provider();
    let peer = tokio::task::spawn_blocking(support::tower_http)
        .await
        .unwrap();
    let spec = ServerSpec::new(
        Endpoint::Http {
            url: peer.url.clone(),
        },
        ConnectOptions::default(),
    );
    let server = spec.id.clone();
    let (engine, mut events, _join) = spawn_engine(vec![spec], None, EngineConfig::default());
    let calls = [
        ("work", json!({ "steps": 4, "delay_ms": 300 })),
        ("work", json!({ "steps": 3, "delay_ms": 400 })),
        ("confirm", json!({})),
        // Ends before any listen can open: only a fetch can learn its state.
        ("fail_soon", json!({ "delay_ms": 0 })),
    ];
    for (i, (tool, arguments)) in calls.iter().enumerate() {
        let cmd = EngineCommand::CallTool {
            server: server.clone(),
            call_id: i as u64,
            tool: tool.to_string(),
            arguments: arguments.clone(),
            parent_task: None,
        };
        engine.send(cmd).await;
    }
    let mut tools: HashMap<taskrail::mcp::TaskId, &str> = HashMap::new();
    let mut sources: HashMap<taskrail::mcp::TaskId, Vec<UpdateSource>> = HashMap::new();
    let mut finals: HashMap<taskrail::mcp::TaskId, taskrail::mcp::Task> = HashMap::new();
    let mut prompts = 0;
    let mut push_on = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while finals.len() < calls.len() {
        let ev = tokio::time::timeout_at(deadline, events.recv())
            .await
            .unwrap_or_else(|_| panic!("tasks did not end: {finals:?}"))
            .unwrap();
        match ev {
            EngineEvent::CallFinished {
                call_id,
                result: CallResult::Task { task_id, .. },
                ..
            } => {
                tools.insert(task_id, calls[call_id as usize].0);
            }
            EngineEvent::CallFinished { result, .. } => panic!("no task: {result:?}"),
            EngineEvent::PushChanged { push, .. } => push_on |= push,
            EngineEvent::TaskUpdated { task, source, .. } => {
                sources
                    .entry(task.task_id.clone())
                    .or_default()
                    .push(source);
                if task.status.is_terminal() {
                    finals.insert(task.task_id.clone(), task);
                }
            }
            EngineEvent::InputRequested { task_id, key, .. } => {
                prompts += 1;
                assert_eq!(key, "confirm", "tower keeps the key as issued");
                let responses = BTreeMap::from([(
                    key,
                    json!({ "action": "accept", "content": { "ok": true } }),
                )]);
                engine
                    .send(EngineCommand::Answer {
                        server: server.clone(),
                        task_id,
                        responses,
                    })
                    .await;
            }
            _ => {}
        }
    }
    engine.send(EngineCommand::Shutdown).await;
    assert!(push_on, "the listen was acknowledged");
    assert_eq!(
        prompts, 1,
        "re-pushed input_required snapshots are deduplicated"
    );
    for (id, task) in &finals {
        let tool = tools[id];
        let src = &sources[id];
        match tool {
            "work" => {
                assert_eq!(task.status, TaskStatus::Completed);
                let pushes = src.iter().filter(|s| **s == UpdateSource::Push).count();
                assert!(pushes >= 2, "work steps arrived by push: {src:?}");
            }
            "confirm" => {
                assert_eq!(task.status, TaskStatus::Completed);
                let text = task.result.as_ref().unwrap()["content"][0]["text"]
                    .as_str()
                    .unwrap();
                assert!(text.contains("\"ok\":true"), "{text}");
            }
            _ => assert_eq!(task.status, TaskStatus::Failed),
        }
        let fetches = src.iter().filter(|s| **s == UpdateSource::Resync).count();
        assert!(
            fetches <= 1,
            "{tool}: fetched more than once besides push: {src:?}"
        );
        assert!(
            !src.contains(&UpdateSource::Poll),
            "{tool}: no polling while push is healthy: {src:?}"
        );
    }
}

#[test]
fn the_cli_follows_a_tower_task_to_completion() {
    let peer = support::tower_http();
    let tr = Taskrail::new();
    let run = tr.run(
        &[
            "call",
            "-s",
            &peer.url,
            "work",
            "--args",
            r#"{"steps":2,"delay_ms":200}"#,
        ],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert_eq!(run.json()["content"][0]["text"], "worked 2 steps");
}
