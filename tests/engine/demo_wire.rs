//! Runs the independent, standard-library-only Python wire check
//! (`tests/wire/check_demo.py`) against demo servers started in-process.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::path::Path;
use std::process::Command;

use taskrail::demo::{DemoOptions, DemoServer};

fn fast() -> DemoOptions {
    DemoOptions {
        time_scale: 0.02,
        poll_interval: 200,
        ..DemoOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_server_passes_the_wire_check() {
    let dual = DemoServer::start(fast())
        .await
        .expect("dual-era server starts");
    let legacy = DemoServer::start(DemoOptions {
        legacy: true,
        drop_streams_every: Some(0.5),
        ..fast()
    })
    .await
    .expect("legacy-only server starts");
    let faults = DemoServer::start(DemoOptions {
        no_push: true,
        ack_delay: 400,
        stale_snapshots: true,
        seed: Some(7),
        ..fast()
    })
    .await
    .expect("fault-injecting server starts");
    let chaos = DemoServer::start(DemoOptions {
        http_503_rate: 1.0,
        seed: Some(1),
        ..fast()
    })
    .await
    .expect("503 server starts");

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/wire/check_demo.py");
    let args = vec![
        script.display().to_string(),
        dual.url.clone(),
        "--legacy-url".into(),
        legacy.url.clone(),
        "--faults-url".into(),
        faults.url.clone(),
        "--chaos-url".into(),
        chaos.url.clone(),
    ];
    let output = tokio::task::spawn_blocking(move || Command::new("python3").args(&args).output())
        .await
        .expect("the check thread ran")
        .expect("python3 is installed");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "check_demo.py failed ({})\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        output.status
    );
    println!("{stdout}");

    let stats = dual.stats();
    assert!(stats["tasksCreated"].as_u64().unwrap_or(0) >= 8, "{stats}");
    assert!(chaos.stats()["http503"].as_u64().unwrap_or(0) >= 1);

    for server in [dual, legacy, faults, chaos] {
        tokio::time::timeout(std::time::Duration::from_secs(5), server.shutdown())
            .await
            .expect("shutdown finishes");
    }
}
