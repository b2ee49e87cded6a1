//! A raw HTTP/1.1 server on 127.0.0.1 for fault and hostile-server tests: it answers
//! each request with whatever the test writes, byte for byte, and serves a bounded number
//! of connections.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Read one HTTP request (head and `Content-Length` body); `None` when the peer left.
pub fn read_request(stream: &mut TcpStream) -> Option<String> {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut head = String::new();
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
        head.push_str(&line);
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(head + &String::from_utf8_lossy(&body))
}

/// A raw HTTP server on 127.0.0.1 that serves at most `max` connections with `reply`
/// (given the request text); returns its URL and a request counter.
pub fn raw_server(
    max: usize,
    reply: impl Fn(&str, &mut TcpStream) + Send + Sync + 'static,
) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let counter = count.clone();
    let reply = Arc::new(reply);
    std::thread::spawn(move || {
        for stream in listener.incoming().take(max) {
            let Ok(mut stream) = stream else { continue };
            let counter = counter.clone();
            let reply = reply.clone();
            std::thread::spawn(move || {
                // Keep-alive: several requests may come on one connection.
                for _ in 0..16 {
                    let Some(req) = read_request(&mut stream) else {
                        return;
                    };
                    counter.fetch_add(1, Ordering::SeqCst);
                    reply(&req, &mut stream);
                }
            });
        }
    });
    (url, count)
}
