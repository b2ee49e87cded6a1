//! Fuzz the legacy GET stream reader (`mcp::get_stream::open_with`) through scripted
//! connections: the input is split at `\0\0` into connections; each one's first byte picks
//! its outcome (an event stream, `503`, `404`, `401`, a body that breaks) and the rest is
//! its body, fed in chunks. The reader must end (the script runs out into a `404`), never
//! panic, never yield more items than the script could carry, and only ever send back a
//! `Last-Event-ID` the stream named, within the bound.
#![no_main]

use futures::StreamExt;
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, Mutex};
use taskrail::mcp::McpError;
use taskrail::mcp::get_stream::{ByteStream, Connect, open_with};

const MAX: usize = 2048;

fn http(status: u16) -> McpError {
    McpError::Http {
        status,
        retry_after: None,
        body: String::new(),
    }
}

/// The input's connections, separated by `\0\0`.
fn split_connections(mut rest: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(i) = rest.windows(2).position(|w| w == b"\0\0") {
        out.push(rest[..i].to_vec());
        rest = &rest[i + 2..];
    }
    out.push(rest.to_vec());
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, rest)) = data.split_first() else {
        return;
    };
    let step = usize::from(step % 64) + 1;
    let script: Vec<Vec<u8>> = split_connections(rest).into_iter().take(16).collect();
    let connections = script.len();
    let asked: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let log = asked.clone();
    let mut script = script.into_iter();
    let connect: Connect = Box::new(move |last| {
        log.lock().unwrap().push(last);
        let next = script.next();
        Box::pin(async move {
            let Some(conn) = next else {
                return Err(http(404));
            };
            let (kind, body) = conn.split_first().map(|(k, b)| (*k, b)).unwrap_or((0, &[]));
            let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = body
                .chunks(step)
                .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
                .chain((kind % 5 == 4).then(|| Err(std::io::Error::other("cut"))))
                .collect();
            match kind % 5 {
                1 => Err(http(503)),
                2 => Err(http(404)),
                3 => Err(http(401)),
                _ => {
                    let body: ByteStream = Box::pin(futures::stream::iter(chunks));
                    Ok(body)
                }
            }
        })
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    let items = runtime.block_on(async move {
        let mut stream = open_with(connect, MAX, None);
        let mut n = 0usize;
        while stream.next().await.is_some() {
            n += 1;
            assert!(n <= rest.len() + 2 * connections + 4, "{n} items");
        }
        n
    });
    let asked = asked.lock().unwrap();
    assert!(asked.len() <= connections + 1, "{} connections", asked.len());
    assert!(items + 1 >= asked.len());
    assert_eq!(asked.first().cloned().flatten(), None);
    for id in asked.iter().flatten() {
        assert!(id.len() <= MAX && !id.contains('\0'));
    }
});
