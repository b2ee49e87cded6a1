//! Network faults against real processes: connection refused, DNS failure, TLS failure,
//! a reply that trickles one byte per second, 401/403 without a retry storm, 503 with
//! `Retry-After`, and a demo server killed mid-stream and restarted on the same port.
#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use crate::support;

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::Ordering;
use std::time::Duration;
use support::raw_http::raw_server;
use support::taskrail::{DemoProcess, Taskrail, task_id};
use taskrail::cli::exit;

const LIMIT: Duration = Duration::from_secs(60);

fn status_reply(status: &str, extra: &str) -> impl Fn(&str, &mut TcpStream) + Send + Sync {
    let status = status.to_string();
    let extra = extra.to_string();
    move |_req, stream| {
        let body = "denied";
        let _ = write!(
            stream,
            "HTTP/1.1 {status}\r\n{extra}Content-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
    }
}

#[test]
fn connection_refused_is_a_connection_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let run = Taskrail::new().run(&["tools", "-s", &url], LIMIT);
    assert_eq!(run.code, Some(exit::CONNECTION.into()), "{run:?}");
    assert!(run.stderr.contains("cannot connect"), "{}", run.stderr);
}

#[test]
fn dns_failure_names_the_host() {
    // A label longer than 63 bytes cannot be sent to any resolver: it fails locally.
    let host = format!("{}.invalid", "a".repeat(64));
    let url = format!("http://{host}/mcp");
    let run = Taskrail::new().run(&["tools", "-s", &url], LIMIT);
    assert_eq!(run.code, Some(exit::CONNECTION.into()), "{run:?}");
    assert!(
        run.stderr.contains("cannot resolve"),
        "no DNS message: {}",
        run.stderr
    );
}

#[test]
fn tls_failure_says_tls() {
    // A plain-HTTP listener spoken to with https:// fails the TLS handshake.
    let (url, _) = raw_server(4, status_reply("400 Bad Request", ""));
    let url = url.replace("http://", "https://");
    let run = Taskrail::new().run(&["tools", "-s", &url], LIMIT);
    assert_eq!(run.code, Some(exit::CONNECTION.into()), "{run:?}");
    assert!(run.stderr.contains("TLS"), "no TLS message: {}", run.stderr);
}

#[test]
fn a_trickling_reply_times_out() {
    let (url, _) = raw_server(4, |_req, stream| {
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 400\r\n\r\n{{"
        );
        // One byte a second, for at most 40 s.
        for _ in 0..40 {
            std::thread::sleep(Duration::from_secs(1));
            if stream.write_all(b" ").is_err() {
                return;
            }
        }
    });
    let run = Taskrail::new().run(&["--timeout", "2", "tools", "-s", &url], LIMIT);
    assert_eq!(run.code, Some(exit::CONNECTION.into()), "{run:?}");
    assert!(run.stderr.contains("timed out"), "{}", run.stderr);
}

#[test]
fn unauthorized_is_clear_and_not_retried() {
    // 401: nobody is signed in (the sign-in is `taskrail auth login`); 403: refused.
    for (status, code, says) in [
        ("401 Unauthorized", exit::SIGN_IN, "sign in required"),
        ("403 Forbidden", exit::CONNECTION, "403"),
    ] {
        let (url, count) = raw_server(16, status_reply(status, ""));
        let run = Taskrail::new().run(&["tools", "-s", &url], LIMIT);
        assert_eq!(run.code, Some(code.into()), "{run:?}");
        assert!(run.stderr.contains(says), "{status}: {}", run.stderr);
        // The discover probe, and nothing after it: no legacy fallback, no retries (for a
        // 401 on a loopback address, the CLI also reads the resource metadata's well-known
        // addresses, two GETs, to suggest the spelling of the address that signs in).
        let most = if code == exit::SIGN_IN { 3 } else { 1 };
        let sent = count.load(Ordering::SeqCst);
        assert!((1..=most).contains(&sent), "{status}: {sent} requests sent");
    }
}

#[test]
fn service_unavailable_is_reported_with_its_retry_after() {
    let (url, count) = raw_server(
        16,
        status_reply("503 Service Unavailable", "Retry-After: 7\r\n"),
    );
    let run = Taskrail::new().run(&["tools", "-s", &url], LIMIT);
    assert_eq!(run.code, Some(exit::CONNECTION.into()), "{run:?}");
    assert!(run.stderr.contains("503"), "{}", run.stderr);
    assert!(count.load(Ordering::SeqCst) <= 2, "retry storm");
}

#[test]
fn demo_killed_mid_stream_and_restarted_resumes() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let listen = format!("127.0.0.1:{port}");
    let mut demo = DemoProcess::start(&["--listen", &listen]);
    let tr = Taskrail::new();
    let run = tr.run(
        &[
            "call",
            "-s",
            &demo.url,
            "--detach",
            "import_rows",
            "--args",
            r#"{"count":10000000}"#,
        ],
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let id = task_id(&run);
    let mut watch = tr.spawn(&["watch", "-s", &demo.url, &id]);
    watch.wait_stdout(&id[..8], LIMIT);
    demo.kill9();
    // With the server gone the follower reports the outage and keeps the task.
    watch.wait_stderr(&format!("{}: ", demo.url), LIMIT);
    let demo2 = DemoProcess::start(&["--listen", &listen]);
    assert_eq!(demo2.url, demo.url);
    // The restarted server has no memory of the task: the follower ends on a tombstone.
    let done = watch.finish(LIMIT);
    assert_eq!(done.code, Some(exit::UNKNOWN_TASK.into()), "{done:?}");
    assert!(done.stderr.contains("retrying"), "{}", done.stderr);
    let after = tr.run(&["ls", "--all", "--json"], LIMIT);
    assert!(after.stdout.contains(&id), "{}", after.stdout);
}

#[test]
fn an_oversized_reply_is_refused_not_buffered() {
    // Declares 64 MiB and would send it: the client stops at its 16 MiB bound.
    let (url, _) = raw_server(4, |req, stream| {
        if req.contains("server/discover") {
            let body = r#"{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            return;
        }
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
        );
        let chunk = vec![b' '; 1 << 20];
        for _ in 0..64 {
            if write!(stream, "{:x}\r\n", chunk.len()).is_err()
                || stream.write_all(&chunk).is_err()
                || stream.write_all(b"\r\n").is_err()
            {
                return;
            }
        }
    });
    let run = Taskrail::new().run(&["tools", "-s", &url], LIMIT);
    assert_ne!(run.code, Some(0), "{run:?}");
    assert!(run.stderr.contains("too large"), "{}", run.stderr);
}
