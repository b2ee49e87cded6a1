//! Streams against a hostile server (`support::hostile`): floods on the legacy GET stream
//! and on POST replies are cut at the bound, a listen stream that ends or answers an id
//! never sent causes no request storm (and a stream that keeps ending turns push off, with
//! the reason), keep-alive comments keep a quiet stream alive, an absurd `pollIntervalMs`
//! does not stop polling, configured headers never follow a redirect to another origin,
//! and 50,000 input requests are bounded everywhere.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use support::hostile::{self, Call, Flood, Listen, Plan, Seen};
use support::taskrail::Taskrail;
use taskrail::engine::{EngineCommand, EngineConfig, ServerId, ServerSpec, TaskId, spawn_engine};
use taskrail::mcp::{ConnectOptions, Endpoint, McpClient, SubscriptionEvent};

const LIMIT: Duration = Duration::from_secs(60);
/// taskrail's bound on one message or event.
const BOUND: usize = 16 << 20;

/// Wait (bounded) until `done` holds.
fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn flood_is_cut(plan: Plan, args: &[&str]) {
    let server = hostile::start(plan);
    let tr = Taskrail::new();
    let mut full: Vec<&str> = args.to_vec();
    full.insert(2, &server.url);
    let run = tr.spawn(&full);
    let pid = run.child.id();
    let mut peak = 0;
    wait_until("the client hanging up on the flood", LIMIT, || {
        peak = peak.max(hostile::peak_rss_kb(pid).unwrap_or(0));
        server.seen.flood_dropped.load(Ordering::SeqCst)
    });
    let at = server.seen.flood_dropped_at.load(Ordering::SeqCst);
    run.kill9();
    // Socket buffers hold a few MiB more than the client read.
    assert!(
        at < 2 * BOUND,
        "hung up only after {at} bytes (bound {BOUND})"
    );
    assert!(
        peak < 200 * 1024,
        "peak RSS {peak} kB while reading the flood"
    );
}

#[test]
fn legacy_get_stream_without_newlines_is_cut_at_the_bound() {
    flood_is_cut(
        Plan {
            legacy: true,
            get_flood: Some(Flood::NoNewline),
            ..Plan::default()
        },
        &["watch", "-s", "task-0001-abcdef"],
    );
}

#[test]
fn legacy_get_stream_with_endless_data_lines_is_cut_at_the_bound() {
    flood_is_cut(
        Plan {
            legacy: true,
            get_flood: Some(Flood::ManyDataLines),
            ..Plan::default()
        },
        &["watch", "-s", "task-0001-abcdef"],
    );
}

#[test]
fn post_reply_floods_are_cut_at_the_bound() {
    for flood in [Flood::NoNewline, Flood::ManyDataLines] {
        flood_is_cut(
            Plan {
                call: Call::Flood(flood),
                ..Plan::default()
            },
            &["call", "-s", "work"],
        );
    }
}

#[test]
fn a_listen_that_keeps_ending_backs_off_then_falls_back_to_polling() {
    let server = hostile::start(Plan {
        listen: Listen::EndWithResult,
        ..Plan::default()
    });
    let tr = Taskrail::new();
    let mut watch = tr.spawn(&["watch", "-s", &server.url, "task-0001-abcdef"]);
    let line = watch.wait_stderr("push off", LIMIT);
    assert!(line.contains("polling"), "{line}");
    let listens = Seen::count(&server.seen.listens);
    assert!(
        (2..=10).contains(&listens),
        "{listens} listens before push was turned off"
    );
    let gets = Seen::count(&server.seen.gets);
    assert!(
        gets < 4 * listens + 10,
        "{gets} resync gets for {listens} listens"
    );
    // Polling goes on; no further listens.
    let before = Seen::count(&server.seen.gets);
    wait_until("polling after push went off", LIMIT, || {
        Seen::count(&server.seen.gets) > before + 1
    });
    assert_eq!(Seen::count(&server.seen.listens), listens);
    watch.kill9();
}

#[test]
fn responses_to_ids_never_sent_do_not_end_the_subscription() {
    let server = hostile::start(Plan {
        listen: Listen::UnknownResponse,
        ..Plan::default()
    });
    let tr = Taskrail::new();
    let watch = tr.spawn(&["watch", "-s", &server.url, "task-0001-abcdef"]);
    wait_until("the first listen", LIMIT, || {
        Seen::count(&server.seen.listens) >= 1
    });
    std::thread::sleep(Duration::from_secs(3));
    let listens = Seen::count(&server.seen.listens);
    watch.kill9();
    assert_eq!(listens, 1, "the subscription was re-opened {listens} times");
}

fn runtime() -> tokio::runtime::Runtime {
    taskrail::mcp::http::install_crypto_provider();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn keepalive_comments_keep_a_quiet_listen_alive() {
    let server = hostile::start(Plan {
        listen: Listen::Hold,
        keepalive_ms: Some(200),
        ..Plan::default()
    });
    runtime().block_on(async {
        let opts = ConnectOptions {
            stream_idle_timeout: Duration::from_secs(1),
            ..Default::default()
        };
        let endpoint = Endpoint::Http {
            url: server.url.clone(),
        };
        let (client, _push) = McpClient::connect(endpoint, opts).await.unwrap();
        let mut sub = client
            .listen(&[TaskId::new("task-0001-abcdef")])
            .await
            .unwrap();
        match tokio::time::timeout(Duration::from_secs(4), sub.next()).await {
            Err(_) => {}
            Ok(Ok(SubscriptionEvent::Task(t))) => panic!("unexpected push {t:?}"),
            Ok(other) => panic!("a stream with keep-alives every 200 ms ended: {other:?}"),
        }
    });
}

#[test]
fn an_absurd_poll_interval_does_not_stop_polling() {
    let server = hostile::start(Plan {
        poll_interval: serde_json::json!(1e300),
        ..Plan::default()
    });
    runtime().block_on(async {
        let endpoint = Endpoint::Http {
            url: server.url.clone(),
        };
        let spec = ServerSpec {
            id: ServerId::named("hostile"),
            ..ServerSpec::new(endpoint, ConnectOptions::default())
        };
        let cfg = EngineConfig {
            safety_poll: Duration::from_millis(500),
            ..Default::default()
        };
        let (engine, mut events, _join) = spawn_engine(vec![spec], None, cfg);
        engine
            .send(EngineCommand::Track {
                server: ServerId::named("hostile"),
                task_id: TaskId::new("task-0001-abcdef"),
            })
            .await;
        let drain = tokio::spawn(async move { while events.recv().await.is_some() {} });
        let deadline = Instant::now() + LIMIT;
        while Seen::count(&server.seen.gets) < 4 {
            assert!(
                Instant::now() < deadline,
                "polling stopped after {} tasks/get",
                Seen::count(&server.seen.gets)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        engine.send(EngineCommand::Shutdown).await;
        drain.abort();
    });
}

#[test]
fn configured_headers_never_follow_a_redirect_to_another_origin() {
    let target = hostile::start(Plan::default());
    for legacy_get in [false, true] {
        let server = hostile::start(Plan {
            legacy: legacy_get,
            redirect_to: (!legacy_get).then(|| target.url.clone()),
            redirect_get_to: legacy_get.then(|| target.url.clone()),
            ..Plan::default()
        });
        let tr = Taskrail::new();
        let args = [
            "-H",
            "X-Api-Key: tok_SECRET",
            "watch",
            "-s",
            &server.url,
            "task-0001-abcdef",
        ];
        let watch = tr.spawn(&args);
        wait_until("the client to give up or follow", LIMIT, || {
            Seen::count(&server.seen.posts) >= 1
        });
        std::thread::sleep(Duration::from_secs(2));
        watch.kill9();
        assert!(
            !target.seen.saw_header("x-api-key"),
            "X-Api-Key went to another origin (legacy GET: {legacy_get})"
        );
    }
}

#[test]
fn fifty_thousand_input_requests_are_bounded_in_watch() {
    let server = hostile::start(Plan {
        generated: 50_000,
        ..Plan::default()
    });
    let tr = Taskrail::new();
    let mut watch = tr.spawn(&["watch", "-s", &server.url, "task-0001-abcdef"]);
    let more = watch.wait_stderr("more input requests not shown", LIMIT);
    assert!(more.contains("49"), "{more}");
    let peak = hostile::peak_rss_kb(watch.child.id()).unwrap_or(0);
    let prompts = watch
        .seen_err
        .iter()
        .filter(|l| l.contains("input requested for task"))
        .count();
    watch.kill9();
    assert!(prompts <= 64, "{prompts} prompts printed");
    assert!(peak < 300 * 1024, "peak RSS {peak} kB");
}
