//! A stand-in for the person's browser: a `$BROWSER` script that only writes down the
//! links taskrail asks it to open, and plain HTTP requests (GET a page, POST a form) that
//! a test sends when the person would have clicked. Every wait is bounded.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A `$BROWSER` that records each link it is given, one a line.
pub struct FakeBrowser {
    pub script: PathBuf,
    pub log: PathBuf,
}

impl FakeBrowser {
    pub fn new(dir: &Path) -> FakeBrowser {
        let script = dir.join("browser.sh");
        let log = dir.join("browser.log");
        std::fs::write(
            &script,
            format!("#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{}'\n", log.display()),
        )
        .expect("write the browser script");
        let mut perms = std::fs::metadata(&script).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&script, perms).unwrap();
        FakeBrowser { script, log }
    }

    /// `BROWSER=…` for a command line.
    pub fn env(&self) -> String {
        format!("BROWSER='{}'", self.script.display())
    }

    /// The links opened so far.
    pub fn opened(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// Wait (bounded) for the `n`-th link to be opened.
    pub fn wait_opened(&self, n: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(u) = self.opened().get(n - 1) {
                return u.clone();
            }
            assert!(
                Instant::now() < deadline,
                "the browser was not started {n} time(s)"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Send one HTTP/1.1 request to a `http://host:port/path` URL; the status and body.
pub fn request(method: &str, url: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (authority, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_string()), |(a, p)| (a, format!("/{p}")));
    let addr = authority.replace("localhost", "127.0.0.1");
    let mut stream = TcpStream::connect(&addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
    stream.set_read_timeout(Some(Duration::from_secs(20))).ok();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// GET a page.
pub fn visit(url: &str) -> (u16, String) {
    request("GET", url, &[], "")
}
