//! Not a test: the hostile server of `support::hostile` run on its own, for measuring
//! taskrail against it (`benches/scripts/hostile_rss.sh`). Ignored by the test run.
//!
//!   HOSTILE_PLAN=get-flood-nonl cargo test --test engine hostile_server::serve -- --ignored --exact --nocapture
//!
//! Prints `READY <url>`, then one `seen …` line a second, until stdin closes.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::io::BufRead;
use std::sync::atomic::Ordering;
use std::time::Duration;
use support::hostile::{self, Call, Flood, Listen, Plan};

fn plan(name: &str) -> Plan {
    let big = 4usize << 30;
    match name {
        "get-flood-nonl" => Plan {
            legacy: true,
            get_flood: Some(Flood::NoNewline),
            flood_limit: big,
            ..Plan::default()
        },
        "get-flood-lines" => Plan {
            legacy: true,
            get_flood: Some(Flood::ManyDataLines),
            flood_limit: big,
            ..Plan::default()
        },
        "post-flood-nonl" => Plan {
            call: Call::Flood(Flood::NoNewline),
            flood_limit: big,
            ..Plan::default()
        },
        "inputs-50k" => Plan {
            generated: 50_000,
            ..Plan::default()
        },
        "listen-ends" => Plan {
            listen: Listen::EndWithResult,
            ..Plan::default()
        },
        "listen-unknown-response" => Plan {
            listen: Listen::UnknownResponse,
            ..Plan::default()
        },
        other => panic!("unknown HOSTILE_PLAN {other:?}"),
    }
}

#[test]
#[ignore = "a server to measure against, not a test"]
fn serve() {
    let name = std::env::var("HOSTILE_PLAN").unwrap_or_else(|_| "listen-ends".into());
    let server = hostile::start(plan(&name));
    println!("READY {}", server.url);
    let seen = server.seen.clone();
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(Duration::from_secs(1));
            eprintln!(
                "seen listens {} gets {} get_streams {} flood_sent {}",
                seen.listens.load(Ordering::SeqCst),
                seen.gets.load(Ordering::SeqCst),
                seen.get_streams.load(Ordering::SeqCst),
                seen.flood_sent.load(Ordering::SeqCst),
            );
        }
    });
    for _ in std::io::stdin().lock().lines() {}
}
