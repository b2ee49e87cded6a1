//! A TCP relay on 127.0.0.1 in front of a server, whose connections a test can cut: every
//! open connection is shut down and new ones are refused until it is mended (a network
//! drop between a client and its server, with the server still running).
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct Relay {
    /// The relay's URL with the target's path (e.g. `http://127.0.0.1:PORT/mcp`).
    pub url: String,
    down: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

fn pump(mut from: TcpStream, mut to: TcpStream) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Both);
    let _ = from.shutdown(Shutdown::Both);
}

impl Relay {
    /// Relay to the server at `url` (`http://127.0.0.1:PORT/path`).
    pub fn start(url: &str) -> Relay {
        let rest = url.strip_prefix("http://").expect("an http URL");
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let target = authority.to_string();
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the relay");
        let port = listener.local_addr().expect("addr").port();
        let down = Arc::new(AtomicBool::new(false));
        let open: Arc<Mutex<Vec<TcpStream>>> = Arc::new(Mutex::new(Vec::new()));
        let (d, o) = (down.clone(), open.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(client) = conn else { continue };
                if d.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(&target) else {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else {
                    continue;
                };
                if let Ok(mut v) = o.lock() {
                    v.push(client.try_clone().expect("clone"));
                    v.push(server.try_clone().expect("clone"));
                }
                std::thread::spawn(move || pump(client, server));
                std::thread::spawn(move || pump(s2, c2));
            }
        });
        Relay {
            url: format!("http://127.0.0.1:{port}/{path}"),
            down,
            open,
        }
    }

    /// Cut every connection and refuse new ones.
    pub fn cut(&self) {
        self.down.store(true, Ordering::SeqCst);
        let streams: Vec<TcpStream> = self
            .open
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default();
        for s in streams {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Accept connections again.
    pub fn mend(&self) {
        self.down.store(false, Ordering::SeqCst);
    }

    /// Cut, wait `gap`, mend.
    pub fn drop_for(&self, gap: Duration) {
        self.cut();
        std::thread::sleep(gap);
        self.mend();
    }
}
